variable "name" {
  type        = string
  description = "Prefix for every network object."
}

variable "cidr" {
  type        = string
  description = "The VPC's IPv4 range, as a CIDR block."

  validation {
    condition     = can(cidrhost(var.cidr, 0)) && tonumber(split("/", var.cidr)[1]) <= 20
    error_message = "The cidr must be an IPv4 CIDR block of /20 or larger, such as 10.40.0.0/16."
  }
}

variable "availability_zones" {
  type        = list(string)
  description = "Availability zones to spread subnets over."

  validation {
    condition     = length(var.availability_zones) >= 2 && length(var.availability_zones) <= 6
    error_message = "Use between 2 and 6 availability zones."
  }
}

variable "subnet_bits" {
  type        = number
  default     = 4
  description = "Extra prefix bits for each subnet (4 turns a /16 into /20 subnets)."
}
