# What the module reads from AWS: where it runs, and the image and instance
# type it launches (checked against var.architecture in instances.tf).

# aws, aws-cn or aws-us-gov: every ARN and service principal is built with it.
data "aws_partition" "current" {}

data "aws_region" "current" {}

data "aws_caller_identity" "current" {}

# The newest official Debian 12 image for var.architecture, unless ami_id
# pins one. 136693071363 is Debian's own AWS account (the images listed on
# wiki.debian.org/Cloud/AmazonEC2Image); "debian-12-<arch>-*" does not
# match its backports images ("debian-12-backports-<arch>-*").
data "aws_ami" "debian" {
  count = var.ami_id == null ? 1 : 0

  owners      = ["136693071363"]
  most_recent = true

  filter {
    name   = "name"
    values = ["debian-12-${var.architecture}-*"]
  }
  filter {
    name   = "architecture"
    values = [local.ec2_architecture]
  }
  filter {
    name   = "virtualization-type"
    values = ["hvm"]
  }
  filter {
    name   = "root-device-type"
    values = ["ebs"]
  }
}

# The pinned image, read for its architecture and root device name (the
# launch template's root volume must name the image's own root device, or
# the instance gets an extra empty volume and an unencrypted default root).
data "aws_ami" "pinned" {
  count = var.ami_id == null ? 0 : 1

  # A pinned image stays usable after its owner deprecates it.
  include_deprecated = true

  filter {
    name   = "image-id"
    values = [var.ami_id]
  }
}

# Which architectures var.instance_type supports (x86_64, arm64, ...).
data "aws_ec2_instance_type" "member" {
  instance_type = var.instance_type
}
