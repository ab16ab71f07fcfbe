output "bucket_name" {
  value       = local.bucket_name
  description = "The bucket's name."
}

output "retention_days" {
  value       = var.retention_days
  description = "Days superseded model versions are kept."
}

output "bucket_arn" {
  value       = aws_s3_bucket.this.arn
  description = "The bucket's ARN."
}
