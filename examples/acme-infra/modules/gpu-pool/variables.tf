variable "cluster_name" {
  type        = string
  description = "The cluster the pools join."
}

variable "gpu_families" {
  type        = list(string)
  description = "GPU families to offer, such as [\"a100\", \"l4\"]."

  validation {
    condition     = alltrue([for family in var.gpu_families : contains(["a100", "h100", "l4", "t4"], family)])
    error_message = "Each GPU family must be one of a100, h100, l4 or t4."
  }
}

variable "max_nodes_per_pool" {
  type        = number
  default     = 4
  description = "Upper bound on nodes in each pool."
}

variable "node_role_arn" {
  type        = string
  description = "The IAM role the pools' nodes run as."
}

variable "subnet_ids" {
  type        = list(string)
  description = "Ids of the subnets the pools' nodes run in."
}

variable "root_volume_gb" {
  type        = number
  default     = 200
  description = "Size of each GPU node's root volume in GiB (room for images and model caches)."
}
