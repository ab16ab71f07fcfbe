# Object storage for model weights, named so that names never collide across accounts.
# The bucket itself is in bucket.tf.

locals {
  bucket_name = lower("${var.name_prefix}-models-${var.account_id}-${var.region}")
}
