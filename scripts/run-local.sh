#!/usr/bin/env bash
# `make run`: installs what is missing, builds eco, and hands over to
# scripts/run-local.py, which keeps the local cluster in the foreground:
# one eco per instance of .run/local/group.toml (three on 127.0.0.11-13 at
# first, from examples/local/group.toml), with the standard ports, a shared
# directory store, TLS on etcd's client and peer ports from the cluster's
# own generated CA, and etcd's authentication on. Ctrl-C stops everything
# cleanly (each eco stops its etcd first).
#
# The three start together with no cluster anywhere: over their sealed
# gossip they see that every instance is empty and the store holds no
# record, eco-1 (lowest id) seeds incarnation 1, the others join as learners
# one at a time and are promoted. eco's events go to the terminal; etcd's
# logs to .run/local/<id>/etcd.log. Adding or removing an [[instance]] in
# .run/local/group.toml while it runs starts or stops its eco.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"

version=${ECO_ETCD_VERSION:-3.5}
bin="$root/.tools/etcd-$version/bin"
# Only what a local cluster needs (protoc, etcd): the test toolchain is
# `make test`'s.
if [ ! -x "$bin/etcd" ] || ! command -v protoc >/dev/null; then
  bash scripts/install-deps.sh --run
fi
export PATH="$bin:$PATH"

cargo build --bin eco
exec python3 scripts/run-local.py --eco "$root/target/debug/eco" --etcd-bin "$bin" --etcd-version "$version"
