output "client_endpoint" {
  description = "etcd's client endpoint through the load balancer (etcdctl --endpoints). TLS end to end: the members' certificates name the load balancer's DNS name."
  value       = "https://${aws_lb.clients.dns_name}:2379"
}

output "load_balancer_dns_name" {
  description = "DNS name of the network load balancer in front of etcd's client port (for a CNAME or an alias record)."
  value       = aws_lb.clients.dns_name
}

output "group_name" {
  description = "Name of the Auto Scaling group: eco's provider.aws.group_name; resize by changing cluster_size, watch a rollout with `aws autoscaling describe-instance-refreshes`."
  value       = aws_autoscaling_group.members.name
}

output "bucket" {
  description = "The snapshot bucket (eco's snapshot.s3.bucket); eco's objects are under <snapshot_prefix>/<name>/."
  value       = aws_s3_bucket.snapshots.bucket
}

output "kms_key_arn" {
  description = "ARN of the customer managed KMS key of the snapshots and the gossip key parameter."
  value       = aws_kms_key.eco.arn
}

output "gossip_key_parameter_name" {
  description = "SSM parameter holding the gossip keys the instances read at boot (docs/runbook.md: rotating the gossip keys)."
  value       = local.gossip_key_parameter_name
}

output "member_security_group_id" {
  description = "Security group of the members: reference it to admit them elsewhere (VPC endpoints, a proxy)."
  value       = aws_security_group.members.id
}

output "load_balancer_security_group_id" {
  description = "Security group of the load balancer."
  value       = aws_security_group.load_balancer.id
}

output "instance_role_name" {
  description = "IAM role of the instances (policies eco and bootstrap inline): attach more policies to it here (e.g. AmazonSSMManagedInstanceCore for Session Manager)."
  value       = aws_iam_role.instance.name
}
