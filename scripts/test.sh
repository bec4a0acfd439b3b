#!/usr/bin/env bash
# Every test and lint, in one build profile (dev), built once:
#   1. format check (cheap, first)
#   2. build every target once
#   3. clippy (-D warnings)
#   4. all tests (unit, table, simulation, integration on etcd 3.5)
#   5. the real-etcd integration tests again on etcd 3.4
#   6. a subset of the chaos matrix (simulations chaos) on real processes,
#      on the static provider, on the AWS provider (the local emulator),
#      and with TLS on etcd's surfaces plus etcd's authentication
#   7. a 3-minute monkey soak (random faults under the write ledger); the
#      30-minute soaks are `make soak`
set -euo pipefail
cd "$(dirname "$0")/.."

step() { printf '\n==> %s\n' "$*"; }
started=$(date +%s)

step "cargo fmt --check"
cargo fmt --all -- --check

step "build (dev profile, all targets)"
cargo build --workspace --all-targets --locked

step "clippy"
cargo clippy --workspace --all-targets -- -D warnings

step "tests (etcd 3.5)"
ECO_TEST_ETCD_VERSION=3.5 cargo test --workspace --all-targets

step "integration tests (etcd 3.4)"
# (TLS on 3.4: tests/tls_generated.rs, whose files take the same path as
# your own; the quorum-loss recovery over generated TLS runs on 3.5 only)
ECO_TEST_ETCD_VERSION=3.4 cargo test -p eco --test single_instance --test bad_input --test membership --test snapshots --test lifecycle --test resize --test formation --test wal --test quorum_loss --test leaving --test auth --test tls_generated --test tls_migration -- --skip over_generated_tls

step "chaos subset (real processes, the dev build of eco)"
./target/debug/simulations chaos --eco-bin target/debug/eco --out target/chaos-ci \
  --scenario kill-etcd-follower,wipe-one,wipe-majority,stop-wipe-all,partition-minority,leave-leader,restart-survivors

step "chaos subset on the AWS provider and S3 (the local AWS emulator)"
./target/debug/simulations chaos --provider aws --eco-bin target/debug/eco --out target/chaos-ci-aws \
  --scenario wipe-majority

step "chaos subset with TLS on etcd's surfaces and etcd's authentication (JWT)"
./target/debug/simulations chaos --tls --auth --eco-bin target/debug/eco --out target/chaos-ci-tls \
  --scenario wipe-majority

step "monkey soak, 3 minutes (real processes, the dev build of eco)"
./target/debug/simulations chaos --monkey --duration 3m --seed 1 --eco-bin target/debug/eco --out target/chaos-ci

printf '\n==> all tests passed in %ss\n' "$(( $(date +%s) - started ))"
