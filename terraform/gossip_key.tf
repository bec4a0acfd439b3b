# The gossip key: 256 bits that seal the gossip datagrams between the
# instances (gossip.key_file; groups of more than one instance need one).
# Every instance reads it from SSM Parameter Store at boot, with its
# instance profile (the bootstrap policy, iam.tf). It is never put in the
# user data, which anyone allowed ec2:DescribeInstanceAttribute can read.
#
# The generated key is in the Terraform state (random_id and the parameter
# both hold it): protect the state, or create the parameter yourself and
# give its name in gossip_key_parameter_name, in which case nothing here is
# created.

resource "random_id" "gossip_key" {
  count = var.gossip_key_parameter_name == null ? 1 : 0

  byte_length = 32
}

resource "aws_ssm_parameter" "gossip_key" {
  count = var.gossip_key_parameter_name == null ? 1 : 0

  name        = "/eco/${var.name}/gossip-keys"
  description = "eco cluster ${var.name}: gossip keys, one per line, 64 hex digits each; the first seals (docs/runbook.md, rotating the gossip keys)"
  type        = "SecureString"
  key_id      = aws_kms_key.eco.arn
  # The format of gossip.key_file: 64 hex digits, one key per line.
  value = "${random_id.gossip_key[0].hex}\n"

  tags = local.tags

  lifecycle {
    # After creation the parameter belongs to the operators: a key rotation
    # (a second line, then the new key first, then the old one removed) is
    # done on the parameter and must not be undone by the next apply.
    ignore_changes = [value]
  }
}
