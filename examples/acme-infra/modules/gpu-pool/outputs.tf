output "pools" {
  value       = local.pools
  description = "Node pool settings by GPU family."
}

output "total_max_gpus" {
  value       = sum(concat([0], [for pool in local.pools : pool.gpus_per_node * pool.max_nodes]))
  description = "GPUs available when every pool is at its maximum."
}

output "node_group_arns" {
  value       = { for family, group in aws_eks_node_group.pool : family => group.arn }
  description = "The node groups' ARNs by GPU family."
}
