output "endpoint" {
  value       = aws_eks_cluster.this.endpoint
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

output "name" {
  value       = aws_eks_cluster.this.name
  description = "The cluster's name (depending on it waits for the cluster)."
}

output "arn" {
  value       = aws_eks_cluster.this.arn
  description = "The cluster's ARN."
}

output "node_role_arn" {
  value       = aws_iam_role.node.arn
  description = "The IAM role nodes run as; node groups of other modules use it too."
}
