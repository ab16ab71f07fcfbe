customer_id          = "globex"
account_id           = "111122223333"
region               = "us-east-1"
vpc_cidr             = "10.40.0.0/16"
kubernetes_version   = "1.30"
gpu_families         = ["a100", "l4"]
control_plane_region = "us-east-1"
