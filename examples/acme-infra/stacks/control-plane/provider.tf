# The AWS provider. A customer's runner gives it credentials the usual way (environment,
# shared config, instance profile); nothing secret lives here.
#
# `aws_endpoint` sends every AWS API call this stack makes to one URL instead of AWS:
# an emulator of the AWS API (moto) in the vendor's tests and demos. Real customers
# leave it unset, and then every check a real account wants stays on: credentials are
# validated, the account is looked up, and the provider may use the instance
# metadata service.

variable "aws_endpoint" {
  type        = string
  default     = null
  description = "URL of an AWS API emulator to use instead of AWS, such as http://127.0.0.1:5000. Leave unset for a real account."

  validation {
    condition     = var.aws_endpoint == null ? true : can(regex("^(https?://[^[:space:]]+)?$", var.aws_endpoint))
    error_message = "The aws_endpoint must be an http:// or https:// URL, or unset."
  }
}

locals {
  emulated = var.aws_endpoint != null && var.aws_endpoint != ""
}

provider "aws" {
  region = var.region

  skip_credentials_validation = local.emulated
  skip_requesting_account_id  = local.emulated
  skip_metadata_api_check     = local.emulated
  s3_force_path_style         = local.emulated

  # Every service this stack calls (null keeps AWS's own endpoint).
  endpoints {
    ec2 = local.emulated ? var.aws_endpoint : null
    eks = local.emulated ? var.aws_endpoint : null
    iam = local.emulated ? var.aws_endpoint : null
    s3  = local.emulated ? var.aws_endpoint : null
    sts = local.emulated ? var.aws_endpoint : null
  }

  default_tags {
    tags = {
      "stackpack.io/customer" = var.customer_id
      "stackpack.io/stack"    = "control-plane"
    }
  }
}
