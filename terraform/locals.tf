locals {
  partition  = data.aws_partition.current.partition
  region     = data.aws_region.current.name
  account_id = data.aws_caller_identity.current.account_id

  # The Auto Scaling group's name. The IAM policy names the group, so the
  # name is fixed here rather than read from the group (which needs the
  # instance profile, which needs the policy).
  group_name = "${var.name}-eco"

  # AWS names with length limits shorter than name allows (63): the load
  # balancer and the target group (32), the IAM role (64), the bucket (63).
  # A name that does not fit is cut and suffixed with a hash of the whole
  # name, so two long cluster names never collide.
  name_hash     = substr(sha256(var.name), 0, 8)
  name_32       = length(local.group_name) <= 32 ? local.group_name : "${trimsuffix(substr(var.name, 0, 19), "-")}-${local.name_hash}-eco"
  name_64       = length(local.group_name) <= 64 ? local.group_name : "${trimsuffix(substr(var.name, 0, 51), "-")}-${local.name_hash}-eco"
  bucket_suffix = "-eco-snapshots-${local.account_id}"
  bucket_name = (
    var.bucket_name != null ? var.bucket_name :
    length(var.name) <= 36 ? "${var.name}${local.bucket_suffix}" :
    "${trimsuffix(substr(var.name, 0, 27), "-")}-${local.name_hash}${local.bucket_suffix}"
  )

  # Debian says amd64, EC2 says x86_64.
  ec2_architecture = var.architecture == "amd64" ? "x86_64" : "arm64"
  ami              = one(concat(data.aws_ami.pinned, data.aws_ami.debian))

  # The ARNs of the IAM policies (iam.tf), built the way docs/aws.md writes
  # them: scripts/check-terraform.py maps each part back to the doc's
  # placeholders (REGION, ACCOUNT, GROUP, BUCKET, PREFIX, CLUSTER, KEY-ID)
  # and compares the policy statement by statement.
  group_arn                = "arn:${local.partition}:autoscaling:${local.region}:${local.account_id}:autoScalingGroup:*:autoScalingGroupName/${local.group_name}"
  bucket_arn               = "arn:${local.partition}:s3:::${aws_s3_bucket.snapshots.bucket}"
  cluster_objects_prefix   = "${var.snapshot_prefix}/${var.name}"
  cluster_objects_arn      = "${local.bucket_arn}/${local.cluster_objects_prefix}/*"
  snapshot_key_arn         = "arn:${local.partition}:kms:${local.region}:${local.account_id}:key/${aws_kms_key.eco.key_id}"
  ssm_service_for_kms      = "ssm.${local.region}.${data.aws_partition.current.dns_suffix}"
  ec2_service_principal    = "ec2.${data.aws_partition.current.dns_suffix}"
  account_root_arn         = "arn:${local.partition}:iam::${local.account_id}:root"
  gossip_key_kms_key_arn   = coalesce(var.gossip_key_kms_key_arn, aws_kms_key.eco.arn)
  gossip_key_parameter_arn = "arn:${local.partition}:ssm:${local.region}:${local.account_id}:parameter/${trimprefix(local.gossip_key_parameter_name, "/")}"

  # The gossip key's parameter: the one given, else the one created
  # (gossip_key.tf). Referring to the resource makes the launch template,
  # and so every instance, wait for the parameter to exist.
  gossip_key_parameter_name = coalesce(var.gossip_key_parameter_name, one(aws_ssm_parameter.gossip_key[*].name))

  etcd_package_url = coalesce(
    var.etcd_package_url,
    "https://github.com/etcd-io/etcd/releases/download/v${var.etcd_version}/etcd-v${var.etcd_version}-linux-${var.architecture}.tar.gz",
  )

  tags = merge(var.tags, { "eco:cluster" = var.name })

  # eco's configuration and the instances' boot script: templates/ (the
  # config keys are eco's, documented in docs/configuration.md).
  eco_config = templatefile("${path.module}/templates/eco.toml.tftpl", {
    cluster_name = var.name
    region       = data.aws_region.current.name
    group_name   = local.group_name
    bucket       = aws_s3_bucket.snapshots.bucket
    prefix       = var.snapshot_prefix
    kms_key_arn  = aws_kms_key.eco.arn
    extra_names  = [aws_lb.clients.dns_name]
  })
  user_data = templatefile("${path.module}/templates/user-data.sh.tftpl", {
    region               = data.aws_region.current.name
    eco_package_url      = var.eco_package_url
    eco_package_sha256   = var.eco_package_sha256
    etcd_version         = var.etcd_version
    etcd_package_url     = local.etcd_package_url
    etcd_package_sha256  = var.etcd_package_sha256
    gossip_key_parameter = local.gossip_key_parameter_name
    eco_config           = local.eco_config
  })
}
