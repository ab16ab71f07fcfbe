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
