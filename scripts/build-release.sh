#!/usr/bin/env bash
# Builds a recorded release of eco from the repository's own history, for
# the mixed-version tests (`make compat`, and the short one in `make test`):
# the commit scripts/releases names for VERSION is checked out as a git
# worktree under .tools/releases/src-VERSION, built there with its own
# target directory (dev profile, the eco binary only), and the binary copied
# to .tools/releases/eco-VERSION. Idempotent: a binary that already answers
# `eco version` with the recorded commit is kept.
#
# Usage: scripts/build-release.sh [VERSION]   (default: the previous release,
#        the newest in scripts/releases older than the workspace's version)
#        scripts/build-release.sh --print-path [VERSION]
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
releases="$root/scripts/releases"
out="$root/.tools/releases"

log() { printf 'build-release: %s\n' "$*" >&2; }
die() { log "$*"; exit 1; }

print_path=""
if [ "${1:-}" = --print-path ]; then
  print_path=1
  shift
fi

# version commit per line, comments and blanks skipped.
entries() { sed -e 's/#.*//' -e '/^[[:space:]]*$/d' "$releases"; }
# The workspace's version ([workspace.package] in Cargo.toml).
current=$(sed -n '/^\[workspace\.package\]/,/^\[/ s/^version *= *"\([^"]*\)".*/\1/p' "$root/Cargo.toml" | head -n 1)
[ -n "$current" ] || die "no version in $root/Cargo.toml's [workspace.package]"
older() { [ "$1" != "$2" ] && [ "$(printf '%s\n%s\n' "$1" "$2" | sort -V | head -n 1)" = "$1" ]; }
previous=$(entries | awk '{ print $1 }' | while read -r v; do
  if older "$v" "$current"; then printf '%s\n' "$v"; fi
done | sort -V | tail -n 1)
version=${1:-$previous}
[ -n "$version" ] || die "scripts/releases lists no release older than $current"
commit=$(entries | awk -v v="$version" '$1 == v { print $2 }')
[ -n "$commit" ] || die "no release $version in $releases"
binary="$out/eco-$version"
if [ -n "$print_path" ]; then
  printf '%s\n' "$binary"
  exit 0
fi

short=${commit:0:12}
if [ -x "$binary" ] && "$binary" version 2>/dev/null | grep -q "$short"; then
  log "eco $version ($short) already built: $binary"
  exit 0
fi

git -C "$root" cat-file -e "$commit^{commit}" 2>/dev/null ||
  die "commit $commit of release $version is not in this clone's history (a shallow clone? git fetch --unshallow)"

src="$out/src-$version"
mkdir -p "$out"
if [ ! -e "$src/.git" ]; then
  git -C "$root" worktree prune
  rm -rf "$src"
  git -C "$root" worktree add --detach --force "$src" "$commit" >&2
fi
[ "$(git -C "$src" rev-parse HEAD)" = "$commit" ] || git -C "$src" checkout --detach --force "$commit" >&2

started=$SECONDS
log "building eco $version ($short) in $src (its own target directory)"
# No debug info and no incremental state: the binary is run, not debugged,
# and built once.
CARGO_TARGET_DIR="$out/target-$version" CARGO_PROFILE_DEV_DEBUG=0 CARGO_INCREMENTAL=0 cargo build --locked --quiet --bin eco --manifest-path "$src/Cargo.toml"
cp "$out/target-$version/debug/eco" "$binary.tmp"
mv "$binary.tmp" "$binary"
"$binary" version | grep -q "$short" || die "$binary does not report commit $short: $("$binary" version)"
log "eco $version ($short) built in $((SECONDS - started)) s: $binary"
