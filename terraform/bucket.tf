# The snapshot bucket: eco's snapshots and its record of truth (docs/aws.md,
# "The S3 store"). eco never creates or configures the bucket; everything
# docs/aws.md recommends for it is set here.
resource "aws_s3_bucket" "snapshots" {
  bucket = local.bucket_name

  # Never let a destroy empty the bucket: the incarnation records and the
  # snapshots are what a lost cluster is recovered from.
  force_destroy = false

  tags = local.tags

  lifecycle {
    precondition {
      condition     = length(local.bucket_name) <= 63
      error_message = "The bucket name \"${local.bucket_name}\" is longer than 63 characters: give a shorter bucket_name."
    }
  }
}

# No ACLs: the bucket owner owns every object, access is decided by policies
# only.
resource "aws_s3_bucket_ownership_controls" "snapshots" {
  bucket = aws_s3_bucket.snapshots.id

  rule {
    object_ownership = "BucketOwnerEnforced"
  }
}

resource "aws_s3_bucket_public_access_block" "snapshots" {
  bucket = aws_s3_bucket.snapshots.id

  block_public_acls       = true
  block_public_policy     = true
  ignore_public_acls      = true
  restrict_public_buckets = true
}

# Versioning: a snapshot or record deleted or overwritten by mistake (or by a
# bug) stays recoverable as a non-current version for
# noncurrent_version_expiration_days.
resource "aws_s3_bucket_versioning" "snapshots" {
  bucket = aws_s3_bucket.snapshots.id

  versioning_configuration {
    status = "Enabled"
  }
}

# Default encryption with the cluster's key. eco also asks for SSE-KMS on
# every write (snapshot.s3.encryption); the default covers anything else.
# The S3 bucket key cuts KMS requests (and their cost and throttling) to one
# per bucket key lifetime instead of one per object or part.
resource "aws_s3_bucket_server_side_encryption_configuration" "snapshots" {
  bucket = aws_s3_bucket.snapshots.id

  rule {
    apply_server_side_encryption_by_default {
      sse_algorithm     = "aws:kms"
      kms_master_key_id = aws_kms_key.eco.arn
    }
    bucket_key_enabled = true
  }
}

# Lifecycle: clean up what versioning and interrupted uploads leave behind,
# and NOTHING ELSE. There is deliberately no expiration of current objects:
# eco's records under <prefix>/<cluster>/incarnations/ are the record of
# truth (eco never deletes them), and eco's retention alone decides which
# snapshots go. scripts/check-terraform.py refuses an expiration with days or
# a date.
resource "aws_s3_bucket_lifecycle_configuration" "snapshots" {
  bucket = aws_s3_bucket.snapshots.id

  # The rule needs versioning in place to mean anything.
  depends_on = [aws_s3_bucket_versioning.snapshots]

  rule {
    id     = "expire-noncurrent-versions"
    status = "Enabled"

    filter {}

    # A snapshot retention deleted, a voters record replaced: kept this long
    # as a non-current version, then removed for good.
    noncurrent_version_expiration {
      noncurrent_days = var.noncurrent_version_expiration_days
    }

    # Removes a delete marker once no non-current version is left behind it
    # (what a snapshot eco deleted leaves after the rule above). Never
    # touches a current object: it applies to delete markers only.
    expiration {
      expired_object_delete_marker = true
    }
  }

  rule {
    id     = "abort-incomplete-multipart-uploads"
    status = "Enabled"

    filter {}

    # eco aborts a failed upload itself and sweeps what a crash left once a
    # day old; this catches anything else (eco stopped for good, another
    # writer).
    abort_incomplete_multipart_upload {
      days_after_initiation = 7
    }
  }
}

# TLS only: any request over plain HTTP is denied, whoever makes it.
resource "aws_s3_bucket_policy" "snapshots" {
  bucket = aws_s3_bucket.snapshots.id
  policy = data.aws_iam_policy_document.bucket.json

  # Put the policy after the public access block: with it, S3 checks that
  # the policy grants no public access.
  depends_on = [aws_s3_bucket_public_access_block.snapshots]
}

data "aws_iam_policy_document" "bucket" {
  statement {
    sid     = "DenyInsecureTransport"
    effect  = "Deny"
    actions = ["s3:*"]
    resources = [
      aws_s3_bucket.snapshots.arn,
      "${aws_s3_bucket.snapshots.arn}/*",
    ]

    principals {
      type        = "*"
      identifiers = ["*"]
    }

    condition {
      test     = "Bool"
      variable = "aws:SecureTransport"
      values   = ["false"]
    }
  }
}

# Server access logging, when a log bucket is given.
resource "aws_s3_bucket_logging" "snapshots" {
  count = var.access_log_bucket == null ? 0 : 1

  bucket        = aws_s3_bucket.snapshots.id
  target_bucket = var.access_log_bucket
  target_prefix = "${local.bucket_name}/"
}
