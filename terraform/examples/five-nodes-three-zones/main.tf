# A 5-member eco cluster across three zones (2 + 2 + 1, as Auto Scaling
# balances them): it survives the loss of any two instances, or of any one
# zone (at most two members). On Graviton (arm64), with a pinned Debian
# image so that rollouts happen when the image variable changes, not when
# Debian publishes a new one, and an existing gossip key parameter so that
# the key is not in the Terraform state.

terraform {
  required_version = ">= 1.5"

  required_providers {
    aws = {
      source  = "hashicorp/aws"
      version = "~> 5.80"
    }
  }
}

provider "aws" {
  region = var.region
}

variable "region" {
  type        = string
  description = "AWS region of the cluster."
  default     = "us-east-1"
}

variable "vpc_id" {
  type        = string
  description = "VPC of the cluster, e.g. vpc-0123456789abcdef0."
}

variable "private_subnet_ids" {
  type        = list(string)
  description = "Three private subnets, one per availability zone."

  validation {
    condition     = length(var.private_subnet_ids) == 3
    error_message = "Give three private subnets, one per availability zone."
  }
}

variable "ami_id" {
  type        = string
  description = "A Debian 12 arm64 image (aws ec2 describe-images --owners 136693071363 --filters Name=name,Values='debian-12-arm64-*')."
}

variable "eco_package_url" {
  type        = string
  description = "HTTPS URL of eco's arm64 package."
}

variable "eco_package_sha256" {
  type        = string
  description = "sha256 of eco's package."
}

variable "etcd_package_url" {
  type        = string
  description = "HTTPS URL of etcd-v3.5.30-linux-arm64.tar.gz on a mirror the instances reach."
}

variable "etcd_package_sha256" {
  type        = string
  description = "sha256 of etcd-v3.5.30-linux-arm64.tar.gz."
}

variable "application_security_group_id" {
  type        = string
  description = "Security group of the applications that use etcd."
}

variable "prometheus_security_group_id" {
  type        = string
  description = "Security group of Prometheus, which scrapes eco's /metrics."
}

module "etcd" {
  source = "../.."

  name         = "orders"
  cluster_size = 5

  vpc_id     = var.vpc_id
  subnet_ids = var.private_subnet_ids

  instance_type   = "m7g.xlarge"
  architecture    = "arm64"
  ami_id          = var.ami_id
  volume_size_gib = 100

  eco_package_url     = var.eco_package_url
  eco_package_sha256  = var.eco_package_sha256
  etcd_version        = "3.5.30"
  etcd_package_url    = var.etcd_package_url
  etcd_package_sha256 = var.etcd_package_sha256

  client_security_group_ids     = [var.application_security_group_id]
  monitoring_security_group_ids = [var.prometheus_security_group_id]

  # Created beforehand, out of Terraform:
  #   aws ssm put-parameter --name /eco/orders/gossip-keys --type SecureString \
  #     --value "$(python3 -c 'import secrets; print(secrets.token_hex(32))')"
  gossip_key_parameter_name = "/eco/orders/gossip-keys"

  # A final snapshot of a large database takes longer to upload: the hook
  # waits up to 15 minutes between heartbeats.
  leave_hook_timeout_seconds = 900
  instance_warmup_seconds    = 600

  noncurrent_version_expiration_days = 90

  tags = {
    team        = "orders"
    environment = "production"
  }
}

output "client_endpoint" {
  description = "etcd's client endpoint (etcdctl --endpoints)."
  value       = module.etcd.client_endpoint
}

output "group_name" {
  description = "The Auto Scaling group of the members."
  value       = module.etcd.group_name
}

output "bucket" {
  description = "The snapshot bucket."
  value       = module.etcd.bucket
}

output "member_security_group_id" {
  description = "Security group of the members (admit it on VPC endpoints)."
  value       = module.etcd.member_security_group_id
}
