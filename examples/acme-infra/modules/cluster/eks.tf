# The EKS control plane, reachable from the nodes' subnets, and the system node group.

resource "aws_eks_cluster" "this" {
  name     = var.name
  version  = var.kubernetes_version
  role_arn = aws_iam_role.cluster.arn

  vpc_config {
    subnet_ids              = var.subnet_ids
    security_group_ids      = [var.security_group_id]
    endpoint_private_access = true
  }

  # EKS needs its role's policies while it creates and deletes the cluster.
  depends_on = [aws_iam_role_policy_attachment.cluster]
}

# The nodes' subnets reach the cluster's API.
resource "aws_security_group_rule" "api_from_nodes" {
  type              = "ingress"
  description       = "Kubernetes API from the node subnets"
  security_group_id = var.security_group_id
  from_port         = 443
  to_port           = 443
  protocol          = "tcp"
  cidr_blocks       = var.subnet_cidrs
}

resource "aws_eks_node_group" "system" {
  cluster_name    = aws_eks_cluster.this.name
  node_group_name = "system"
  node_role_arn   = aws_iam_role.node.arn
  subnet_ids      = var.subnet_ids
  instance_types  = [var.system_node_instance_type]

  scaling_config {
    desired_size = var.system_node_count
    min_size     = var.system_node_count
    max_size     = var.system_node_count
  }

  labels = {
    "node.acme.example/role" = "system"
  }

  depends_on = [aws_iam_role_policy_attachment.node]
}
