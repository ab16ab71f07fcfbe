terraform {
  required_version = ">= 1.5.0"

  required_providers {
    aws = {
      source  = "hashicorp/aws"
      version = "~> 3.39"
    }
  }
}

locals {
  name = "${var.customer_id}-data"
}

module "network" {
  source = "../../modules/network"

  name               = local.name
  cidr               = var.vpc_cidr
  availability_zones = [for suffix in var.availability_zones : "${var.region}${suffix}"]
}

module "cluster" {
  source = "../../modules/cluster"

  name               = local.name
  region             = var.region
  kubernetes_version = var.kubernetes_version
  subnet_cidrs       = module.network.private_subnets

  subnet_ids        = module.network.private_subnet_ids
  security_group_id = module.network.node_security_group_id
}

module "gpu_pool" {
  source = "../../modules/gpu-pool"

  cluster_name = module.cluster.name
  gpu_families = var.gpu_families

  node_role_arn = module.cluster.node_role_arn
  subnet_ids    = module.network.private_subnet_ids
}

module "model_bucket" {
  source = "../../modules/model-bucket"

  name_prefix = var.customer_id
  account_id  = var.account_id
  region      = var.region
}
