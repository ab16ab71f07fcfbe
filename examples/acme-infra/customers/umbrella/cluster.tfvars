# umbrella's inputs to the `cluster` stack of the `environment` release. The subnets and security group come from the `network` stack.
customer_id        = "umbrella"
account_id         = "777788889999"
region             = "ap-southeast-2"
kubernetes_version = "1.31"
