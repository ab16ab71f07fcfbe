terraform {
  required_version = ">= 1.5.0"

  required_providers {
    aws = {
      source  = "hashicorp/aws"
      version = "~> 3.39"
    }
  }
}

module "network" {
  source = "../../modules/network"

  name               = "${var.customer_id}-control"
  cidr               = var.vpc_cidr
  availability_zones = [for suffix in var.availability_zones : "${var.region}${suffix}"]
}

module "cluster" {
  source = "../../modules/cluster"

  name               = "${var.customer_id}-control"
  region             = var.region
  kubernetes_version = var.kubernetes_version
  subnet_cidrs       = module.network.private_subnets

  subnet_ids        = module.network.private_subnet_ids
  security_group_id = module.network.node_security_group_id
}
