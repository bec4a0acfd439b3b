#!/usr/bin/env bash
# Builds eco's Debian package, offline and reproducibly, with dpkg-deb.
#
#   scripts/build-deb.sh --eco PATH [--out DIR] [--version VERSION]
#                        [--keep-symbols]
#
#   --eco PATH       the eco binary to ship (`make deb` passes target/release/eco)
#   --out DIR        output directory (default target/deb)
#   --version V      the package version (default: eco's version, from
#                    `PATH version`, with '-' as '~')
#   --keep-symbols   strip only debug information (`strip --strip-debug`);
#                    default `strip --strip-all`
#
# Output: DIR/eco_VERSION_ARCH.deb (ARCH: `dpkg --print-architecture`), its
# path on stdout. What it holds (the files are in scripts/deb/):
#   /usr/bin/eco                          the binary, stripped
#   /lib/systemd/system/eco.service       the unit (Type=notify, hardened)
#   /usr/lib/sysusers.d/eco.conf          the system user eco
#   /etc/eco/eco.toml, /etc/eco/group.toml  conffiles: a cluster of one on
#                                         127.0.0.1, for trying eco
#   /usr/share/doc/eco/                   config.example.toml and the docs
# and the maintainer scripts: postinst makes the user and /var/lib/eco and
# never starts eco; prerm stops it on removal; postrm never deletes
# /var/lib/eco (etcd's data). etcd is not in the package: Recommends
# etcd-server (Debian's 3.4), or install etcd 3.5 as the Terraform module's
# user data does.
#
# Reproducible: every mtime is SOURCE_DATE_EPOCH (default: the commit time
# of the commit eco reports, else of HEAD), owners are root (dpkg-deb
# --root-owner-group), modes are set here.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
self="$root/scripts/$(basename "$0")"

log() { printf 'build-deb: %s\n' "$*" >&2; }
die() { log "error: $*"; exit 1; }
usage() { sed -n '2,/^set -euo/{/^set -euo/d;s/^# \{0,1\}//;p}' "$self" >&2; exit "${1:-2}"; }

eco_bin='' out="target/deb" version='' strip_mode='--strip-all'
while [ $# -gt 0 ]; do
  case "$1" in
    --eco) eco_bin=${2:?--eco needs a path}; shift 2 ;;
    --out) out=${2:?--out needs a directory}; shift 2 ;;
    --version) version=${2:?--version needs a value}; shift 2 ;;
    --keep-symbols) strip_mode='--strip-debug'; shift ;;
    -h | --help) usage 0 ;;
    *) log "unknown argument: $1"; usage ;;
  esac
done
[ -n "$eco_bin" ] || { log "--eco PATH is required"; usage; }
[ -x "$eco_bin" ] || die "not an executable: $eco_bin"
for tool in dpkg-deb dpkg strip objdump; do
  command -v "$tool" >/dev/null || die "$tool is missing (scripts/install-deps.sh installs it)"
done

eco_version_out=$("$eco_bin" version) || die "$eco_bin version failed"
if [ -z "$version" ]; then
  version=$(printf '%s\n' "$eco_version_out" | sed -n '1s/^eco //p' | tr - '~')
fi
[[ "$version" =~ ^[0-9][A-Za-z0-9.+~]*$ ]] || die "not a Debian version: $version"
short_commit=$(printf '%s\n' "$eco_version_out" | sed -n 's/^commit: //p')
if [ -z "${SOURCE_DATE_EPOCH:-}" ]; then
  SOURCE_DATE_EPOCH=$(git -C "$root" log -1 --format=%ct "$short_commit" 2>/dev/null \
    || git -C "$root" log -1 --format=%ct 2>/dev/null) \
    || die "SOURCE_DATE_EPOCH is not set and git cannot give a commit time"
fi
[[ "$SOURCE_DATE_EPOCH" =~ ^[0-9]+$ ]] || die "SOURCE_DATE_EPOCH must be seconds since the epoch: $SOURCE_DATE_EPOCH"
export SOURCE_DATE_EPOCH
arch=$(dpkg --print-architecture)

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
pkg="$work/eco"
src="$root/scripts/deb"

install -d -m 0755 "$pkg/DEBIAN" "$pkg/usr/bin" "$pkg/lib/systemd/system" \
  "$pkg/usr/lib/sysusers.d" "$pkg/etc/eco" "$pkg/usr/share/doc/eco"
install -m 0755 "$eco_bin" "$pkg/usr/bin/eco"
strip "$strip_mode" "$pkg/usr/bin/eco"
install -m 0644 "$src/eco.service" "$pkg/lib/systemd/system/eco.service"
install -m 0644 "$src/eco.sysusers" "$pkg/usr/lib/sysusers.d/eco.conf"
install -m 0644 "$src/eco.toml" "$pkg/etc/eco/eco.toml"
install -m 0644 "$src/group.toml" "$pkg/etc/eco/group.toml"
install -m 0644 "$root/config.example.toml" "$pkg/usr/share/doc/eco/config.example.toml"
for doc in aws.md configuration.md runbook.md security.md; do
  install -m 0644 "$root/docs/$doc" "$pkg/usr/share/doc/eco/$doc"
done
for script in postinst prerm postrm; do
  install -m 0755 "$src/$script" "$pkg/DEBIAN/$script"
done
printf '/etc/eco/eco.toml\n/etc/eco/group.toml\n' > "$pkg/DEBIAN/conffiles"
chmod 0644 "$pkg/DEBIAN/conffiles"

# The C library eco was linked against: the newest GLIBC_ symbol version
# it needs is the lowest libc6 it runs on.
glibc=$(objdump -T "$pkg/usr/bin/eco" | grep -o 'GLIBC_[0-9][0-9.]*' | sed 's/GLIBC_//' | sort -V | tail -1)
[ -n "$glibc" ] || die "cannot tell which C library $eco_bin needs"
installed_kib=$(du -sk --apparent-size "$pkg" | cut -f1)
cat > "$pkg/DEBIAN/control" <<EOF
Package: eco
Version: $version
Architecture: $arch
Maintainer: eco maintainers <eco@localhost>
Installed-Size: $installed_kib
Depends: libc6 (>= $glibc), adduser | systemd (>= 242)
Recommends: etcd-server
Section: database
Priority: optional
Description: etcd cloud operator: runs and repairs this machine's etcd member
 eco runs on every machine of a group (an auto-scaling group, a
 StatefulSet, a static list) in place of the etcd binary. It supervises
 the local etcd and, with its peers over its own gossip, keeps one etcd
 cluster alive: bootstrap, replacement of failed members, disaster
 recovery on quorum loss from the most advanced data, verified snapshots,
 resizing, TLS by default.
 .
 The package installs the eco.service unit and never starts it: configure
 /etc/eco/eco.toml first (commit $short_commit).
EOF
chmod 0644 "$pkg/DEBIAN/control"
find "$pkg" -exec touch --no-dereference --date="@$SOURCE_DATE_EPOCH" {} +

mkdir -p "$out"
deb="$out/eco_${version}_${arch}.deb"
dpkg-deb --root-owner-group -Zxz --build "$pkg" "$deb.tmp" >/dev/null
mv -f "$deb.tmp" "$deb"
log "built $deb ($(du -k "$deb" | cut -f1) KiB, libc6 >= $glibc, SOURCE_DATE_EPOCH=$SOURCE_DATE_EPOCH)"
printf '%s\n' "$deb"
