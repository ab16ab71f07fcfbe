# umbrella's inputs to the `gpu-pools` stack of the `environment` release. The cluster, role and subnets come from the `cluster` and `network` stacks.
customer_id  = "umbrella"
account_id   = "777788889999"
region       = "ap-southeast-2"
gpu_families = []
