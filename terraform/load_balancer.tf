# A network load balancer in front of etcd's client port: one stable
# endpoint (its DNS name is in the members' certificates, extra_names in
# locals.tf) for clients, whatever instances the group has today. TCP
# passes through: TLS is between the client and etcd, end to end; the load
# balancer holds no certificate and sees no request.

resource "aws_lb" "clients" {
  name               = local.name_32
  load_balancer_type = "network"
  internal           = var.load_balancer_internal
  subnets            = coalesce(var.load_balancer_subnet_ids, var.subnet_ids)
  security_groups    = [aws_security_group.load_balancer.id]

  # A client in one zone reaches the members of every zone: with 3 members
  # in 3 zones, each zone's load balancer node would otherwise only know the
  # one member of its zone, and lose every client of that zone with it.
  enable_cross_zone_load_balancing = true

  enable_deletion_protection = var.load_balancer_deletion_protection

  tags = local.tags

  lifecycle {
    precondition {
      condition     = !startswith(local.name_32, "internal-")
      error_message = "The load balancer would be named \"${local.name_32}\": AWS refuses names starting with \"internal-\"; choose another cluster name."
    }
  }
}

resource "aws_lb_target_group" "clients" {
  name        = local.name_32
  vpc_id      = var.vpc_id
  protocol    = "TCP"
  port        = 2379
  target_type = "instance"

  # The source address the members see is the load balancer's, not the
  # client's. With the client's (AWS's default for instance targets), a
  # client that is itself behind the same load balancer cannot connect to
  # itself through it, and the members' security group would have to admit
  # every client address; clients are identified by their certificates
  # anyway.
  preserve_client_ip = "false"

  # A member leaving (scale-in, instance refresh) is deregistered as soon as
  # its instance starts terminating, and the group waits for the
  # deregistration before the termination hook: 30 s, then its remaining
  # connections are closed (connection_termination) so that clients
  # reconnect to another member rather than talk to an etcd that is about
  # to stop. Short: the termination hook, which holds the instance while
  # eco leaves (final snapshot, leadership handed away, member removed),
  # only starts waiting after it.
  deregistration_delay   = 30
  connection_termination = true

  # Which members receive new connections: /readyz says 200 while this
  # instance's etcd serves as a healthy member, 503 while it is frozen,
  # seeding, or leaving. This only routes traffic: the group's health check
  # type is EC2 (instances.tf), so a 503 here never replaces an instance.
  # HTTPS because eco's API is served over TLS with the member certificate;
  # the load balancer does not verify certificates.
  health_check {
    enabled             = true
    protocol            = "HTTPS"
    port                = "2390"
    path                = "/readyz"
    matcher             = "200"
    interval            = 10
    timeout             = 5
    healthy_threshold   = 2
    unhealthy_threshold = 2
  }

  tags = local.tags
}

resource "aws_lb_listener" "clients" {
  load_balancer_arn = aws_lb.clients.arn
  protocol          = "TCP"
  port              = 2379

  default_action {
    type             = "forward"
    target_group_arn = aws_lb_target_group.clients.arn
  }

  tags = local.tags
}
