# initech's inputs to the `network` stack of the `environment` release.
customer_id = "initech"
account_id  = "444455556666"
region      = "eu-west-1"
vpc_cidr    = "10.60.0.0/16"
