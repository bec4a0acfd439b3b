# Two security groups: the members' and the load balancer's. Every rule is
# its own resource (aws_vpc_security_group_*_rule): one rule per source, each
# with a description, changed without touching the others.
#
# The members' ports (docs/aws.md, the intro):
#   2379/tcp  etcd's clients; eco itself asks every member's Status there
#   2380/tcp  etcd's peers
#   7946/udp  eco's gossip (sealed with the gossip key)
#   2390/tcp  eco's API: /metrics, /healthz, /readyz, `eco status`
#   22/tcp    SSH, only with key_name and from ssh_cidr_blocks

locals {
  # CIDR blocks may be IPv4 or IPv6: each rule takes one or the other.
  client_cidrs     = toset(var.client_cidr_blocks)
  monitoring_cidrs = toset(var.monitoring_cidr_blocks)
  ssh_cidrs        = var.key_name == null ? toset([]) : toset(var.ssh_cidr_blocks)
}

resource "aws_security_group" "members" {
  name        = "${local.group_name}-members"
  description = "eco cluster ${var.name}: the etcd members (instances of group ${local.group_name})"
  vpc_id      = var.vpc_id

  tags = merge(local.tags, { Name = "${local.group_name}-members" })
}

resource "aws_security_group" "load_balancer" {
  name        = "${local.group_name}-nlb"
  description = "eco cluster ${var.name}: the network load balancer in front of the etcd client port"
  vpc_id      = var.vpc_id

  tags = merge(local.tags, { Name = "${local.group_name}-nlb" })
}

# --- Members: etcd's client port 2379 -----------------------------------------

resource "aws_vpc_security_group_ingress_rule" "members_client_from_members" {
  security_group_id            = aws_security_group.members.id
  description                  = "etcd clients (2379) from the members: eco asks every member for its Status there"
  ip_protocol                  = "tcp"
  from_port                    = 2379
  to_port                      = 2379
  referenced_security_group_id = aws_security_group.members.id

  tags = local.tags
}

resource "aws_vpc_security_group_ingress_rule" "members_client_from_load_balancer" {
  security_group_id            = aws_security_group.members.id
  description                  = "etcd clients (2379) through the network load balancer"
  ip_protocol                  = "tcp"
  from_port                    = 2379
  to_port                      = 2379
  referenced_security_group_id = aws_security_group.load_balancer.id

  tags = local.tags
}

resource "aws_vpc_security_group_ingress_rule" "members_client_from_cidrs" {
  for_each = local.client_cidrs

  security_group_id = aws_security_group.members.id
  description       = "etcd clients (2379) directly from ${each.value} (client_cidr_blocks)"
  ip_protocol       = "tcp"
  from_port         = 2379
  to_port           = 2379
  cidr_ipv4         = strcontains(each.value, ":") ? null : each.value
  cidr_ipv6         = strcontains(each.value, ":") ? each.value : null

  tags = local.tags
}

resource "aws_vpc_security_group_ingress_rule" "members_client_from_groups" {
  for_each = toset(var.client_security_group_ids)

  security_group_id            = aws_security_group.members.id
  description                  = "etcd clients (2379) directly from ${each.value} (client_security_group_ids)"
  ip_protocol                  = "tcp"
  from_port                    = 2379
  to_port                      = 2379
  referenced_security_group_id = each.value

  tags = local.tags
}

# --- Members: between the members only ----------------------------------------

resource "aws_vpc_security_group_ingress_rule" "members_peer" {
  security_group_id            = aws_security_group.members.id
  description                  = "etcd peers (2380) between the members only"
  ip_protocol                  = "tcp"
  from_port                    = 2380
  to_port                      = 2380
  referenced_security_group_id = aws_security_group.members.id

  tags = local.tags
}

resource "aws_vpc_security_group_ingress_rule" "members_gossip" {
  security_group_id            = aws_security_group.members.id
  description                  = "eco gossip (7946/udp) between the members only"
  ip_protocol                  = "udp"
  from_port                    = 7946
  to_port                      = 7946
  referenced_security_group_id = aws_security_group.members.id

  tags = local.tags
}

# --- Members: eco's API 2390 ---------------------------------------------------

resource "aws_vpc_security_group_ingress_rule" "members_api_from_load_balancer" {
  security_group_id            = aws_security_group.members.id
  description                  = "eco API (2390): health checks of /readyz by the load balancer"
  ip_protocol                  = "tcp"
  from_port                    = 2390
  to_port                      = 2390
  referenced_security_group_id = aws_security_group.load_balancer.id

  tags = local.tags
}

resource "aws_vpc_security_group_ingress_rule" "members_api_from_cidrs" {
  for_each = local.monitoring_cidrs

  security_group_id = aws_security_group.members.id
  description       = "eco API (2390: /metrics, /healthz, /readyz, eco status) from ${each.value} (monitoring_cidr_blocks)"
  ip_protocol       = "tcp"
  from_port         = 2390
  to_port           = 2390
  cidr_ipv4         = strcontains(each.value, ":") ? null : each.value
  cidr_ipv6         = strcontains(each.value, ":") ? each.value : null

  tags = local.tags
}

resource "aws_vpc_security_group_ingress_rule" "members_api_from_groups" {
  for_each = toset(var.monitoring_security_group_ids)

  security_group_id            = aws_security_group.members.id
  description                  = "eco API (2390: /metrics, /healthz, /readyz, eco status) from ${each.value} (monitoring_security_group_ids)"
  ip_protocol                  = "tcp"
  from_port                    = 2390
  to_port                      = 2390
  referenced_security_group_id = each.value

  tags = local.tags
}

# --- Members: SSH, only with a key pair -----------------------------------------

resource "aws_vpc_security_group_ingress_rule" "members_ssh" {
  for_each = local.ssh_cidrs

  security_group_id = aws_security_group.members.id
  description       = "SSH (22) from ${each.value} (ssh_cidr_blocks; key pair ${var.key_name})"
  ip_protocol       = "tcp"
  from_port         = 22
  to_port           = 22
  cidr_ipv4         = strcontains(each.value, ":") ? null : each.value
  cidr_ipv6         = strcontains(each.value, ":") ? each.value : null

  tags = local.tags
}

# --- Members: egress -------------------------------------------------------------

# Everything out. What the instances reach, whose addresses are not known
# here: the S3, KMS, SSM, EC2 and Auto Scaling APIs (public endpoints, or VPC
# endpoints), the package URLs (eco, etcd) and Debian's mirrors (HTTP and
# HTTPS), the other members (2379, 2380, 7946/udp), and whatever DNS, NTP
# or proxy the VPC provides. Restricting egress belongs to the VPC (network
# ACLs, a firewall, endpoint policies), which knows those addresses.
resource "aws_vpc_security_group_egress_rule" "members_all_ipv4" {
  security_group_id = aws_security_group.members.id
  description       = "All IPv4 out: AWS APIs (S3, KMS, SSM, EC2, Auto Scaling), package downloads, the other members"
  ip_protocol       = "-1"
  cidr_ipv4         = "0.0.0.0/0"

  tags = local.tags
}

resource "aws_vpc_security_group_egress_rule" "members_all_ipv6" {
  security_group_id = aws_security_group.members.id
  description       = "All IPv6 out (only used in a dual-stack VPC): AWS APIs, package downloads, the other members"
  ip_protocol       = "-1"
  cidr_ipv6         = "::/0"

  tags = local.tags
}

# --- The load balancer -------------------------------------------------------------

resource "aws_vpc_security_group_ingress_rule" "load_balancer_client_from_cidrs" {
  for_each = local.client_cidrs

  security_group_id = aws_security_group.load_balancer.id
  description       = "etcd clients (2379) from ${each.value} (client_cidr_blocks)"
  ip_protocol       = "tcp"
  from_port         = 2379
  to_port           = 2379
  cidr_ipv4         = strcontains(each.value, ":") ? null : each.value
  cidr_ipv6         = strcontains(each.value, ":") ? each.value : null

  tags = local.tags
}

resource "aws_vpc_security_group_ingress_rule" "load_balancer_client_from_groups" {
  for_each = toset(var.client_security_group_ids)

  security_group_id            = aws_security_group.load_balancer.id
  description                  = "etcd clients (2379) from ${each.value} (client_security_group_ids)"
  ip_protocol                  = "tcp"
  from_port                    = 2379
  to_port                      = 2379
  referenced_security_group_id = each.value

  tags = local.tags
}

resource "aws_vpc_security_group_egress_rule" "load_balancer_to_members_client" {
  security_group_id            = aws_security_group.load_balancer.id
  description                  = "To the members etcd client port (2379): client connections"
  ip_protocol                  = "tcp"
  from_port                    = 2379
  to_port                      = 2379
  referenced_security_group_id = aws_security_group.members.id

  tags = local.tags
}

resource "aws_vpc_security_group_egress_rule" "load_balancer_to_members_api" {
  security_group_id            = aws_security_group.load_balancer.id
  description                  = "To the members eco API (2390): health checks of /readyz"
  ip_protocol                  = "tcp"
  from_port                    = 2390
  to_port                      = 2390
  referenced_security_group_id = aws_security_group.members.id

  tags = local.tags
}
