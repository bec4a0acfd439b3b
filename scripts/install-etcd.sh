#!/usr/bin/env bash
# Installs the etcd releases of scripts/etcd-versions side by side into
# .tools/etcd-<version>/bin (etcd, etcdctl, and etcdutl where the release has
# it), idempotently and without touching the system: Debian's etcd-server
# and etcd-client packages are downloaded with apt-get from the suite each
# release comes from — through a temporary source list that reuses the
# mirror this machine's own apt sources name (no address is written into the
# repository) — and unpacked with dpkg-deb -x.
#
# Also links .tools/etcd-<series>/bin (3.4, 3.5) to the series' default
# release, and .tools/etcd-default to the default release (the tests'
# ECO_TEST_ETCD_VERSION=3.5 and `make run` use these).
#
# Usage: scripts/install-etcd.sh [--print-default]
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
tools="$root/.tools"
versions="$root/scripts/etcd-versions"

log() { printf 'install-etcd: %s\n' "$*" >&2; }
die() { log "$*"; exit 1; }

# version suite role... per line, comments and blanks skipped.
entries() { sed -e 's/#.*//' -e '/^[[:space:]]*$/d' "$versions"; }

if [ "${1:-}" = --print-default ]; then
  entries | awk '/ default/ { print $1 }'
  exit 0
fi

mkdir -p "$tools"

# The Debian mirror this machine's apt sources use (deb822 .sources files,
# then one-line sources.list entries); security and update suites skipped.
mirror() {
  local uri=""
  for f in /etc/apt/sources.list.d/*.sources; do
    [ -e "$f" ] || continue
    uri=$(awk 'tolower($1) == "uris:" { for (i = 2; i <= NF; i++) print $i }' "$f" |
      grep -v -- '-security' | head -n 1)
    [ -n "$uri" ] && break
  done
  if [ -z "$uri" ]; then
    for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.list; do
      [ -e "$f" ] || continue
      uri=$(awk '$1 == "deb" { for (i = 2; i <= NF; i++) if ($i ~ /^(https?|file):/) { print $i; break } }' "$f" |
        grep -v -- '-security' | head -n 1)
      [ -n "$uri" ] && break
    done
  fi
  [ -n "$uri" ] || die "no Debian mirror found in /etc/apt/sources.list{,.d}: cannot download etcd"
  printf '%s\n' "$uri"
}

installed() { # version: the installed binaries answer with it
  local dir="$tools/etcd-$1/bin" out
  [ -x "$dir/etcd" ] && [ -x "$dir/etcdctl" ] || return 1
  out=$("$dir/etcd" --version 2>/dev/null) || return 1
  [ "$(printf '%s\n' "$out" | sed -n 1p)" = "etcd Version: $1" ]
}

missing=()
while read -r version suite _; do
  installed "$version" || missing+=("$version:$suite")
done < <(entries)

if [ ${#missing[@]} -gt 0 ]; then
  apt_dir="$tools/apt"
  rm -rf "$apt_dir"
  mkdir -p "$apt_dir/lists/partial" "$apt_dir/cache/archives/partial" "$apt_dir/parts" "$apt_dir/debs"
  uri=$(mirror)
  suites=$(printf '%s\n' "${missing[@]}" | cut -d: -f2 | sort -u | tr '\n' ' ')
  keyring=/usr/share/keyrings/debian-archive-keyring.gpg
  {
    printf 'Types: deb\nURIs: %s\nSuites: %s\nComponents: main\n' "$uri" "$suites"
    [ -e "$keyring" ] && printf 'Signed-By: %s\n' "$keyring"
  } > "$apt_dir/parts/etcd.sources"
  apt_opts=(
    -o "Dir::Etc::SourceList=/dev/null"
    -o "Dir::Etc::SourceParts=$apt_dir/parts"
    -o "Dir::State::Lists=$apt_dir/lists"
    -o "Dir::Cache=$apt_dir/cache"
    -o "Debug::NoLocking=true"
    -o "APT::Sandbox::User=root"
  )
  log "reading the package lists of $suites from $uri (into $apt_dir)"
  apt-get "${apt_opts[@]}" -qq update >/dev/null
  for entry in "${missing[@]}"; do
    version=${entry%%:*}
    suite=${entry##*:}
    dir="$tools/etcd-$version"
    for pkg in etcd-server etcd-client; do
      # The suite's package of this upstream version (any Debian revision).
      pv=$(apt-cache "${apt_opts[@]}" madison "$pkg" |
        awk -v v="$version" -v s="$suite" '$3 ~ "^"v"-" && $0 ~ " "s"/" { print $3; exit }')
      [ -n "$pv" ] || die "$suite no longer carries $pkg $version (scripts/etcd-versions pins it): pick a release it carries"
      (cd "$apt_dir/debs" && apt-get "${apt_opts[@]}" -qq download "$pkg=$pv" >/dev/null)
    done
    rm -rf "$dir"
    mkdir -p "$dir/unpacked" "$dir/bin"
    for deb in "$apt_dir"/debs/etcd-server_"$version"-*.deb "$apt_dir"/debs/etcd-client_"$version"-*.deb; do
      dpkg-deb -x "$deb" "$dir/unpacked"
    done
    for b in etcd etcdctl etcdutl; do
      [ -x "$dir/unpacked/usr/bin/$b" ] && ln -sf "../unpacked/usr/bin/$b" "$dir/bin/$b"
    done
    installed "$version" || die "etcd $version unpacked into $dir does not answer --version as $version"
    log "etcd $version ($suite) in $dir/bin"
  done
  rm -rf "$apt_dir"
fi

# The series' and the overall default releases (a directory left there by
# an earlier version of this script is a tool cache: replaced).
link() { # target name
  [ -L "$tools/$2" ] || rm -rf "${tools:?}/$2"
  ln -sfn "$1" "$tools/$2"
}
while read -r version _ roles; do
  for role in $roles; do
    case "$role" in
      series-default-*) link "etcd-$version" "etcd-${role#series-default-}" ;;
      default) link "etcd-$version" "etcd-default" ;;
    esac
  done
done < <(entries)

while read -r version _; do
  log "etcd-$version in $tools/etcd-$version/bin"
done < <(entries)
