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
