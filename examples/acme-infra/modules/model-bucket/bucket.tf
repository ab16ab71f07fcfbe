# The bucket: private, versioned, encrypted at rest; superseded versions of a model
# expire after `retention_days`.

resource "aws_s3_bucket" "this" {
  bucket = local.bucket_name
  acl    = "private"

  versioning {
    enabled = true
  }

  server_side_encryption_configuration {
    rule {
      apply_server_side_encryption_by_default {
        sse_algorithm = "AES256"
      }
    }
  }

  lifecycle_rule {
    id      = "superseded-versions"
    enabled = true

    noncurrent_version_expiration {
      days = var.retention_days
    }
  }

  tags = {
    Name = local.bucket_name
  }
}

resource "aws_s3_bucket_public_access_block" "this" {
  bucket = aws_s3_bucket.this.id

  block_public_acls       = true
  block_public_policy     = true
  ignore_public_acls      = true
  restrict_public_buckets = true
}
