#!/usr/bin/env bash
# A newcomer's first `make run`, timed: a fresh clone of this repository at
# REV (default HEAD) in a temporary directory — no .tools, no target — runs
# `make run` until it prints that the local cluster is up (three voters),
# then is stopped with Ctrl-C (SIGINT to its process group) and removed.
# Prints one line: the revision, the seconds to three voters, and how long
# eco's build took of it (cargo's own "Finished" line).
#
#   bash scripts/bench-first-run.sh [REV] [--keep-log FILE]
#
# Cargo's download cache (~/.cargo/registry) is shared with this machine:
# crates are not downloaded again, every one is compiled. Uses the local
# cluster's loopback addresses (127.0.0.11-13): nothing else may hold them.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
rev=${1:-HEAD}
keep=
if [ "${2:-}" = --keep-log ]; then keep=${3:?--keep-log FILE}; fi
limit=${ECO_FIRST_RUN_LIMIT:-2400}

work=$(mktemp -d /var/tmp/eco-first-run.XXXXXX)
cleanup() {
  if [ -n "${pgid:-}" ]; then
    kill -INT -- "-$pgid" 2>/dev/null || true
    for _ in $(seq 1 60); do kill -0 -- "-$pgid" 2>/dev/null || break; sleep 1; done
    kill -KILL -- "-$pgid" 2>/dev/null || true
  fi
  if [ -n "$keep" ] && [ -f "$work/run.log" ]; then cp "$work/run.log" "$keep"; fi
  rm -rf "$work"
}
trap cleanup EXIT

git clone -q "$root" "$work/eco"
git -C "$work/eco" checkout -q "$(git -C "$root" rev-parse "$rev")"
start=$(date +%s.%N)
setsid bash -c 'cd "$1" && exec make run' _ "$work/eco" > "$work/run.log" 2>&1 &
pgid=$!
up=
mark() { awk -v s="$start" -v t="$(date +%s.%N)" 'BEGIN { printf "%.1f", t - s }'; }
while kill -0 "$pgid" 2>/dev/null; do
  if grep -q "the local cluster is up" "$work/run.log"; then up=$(mark); break; fi
  if awk -v s="$start" -v t="$(date +%s)" -v l="$limit" 'BEGIN { exit !(t - s > l) }'; then break; fi
  sleep 0.5
done
if [ -z "$up" ]; then
  echo "first run of $rev: no cluster within ${limit}s; the end of its output:" >&2
  tail -30 "$work/run.log" >&2
  exit 1
fi
build=$(grep -o 'Finished `dev` profile.* in .*' "$work/run.log" | tail -1 | sed 's/.* in //')
echo "first run of $(git -C "$root" rev-parse --short "$rev"): three voters after ${up} s (eco's build: ${build:-?})"
