# The members: a launch template and the Auto Scaling group eco runs in
# (docs/aws.md). eco discovers its peers through the group, leaves through
# its termination hook, and reads the group's desired capacity as the
# cluster's size. eco never changes the group: resizing is cluster_size.

locals {
  # Instance refresh replaces one instance at a time: with n members, keep
  # n-1 healthy, i.e. floor(100 (n-1) / n) % (66 for 3, 80 for 5, 85 for 7,
  # 88 for 9). One member missing leaves a majority for any odd n >= 3; two
  # at once would lose quorum at n = 3. A single member cannot be kept while
  # it is replaced (0).
  refresh_min_healthy_percentage = var.cluster_size == 1 ? 0 : floor(100 * (var.cluster_size - 1) / var.cluster_size)
}

resource "aws_launch_template" "members" {
  name        = local.group_name
  description = "eco cluster ${var.name}: the etcd members"

  image_id      = local.ami.id
  instance_type = var.instance_type
  key_name      = var.key_name
  ebs_optimized = true

  # Every change here (image, type, user data: eco's config, versions) is a
  # new version, which the group's instance refresh rolls out below.
  update_default_version = true

  # eco's boot script and configuration. No secret in it: user data is
  # readable by anyone with ec2:DescribeInstanceAttribute and from the
  # instance metadata service; the gossip key comes from SSM at boot.
  user_data = base64encode(local.user_data)

  iam_instance_profile {
    arn = aws_iam_instance_profile.instance.arn
  }

  # No public address, whatever the subnets' default: members are reached
  # through the load balancer and the VPC; their way out is a NAT gateway
  # or VPC endpoints.
  network_interfaces {
    device_index                = 0
    associate_public_ip_address = false
    delete_on_termination       = true
    security_groups             = [aws_security_group.members.id]
  }

  # IMDSv2 only (docs/aws.md): eco's identity reads use a session token, and
  # so does the boot script. A hop limit of 1 keeps the metadata service,
  # and the instance role's credentials, out of reach of anything one
  # network hop away (a container on a bridge network, a forwarded
  # request); eco runs on the host and needs no more. No instance tags in
  # the metadata: eco does not read them.
  metadata_options {
    http_endpoint               = "enabled"
    http_tokens                 = "required"
    http_put_response_hop_limit = 1
    http_protocol_ipv6          = "disabled"
    instance_metadata_tags      = "disabled"
  }

  # Detailed (1-minute) CloudWatch metrics: a member's CPU or disk stall
  # shows within a minute, not five.
  monitoring {
    enabled = true
  }

  # The root volume holds etcd's data directory and WAL: gp3 (3000 IOPS and
  # 125 MiB/s baseline whatever the size), encrypted with the account's EBS
  # key (a customer managed key would need a grant to the Auto Scaling
  # service-linked role), gone with the instance: a replaced member rejoins
  # from its peers or the store, never from an old disk.
  block_device_mappings {
    device_name = local.ami.root_device_name

    ebs {
      volume_type           = "gp3"
      volume_size           = var.volume_size_gib
      encrypted             = true
      delete_on_termination = true
    }
  }

  tag_specifications {
    resource_type = "instance"
    tags          = merge(local.tags, { Name = local.group_name })
  }
  tag_specifications {
    resource_type = "volume"
    tags          = merge(local.tags, { Name = local.group_name })
  }
  tag_specifications {
    resource_type = "network-interface"
    tags          = merge(local.tags, { Name = local.group_name })
  }

  tags = local.tags

  lifecycle {
    precondition {
      condition     = contains(data.aws_ec2_instance_type.member.supported_architectures, local.ec2_architecture)
      error_message = "instance_type ${var.instance_type} does not support architecture ${var.architecture} (${local.ec2_architecture}): it supports ${join(", ", data.aws_ec2_instance_type.member.supported_architectures)}."
    }
    precondition {
      condition     = local.ami.architecture == local.ec2_architecture
      error_message = "The image ${local.ami.id} is ${local.ami.architecture}, not ${local.ec2_architecture} (architecture = \"${var.architecture}\")."
    }
    precondition {
      # EC2 refuses user data over 16 KiB (before base64).
      condition     = length(local.user_data) <= 16384
      error_message = "The user data is ${length(local.user_data)} bytes, over EC2's 16 KiB limit."
    }
  }
}

resource "aws_autoscaling_group" "members" {
  name                = local.group_name
  vpc_zone_identifier = var.subnet_ids

  # A fixed size: min = max = desired. eco reads the desired capacity as the
  # cluster's size; a resize is a change of cluster_size (one apply): a
  # scale-out adds learners one at a time and promotes them, a scale-in
  # goes through the termination hook, member by member.
  min_size         = var.cluster_size
  max_size         = var.cluster_size
  desired_capacity = var.cluster_size

  launch_template {
    id      = aws_launch_template.members.id
    version = aws_launch_template.members.latest_version
  }

  # EC2 status checks only, NEVER "ELB". eco's /readyz (the load balancer's
  # health check) says 503 while its instance is frozen, seeding or
  # leaving, i.e. while it takes part in a recovery: with ELB health checks
  # the group would terminate exactly the instances a quorum-loss recovery
  # is waiting for, possibly the one holding the only copy of acknowledged
  # writes. The load balancer's health only decides where clients go.
  health_check_type         = "EC2"
  health_check_grace_period = 300

  target_group_arns = [aws_lb_target_group.clients.arn]

  # The termination hook (docs/aws.md, "The termination lifecycle hook"):
  # the group holds a terminating instance in Terminating:Wait until eco
  # has taken its final snapshot when due, handed leadership away and seen
  # its member removed, then eco completes the action. eco heartbeats every
  # half heartbeat timeout and completes by itself after
  # provider.aws.leave_timeout (10 min) at the latest. CONTINUE: for a
  # termination the result does not matter (both terminate); CONTINUE is
  # what a timed-out hook does, the usual value.
  # Here, not as a separate resource only, so the hook is there before the
  # first instance launches; see aws_autoscaling_lifecycle_hook.leave below
  # for later changes.
  initial_lifecycle_hook {
    name                 = "eco-leave"
    lifecycle_transition = "autoscaling:EC2_INSTANCE_TERMINATING"
    heartbeat_timeout    = var.leave_hook_timeout_seconds
    default_result       = "CONTINUE"
  }

  # A new launch template version replaces the instances one at a time
  # (min_healthy_percentage above), each through the termination hook, the
  # next only instance_warmup seconds after its replacement is InService.
  # The refresh cannot see etcd: that warm-up is the only pause between two
  # members, so it must cover the new member's join. Terraform cancels a
  # refresh still running when it starts another; the instance being
  # terminated still leaves through the hook.
  instance_refresh {
    strategy = "Rolling"

    preferences {
      min_healthy_percentage = local.refresh_min_healthy_percentage
      # Terminate, then launch: never more instances in the group than
      # the desired capacity, which eco reads as the cluster's size.
      max_healthy_percentage = 100
      instance_warmup        = var.instance_warmup_seconds
      skip_matching          = false
    }
  }

  # On a scale-in (within the zone Auto Scaling balances first): instances
  # of an older launch template first, then the oldest, so a scale-in also
  # finishes an interrupted rollout.
  termination_policies = ["OldestLaunchTemplate", "OldestInstance"]

  # eco never protects instances from scale-in: a scale-in must be able to
  # pick any instance and go through the termination hook.
  protect_from_scale_in = false

  # Capacity rebalancing launches replacements ahead of Spot interruptions,
  # for a while more instances than the desired capacity eco reads as the
  # cluster's size, for churn eco did not ask for. The group is On-Demand:
  # keep it off.
  capacity_rebalance = false

  # Do not wait for the instances: when a wait times out on creation,
  # Terraform marks the group tainted and the next apply would REPLACE THE
  # WHOLE GROUP, every member at once. The instances' progress is the
  # group's activity history and eco's /readyz.
  wait_for_capacity_timeout = "0"

  # The group's own metrics in CloudWatch (free at 1-minute granularity):
  # what an alert on a stuck scale-in or refresh needs.
  metrics_granularity = "1Minute"
  enabled_metrics = [
    "GroupDesiredCapacity",
    "GroupInServiceInstances",
    "GroupPendingInstances",
    "GroupStandbyInstances",
    "GroupTerminatingInstances",
    "GroupTotalInstances",
  ]

  dynamic "tag" {
    for_each = merge(local.tags, { Name = local.group_name })

    content {
      key                 = tag.key
      value               = tag.value
      propagate_at_launch = true
    }
  }

  # The instances must not boot before their policies exist (the boot
  # script reads the gossip key, eco's start check writes to the bucket)
  # nor before the bucket is versioned and encrypted (the first incarnation
  # record is written within minutes).
  depends_on = [
    aws_iam_role_policy.eco,
    aws_iam_role_policy.bootstrap,
    aws_s3_bucket_versioning.snapshots,
    aws_s3_bucket_server_side_encryption_configuration.snapshots,
    aws_s3_bucket_policy.snapshots,
    aws_s3_bucket_public_access_block.snapshots,
  ]

  lifecycle {
    # The AWS provider REPLACES the group, every member at once, on any
    # change of initial_lifecycle_hook (hashicorp/terraform-provider-aws
    # pull request 34260, 5.x). It only matters at creation: changes to the
    # hook go through aws_autoscaling_lifecycle_hook.leave.
    ignore_changes = [initial_lifecycle_hook]
  }
}

# The same hook, managed on its own from the group's creation on, so that a
# new leave_hook_timeout_seconds updates the hook in place
# (PutLifecycleHook creates or replaces a hook by name). Keep both
# definitions identical.
resource "aws_autoscaling_lifecycle_hook" "leave" {
  name                   = "eco-leave"
  autoscaling_group_name = aws_autoscaling_group.members.name
  lifecycle_transition   = "autoscaling:EC2_INSTANCE_TERMINATING"
  heartbeat_timeout      = var.leave_hook_timeout_seconds
  default_result         = "CONTINUE"
}
