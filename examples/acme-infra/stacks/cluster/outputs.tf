output "name" {
  value       = module.cluster.name
  description = "The workload cluster's name."
}

output "cluster_endpoint" {
  value       = module.cluster.endpoint
  description = "The workload cluster's API endpoint."
}

output "kubernetes_version" {
  value       = module.cluster.kubernetes_version
  description = "The workload cluster's Kubernetes version."
}

output "node_role_arn" {
  value       = module.cluster.node_role_arn
  description = "The IAM role the cluster's nodes run as."
}
