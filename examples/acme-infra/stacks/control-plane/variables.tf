variable "customer_id" {
  type        = string
  description = "The customer's identifier, lowercase letters and digits."

  validation {
    condition     = can(regex("^[a-z][a-z0-9-]{1,30}$", var.customer_id))
    error_message = "The customer_id must be 2 to 31 lowercase letters, digits or dashes, starting with a letter."
  }
}

variable "region" {
  type        = string
  description = "Region of the control plane."
}

variable "vpc_cidr" {
  type        = string
  default     = "10.100.0.0/16"
  description = "The control plane's VPC range."
}

variable "availability_zones" {
  type        = list(string)
  default     = ["a", "b"]
  description = "Availability zone suffixes."
}

variable "kubernetes_version" {
  type        = string
  default     = "1.30"
  description = "Kubernetes minor version of the management cluster."
}
