output "vpc_id" {
  value       = module.network.vpc_id
  description = "The data plane's VPC id."
}

output "vpc_cidr" {
  value       = module.network.vpc_cidr
  description = "The data plane's VPC range."
}

output "private_subnets" {
  value       = module.network.private_subnets
  description = "Private subnet ranges, one per availability zone."
}

output "private_subnet_ids" {
  value       = module.network.private_subnet_ids
  description = "Private subnet ids, one per availability zone."
}

output "node_security_group_id" {
  value       = module.network.node_security_group_id
  description = "The security group the data plane's nodes share."
}
