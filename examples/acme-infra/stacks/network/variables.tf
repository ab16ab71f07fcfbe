variable "customer_id" {
  type        = string
  description = "The customer's identifier, lowercase letters and digits."

  validation {
    condition     = can(regex("^[a-z][a-z0-9-]{1,30}$", var.customer_id))
    error_message = "The customer_id must be 2 to 31 lowercase letters, digits or dashes, starting with a letter."
  }
}

variable "account_id" {
  type        = string
  description = "The customer's cloud account id (12 digits)."
}

variable "region" {
  type        = string
  description = "Region of the data plane."
}

variable "vpc_cidr" {
  type        = string
  description = "The data plane's VPC range, such as 10.40.0.0/16."
}

variable "availability_zones" {
  type        = list(string)
  default     = ["a", "b", "c"]
  description = "Availability zone suffixes, appended to the region."
}
