#!/usr/bin/env bash
# Builds eco's OCI image offline and reproducibly with umoci: no registry,
# no base image, no container engine.
#
#   scripts/build-image.sh --eco PATH [--out DIR] [--tag TAG] [--etcd VERSION]
#                          [--source URL] [--vendor NAME] [--keep-symbols]
#                          [--check-reproducible]
#
#   --eco PATH      the eco binary to ship (`make image` passes target/release/eco)
#   --out DIR       output directory (default target/image)
#   --tag TAG       image tag (default: eco's version, from `PATH version`,
#                   else Cargo.toml's)
#   --etcd VERSION  the etcd 3.5 release the image runs (default: the default
#                   of scripts/etcd-versions, 3.5.30; any 3.5 release
#                   scripts/install-etcd.sh installed, e.g. 3.5.16)
#   --source URL    org.opencontainers.image.source (default: the git remote
#                   "origin" without credentials, else "unknown")
#   --vendor NAME   org.opencontainers.image.vendor (default "eco")
#   --keep-symbols  strip only debug information from eco (`strip
#                   --strip-debug`: symbol names stay for backtraces, about
#                   2 MiB more compressed); default `strip --strip-all`
#   --check-reproducible
#                   build twice, into two temporary directories, and fail
#                   unless both manifest digests (and both archives) are
#                   identical; the first build then becomes the output
#
# Output:
#   DIR/eco-oci             an OCI image layout holding only TAG
#   DIR/eco-TAG.oci.tar     the same layout as a deterministic tar (an
#                           "oci-archive": `podman load <`, `skopeo copy oci-archive:`)
# and, on stdout, the manifest digest and the sizes.
#
# The image, from scratch, one layer (see docs/image.md):
#   /usr/bin/eco                      the given binary, stripped
#   /usr/lib/eco/etcd-3.5/bin/        etcd, etcdctl, etcdutl 3.5 (--etcd, default
#                                     3.5.30: Debian's, .tools/etcd-<version>)
#   /usr/lib/eco/etcd-3.4/bin/        etcd, etcdctl 3.4.23 (Debian's, .tools/etcd-3.4):
#                                     for a cluster rolled up from 3.4
#   /lib/..., /lib64/ld-linux-...     the shared libraries those need (ldd)
#   /etc/{passwd,group,nsswitch.conf,hosts,resolv.conf}, /etc/ssl/certs/ca-certificates.crt
#   /etc/eco/ (empty), /var/lib/eco (10001:10001, 0750), /tmp (1777)
# and nothing else: no shell, no package manager.
#
# Reproducible: every mtime, the config's `created` and the history are
# SOURCE_DATE_EPOCH (default: the commit time of the commit eco reports in
# `eco version`, else of git HEAD); owners and modes are set explicitly.
# The same inputs (eco binary, etcd binaries, the host's C library and CA
# bundle, umoci's version) give the same manifest digest.
#
# Needs root (the layer carries files owned by 10001, and the binaries are
# tried in a chroot of the image's root) and umoci, binutils (strip), ldd,
# python3, GNU tar: scripts/install-deps.sh installs them.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
self="$root/scripts/$(basename "$0")"

log() { printf 'build-image: %s\n' "$*" >&2; }
die() { log "error: $*"; exit 1; }
usage() { sed -n '2,/^set -euo/{/^set -euo/d;s/^# \{0,1\}//;p}' "$self" >&2; exit "${1:-2}"; }

eco_bin='' out="target/image" tag='' etcd_version='' source_url='' vendor='eco' strip_mode='--strip-all' check=0
while [ $# -gt 0 ]; do
  case "$1" in
    --eco) eco_bin=${2:?--eco needs a path}; shift 2 ;;
    --etcd) etcd_version=${2:?--etcd needs a version}; shift 2 ;;
    --out) out=${2:?--out needs a directory}; shift 2 ;;
    --tag) tag=${2:?--tag needs a value}; shift 2 ;;
    --source) source_url=${2:?--source needs a URL}; shift 2 ;;
    --vendor) vendor=${2:?--vendor needs a value}; shift 2 ;;
    --keep-symbols) strip_mode='--strip-debug'; shift ;;
    --check-reproducible) check=1; shift ;;
    -h|--help) usage 0 ;;
    *) log "unknown argument: $1"; usage ;;
  esac
done
[ -n "$eco_bin" ] || { log "--eco PATH is required"; usage; }
[ -x "$eco_bin" ] || die "$eco_bin: not an executable file"
eco_bin=$(realpath "$eco_bin")

[ "$(id -u)" = 0 ] || die "needs root: the layer holds files owned by 10001 and the binaries are tried in a chroot (run it with sudo)"
for tool in umoci strip ldd python3 tar gzip chroot sha256sum; do
  command -v "$tool" >/dev/null || die "$tool not found (scripts/install-deps.sh installs what is missing)"
done

[ -n "$etcd_version" ] || etcd_version=$(bash "$root/scripts/install-etcd.sh" --print-default)
[[ "$etcd_version" == 3.5.* ]] || die "--etcd $etcd_version: the image's etcd is a 3.5 release"
etcd35_dir="$root/.tools/etcd-$etcd_version/bin"
etcd34_dir="$root/.tools/etcd-3.4/bin"
for b in "$etcd35_dir"/{etcd,etcdctl,etcdutl} "$etcd34_dir"/{etcd,etcdctl}; do
  [ -x "$b" ] || die "$b missing (run scripts/install-deps.sh)"
done
ca_bundle=/etc/ssl/certs/ca-certificates.crt
[ -s "$ca_bundle" ] || die "$ca_bundle missing (Debian ca-certificates)"

# What eco says about itself.
eco_version_out=$("$eco_bin" version) || die "$eco_bin version failed"
version=$(printf '%s\n' "$eco_version_out" | sed -n '1s/^eco //p')
[ -n "$version" ] || version=$(sed -n '/^\[workspace.package\]/,/^\[/{s/^version = "\(.*\)"$/\1/p}' "$root/Cargo.toml" | head -1)
[ -n "$version" ] || die "cannot tell eco's version"
[ -n "$tag" ] || tag=$version
[[ "$tag" =~ ^[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}$ ]] || die "invalid tag: $tag"
short_commit=$(printf '%s\n' "$eco_version_out" | sed -n 's/^commit: //p')
commit=''
if [ -n "$short_commit" ] && [ "$short_commit" != unknown ]; then
  commit=$(git -C "$root" rev-parse -q --verify "$short_commit^{commit}" 2>/dev/null || true)
fi
if [ -z "$commit" ]; then
  [ -z "$short_commit" ] || [ "$short_commit" = unknown ] || log "eco's commit $short_commit is not in this repository: using HEAD"
  commit=$(git -C "$root" rev-parse -q --verify HEAD 2>/dev/null || echo "${short_commit:-unknown}")
fi
if [ -z "${SOURCE_DATE_EPOCH:-}" ]; then
  SOURCE_DATE_EPOCH=$(git -C "$root" log -1 --format=%ct "$commit" 2>/dev/null || git -C "$root" log -1 --format=%ct 2>/dev/null) \
    || die "SOURCE_DATE_EPOCH is not set and git cannot give a commit time"
fi
[[ "$SOURCE_DATE_EPOCH" =~ ^[0-9]+$ ]] || die "SOURCE_DATE_EPOCH must be seconds since the epoch: $SOURCE_DATE_EPOCH"
export SOURCE_DATE_EPOCH
created=$(date -u -d "@$SOURCE_DATE_EPOCH" +%Y-%m-%dT%H:%M:%SZ)
if [ -z "$source_url" ]; then
  source_url=$(git -C "$root" config --get remote.origin.url 2>/dev/null | sed -E 's#^([a-z+]+://)[^/@]*@#\1#' || true)
  [ -n "$source_url" ] || source_url=unknown
fi
description=$(sed -n '/^\[package\]/,/^\[/{s/^description = "\(.*\)"$/\1/p}' "$root/Cargo.toml" | head -1)
case "$(uname -m)" in
  x86_64) arch=amd64 ;;
  aarch64) arch=arm64 ;;
  *) die "unsupported machine $(uname -m)" ;;
esac

# Builds the image into $1 ($1/eco-oci, $1/eco-$tag.oci.tar); sets $digest.
build_into() {
  local dir=$1
  local layout="$dir/eco-oci" archive="$dir/eco-$tag.oci.tar" work="$dir/.work"
  mkdir -p "$dir"
  rm -rf "$layout" "$archive" "$work"
  mkdir -p "$work"

  umoci init --layout "$layout"
  umoci new --image "$layout:$tag"
  umoci unpack --image "$layout:$tag" "$work/bundle" >/dev/null
  local r="$work/bundle/rootfs"

  # The tree, with explicit modes (no umask in it).
  install -d -m 0755 "$r"/{etc/eco,etc/ssl/certs,usr/bin,usr/lib/eco/etcd-3.5/bin,usr/lib/eco/etcd-3.4/bin,var/lib}
  install -d -m 0750 "$r/var/lib/eco"
  install -d -m 1777 "$r/tmp"
  strip "$strip_mode" -o "$r/usr/bin/eco" "$eco_bin"
  chmod 0755 "$r/usr/bin/eco"
  local b
  for b in etcd etcdctl etcdutl; do
    install -m 0755 "$(realpath "$etcd35_dir/$b")" "$r/usr/lib/eco/etcd-3.5/bin/$b"
  done
  for b in etcd etcdctl; do
    install -m 0755 "$(realpath "$etcd34_dir/$b")" "$r/usr/lib/eco/etcd-3.4/bin/$b"
  done

  # The shared libraries of every dynamic binary, at the paths ldd gives
  # (the loader's own path among them); static ones have none.
  local f lib libs
  for f in "$r/usr/bin/eco" "$r"/usr/lib/eco/etcd-3.*/bin/*; do
    libs=$(ldd "$f" 2>/dev/null | awk '/=>/ { print $3; next } $1 ~ /^\// { print $1 }') || true
    for lib in $libs; do
      [ "${lib#/}" != "$lib" ] || die "$(basename "$f"): a library is not found: $(ldd "$f" | grep 'not found')"
      [ -e "$r$lib" ] && continue
      install -d -m 0755 "$r$(dirname "$lib")"
      install -m 0755 "$(realpath "$lib")" "$r$lib"
    done
  done

  # /etc: users, name service, CA bundle; hosts and resolv.conf empty (the
  # runtime mounts its own).
  printf '%s\n' 'root:x:0:0:root:/:/usr/sbin/nologin' 'eco:x:10001:10001:eco:/var/lib/eco:/usr/sbin/nologin' >"$r/etc/passwd"
  printf '%s\n' 'root:x:0:' 'eco:x:10001:' >"$r/etc/group"
  printf '%s\n' 'passwd: files' 'group: files' 'hosts: files dns' >"$r/etc/nsswitch.conf"
  : >"$r/etc/hosts"
  : >"$r/etc/resolv.conf"
  install -m 0644 "$ca_bundle" "$r/etc/ssl/certs/ca-certificates.crt"
  chmod 0644 "$r"/etc/{passwd,group,nsswitch.conf,hosts,resolv.conf}

  find "$r" -type d -exec chmod 0755 {} +
  chmod 1777 "$r/tmp"
  chmod 0750 "$r/var/lib/eco"
  chown -hR 0:0 "$r"
  chown 10001:10001 "$r/var/lib/eco"

  # Every binary runs in the image's root alone (a missing library shows
  # here, not in a cluster); the etcd versions are read from the image.
  chroot "$r" /usr/bin/eco version >/dev/null || die "/usr/bin/eco does not run in the image's root"
  local v35 v34
  v35=$(chroot "$r" /usr/lib/eco/etcd-3.5/bin/etcd --version | sed -n 's/^etcd Version: //p')
  v34=$(chroot "$r" /usr/lib/eco/etcd-3.4/bin/etcd --version | sed -n 's/^etcd Version: //p')
  for b in etcdctl etcdutl; do chroot "$r" "/usr/lib/eco/etcd-3.5/bin/$b" version >/dev/null || die "etcd-3.5 $b does not run in the image's root"; done
  chroot "$r" /usr/lib/eco/etcd-3.4/bin/etcdctl version >/dev/null || die "etcd-3.4 etcdctl does not run in the image's root"
  [[ "$v35" == 3.5.* && "$v34" == 3.4.* ]] || die "unexpected etcd versions: '$v35' '$v34'"
  etcd_versions="$v35 $v34"

  find "$r" -exec touch -h -d "@$SOURCE_DATE_EPOCH" {} +

  umoci repack --image "$layout:$tag" \
    --history.created "$created" \
    --history.created_by "scripts/build-image.sh: eco $version ($commit), etcd $etcd_versions" \
    "$work/bundle"

  local -a labels=(
    "org.opencontainers.image.title=eco"
    "org.opencontainers.image.description=$description"
    "org.opencontainers.image.version=$version"
    "org.opencontainers.image.revision=$commit"
    "org.opencontainers.image.created=$created"
    "org.opencontainers.image.source=$source_url"
    "org.opencontainers.image.licenses=Apache-2.0"
    "org.opencontainers.image.vendor=$vendor"
    "io.eco.etcd-versions=$etcd_versions"
    "io.eco.etcd-version=$v35"
  )
  local -a cfg=(
    --created "$created" --os linux --architecture "$arch"
    --config.entrypoint /usr/bin/eco --config.entrypoint run
    --config.user 10001:10001
    --config.env PATH=/usr/lib/eco/etcd-3.5/bin:/usr/bin
    --config.env ECO_CONFIG=/etc/eco/eco.toml
    --config.workingdir /var/lib/eco
    --config.volume /var/lib/eco
    --config.exposedports 2379/tcp --config.exposedports 2380/tcp
    --config.exposedports 2381/tcp --config.exposedports 2382/tcp --config.exposedports 2390/tcp
    --config.exposedports 7946/udp
    --config.stopsignal SIGTERM
  )
  local l
  for l in "${labels[@]}"; do cfg+=(--config.label "$l" --manifest.annotation "$l"); done
  umoci config --image "$layout:$tag" "${cfg[@]}" \
    --history.created "$created" --history.created_by "umoci config: entrypoint, user, env, ports, volume, labels"
  umoci gc --layout "$layout"
  rm -rf "$work"

  # The oci-archive: the layout as a tar, the same bytes for the same layout.
  chmod -R u=rwX,go=rX "$layout"
  tar --format=gnu --sort=name --mtime="@$SOURCE_DATE_EPOCH" --owner=0 --group=0 --numeric-owner \
    -C "$layout" -cf "$archive" blobs index.json oci-layout

  digest=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["manifests"][0]["digest"])' "$layout/index.json")
}

# Prints what was built in $1.
summary() {
  local dir=$1 layout="$1/eco-oci"
  python3 - "$layout" "$tag" "$dir/eco-$tag.oci.tar" <<'PY'
import gzip, json, os, sys
layout, tag, archive = sys.argv[1:]
blob = lambda d: os.path.join(layout, "blobs", *d.split(":"))
index = json.load(open(os.path.join(layout, "index.json")))
m = next(m for m in index["manifests"] if m.get("annotations", {}).get("org.opencontainers.image.ref.name") == tag)
manifest = json.load(open(blob(m["digest"])))
config = json.load(open(blob(manifest["config"]["digest"])))
compressed = sum(l["size"] for l in manifest["layers"])
unpacked = 0
for l in manifest["layers"]:
    with gzip.open(blob(l["digest"])) as f:
        while chunk := f.read(1 << 20):
            unpacked += len(chunk)
mib = lambda n: f"{n / 2**20:.1f} MiB ({n} bytes)"
print(f"image:        {layout}:{tag}")
print(f"manifest:     {m['digest']}")
print(f"layers:       {len(manifest['layers'])}, compressed {mib(compressed)}, uncompressed {mib(unpacked)}")
print(f"oci-archive:  {archive}, {mib(os.path.getsize(archive))}")
print(f"created:      {config['created']}")
print(f"etcd:         {config['config']['Labels']['io.eco.etcd-versions']}")
PY
}

started=$(date +%s)
log "eco $version ($commit), tag $tag, SOURCE_DATE_EPOCH=$SOURCE_DATE_EPOCH ($created), strip $strip_mode"
mkdir -p "$out"
out=$(realpath "$out")
# One copy of eco for every build here: a cargo build may replace the
# original meanwhile.
scratch=$(mktemp -d "$out/.build-image.XXXXXX")
trap 'rm -rf "$scratch"' EXIT
cp "$eco_bin" "$scratch/eco"
[ "$("$scratch/eco" version)" = "$eco_version_out" ] || die "$eco_bin changed while it was read"
eco_bin="$scratch/eco"
if [ $check = 1 ]; then
  repro="$scratch"
  build_into "$repro/a"; digest_a=$digest
  build_into "$repro/b"; digest_b=$digest
  sum_a=$(sha256sum <"$repro/a/eco-$tag.oci.tar" | cut -d' ' -f1)
  sum_b=$(sha256sum <"$repro/b/eco-$tag.oci.tar" | cut -d' ' -f1)
  if [ "$digest_a" != "$digest_b" ] || [ "$sum_a" != "$sum_b" ]; then
    log "NOT reproducible: manifests $digest_a vs $digest_b, archives sha256:$sum_a vs sha256:$sum_b"
    log "the two builds are kept in $repro"
    trap - EXIT
    exit 1
  fi
  log "reproducible: two builds gave manifest $digest_a and archive sha256:$sum_a"
  rm -rf "$out/eco-oci" "$out/eco-$tag.oci.tar"
  mv "$repro/a/eco-oci" "$repro/a/eco-$tag.oci.tar" "$out/"
else
  build_into "$out"
fi
summary "$out"
log "built in $(( $(date +%s) - started ))s"
