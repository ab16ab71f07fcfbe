# GPU node pools: one per requested GPU family, sized from the family's defaults. Each
# pool is a launch template and an EKS managed node group (node-groups.tf).

locals {
  family_defaults = {
    a100 = { instance_type = "p4d.24xlarge", gpus_per_node = 8 }
    h100 = { instance_type = "p5.48xlarge", gpus_per_node = 8 }
    l4   = { instance_type = "g6.12xlarge", gpus_per_node = 4 }
    t4   = { instance_type = "g4dn.12xlarge", gpus_per_node = 4 }
  }

  pools = {
    for family in var.gpu_families : family => {
      instance_type = local.family_defaults[family].instance_type
      gpus_per_node = local.family_defaults[family].gpus_per_node
      max_nodes     = var.max_nodes_per_pool
      cluster       = var.cluster_name
    }
  }
}
