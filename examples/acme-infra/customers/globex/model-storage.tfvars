# globex's inputs to the `model-storage` stack of the `environment` release.
customer_id = "globex"
account_id  = "111122223333"
region      = "us-east-1"
