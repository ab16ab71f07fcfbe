output "endpoint" {
  value       = local.endpoint
  description = "The cluster's API endpoint."
}

output "kubernetes_version" {
  value       = var.kubernetes_version
  description = "The cluster's Kubernetes minor version."
}

output "system_node_count" {
  value       = var.system_node_count
  description = "Nodes in the system node group."
}
