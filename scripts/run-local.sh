#!/usr/bin/env bash
# Brings up the local cluster described in examples/local/: three eco
# instances on 127.0.0.11-13 with the standard ports, sharing a directory
# store, with TLS on etcd's client and peer ports from the cluster's own
# generated CA, and keeps it in the foreground. Ctrl-C stops everything cleanly
# (each eco stops its etcd first).
#
# The three start together with no cluster anywhere: over their sealed
# gossip they see that every instance is empty and the store holds no
# record, eco-1 (lowest id) seeds incarnation 1, the others join as learners
# one at a time and are promoted. Edit .run/local/group.toml while it runs
# to resize the cluster.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"

version=${ECO_ETCD_VERSION:-3.5}
bin="$root/.tools/etcd-$version/bin"
[ -x "$bin/etcd" ] || bash scripts/install-deps.sh
export PATH="$bin:$PATH"

cargo build --bin eco
eco="$root/target/debug/eco"

run=.run/local
mkdir -p "$run/store"
[ -f "$run/gossip.keys" ] || (umask 077; python3 -c 'import secrets; print(secrets.token_hex(32))' > "$run/gossip.keys")
chmod 600 "$run/gossip.keys"
cp examples/local/group.toml "$run/group.toml"
pids=()
cleanup() {
  trap - INT TERM EXIT
  if [ ${#pids[@]} -gt 0 ]; then
    echo; echo "stopping the local cluster..."
    kill -TERM "${pids[@]}" 2>/dev/null || true
    wait "${pids[@]}" 2>/dev/null || true
  fi
  echo "stopped. Data stays in $run (make clean-run removes it)."
}
trap cleanup INT TERM EXIT

ids=(); addresses=()
while read -r id address; do ids+=("$id"); addresses+=("$address"); done < <(
  awk '/^\[\[instance\]\]/ {id=""} /^id *=/ {gsub(/[" ]/,""); split($0,a,"="); id=a[2]}
       /^address *=/ {gsub(/[" ]/,""); split($0,a,"="); print id, a[2]}' examples/local/group.toml)

start() {  # $1 = index
  local id=${ids[$1]}
  "$eco" run --config "examples/local/$id.toml" 2>&1 | sed -u "s/^/[$id] /" &
  pids+=($!)
}

# Until the operator's certificate exists, the script talks to etcd with
# eco-1's own client certificate (made by eco-1 before its etcd starts).
tls=(--cacert "$run/eco-1/tls/ca.crt" --cert "$run/eco-1/tls/eco.crt" --key "$run/eco-1/tls/eco.key")
ctl() {
  "$bin/etcdctl" "${tls[@]}" --command-timeout=1s "$@"
}

healthy() {  # $1 = endpoints
  ctl --endpoints="$1" endpoint health >/dev/null 2>&1
}

voters() {
  ctl --endpoints="https://${addresses[0]}:2379" member list 2>/dev/null \
    | awk -F', ' '$2=="started" && $6=="false" {n++} END {print n+0}'
}

for i in "${!ids[@]}"; do start "$i"; done

endpoints=$(printf 'https://%s:2379,' "${addresses[@]}"); endpoints=${endpoints%,}
for _ in $(seq 1 200); do
  [ "$(voters)" = "${#ids[@]}" ] && healthy "$endpoints" && break
  sleep 0.3
done

# An operator's client certificate from the cluster's CA.
op="$run/operator"
"$eco" certs client --config examples/local/eco-1.toml --user operator --out "$op" --validity 30days >/dev/null
"$eco" certs client --config examples/local/eco-1.toml --user app --out "$op" --validity 30days >/dev/null
ctlop="$bin/etcdctl --endpoints=$endpoints --cacert $op/ca.crt --cert $op/operator.crt --key $op/operator.key"
ctlapp="$bin/etcdctl --endpoints=$endpoints --cacert $op/ca.crt --cert $op/app.crt --key $op/app.key"

cat <<MSG

==> the local cluster is up: ${#ids[@]} voters (etcd $version), TLS on etcd's
    client and peer ports from the cluster's own CA, client certificates
    required; etcd's authentication on, users by certificate CN
    (certificates of operator, root, and app, only /app/, are in $op)
    client endpoints: $endpoints
    try:    $ctlop put hello world
            $ctlop get hello
            $ctlop member list -w table
            $ctlapp put /app/greeting hi
            $ctlapp get hello        (refused: permission denied)
    status: $eco status --config examples/local/eco-1.toml
    resize: edit $run/group.toml
    Ctrl-C stops the cluster.

MSG
wait
