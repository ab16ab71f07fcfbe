# One launch template and one EKS managed node group per GPU family. Pools keep at
# least one node (`min_size` >= 1) and grow to `max_nodes_per_pool`.

resource "aws_launch_template" "pool" {
  for_each = local.pools

  name                   = "${each.value.cluster}-gpu-${each.key}"
  description            = "GPU nodes (${each.key}) of ${each.value.cluster}"
  instance_type          = each.value.instance_type
  update_default_version = true

  block_device_mappings {
    device_name = "/dev/xvda"

    ebs {
      volume_size           = var.root_volume_gb
      volume_type           = "gp3"
      encrypted             = true
      delete_on_termination = true
    }
  }

  # Instance metadata only with a session token, reachable from pods (one more hop).
  metadata_options {
    http_endpoint               = "enabled"
    http_tokens                 = "required"
    http_put_response_hop_limit = 2
  }

  tag_specifications {
    resource_type = "instance"

    tags = {
      Name                         = "${each.value.cluster}-gpu-${each.key}"
      "node.acme.example/gpu-type" = each.key
    }
  }
}

resource "aws_eks_node_group" "pool" {
  for_each = local.pools

  cluster_name    = each.value.cluster
  node_group_name = "gpu-${each.key}"
  node_role_arn   = var.node_role_arn
  subnet_ids      = var.subnet_ids
  ami_type        = "AL2_x86_64_GPU"

  launch_template {
    id      = aws_launch_template.pool[each.key].id
    version = aws_launch_template.pool[each.key].latest_version
  }

  scaling_config {
    desired_size = 1
    min_size     = 1
    max_size     = each.value.max_nodes
  }

  # The cluster autoscaler sizes each pool between min and max once it exists: a plan
  # must not pull it back to 1.
  lifecycle {
    ignore_changes = [scaling_config[0].desired_size]
  }

  labels = {
    "node.acme.example/gpu-type" = each.key
    "node.acme.example/gpus"     = tostring(each.value.gpus_per_node)
  }
}
