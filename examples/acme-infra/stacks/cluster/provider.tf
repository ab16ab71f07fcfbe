# The AWS provider. A customer's runner gives it credentials the usual way (environment,
# shared config, instance profile); nothing secret lives here.
#
# `aws_endpoint` sends every AWS API call this stack makes to one URL instead of AWS:
# an emulator of the AWS API (moto) in the vendor's tests and demos. Real customers
# leave it unset, and then every check a real account wants stays on: credentials are
# validated, the account is looked up and must be `account_id`, and the provider may
# use the instance metadata service.

variable "aws_endpoint" {
  type        = string
  default     = ""
  description = "URL of an AWS API emulator to use instead of AWS, such as http://127.0.0.1:5000. Leave it empty for a real account."

  validation {
    condition     = can(regex("^(https?://[^[:space:]]+)?$", var.aws_endpoint))
    error_message = "The aws_endpoint must be an http:// or https:// URL, or empty."
  }
}

# The provider reads `var.aws_endpoint` itself, not through a local: Terraform 0.15
# evaluates no locals for the provider during `destroy` (fixed in 1.x).

provider "aws" {
  region = var.region

  # A real account must be the customer's own; an emulator has an account of its own.
  allowed_account_ids = var.aws_endpoint != "" ? null : [var.account_id]

  skip_credentials_validation = var.aws_endpoint != ""
  skip_requesting_account_id  = var.aws_endpoint != ""
  skip_metadata_api_check     = var.aws_endpoint != ""
  s3_force_path_style         = var.aws_endpoint != ""

  # Every service this stack calls (empty keeps AWS's own endpoint).
  endpoints {
    ec2 = var.aws_endpoint
    eks = var.aws_endpoint
    iam = var.aws_endpoint
    s3  = var.aws_endpoint
    sts = var.aws_endpoint
  }

  default_tags {
    tags = {
      "stackpack.io/customer" = var.customer_id
      "stackpack.io/stack"    = "cluster"
      # Required on every resource by the vendor's policies (policies/tags.rego).
      "cost-center" = "${var.customer_id}-data-plane"
      "environment" = "customer"
      "owner"       = "acme-platform"
    }
  }
}
