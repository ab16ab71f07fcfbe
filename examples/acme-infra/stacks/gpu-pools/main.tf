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

module "gpu_pool" {
  source = "../../modules/gpu-pool"

  cluster_name = var.cluster_name
  gpu_families = var.gpu_families

  node_role_arn = var.node_role_arn
  subnet_ids    = var.subnet_ids
}
