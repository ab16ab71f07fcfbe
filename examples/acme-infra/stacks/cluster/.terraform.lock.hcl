# This file is maintained automatically by "terraform init".
# Manual edits may be lost in future updates.

provider "registry.terraform.io/hashicorp/aws" {
  version     = "3.39.0"
  constraints = ">= 3.39.0, ~> 3.39, < 4.0.0"
  hashes = [
    "h1:goOMfGE4SjLps+hpxJFEM/pZFiNgvi6BMG8/w86+f6k=",
  ]
}
