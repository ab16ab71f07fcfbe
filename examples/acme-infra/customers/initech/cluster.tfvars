# initech's inputs to the `cluster` stack of the `environment` release. The subnets and security group come from the `network` stack.
customer_id        = "initech"
account_id         = "444455556666"
region             = "eu-west-1"
kubernetes_version = "1.29"
