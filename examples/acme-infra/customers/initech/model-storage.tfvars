# initech's inputs to the `model-storage` stack of the `environment` release.
customer_id = "initech"
account_id  = "444455556666"
region      = "eu-west-1"
