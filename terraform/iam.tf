# The instances' identity: a role for EC2, its instance profile, and two
# inline policies:
#   - eco: exactly docs/aws.md's least-privilege policy, every action eco
#     calls and nothing else (scripts/check-terraform.py compares the two
#     statement by statement; tests/aws_policy.rs compares the doc with the
#     AWS SDK calls of the code);
#   - bootstrap: what the boot script needs besides: the gossip key.
# Inline policies live and die with the role: nothing else can attach them.

resource "aws_iam_role" "instance" {
  name               = local.name_64
  description        = "eco cluster ${var.name}: the instances of group ${local.group_name}"
  assume_role_policy = data.aws_iam_policy_document.assume_role.json

  tags = local.tags
}

data "aws_iam_policy_document" "assume_role" {
  statement {
    sid     = "EC2InstancesOfTheGroup"
    effect  = "Allow"
    actions = ["sts:AssumeRole"]

    principals {
      type        = "Service"
      identifiers = [local.ec2_service_principal]
    }
  }
}

resource "aws_iam_instance_profile" "instance" {
  name = local.name_64
  role = aws_iam_role.instance.name

  tags = local.tags
}

resource "aws_iam_role_policy" "eco" {
  name   = "eco"
  role   = aws_iam_role.instance.id
  policy = data.aws_iam_policy_document.eco.json
}

resource "aws_iam_role_policy" "bootstrap" {
  name   = "bootstrap"
  role   = aws_iam_role.instance.id
  policy = data.aws_iam_policy_document.bootstrap.json
}

# docs/aws.md, "The IAM policy (least privilege)", statement by statement:
# same Sids, same actions, the doc's placeholders replaced by this cluster's
# names. Change the doc and this together (scripts/check-terraform.py fails
# otherwise).
data "aws_iam_policy_document" "eco" {
  # DescribeAutoScalingInstances names this instance's group (not called
  # when provider.aws.group_name is set); DescribeAutoScalingGroups and
  # DescribeInstances are the group refresh; DescribeLifecycleHooks reads
  # the termination hook. None of them can be restricted to a resource.
  statement {
    sid    = "DiscoverTheGroup"
    effect = "Allow"
    actions = [
      "autoscaling:DescribeAutoScalingInstances",
      "autoscaling:DescribeAutoScalingGroups",
      "autoscaling:DescribeLifecycleHooks",
      "ec2:DescribeInstances",
    ]
    resources = ["*"]
  }

  # Leaving through the termination hook: this group only.
  statement {
    sid    = "LeaveThroughTheHook"
    effect = "Allow"
    actions = [
      "autoscaling:RecordLifecycleActionHeartbeat",
      "autoscaling:CompleteLifecycleAction",
    ]
    resources = [local.group_arn]
  }

  # Asking the group to replace this instance when its member stays
  # unusable (recovery.replace_unusable_after, off by default): this group
  # only.
  statement {
    sid       = "ReplaceAnUnusableInstance"
    effect    = "Allow"
    actions   = ["autoscaling:SetInstanceHealth"]
    resources = [local.group_arn]
  }

  # Listings under <prefix>/<cluster>/ only.
  statement {
    sid       = "ListTheClustersObjects"
    effect    = "Allow"
    actions   = ["s3:ListBucket"]
    resources = [local.bucket_arn]

    condition {
      test     = "StringLike"
      variable = "s3:prefix"
      values   = ["${local.cluster_objects_prefix}/*"]
    }
  }

  # The start check's sweep of unfinished uploads; s3:prefix cannot
  # restrict this action.
  statement {
    sid       = "SweepInterruptedUploads"
    effect    = "Allow"
    actions   = ["s3:ListBucketMultipartUploads"]
    resources = [local.bucket_arn]
  }

  # Snapshots, records, markers and probes: under <prefix>/<cluster>/ only.
  statement {
    sid    = "ReadWriteTheClustersObjects"
    effect = "Allow"
    actions = [
      "s3:GetObject",
      "s3:PutObject",
      "s3:DeleteObject",
      "s3:AbortMultipartUpload",
    ]
    resources = [local.cluster_objects_arn]
  }

  # SSE-KMS with the cluster's key (S3 calls KMS on eco's behalf).
  statement {
    sid       = "UseTheSnapshotKey"
    effect    = "Allow"
    actions   = ["kms:GenerateDataKey", "kms:Decrypt"]
    resources = [local.snapshot_key_arn]
  }
}

# What the boot script (templates/user-data.sh.tftpl) needs besides eco's
# policy: the gossip key from SSM Parameter Store, this parameter only, and
# its decryption through SSM only (kms:ViaService: the key cannot be used
# directly with this statement).
data "aws_iam_policy_document" "bootstrap" {
  statement {
    sid       = "ReadTheGossipKey"
    effect    = "Allow"
    actions   = ["ssm:GetParameter"]
    resources = [local.gossip_key_parameter_arn]
  }

  statement {
    sid       = "DecryptTheGossipKeyThroughSSM"
    effect    = "Allow"
    actions   = ["kms:Decrypt"]
    resources = [local.gossip_key_kms_key_arn]

    condition {
      test     = "StringEquals"
      variable = "kms:ViaService"
      values   = [local.ssm_service_for_kms]
    }
  }
}
