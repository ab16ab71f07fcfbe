variable "name" {
  type        = string
  description = "Cluster name."
}

variable "region" {
  type        = string
  description = "Cloud region of the cluster."
}

variable "kubernetes_version" {
  type        = string
  description = "Kubernetes minor version, such as 1.30."

  validation {
    condition     = can(regex("^1\\.(2[89]|3[0-9])$", var.kubernetes_version))
    error_message = "The kubernetes_version must be a supported minor version from 1.28 to 1.39."
  }
}

variable "subnet_cidrs" {
  type        = list(string)
  description = "Subnets the cluster's nodes run in."
}

variable "system_node_count" {
  type        = number
  default     = 3
  description = "Nodes in the system node group."
}

variable "subnet_ids" {
  type        = list(string)
  description = "Ids of the subnets the cluster and its nodes use (the subnets of subnet_cidrs)."
}

variable "security_group_id" {
  type        = string
  description = "Security group of the cluster's nodes; it also admits them to the API."
}

variable "system_node_instance_type" {
  type        = string
  default     = "m6i.large"
  description = "Instance type of the system node group (a change replaces the group)."
}
