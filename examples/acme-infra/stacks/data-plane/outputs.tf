output "vpc_cidr" {
  value       = module.network.vpc_cidr
  description = "The data plane's VPC range."
}

output "private_subnets" {
  value       = module.network.private_subnets
  description = "Private subnets, one per availability zone."
}

output "cluster_endpoint" {
  value       = module.cluster.endpoint
  description = "The workload cluster's API endpoint."
}

output "kubernetes_version" {
  value       = module.cluster.kubernetes_version
  description = "The workload cluster's Kubernetes version."
}

output "gpu_pools" {
  value       = module.gpu_pool.pools
  description = "GPU node pools by family."
}

output "model_bucket" {
  value       = module.model_bucket.bucket_name
  description = "Bucket for model weights."
}

output "control_plane_region" {
  value       = var.control_plane_region
  description = "Region of the control plane this data plane reports to."
}
