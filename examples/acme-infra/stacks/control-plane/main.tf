terraform {
  required_version = ">= 0.15.0"
}

module "network" {
  source = "../../modules/network"

  name               = "${var.customer_id}-control"
  cidr               = var.vpc_cidr
  availability_zones = var.availability_zones
}

module "cluster" {
  source = "../../modules/cluster"

  name               = "${var.customer_id}-control"
  region             = var.region
  kubernetes_version = var.kubernetes_version
  subnet_cidrs       = module.network.private_subnets
}
