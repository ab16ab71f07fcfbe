# initech's inputs to the `gpu-pools` stack of the `environment` release. The cluster, role and subnets come from the `cluster` and `network` stacks.
customer_id  = "initech"
account_id   = "444455556666"
region       = "eu-west-1"
gpu_families = ["h100"]
