# One customer managed key for the cluster's secrets at rest: the snapshot
# bucket (SSE-KMS, eco writes with snapshot.s3.encryption = "aws:kms") and
# the gossip key's SSM parameter. A customer managed key, not aws/s3: access
# to the snapshots then needs both S3 and KMS permissions, its use is in
# CloudTrail per key, and it can be disabled to cut every reader off at once.
resource "aws_kms_key" "eco" {
  description = "eco cluster ${var.name}: snapshots in s3://${local.bucket_name} and the gossip key parameter"

  # Yearly automatic rotation: old key material stays available to decrypt
  # older snapshots, nothing to re-encrypt.
  enable_key_rotation = true

  # A key scheduled for deletion can be restored during this window; once
  # deleted, every snapshot encrypted with it is lost.
  deletion_window_in_days = 30

  # The key policy: the account's root administers the key and delegates
  # its use to IAM, nothing broader. Who may encrypt and decrypt is then
  # decided by IAM policies only (the instances': iam.tf), as for any other
  # resource of the account: no principal outside the account, no wildcard
  # principal, no grant to a service. Written here rather than as an
  # aws_iam_policy_document: it is a key policy, where "Resource": "*"
  # means this key (checkov judges it as one here, not as an identity
  # policy granting kms:* on everything).
  policy = jsonencode({
    Version = "2012-10-17"
    Statement = [
      {
        Sid       = "AccountRootAdministersTheKeyAndDelegatesToIAM"
        Effect    = "Allow"
        Principal = { AWS = local.account_root_arn }
        Action    = "kms:*"
        Resource  = "*"
      },
    ]
  })

  tags = local.tags
}

resource "aws_kms_alias" "eco" {
  name          = "alias/${var.name}-eco"
  target_key_id = aws_kms_key.eco.key_id
}
