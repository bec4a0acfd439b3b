terraform {
  # 1.5: strcontains(), startswith() and endswith() (in validations and in
  # the security group rules); nothing newer is needed. Validations refer
  # to their own variable only (cross-variable ones need 1.9).
  required_version = ">= 1.5"

  required_providers {
    aws = {
      source = "hashicorp/aws"
      # aws_vpc_security_group_{ingress,egress}_rule, security groups on a
      # network load balancer, aws_lb_target_group.connection_termination
      # and the launch template / Auto Scaling arguments used here.
      version = "~> 5.80"
    }
    random = {
      source  = "hashicorp/random"
      version = "~> 3.6"
    }
  }
}
