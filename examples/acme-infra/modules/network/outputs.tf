output "vpc_cidr" {
  value       = var.cidr
  description = "The VPC's IPv4 range."
}

output "private_subnets" {
  value       = local.private_subnets
  description = "Private subnet CIDR blocks, one per availability zone."
}

output "public_subnets" {
  value       = local.public_subnets
  description = "Public subnet CIDR blocks, one per availability zone."
}

output "vpc_id" {
  value       = aws_vpc.this.id
  description = "The VPC's id."
}

output "private_subnet_ids" {
  value       = aws_subnet.private[*].id
  description = "Private subnet ids, one per availability zone, in zone order."
}

output "public_subnet_ids" {
  value       = aws_subnet.public[*].id
  description = "Public subnet ids, one per availability zone, in zone order."
}

output "node_security_group_id" {
  value       = aws_security_group.nodes.id
  description = "The security group the environment's nodes share."
}
