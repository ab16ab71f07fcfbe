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

variable "kubernetes_version" {
  type        = string
  description = "Kubernetes minor version of the workload cluster, such as 1.30."
}

variable "subnet_cidrs" {
  type        = list(string)
  description = "Private subnet ranges (wired from network.private_subnets)."
}

variable "subnet_ids" {
  type        = list(string)
  description = "Private subnet ids (wired from network.private_subnet_ids)."
}

variable "security_group_id" {
  type        = string
  description = "The nodes' security group (wired from network.node_security_group_id)."
}
