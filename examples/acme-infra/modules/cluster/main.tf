# A Kubernetes cluster (EKS): its IAM roles (iam.tf), the control plane and a system
# node group (eks.tf).

data "aws_partition" "current" {}

locals {
  policy_prefix = "arn:${data.aws_partition.current.partition}:iam::aws:policy"
}
