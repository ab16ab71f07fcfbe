# globex's inputs to the `cluster` stack of the `environment` release. The subnets and security group come from the `network` stack.
customer_id        = "globex"
account_id         = "111122223333"
region             = "us-east-1"
kubernetes_version = "1.30"
