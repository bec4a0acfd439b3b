# A 3-member eco cluster, one member in each of three zones: it survives the
# loss of any one instance or zone. Apply with:
#
#   terraform init
#   terraform apply -var-file=cluster.tfvars
#
# where cluster.tfvars gives the VPC, three private subnets (one per zone)
# and the package URLs with their sha256.

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
  default     = "eu-west-1"
}

variable "vpc_id" {
  type        = string
  description = "VPC of the cluster, e.g. vpc-0123456789abcdef0."
}

variable "private_subnet_ids" {
  type        = list(string)
  description = "Three private subnets, one per availability zone, with a NAT gateway or VPC endpoints."

  validation {
    condition     = length(var.private_subnet_ids) == 3
    error_message = "Give three private subnets, one per availability zone."
  }
}

variable "eco_package_url" {
  type        = string
  description = "HTTPS URL of eco's amd64 package."
}

variable "eco_package_sha256" {
  type        = string
  description = "sha256 of eco's package."
}

variable "etcd_package_sha256" {
  type        = string
  description = "sha256 of etcd-v3.5.30-linux-amd64.tar.gz (from the release's SHA256SUMS)."
}

variable "client_cidr_blocks" {
  type        = list(string)
  description = "Networks of etcd's clients (the load balancer's port 2379)."
  default     = ["10.20.0.0/16"]
}

variable "monitoring_cidr_blocks" {
  type        = list(string)
  description = "Networks that scrape eco's /metrics (port 2390)."
  default     = ["10.99.0.0/24"]
}

variable "key_name" {
  type        = string
  description = "EC2 key pair for SSH to the members; null: no SSH."
  default     = null
}

variable "ssh_cidr_blocks" {
  type        = list(string)
  description = "Networks SSH (22) is open from, with key_name only."
  default     = []
}

module "etcd" {
  source = "../.."

  name         = "main"
  cluster_size = 3

  vpc_id     = var.vpc_id
  subnet_ids = var.private_subnet_ids

  instance_type = "m6i.large"
  architecture  = "amd64"

  eco_package_url     = var.eco_package_url
  eco_package_sha256  = var.eco_package_sha256
  etcd_version        = "3.5.30"
  etcd_package_sha256 = var.etcd_package_sha256

  # The application's network may reach etcd (TLS, with a client
  # certificate); Prometheus scrapes eco's /metrics from the monitoring
  # network.
  client_cidr_blocks     = var.client_cidr_blocks
  monitoring_cidr_blocks = var.monitoring_cidr_blocks

  # SSH to the members (eco certs client, eco status there): a key pair
  # and the networks it is open from; none by default.
  key_name        = var.key_name
  ssh_cidr_blocks = var.ssh_cidr_blocks

  tags = {
    team        = "platform"
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

output "gossip_key_parameter_name" {
  description = "The SSM parameter holding the gossip keys."
  value       = module.etcd.gossip_key_parameter_name
}
