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

module "model_bucket" {
  source = "../../modules/model-bucket"

  name_prefix = var.customer_id
  account_id  = var.account_id
  region      = var.region
}
