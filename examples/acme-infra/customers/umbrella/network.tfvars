# umbrella's inputs to the `network` stack of the `environment` release.
customer_id        = "umbrella"
account_id         = "777788889999"
region             = "ap-southeast-2"
vpc_cidr           = "10.80.0.0/16"
availability_zones = ["a", "b"]
