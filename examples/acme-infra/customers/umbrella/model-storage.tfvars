# umbrella's inputs to the `model-storage` stack of the `environment` release.
customer_id = "umbrella"
account_id  = "777788889999"
region      = "ap-southeast-2"
