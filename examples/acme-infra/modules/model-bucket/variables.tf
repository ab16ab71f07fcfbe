variable "name_prefix" {
  type        = string
  description = "Prefix of the bucket name."
}

variable "account_id" {
  type        = string
  description = "The cloud account that owns the bucket."

  validation {
    condition     = can(regex("^[0-9]{12}$", var.account_id))
    error_message = "The account_id must be 12 digits."
  }
}

variable "region" {
  type        = string
  description = "Region of the bucket."
}

variable "retention_days" {
  type        = number
  default     = 90
  description = "Days to keep superseded model versions."
}
