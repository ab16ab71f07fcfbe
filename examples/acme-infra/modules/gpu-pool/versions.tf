terraform {
  required_providers {
    aws = {
      source  = "hashicorp/aws"
      version = ">= 3.39, < 4.0"
    }
  }
}
