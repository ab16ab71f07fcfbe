output "cluster_endpoint" {
  value       = module.cluster.endpoint
  description = "The management cluster's API endpoint."
}

output "vpc_cidr" {
  value       = module.network.vpc_cidr
  description = "The control plane's VPC range."
}
