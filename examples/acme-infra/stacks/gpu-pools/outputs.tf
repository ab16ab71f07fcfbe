output "gpu_pools" {
  value       = module.gpu_pool.pools
  description = "GPU node pools by family."
}
