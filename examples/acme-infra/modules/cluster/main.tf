# A Kubernetes cluster's shape. The cluster itself is created by the platform's
# provider resources in production; this module computes and validates its settings.

locals {
  minor_version = tonumber(split(".", var.kubernetes_version)[1])
  endpoint      = "https://${var.name}.${var.region}.k8s.internal"
  node_subnets  = var.subnet_cidrs
}
