customer_id          = "initech"
account_id           = "444455556666"
region               = "eu-west-1"
vpc_cidr             = "10.60.0.0/16"
kubernetes_version   = "1.29"
gpu_families         = ["h100"]
control_plane_region = "eu-central-1"
