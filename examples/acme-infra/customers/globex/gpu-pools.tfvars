# globex's inputs to the `gpu-pools` stack of the `environment` release. The cluster, role and subnets come from the `cluster` and `network` stacks.
customer_id  = "globex"
account_id   = "111122223333"
region       = "us-east-1"
gpu_families = ["a100", "l4"]
