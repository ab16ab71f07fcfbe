terraform {
  required_version = ">= 0.15.0"
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
}

module "gpu_pool" {
  source = "../../modules/gpu-pool"

  cluster_name = local.name
  gpu_families = var.gpu_families
}

module "model_bucket" {
  source = "../../modules/model-bucket"

  name_prefix = var.customer_id
  account_id  = var.account_id
  region      = var.region
}
