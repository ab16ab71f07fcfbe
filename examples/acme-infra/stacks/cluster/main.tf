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

module "cluster" {
  source = "../../modules/cluster"

  name               = local.name
  region             = var.region
  kubernetes_version = var.kubernetes_version
  subnet_cidrs       = var.subnet_cidrs

  subnet_ids        = var.subnet_ids
  security_group_id = var.security_group_id
}
