# Inputs of the eco module. Every value that can be wrong is validated here,
# at plan time, rather than discovered by an instance that cannot boot.
# Validations refer to their own variable only (Terraform >= 1.5); checks
# that need two inputs or an AWS lookup are preconditions next to the
# resource they protect (instances.tf, bucket.tf, load_balancer.tf).

# --- The cluster --------------------------------------------------------------

variable "name" {
  type        = string
  description = "The cluster's name: eco's cluster.name (part of the etcd cluster token and of every snapshot name; two clusters must never share it) and the stem of every AWS name here (the group is \"<name>-eco\"). 1-63 of a-z 0-9 '-', not starting or ending with '-'."

  validation {
    condition     = can(regex("^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$", var.name))
    error_message = "name must be 1-63 lowercase letters, digits or '-', not starting or ending with '-' (eco's cluster.name rule); got \"${var.name}\"."
  }
}

variable "cluster_size" {
  type        = number
  description = "Number of etcd members: the group's min, max and desired capacity. 1, 3, 5, 7 or 9. etcd needs a majority of its voters to write: an even size tolerates no more failures than the odd size below it (4 survives 1 loss, like 3) while adding a voter every write waits for, and more than 9 voters slow every write for no useful gain. 1 survives nothing (for tests only); 3 survives the loss of one instance or one zone; 5 survives two."
  default     = 3

  validation {
    condition     = contains([1, 3, 5, 7, 9], var.cluster_size)
    error_message = "cluster_size must be 1, 3, 5, 7 or 9 (an odd number of etcd voters): got ${var.cluster_size}."
  }
}

variable "vpc_id" {
  type        = string
  description = "The VPC of the subnets: where the security groups are created."

  validation {
    condition     = can(regex("^vpc-([0-9a-f]{8}|[0-9a-f]{17})$", var.vpc_id))
    error_message = "vpc_id must be a VPC id (vpc- and 8 or 17 hex digits)."
  }
}

variable "subnet_ids" {
  type        = list(string)
  description = "Private subnets of vpc_id the instances are launched in (and the load balancer, unless load_balancer_subnet_ids says otherwise). One per availability zone: three zones are recommended, so that the loss of a zone leaves a majority of 3 or 5 members. The instances get no public address: the subnets need a NAT gateway or VPC endpoints for S3, SSM, KMS, EC2 and Auto Scaling, and a way to the package URLs."

  validation {
    condition     = length(var.subnet_ids) >= 1 && length(distinct(var.subnet_ids)) == length(var.subnet_ids)
    error_message = "subnet_ids must hold at least one subnet, each once (three in three zones are recommended)."
  }
  validation {
    condition     = alltrue([for s in var.subnet_ids : can(regex("^subnet-([0-9a-f]{8}|[0-9a-f]{17})$", s))])
    error_message = "Every subnet_ids entry must be a subnet id (subnet- and 8 or 17 hex digits)."
  }
}

# --- The instances ------------------------------------------------------------

variable "instance_type" {
  type        = string
  description = "EC2 instance type of the members. It must match architecture (m6i.large is amd64; an arm64 group needs a Graviton type such as m7g.large); the plan checks it. etcd wants steady CPU and fast disk: avoid burstable (t*) types in production."
  default     = "m6i.large"

  validation {
    condition     = can(regex("^[a-z][a-z0-9-]*\\.[a-z0-9]+$", var.instance_type))
    error_message = "instance_type must look like an EC2 instance type (family.size, e.g. m6i.large)."
  }
}

variable "architecture" {
  type        = string
  description = "CPU architecture of the instances, in Debian's words: \"amd64\" or \"arm64\". Chooses the Debian image, the etcd release tarball and must match instance_type (and ami_id when given)."
  default     = "amd64"

  validation {
    condition     = contains(["amd64", "arm64"], var.architecture)
    error_message = "architecture must be \"amd64\" or \"arm64\"."
  }
}

variable "ami_id" {
  type        = string
  description = "AMI of the instances. null: the newest official Debian 12 image (owner 136693071363) for architecture, looked up at every plan, so an apply after Debian publishes a new image rolls the cluster (one instance at a time, through the termination hook). Pin an AMI here to decide when that happens. A custom image must be of the same architecture and able to run the user data (templates/user-data.sh.tftpl: a Debian 12 derivative is safest)."
  default     = null

  validation {
    condition     = var.ami_id == null || can(regex("^ami-([0-9a-f]{8}|[0-9a-f]{17})$", var.ami_id))
    error_message = "ami_id must be null or an AMI id (ami- and 8 or 17 hex digits)."
  }
}

variable "volume_size_gib" {
  type        = number
  description = "Size of each instance's root volume (gp3, encrypted), in GiB: the operating system, etcd's data directory and WAL, and room for a snapshot being streamed. Keep it several times etcd's quota (quota-backend-bytes)."
  default     = 50

  validation {
    condition     = var.volume_size_gib >= 16 && var.volume_size_gib <= 16384 && floor(var.volume_size_gib) == var.volume_size_gib
    error_message = "volume_size_gib must be a whole number of GiB from 16 to 16384 (gp3's maximum)."
  }
}

variable "key_name" {
  type        = string
  description = "EC2 key pair for SSH. null (the default): no key and no SSH rule. Set with ssh_cidr_blocks to open TCP 22 from those blocks only."
  default     = null

  validation {
    condition     = var.key_name == null || try(length(trimspace(var.key_name)) > 0, false)
    error_message = "key_name must be null or a key pair name (not empty)."
  }
}

variable "ssh_cidr_blocks" {
  type        = list(string)
  description = "CIDR blocks SSH (TCP 22) is allowed from, only when key_name is set. Never 0.0.0.0/0 or ::/0."
  default     = []

  validation {
    condition     = alltrue([for c in var.ssh_cidr_blocks : can(cidrhost(c, 0))])
    error_message = "Every ssh_cidr_blocks entry must be a CIDR block (e.g. 10.0.0.0/16)."
  }
  validation {
    condition     = alltrue([for c in var.ssh_cidr_blocks : !try(endswith(c, "/0"), false)])
    error_message = "ssh_cidr_blocks must not open SSH to the whole internet (a /0 block)."
  }
}

variable "leave_hook_timeout_seconds" {
  type        = number
  description = "Heartbeat timeout of the termination lifecycle hook eco-leave, in seconds (30 to 7200). eco heartbeats every half of it while it leaves, and none while it streams its final snapshot: choose it longer than one snapshot of the database takes to upload, and several provider.refresh_interval (10 s on AWS). 300 suits small databases; the default leaves room for a few GiB."
  default     = 600

  validation {
    condition     = var.leave_hook_timeout_seconds >= 30 && var.leave_hook_timeout_seconds <= 7200 && floor(var.leave_hook_timeout_seconds) == var.leave_hook_timeout_seconds
    error_message = "leave_hook_timeout_seconds must be a whole number of seconds from 30 (AWS's minimum) to 7200 (AWS's maximum)."
  }
}

variable "instance_warmup_seconds" {
  type        = number
  description = "Instance refresh warm-up: how long after a new instance is InService the refresh waits before it replaces the next one. It must cover the boot, the install, and the new member joining as a learner, catching up and being promoted: too short and a refresh takes the next member away while the new one is still a learner."
  default     = 300

  validation {
    condition     = var.instance_warmup_seconds >= 60 && var.instance_warmup_seconds <= 3600 && floor(var.instance_warmup_seconds) == var.instance_warmup_seconds
    error_message = "instance_warmup_seconds must be a whole number of seconds from 60 to 3600."
  }
}

# --- Software -----------------------------------------------------------------

variable "eco_package_url" {
  type        = string
  description = "HTTPS URL of eco's package for architecture, downloaded by every instance at boot and checked against eco_package_sha256."

  validation {
    condition     = can(regex("^https://[^[:space:]]+$", var.eco_package_url))
    error_message = "eco_package_url must be an https:// URL without spaces (a package fetched over plain HTTP could be swapped on the way; its sha256 is checked, but HTTPS is required all the same)."
  }
}

variable "eco_package_sha256" {
  type        = string
  description = "sha256 of the file at eco_package_url, 64 hex digits: an instance refuses a download that does not match."

  validation {
    condition     = can(regex("^[0-9a-f]{64}$", var.eco_package_sha256))
    error_message = "eco_package_sha256 must be 64 lowercase hex digits (sha256sum's output)."
  }
}

variable "etcd_version" {
  type        = string
  description = "etcd release the instances run, x.y.z without the leading v, 3.4 or newer: eco is tested on 3.4.23, 3.5.16 and 3.5.30; in production use 3.5.23 or newer (3.5.32 or newer before a later move to 3.6; 3.4 is end-of-life), see docs/operations.md (EcoEtcdVersionUnsafe). Give etcd_package_sha256 for this very release."

  validation {
    condition = can(regex("^[0-9]+\\.[0-9]+\\.[0-9]+$", var.etcd_version)) && try(
      tonumber(split(".", var.etcd_version)[0]) > 3 ||
      (tonumber(split(".", var.etcd_version)[0]) == 3 && tonumber(split(".", var.etcd_version)[1]) >= 4),
    false)
    error_message = "etcd_version must be x.y.z (no leading v), 3.4.0 or newer: got \"${var.etcd_version}\"."
  }
}

variable "etcd_package_url" {
  type        = string
  description = "HTTPS URL of the etcd release tarball. null: etcd's GitHub release, https://github.com/etcd-io/etcd/releases/download/v<etcd_version>/etcd-v<etcd_version>-linux-<architecture>.tar.gz. Set it to a mirror the instances can reach."
  default     = null

  validation {
    condition     = var.etcd_package_url == null || can(regex("^https://[^[:space:]]+$", var.etcd_package_url))
    error_message = "etcd_package_url must be null or an https:// URL without spaces."
  }
}

variable "etcd_package_sha256" {
  type        = string
  description = "sha256 of the etcd tarball (the release's SHA256SUMS line for etcd-v<version>-linux-<architecture>.tar.gz), 64 hex digits. It must match etcd_version and architecture."

  validation {
    condition     = can(regex("^[0-9a-f]{64}$", var.etcd_package_sha256))
    error_message = "etcd_package_sha256 must be 64 lowercase hex digits (sha256sum's output)."
  }
}

# --- Clients and monitoring ---------------------------------------------------

variable "client_cidr_blocks" {
  type        = list(string)
  description = "CIDR blocks (IPv4 or IPv6) of etcd's clients: TCP 2379 on the load balancer and on the members. Clients still need a certificate (or a user) etcd accepts."
  default     = []

  validation {
    condition     = alltrue([for c in var.client_cidr_blocks : can(cidrhost(c, 0))])
    error_message = "Every client_cidr_blocks entry must be a CIDR block (e.g. 10.0.0.0/16)."
  }
}

variable "client_security_group_ids" {
  type        = list(string)
  description = "Security groups of etcd's clients (in vpc_id or a peered VPC): TCP 2379 on the load balancer and on the members."
  default     = []

  validation {
    condition     = alltrue([for s in var.client_security_group_ids : can(regex("^sg-([0-9a-f]{8}|[0-9a-f]{17})$", s))])
    error_message = "Every client_security_group_ids entry must be a security group id (sg- and 8 or 17 hex digits)."
  }
}

variable "monitoring_cidr_blocks" {
  type        = list(string)
  description = "CIDR blocks (IPv4 or IPv6) allowed to eco's API on TCP 2390 (/metrics, /healthz, /readyz; `eco status` from elsewhere): Prometheus and operators."
  default     = []

  validation {
    condition     = alltrue([for c in var.monitoring_cidr_blocks : can(cidrhost(c, 0))])
    error_message = "Every monitoring_cidr_blocks entry must be a CIDR block (e.g. 10.0.0.0/16)."
  }
}

variable "monitoring_security_group_ids" {
  type        = list(string)
  description = "Security groups allowed to eco's API on TCP 2390 (/metrics, /healthz, /readyz): Prometheus and operators."
  default     = []

  validation {
    condition     = alltrue([for s in var.monitoring_security_group_ids : can(regex("^sg-([0-9a-f]{8}|[0-9a-f]{17})$", s))])
    error_message = "Every monitoring_security_group_ids entry must be a security group id (sg- and 8 or 17 hex digits)."
  }
}

# --- The load balancer --------------------------------------------------------

variable "load_balancer_internal" {
  type        = bool
  description = "true (the default): the network load balancer in front of TCP 2379 has private addresses only. false makes it internet-facing: then give public subnets in load_balancer_subnet_ids and restrict client_cidr_blocks."
  default     = true
}

variable "load_balancer_subnet_ids" {
  type        = list(string)
  description = "Subnets of the load balancer, one per zone of subnet_ids. null: subnet_ids. Needed only for an internet-facing load balancer (public subnets), the instances staying in subnet_ids."
  default     = null

  validation {
    condition     = var.load_balancer_subnet_ids == null || try(length(var.load_balancer_subnet_ids) >= 1 && alltrue([for s in var.load_balancer_subnet_ids : can(regex("^subnet-([0-9a-f]{8}|[0-9a-f]{17})$", s))]), false)
    error_message = "load_balancer_subnet_ids must be null or at least one subnet id (subnet- and 8 or 17 hex digits)."
  }
}

variable "load_balancer_deletion_protection" {
  type        = bool
  description = "Deletion protection of the load balancer (default true: a destroy or a replacement cannot take the clients' endpoint away by mistake). Set false, apply, then destroy."
  default     = true
}

# --- The snapshot store -------------------------------------------------------

variable "snapshot_prefix" {
  type        = string
  description = "eco's snapshot.s3.prefix: everything eco writes is under <snapshot_prefix>/<name>/ in the bucket. '/'-separated segments of A-Z a-z 0-9 - _ . + =, no segment empty or starting with '.', no leading or trailing '/'."
  default     = "eco"

  validation {
    condition     = length(var.snapshot_prefix) <= 256 && can(regex("^[A-Za-z0-9_+=-][A-Za-z0-9_.+=-]*(/[A-Za-z0-9_+=-][A-Za-z0-9_.+=-]*)*$", var.snapshot_prefix))
    error_message = "snapshot_prefix must be 1-256 bytes of '/'-separated segments of A-Z a-z 0-9 - _ . + =, no segment empty or starting with '.', no leading or trailing '/' (eco's snapshot.s3.prefix rule)."
  }
}

variable "bucket_name" {
  type        = string
  description = "Name of the snapshot bucket the module creates. null: \"<name>-eco-snapshots-<account id>\" (shortened with a hash when name is long)."
  default     = null

  validation {
    condition = var.bucket_name == null || try(
      can(regex("^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$", var.bucket_name)) &&
      !strcontains(var.bucket_name, "..") &&
      !can(regex("^[0-9]+\\.[0-9]+\\.[0-9]+\\.[0-9]+$", var.bucket_name)),
    false)
    error_message = "bucket_name must be null or an S3 bucket name: 3-63 of a-z 0-9 . -, starting and ending with a letter or digit, no '..', not an IP address."
  }
}

variable "noncurrent_version_expiration_days" {
  type        = number
  description = "Days after which a non-current version of an object (a snapshot retention deleted, a voters record replaced) is removed for good. Current objects never expire: eco's records under <prefix>/<name>/incarnations/ are the record of truth."
  default     = 30

  validation {
    condition     = var.noncurrent_version_expiration_days >= 1 && var.noncurrent_version_expiration_days <= 3650 && floor(var.noncurrent_version_expiration_days) == var.noncurrent_version_expiration_days
    error_message = "noncurrent_version_expiration_days must be a whole number of days from 1 to 3650."
  }
}

variable "access_log_bucket" {
  type        = string
  description = "Bucket that receives the snapshot bucket's server access logs (under <bucket>/ as prefix). null: no access logging. It must already allow the S3 logging service to write (a bucket policy for logging.s3.amazonaws.com)."
  default     = null

  validation {
    condition     = var.access_log_bucket == null || can(regex("^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$", var.access_log_bucket))
    error_message = "access_log_bucket must be null or an S3 bucket name."
  }
}

# --- The gossip key -----------------------------------------------------------

variable "gossip_key_parameter_name" {
  type        = string
  description = "Name of an existing SSM SecureString parameter holding eco's gossip keys (one per line, 64 hex digits each, as gossip.key_file). null (the default): the module creates /eco/<name>/gossip-keys with a random key. Set it to keep the key out of the Terraform state."
  default     = null

  validation {
    condition     = var.gossip_key_parameter_name == null || can(regex("^/?[A-Za-z0-9_.-]+(/[A-Za-z0-9_.-]+)*$", var.gossip_key_parameter_name))
    error_message = "gossip_key_parameter_name must be null or an SSM parameter name (A-Z a-z 0-9 _ . - separated by '/'), not an ARN."
  }
}

variable "gossip_key_kms_key_arn" {
  type        = string
  description = "ARN of the customer managed KMS key that encrypts the parameter named by gossip_key_parameter_name, when it is neither this module's key nor the AWS managed key aws/ssm: the instances get kms:Decrypt on it (through SSM only). null: this module's key."
  default     = null

  validation {
    condition     = var.gossip_key_kms_key_arn == null || can(regex("^arn:aws[a-z-]*:kms:[a-z0-9-]+:[0-9]{12}:key/[0-9a-f-]+$", var.gossip_key_kms_key_arn))
    error_message = "gossip_key_kms_key_arn must be null or a KMS key ARN (arn:aws:kms:REGION:ACCOUNT:key/ID; not an alias)."
  }
}

# --- Everything ---------------------------------------------------------------

variable "tags" {
  type        = map(string)
  description = "Tags on every resource that takes tags (the instances and their volumes included). The module adds \"eco:cluster\" = name."
  default     = {}

  validation {
    condition     = alltrue([for k in keys(var.tags) : !startswith(lower(k), "aws:")])
    error_message = "Tag keys starting with \"aws:\" are reserved by AWS."
  }
}
