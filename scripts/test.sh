#!/usr/bin/env bash
# Every test and lint, in one build profile (dev), built once:
#   1. format check, the floors (scripts/check-floors.py: the crates
#      point one way, no file imports from a file that imports it back,
#      and src/'s modules import only from their own floor or below) and
#      the Helm chart (cheap, first; the chart:
#      scripts/check-chart.sh, helm lint and template over chart/ci/,
#      kubernetes-validate --strict on 1.29/1.31/1.33, the bad value sets
#      refused; seconds, no cluster; eco.toml of each set in target/chart/)
#   1b. the Terraform module (scripts/check-terraform.sh: terraform fmt,
#      python-hcl2 parsing and the project's checks — variables typed,
#      described, validated; the IAM policy == docs/aws.md's — checkov with
#      zero failed checks, the templates rendered; ~20 s, no provider: those
#      cannot be downloaded here, so no terraform init/validate/plan of the
#      module itself)
#   2. build every target once
#   3. clippy (-D warnings)
#   4. the OCI image of the dev build (scripts/build-image.sh, built twice
#      to prove it reproducible, then scripts/check-image.sh: its config,
#      its files, its binaries run as 10001 on a read-only root); later
#      steps find it through
#        ECO_TEST_IMAGE      the OCI image layout, target/image-test/eco-oci
#        ECO_TEST_IMAGE_TAG  its tag (eco's version)
#      (tests/statefulset_pods.rs runs "pods" from it; `make image` builds
#      the release image, docs/image.md)
#   4b. the previous release of eco (the last line of scripts/releases),
#      built from the repository's history in a worktree with its own
#      target directory (scripts/build-release.sh; .tools/releases/), for
#      the mixed-version tests (tests/compat.rs: a rolling replacement to
#      this build and back, a quorum loss in a mixed cluster; the rest is
#      `make compat`)
#   5. all tests (unit, table, simulation, integration on etcd 3.5; among
#      them the Debian package and its systemd unit on a booted machine,
#      tests/debian_package.rs, and the Terraform module's user data run
#      there against the AWS emulator, tests/terraform_user_data.rs; the
#      metrics linted by promtool, the alert rules' promtool unit tests, and
#      a real Prometheus server firing and resolving an alert on a real
#      cluster: tests/metrics.rs, alert_rules.rs, prometheus_alerts.rs)
#   6. the real-etcd integration tests again on etcd 3.4
#   7. the CI tier of the chaos matrix (simulations chaos) on real
#      processes: three scenarios on the static provider, one on the AWS
#      provider (the local emulator), one with TLS on etcd's surfaces plus
#      etcd's authentication
#   8. a 3-minute monkey soak (random faults under the write ledger); the
#      30-minute soaks are `make soak`
set -euo pipefail
cd "$(dirname "$0")/.."
# cargo-nextest from .tools/ when scripts/install-deps.sh had to build it.
if [ -x .tools/nextest/bin/cargo-nextest ]; then
  export PATH="$PWD/.tools/nextest/bin:$PATH"
fi

started=$(date +%s)
# Each step says how long it took ("<== <step>: <seconds>s"), for the
# budget (docs/benchmarks.md, "The suite in CI").
step_name=""
step_started=$started
step_done() {
  [ -n "$step_name" ] && printf '<== %s: %ss\n' "$step_name" "$(( $(date +%s) - step_started ))"
  return 0
}
step() {
  step_done
  step_name="$*"
  step_started=$(date +%s)
  printf '\n==> %s\n' "$*"
}

step "cargo fmt --check"
cargo fmt --all -- --check

step "floors (crates one way, no file circle, src/ modules import only downward)"
python3 scripts/check-floors.py

step "Helm chart (helm lint/template, kubernetes-validate; no cluster)"
bash scripts/check-chart.sh

step "Terraform module (fmt, python-hcl2, policy, checkov; no provider)"
bash scripts/check-terraform.sh

step "build (dev profile, all targets)"
cargo build --workspace --all-targets --locked

step "clippy"
cargo clippy --workspace --all-targets -- -D warnings

step "OCI image of the dev build (reproducible, checked)"
ECO_TEST_IMAGE_TAG=$(./target/debug/eco version | sed -n '1s/^eco //p')
bash scripts/build-image.sh --eco target/debug/eco --out target/image-test --tag "$ECO_TEST_IMAGE_TAG" --check-reproducible
bash scripts/check-image.sh --image target/image-test/eco-oci --tag "$ECO_TEST_IMAGE_TAG" --etcd "$(bash scripts/install-etcd.sh --print-default)"
export ECO_TEST_IMAGE="$PWD/target/image-test/eco-oci" ECO_TEST_IMAGE_TAG

step "the previous release of eco, from the repository's history"
bash scripts/build-release.sh

# The tests run under cargo nextest (.config/nextest.toml): a process per
# test, the real-process tests several at once (their addresses claimed
# across processes, testkit::address_claim), the longest first; a JUnit
# file of every test's time, whose ten slowest are printed.
slowest() { python3 scripts/slowest-tests.py target/nextest/ci/junit.xml 10 | tee "target/nextest/slowest-$1.txt"; }

step "tests (etcd 3.5)"
ECO_TEST_ETCD_VERSION=3.5 cargo nextest run --workspace --all-targets --profile ci --no-fail-fast
slowest etcd-3.5

step "integration tests (etcd 3.4)"
# The tests where etcd's version matters (its flags and errors, learners,
# snapshots and restore with etcdctl, the WAL, quorum-loss replay, auth,
# TLS); formation, leaving and lifecycle, whose rules are eco's alone, run
# on 3.4 in `make integration-etcd34` (docs/benchmarks.md). TLS on 3.4:
# tests/tls_generated.rs, whose files take the same path as your own; the
# quorum-loss recovery over generated TLS runs on 3.5 only. Of the
# quorum-loss scenarios, the 3.4 pass keeps the two whose seeding goes
# through etcd's own tools (a survivor's WAL, a snapshot restored with
# etcdctl); the others' rules are eco's (`make integration-etcd34` runs
# them on 3.4). A planned stop on 3.4 (tests/rolling_restart.rs, three
# instances; five run on 3.5): etcd 3.4 stops and hands leadership over
# its own way, so the write gaps are measured on it too.
# (`--workspace`, as the pass above: `-p eco` resolves features anew and
# rebuilt eco and its dependencies, about 5 minutes on 2 cores.)
ECO_TEST_ETCD_VERSION=3.4 cargo nextest run --workspace --profile ci --no-fail-fast \
  -E 'binary(/^(single_instance|bad_input|membership|snapshots|archive|resize|wal|quorum_loss|auth|tls_generated|tls_migration|rolling_restart)$/) &
      not test(/over_generated_tls|five_instances_restarted|everything_killed_and_restarted|no_data_and_no_snapshot|three_of_five|all_stopped_wiped|a_second_loss_right_after_a_recovery/)'
slowest etcd-3.4

# The CI tier of the chaos matrix: a reseed (wipe-majority), a network
# partition (partition-minority) and a planned leave (leave-leader) on the
# static provider, the reseed again on AWS and with TLS and auth, and the
# monkey soak, whose seed-1 schedule also kills, wipes and restarts
# (stop-wipe-all, restart-survivors, wipe-one, kill-etcd-leader, zone-loss,
# scale-out/in, a store outage). The whole matrix is `make chaos` (results
# in docs/benchmarks.md); the scenarios left out here each have an
# integration test too (tests/lifecycle.rs, tests/quorum_loss.rs,
# tests/resize.rs).
step "chaos subset (real processes, the dev build of eco)"
./target/debug/simulations chaos --eco-bin target/debug/eco --out target/chaos-ci \
  --scenario wipe-majority,partition-minority,leave-leader

step "chaos subset on the AWS provider and S3 (the local AWS emulator)"
./target/debug/simulations chaos --provider aws --eco-bin target/debug/eco --out target/chaos-ci-aws \
  --scenario wipe-majority

step "chaos subset with TLS on etcd's surfaces and etcd's authentication (JWT)"
./target/debug/simulations chaos --tls --auth --eco-bin target/debug/eco --out target/chaos-ci-tls \
  --scenario wipe-majority

step "monkey soak, 3 minutes (real processes, the dev build of eco)"
./target/debug/simulations chaos --monkey --duration 3m --seed 1 --eco-bin target/debug/eco --out target/chaos-ci

step_done
printf '\n==> all tests passed in %ss\n' "$(( $(date +%s) - started ))"
