#!/usr/bin/env bash
# Validates the Helm chart chart/ without a Kubernetes API server (none can
# run on the build machine): helm lint and helm template over every value
# set of chart/ci/, every rendered object checked against Kubernetes' API
# schemas of several versions (kubernetes-validate --strict), the Prometheus
# Operator's kinds against scripts/chart-crd-schemas.json, the bad value sets
# of chart/ci-bad/ refused (by values.schema.json or a template's `fail`)
# with their message, the gossip Secret the same at every render (nothing
# random at render time: GitOps tools render without a cluster), and what
# the chart promises (scripts/check-chart.py invariants).
#
# Writes under target/chart/: <valueset>/manifests.yaml (helm template's
# output), core.yaml and crds.yaml (the same, split), eco.toml (the rendered
# config, for `eco config check`).
#
# One line per check; exit status 1 when any check failed.
# Tools: scripts/install-chart-tools.sh (called here when missing).
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)

helm="$root/.tools/helm/helm"
venv="$root/.tools/chart-venv"
if [ ! -x "$helm" ] || [ ! -x "$venv/bin/kubernetes-validate" ]; then
  bash scripts/install-chart-tools.sh
fi
py="$venv/bin/python"
helper="$root/scripts/check-chart.py"
chart="$root/chart"
out="$root/target/chart"
# Versions of Kubernetes every object is validated against (bundled by
# kubernetes-validate; the chart's kubeVersion is >= 1.29).
kube_versions=(1.29.0 1.31.0 1.33.0)
release=eco
namespace=eco-test

# helm keeps its cache and config here, not in $HOME.
export HELM_CACHE_HOME="$out/.helm/cache" HELM_CONFIG_HOME="$out/.helm/config" HELM_DATA_HOME="$out/.helm/data"
rm -rf "$out"
mkdir -p "$out" "$HELM_CACHE_HOME" "$HELM_CONFIG_HOME" "$HELM_DATA_HOME"

started=$(date +%s%N)
failed=0
passed=0
log="$out/check.log"

# check NAME CMD...: runs CMD, prints one line; on failure also its output.
check() {
  local name=$1; shift
  local t0 t1 output
  t0=$(date +%s%N)
  if output=$("$@" 2>&1); then
    t1=$(date +%s%N)
    printf 'ok    %-62s %5dms\n' "$name" $(( (t1 - t0) / 1000000 ))
    passed=$((passed + 1))
  else
    t1=$(date +%s%N)
    printf 'FAIL  %-62s %5dms\n' "$name" $(( (t1 - t0) / 1000000 ))
    printf '%s\n' "$output" | sed 's/^/      /'
    failed=$((failed + 1))
  fi
  printf '== %s\n%s\n' "$name" "$output" >> "$log"
}

template() { "$helm" template "$release" "$chart" --namespace "$namespace" "$@"; }
# NOTES.txt is rendered by install, not by template: a client-side dry run
# (no cluster is contacted).
notes() { "$helm" install "$release" "$chart" --namespace "$namespace" --dry-run=client "$@"; }

sets=()
for f in "$chart"/ci/*.yaml; do sets+=("$(basename "$f" .yaml)"); done

# 1. helm lint --strict, each value set.
for s in "${sets[@]}"; do
  check "helm lint --strict ($s)" "$helm" lint --strict --quiet "$chart" -f "$chart/ci/$s.yaml"
done

# 2. helm template, each value set; split; eco.toml extracted and checked.
render() {
  local s=$1
  mkdir -p "$out/$s"
  template -f "$chart/ci/$s.yaml" > "$out/$s/manifests.yaml"
  "$py" "$helper" split "$out/$s/manifests.yaml" "$out/$s"
  # What NOTES.txt tells the user (tests/chart_config.rs checks its
  # commands against the image and eco's own CLI).
  notes -f "$chart/ci/$s.yaml" | sed -n '/^NOTES:$/,$p' > "$out/$s/NOTES.txt"
}
for s in "${sets[@]}"; do
  check "helm template + eco.toml -> target/chart/$s/eco.toml" render "$s"
done

# 3. Every object against Kubernetes' schemas, strictly, for each version.
#    kubernetes-validate only warns when it has no schema for a kind (exit
#    0): a WARN line is a failure here. The Prometheus Operator's kinds have
#    none and were split out into crds.yaml (step 4).
kube_validate() {
  local args=() v files=() s
  for v in "${kube_versions[@]}"; do args+=(-k "$v"); done
  for s in "${sets[@]}"; do files+=("$out/$s/core.yaml"); done
  local output rc=0
  output=$("$venv/bin/kubernetes-validate" --strict --quiet "${args[@]}" "${files[@]}" 2>&1) || rc=$?
  printf '%s\n' "$output"
  if [ $rc -ne 0 ] || grep -q '^WARN' <<<"$output"; then return 1; fi
  # Something was validated: count the objects.
  local n
  n=$(cat "${files[@]}" | grep -c '^kind: ' || true)
  echo "$n objects x ${#kube_versions[@]} versions"
  [ "$n" -gt 0 ]
}
check "kubernetes-validate --strict (${kube_versions[*]})" kube_validate

# 4. ServiceMonitor and PrometheusRule: strict subset schema, metric names.
crd_validate() {
  local files=() s
  for s in "${sets[@]}"; do files+=("$out/$s/crds.yaml"); done
  "$py" "$helper" crds "${files[@]}" | tee "$out/crds.txt"
  # The monitoring set must have produced both kinds: no vacuous pass.
  grep -q '1 PrometheusRule' "$out/crds.txt" && grep -q '1 ServiceMonitor' "$out/crds.txt"
}
check "ServiceMonitor, PrometheusRule (schema subset, metrics.rs names)" crd_validate

# 5. What the chart promises, on every rendered set.
for s in "${sets[@]}"; do
  check "invariants ($s)" "$py" "$helper" invariants "$out/$s/manifests.yaml"
done

# 6. Bad values: refused by values.schema.json, by lint and by template,
#    with the schema's message ("# expect: <phrase>" in each file). A file
#    with "# refused by: template" is refused by a template's `fail`, which
#    helm lint only logs (lint renders `fail` as a log line): template alone.
refused() {
  local f=$1 phrase output cmds
  phrase=$(sed -n 's/^# expect: //p' "$f")
  [ -n "$phrase" ] || { echo "$f has no '# expect: ' line"; return 1; }
  cmds=$(sed -n 's/^# refused by: //p' "$f")
  for cmd in ${cmds:-lint template}; do
    if [ $cmd = lint ]; then
      output=$("$helm" lint --strict "$chart" -f "$f" 2>&1) && { echo "helm lint accepted $f"; return 1; }
    else
      output=$(template -f "$f" 2>&1) && { echo "helm template accepted $f"; return 1; }
    fi
    grep -qF -- "$phrase" <<<"$output" || {
      printf 'helm %s refused %s without "%s":\n%s\n' "$cmd" "$f" "$phrase" "$output"
      return 1
    }
  done
  printf 'refused: %s\n' "$(grep -F -- "$phrase" <<<"$output" | head -1 | sed 's/^ *//')"
}
for f in "$chart"/ci-bad/*.yaml; do
  check "refused: ci-bad/$(basename "$f")" refused "$f"
done

# 7. NOTES: the even-replicas warning (and none when odd); the no-disruption
#    warning at 2 replicas; the etcdctl line with TLS flags.
base="$chart/ci/${sets[0]}.yaml"
notes_even() {
  local n
  n=$(notes -f "$base" --set replicas=4) || return 1
  grep -F 'WARNING: replicas is even (4)' <<<"$n"
}
notes_odd() {
  local n
  n=$(notes -f "$base" --set replicas=5) || return 1
  ! grep -F 'WARNING' <<<"$n" && grep -F 'etcdctl' <<<"$n" | grep -F -- '--cacert'
}
notes_two() {
  local n
  n=$(notes -f "$base" --set replicas=2) || return 1
  grep -F 'survives no disruption' <<<"$n"
}
check "NOTES warns on even replicas (4)" notes_even
check "NOTES: no warning at 5, etcdctl with --cacert/--cert/--key" notes_odd
check "NOTES warns that 2 replicas survive no disruption" notes_two

# 8. The PodDisruptionBudget follows the quorum; the replicas ConfigMap is
#    outside the config checksum (a resize rolls nothing), eco.toml inside.
field() { "$py" "$helper" get /dev/stdin "$@"; }
pdb() {
  local n want got
  for n in 1:1 2:1 3:1 4:1 5:2 7:3; do
    want=${n#*:}
    got=$(template -f "$base" --set replicas="${n%%:*}" | field PodDisruptionBudget "$release" spec.maxUnavailable)
    echo "replicas ${n%%:*}: maxUnavailable $got"
    [ "$got" = "$want" ] || { echo "expected $want"; return 1; }
  done
}
checksum() {
  local a b c
  a=$(template -f "$base" --set replicas=3 | field StatefulSet "$release" "spec.template.metadata.annotations.checksum/config")
  b=$(template -f "$base" --set replicas=5 | field StatefulSet "$release" "spec.template.metadata.annotations.checksum/config")
  c=$(template -f "$base" --set log.level=debug | field StatefulSet "$release" "spec.template.metadata.annotations.checksum/config")
  echo "replicas=3: $a"; echo "replicas=5: $b"; echo "log.level=debug: $c"
  [ -n "$a" ] && [ "$a" = "$b" ] && [ "$a" != "$c" ]
}
desired() {
  local m got
  m=$(template -f "$base" --set replicas=3 --set desiredReplicas=1) || return 1
  got=$(field ConfigMap "$release-replicas" data.replicas <<<"$m")
  echo "replicas=3 desiredReplicas=1: replicas file $got, StatefulSet $(field StatefulSet "$release" spec.replicas <<<"$m")"
  [ "$got" = 1 ] || return 1
  got=$(template -f "$base" --set replicas=3 | field ConfigMap "$release-replicas" data.replicas)
  echo "replicas=3: replicas file $got"
  [ "$got" = 3 ] || return 1
  m=$(template -f "$base" --set replicas=3 --set desiredReplicas=4 2>&1) && { echo "desiredReplicas above replicas accepted"; return 1; }
  grep -F 'desiredReplicas (4) is above replicas (3)' <<<"$m"
}
kube_version() {
  local v out
  for v in "${kube_versions[@]}"; do
    template -f "$base" --kube-version "$v" > /dev/null || { echo "refused on $v"; return 1; }
  done
  out=$(template -f "$base" --kube-version 1.28.0 2>&1) && { echo "accepted on 1.28"; return 1; }
  grep -F 'is incompatible with Kubernetes v1.28.0' <<<"$out"
}
# 9. The gossip Secret never changes by itself: GitOps tools (Argo CD,
#    Flux) render with `helm template`, which cannot read a Secret back,
#    so a key generated at render time would be a new key at every sync.
#    Each value set renders the Secret byte for byte the same twice (or
#    none: gossip.existingSecret); without keys the chart refuses, both
#    times, saying how to make the Secret.
gossip_secret() { awk '/^---/{p=0} /^# Source: eco\/templates\/secret-gossip.yaml/{p=1} p'; }
gossip_stable() {
  local s first second
  first="$out/gossip-first.yaml" second="$out/gossip-second.yaml"
  for s in "${sets[@]}"; do
    template -f "$chart/ci/$s.yaml" | gossip_secret > "$first" || return 1
    template -f "$chart/ci/$s.yaml" | gossip_secret > "$second" || return 1
    cmp "$first" "$second" || { echo "$s: two renders give two gossip Secrets"; diff "$first" "$second"; return 1; }
    if [ -s "$first" ]; then echo "$s: the same Secret at both renders"; else echo "$s: no Secret (gossip.existingSecret)"; fi
  done
  local bad="$chart/ci-bad/no-gossip-keys.yaml" i output
  for i in 1 2; do
    if output=$(template -f "$bad" 2>&1); then
      printf '%s\n' "$output" | gossip_secret > "$out/gossip-nokeys-$i.yaml"
      echo "no keys: render $i gave a gossip Secret instead of refusing"
    else
      grep -F 'kubectl -n eco-test create secret generic eco-gossip-keys' <<<"$output" | head -1 | sed 's/^ *//' || return 1
      grep -qF 'gossip.existingSecret=eco-gossip-keys' <<<"$output" || { echo "no keys: refused without naming gossip.existingSecret"; return 1; }
    fi
  done
  [ ! -e "$out/gossip-nokeys-1.yaml" ] || { cmp "$out/gossip-nokeys-1.yaml" "$out/gossip-nokeys-2.yaml"; return 1; }
}
check "Chart kubeVersion: ${kube_versions[*]} accepted, 1.28 refused" kube_version
check "PodDisruptionBudget maxUnavailable = floor((n-1)/2), min 1" pdb
check "desiredReplicas: the replicas file, never above replicas" desired
check "resize outside the config checksum, eco.toml inside" checksum
check "the gossip Secret is the same at every render; no keys: refused" gossip_stable

elapsed=$(( ($(date +%s%N) - started) / 1000000 ))
printf '\nchart checks: %d passed, %d failed in %d.%03ds (details: target/chart/check.log)\n' \
  "$passed" "$failed" $((elapsed / 1000)) $((elapsed % 1000))
[ "$failed" -eq 0 ]
