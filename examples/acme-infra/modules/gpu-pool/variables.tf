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
