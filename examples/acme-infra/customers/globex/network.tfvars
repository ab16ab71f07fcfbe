# globex's inputs to the `network` stack of the `environment` release.
customer_id = "globex"
account_id  = "111122223333"
region      = "us-east-1"
vpc_cidr    = "10.40.0.0/16"
