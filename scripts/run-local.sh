#!/usr/bin/env bash
# Brings up the local cluster described in examples/local/ (one eco per
# instance in group.toml, each on its own loopback address with the standard
# ports) and keeps it in the foreground. Ctrl-C stops everything cleanly:
# each eco stops its etcd first.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"

version=${ECO_ETCD_VERSION:-3.5}
bin="$root/.tools/etcd-$version/bin"
[ -x "$bin/etcd" ] || bash scripts/install-deps.sh
export PATH="$bin:$PATH"

cargo build --bin eco
eco="$root/target/debug/eco"

mkdir -p .run/local
pids=()
cleanup() {
  trap - INT TERM EXIT
  if [ ${#pids[@]} -gt 0 ]; then
    echo; echo "stopping the local cluster..."
    kill -TERM "${pids[@]}" 2>/dev/null || true
    wait "${pids[@]}" 2>/dev/null || true
  fi
  echo "stopped. Data stays in .run/local (make clean-run removes it)."
}
trap cleanup INT TERM EXIT

endpoints=()
addresses=()
for config in examples/local/eco-*.toml; do
  id=$(basename "$config" .toml)
  address=$(awk -v id="$id" '
    /^\[\[instance\]\]/ { cur="" }
    /^id *=/ { gsub(/[" ]/, "", $0); split($0, a, "="); cur=a[2] }
    /^address *=/ { gsub(/[" ]/, "", $0); split($0, a, "="); if (cur == id) print a[2] }
  ' examples/local/group.toml)
  [ -n "$address" ] || { echo "instance $id is not in examples/local/group.toml" >&2; exit 1; }
  "$eco" run --config "$config" 2>&1 | sed -u "s/^/[$id] /" &
  pids+=($!)
  endpoints+=("http://$address:2379")
  addresses+=("$address")
done

list=$(IFS=,; echo "${endpoints[*]}")
for _ in $(seq 1 100); do
  if "$bin/etcdctl" --endpoints="$list" --command-timeout=1s endpoint health >/dev/null 2>&1; then
    break
  fi
  sleep 0.3
done

cat <<MSG

==> the local cluster is up (etcd $version)
    client endpoints: $list
    try:   $bin/etcdctl --endpoints=$list put hello world
           $bin/etcdctl --endpoints=$list get hello
    status: curl -s http://${addresses[0]}:2390/status
    Ctrl-C stops the cluster.

MSG
wait
