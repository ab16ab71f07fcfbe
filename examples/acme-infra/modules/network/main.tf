# Network layout for one environment: a VPC CIDR split into public and private
# subnets, one pair per availability zone. The resources are in vpc.tf.

locals {
  zone_count = length(var.availability_zones)
  # Private subnets take the lower half of the range, public the upper half.
  private_subnets = [for index in range(local.zone_count) : cidrsubnet(var.cidr, var.subnet_bits, index)]
  public_subnets  = [for index in range(local.zone_count) : cidrsubnet(var.cidr, var.subnet_bits, index + pow(2, var.subnet_bits - 1))]
}
