output "model_bucket" {
  value       = module.model_bucket.bucket_name
  description = "Bucket for model weights."
}
