#!/usr/bin/env bash
# Checks an image built by scripts/build-image.sh, without a container
# engine:
#
#   scripts/check-image.sh --image LAYOUT [--tag TAG] [--etcd VERSION]
#
#   LAYOUT   an OCI image layout (e.g. target/image/eco-oci)
#   TAG      the tag to check (default: the layout's only tag)
#   VERSION  the etcd release the image must run (io.eco.etcd-version, the
#            etcd on its PATH); default: any 3.5 release
#
#   1. the config (parsed with Python, no jq): entrypoint ["/usr/bin/eco","run"],
#      user 10001:10001, env PATH and ECO_CONFIG, working directory and
#      volume /var/lib/eco, exposed ports, stop signal, one layer, the OCI
#      labels, io.eco.etcd-versions and io.eco.etcd-version;
#   2. the unpacked root (`umoci unpack`): exactly the expected paths (no
#      /bin/sh, no package manager, nothing else), their owners and modes,
#      every mtime equal to the image's creation time;
#   3. in that root, bind-mounted read-only, with a tmpfs on /tmp and a new
#      PID and network namespace, as uid/gid 10001 (`unshare --root
#      --setuid --setgid`): `eco version` runs and matches the version
#      label; every etcd binary runs and the etcd versions match the label;
#      the C library of the image resolves a name from /etc/hosts (a hosts
#      file is mounted over the image's empty one, as a runtime does, and
#      the host's `getent`, which needs only libc, is run from /tmp) and the
#      user eco from /etc/passwd;
#   4. prints the image's size (compressed layer, unpacked).
# Needs root (unshare, mounts), umoci, python3.
set -euo pipefail

log() { printf 'check-image: %s\n' "$*" >&2; }
die() { log "FAILED: $*"; exit 1; }

layout='' tag='' want_etcd=''
while [ $# -gt 0 ]; do
  case "$1" in
    --image) layout=${2:?--image needs a layout path}; shift 2 ;;
    --tag) tag=${2:?--tag needs a value}; shift 2 ;;
    --etcd) want_etcd=${2:?--etcd needs a version}; shift 2 ;;
    -h|--help) sed -n '2,/^set -euo/{/^set -euo/d;s/^# \{0,1\}//;p}' "$0" >&2; exit 0 ;;
    *) die "unknown argument: $1" ;;
  esac
done
[ -n "$layout" ] || die "--image LAYOUT is required"
[ -f "$layout/index.json" ] || die "$layout is not an OCI image layout"
[ "$(id -u)" = 0 ] || die "needs root (mount and unshare namespaces)"
layout=$(realpath "$layout")
if [ -z "$tag" ]; then
  tag=$(python3 -c '
import json, sys
tags = [m.get("annotations", {}).get("org.opencontainers.image.ref.name") for m in json.load(open(sys.argv[1]))["manifests"]]
print(tags[0] if len(tags) == 1 else "")' "$layout/index.json")
  [ -n "$tag" ] || die "$layout holds several tags (or none): name one with --tag"
fi

work=$(mktemp -d "$(dirname "$layout")/.check-image.XXXXXX")
trap 'rm -rf "$work"' EXIT

# 1. The config. Writes the label values the run below compares with.
python3 - "$layout" "$tag" "$work" <<'PY' || die "the image's config"
import json, os, sys
layout, tag, work = sys.argv[1:]
blob = lambda d: os.path.join(layout, "blobs", *d.split(":"))
index = json.load(open(os.path.join(layout, "index.json")))
found = [m for m in index["manifests"] if m.get("annotations", {}).get("org.opencontainers.image.ref.name") == tag]
if len(found) != 1:
    sys.exit(f"check-image: tag {tag} not in {layout}")
manifest = json.load(open(blob(found[0]["digest"])))
image = json.load(open(blob(manifest["config"]["digest"])))
c = image["config"]
errors = []
def expect(what, got, want):
    if got != want:
        errors.append(f"{what}: {got!r}, expected {want!r}")
expect("layers", len(manifest["layers"]), 1)
expect("os/architecture", (image["os"], image["architecture"]), ("linux", {"x86_64": "amd64", "aarch64": "arm64"}[os.uname().machine]))
expect("Entrypoint", c.get("Entrypoint"), ["/usr/bin/eco", "run"])
expect("Cmd", c.get("Cmd"), None)
expect("User", c.get("User"), "10001:10001")
expect("Env", c.get("Env"), ["PATH=/usr/lib/eco/etcd-3.5/bin:/usr/bin", "ECO_CONFIG=/etc/eco/eco.toml"])
expect("WorkingDir", c.get("WorkingDir"), "/var/lib/eco")
expect("Volumes", sorted(c.get("Volumes") or {}), ["/var/lib/eco"])
expect("ExposedPorts", sorted(c.get("ExposedPorts") or {}), ["2379/tcp", "2380/tcp", "2381/tcp", "2382/tcp", "2390/tcp", "7946/udp"])
expect("StopSignal", c.get("StopSignal"), "SIGTERM")
labels = c.get("Labels") or {}
oci = "org.opencontainers.image."
want_keys = {oci + k for k in ("title", "description", "version", "revision", "created", "source", "licenses", "vendor")} | {"io.eco.etcd-versions", "io.eco.etcd-version"}
expect("label keys", sorted(labels), sorted(want_keys))
for k in want_keys:
    if not labels.get(k):
        errors.append(f"label {k} is empty")
expect("label title", labels.get(oci + "title"), "eco")
expect("label licenses", labels.get(oci + "licenses"), "Apache-2.0")
expect("label created", labels.get(oci + "created"), image.get("created"))
for h in image.get("history", []):
    expect("history created", h.get("created"), image.get("created"))
if errors:
    sys.exit("check-image: " + "\n  ".join(["config:"] + errors))
with open(os.path.join(work, "labels"), "w") as f:
    f.write(f"version={labels[oci + 'version']}\netcd={labels['io.eco.etcd-versions']}\netcd_default={labels['io.eco.etcd-version']}\ncreated={image['created']}\n")
    f.write(f"compressed={manifest['layers'][0]['size']}\ndigest={found[0]['digest']}\n")
PY
label() { sed -n "s/^$1=//p" "$work/labels"; }

# 2. The unpacked root.
umoci unpack --image "$layout:$tag" "$work/bundle" >/dev/null
r="$work/bundle/rootfs"
created_epoch=$(date -u -d "$(label created)" +%s)
python3 - "$r" "$created_epoch" <<'PY' || die "the image's root filesystem"
import os, re, stat, sys
root, created = sys.argv[1], int(sys.argv[2])
allowed = [re.compile(p) for p in (
    r"\.", r"etc", r"etc/eco", r"etc/(passwd|group|nsswitch\.conf|hosts|resolv\.conf)",
    r"etc/ssl", r"etc/ssl/certs", r"etc/ssl/certs/ca-certificates\.crt",
    r"lib", r"lib/[a-z0-9_]+-linux-gnu", r"lib/[a-z0-9_]+-linux-gnu/[^/]+\.so(\.[0-9]+)*", r"lib64", r"lib64/ld-linux-[^/]+\.so\.[0-9]+",
    r"tmp", r"usr", r"usr/bin", r"usr/bin/eco", r"usr/lib", r"usr/lib/eco",
    r"usr/lib/eco/etcd-3\.[45]", r"usr/lib/eco/etcd-3\.[45]/bin",
    r"usr/lib/eco/etcd-3\.5/bin/(etcd|etcdctl|etcdutl)", r"usr/lib/eco/etcd-3\.4/bin/(etcd|etcdctl)",
    r"var", r"var/lib", r"var/lib/eco")]
# path -> (type, mode, uid, gid)
required = {
    "usr/bin/eco": ("f", 0o755, 0, 0),
    "usr/lib/eco/etcd-3.5/bin/etcd": ("f", 0o755, 0, 0),
    "usr/lib/eco/etcd-3.5/bin/etcdctl": ("f", 0o755, 0, 0),
    "usr/lib/eco/etcd-3.5/bin/etcdutl": ("f", 0o755, 0, 0),
    "usr/lib/eco/etcd-3.4/bin/etcd": ("f", 0o755, 0, 0),
    "usr/lib/eco/etcd-3.4/bin/etcdctl": ("f", 0o755, 0, 0),
    "lib64/ld-linux-x86-64.so.2": ("f", 0o755, 0, 0),
    "etc/passwd": ("f", 0o644, 0, 0), "etc/group": ("f", 0o644, 0, 0),
    "etc/nsswitch.conf": ("f", 0o644, 0, 0), "etc/hosts": ("f", 0o644, 0, 0),
    "etc/resolv.conf": ("f", 0o644, 0, 0), "etc/ssl/certs/ca-certificates.crt": ("f", 0o644, 0, 0),
    "etc/eco": ("d", 0o755, 0, 0), "var/lib/eco": ("d", 0o750, 10001, 10001),
    "tmp": ("d", 0o1777, 0, 0), ".": ("d", 0o755, 0, 0),
}
errors = []
seen = {}
for dirpath, dirnames, filenames in os.walk(root):
    for name in [""] + dirnames + filenames:
        if name == "" and dirpath != root:
            continue
        full = os.path.join(dirpath, name) if name else root
        rel = os.path.relpath(full, root)
        st = os.lstat(full)
        seen[rel] = st
        if not any(p.fullmatch(rel) for p in allowed):
            errors.append(f"unexpected path /{rel}")
        if stat.S_ISLNK(st.st_mode):
            errors.append(f"unexpected symlink /{rel}")
        if int(st.st_mtime) != created:
            errors.append(f"/{rel}: mtime {int(st.st_mtime)}, expected {created}")
        if rel not in required and (st.st_uid, st.st_gid) != (0, 0):
            errors.append(f"/{rel}: owner {st.st_uid}:{st.st_gid}, expected 0:0")
for rel, (kind, mode, uid, gid) in required.items():
    st = seen.get(rel)
    if st is None:
        errors.append(f"/{rel} missing")
        continue
    got_kind = "d" if stat.S_ISDIR(st.st_mode) else "f" if stat.S_ISREG(st.st_mode) else "?"
    got = (got_kind, stat.S_IMODE(st.st_mode), st.st_uid, st.st_gid)
    if got != (kind, mode, uid, gid):
        errors.append(f"/{rel}: {got_kind} {oct(got[1])} {got[2]}:{got[3]}, expected {kind} {oct(mode)} {uid}:{gid}")
for d in ("etc/eco", "var/lib/eco", "tmp"):
    if os.listdir(os.path.join(root, d)):
        errors.append(f"/{d} is not empty")
for sh in ("bin/sh", "usr/bin/sh", "bin/bash", "bin/busybox", "usr/bin/dpkg", "usr/bin/apt"):
    if os.path.lexists(os.path.join(root, sh)):
        errors.append(f"/{sh} present")
def read(p):
    return open(os.path.join(root, p)).read()
if read("etc/passwd").splitlines() != ["root:x:0:0:root:/:/usr/sbin/nologin", "eco:x:10001:10001:eco:/var/lib/eco:/usr/sbin/nologin"]:
    errors.append("/etc/passwd: " + repr(read("etc/passwd")))
if read("etc/group").splitlines() != ["root:x:0:", "eco:x:10001:"]:
    errors.append("/etc/group: " + repr(read("etc/group")))
if sorted(read("etc/nsswitch.conf").splitlines()) != ["group: files", "hosts: files dns", "passwd: files"]:
    errors.append("/etc/nsswitch.conf: " + repr(read("etc/nsswitch.conf")))
for p in ("etc/hosts", "etc/resolv.conf"):
    if read(p):
        errors.append(f"/{p} is not empty")
if errors:
    sys.exit("check-image: " + "\n  ".join(["root filesystem:"] + errors))
print(f"check-image: root filesystem: {len(seen)} paths, as expected (no shell, nothing else)", file=sys.stderr)
PY

# 3. Run it: read-only root, tmpfs /tmp, uid/gid 10001, a new PID and
# network namespace (no DNS server reachable: names come from files).
printf '10.11.12.13 eco-probe.test\n' >"$work/hosts"
install -m 0755 "$(command -v getent)" "$work/getent"
unshare --mount --pid --net --fork --kill-child \
  env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin r="$r" work="$work" bash -euo pipefail -c '
  mount --make-rprivate /
  mount --bind "$r" "$r"
  mount -o remount,bind,ro "$r"
  mount -t tmpfs -o mode=1777,nosuid,nodev tmpfs "$r/tmp"
  mount --bind "$work/hosts" "$r/etc/hosts"
  install -m 0755 "$work/getent" "$r/tmp/getent"
  # As the image runs it: its user, its environment, its working directory.
  as_eco() {
    env -i PATH=/usr/lib/eco/etcd-3.5/bin:/usr/bin ECO_CONFIG=/etc/eco/eco.toml \
      unshare --root="$r" --wd=/var/lib/eco --setuid 10001 --setgid 10001 "$@"
  }
  if touch "$r/probe" 2>/dev/null; then echo "the root is writable" >&2; exit 1; fi
  as_eco /usr/bin/eco version >"$work/eco-version"
  as_eco /usr/lib/eco/etcd-3.5/bin/etcd --version >"$work/etcd-3.5-etcd"
  as_eco /usr/lib/eco/etcd-3.4/bin/etcd --version >"$work/etcd-3.4-etcd"
  for b in etcdctl etcdutl; do as_eco "/usr/lib/eco/etcd-3.5/bin/$b" version >"$work/etcd-3.5-$b"; done
  as_eco /usr/lib/eco/etcd-3.4/bin/etcdctl version >"$work/etcd-3.4-etcdctl"
  as_eco etcd --version >"$work/etcd-on-path"
  as_eco /tmp/getent ahosts eco-probe.test >"$work/resolved"
  as_eco /tmp/getent hosts eco-probe.test >>"$work/resolved"
  as_eco /tmp/getent passwd eco >"$work/passwd-eco"
  as_eco /tmp/getent group 10001 >"$work/group-eco"
' || die "running the image's binaries as 10001 on a read-only root"

cat "$work/eco-version" >&2
eco_version=$(sed -n '1s/^eco //p' "$work/eco-version")
[ "$eco_version" = "$(label version)" ] || die "eco version $eco_version, label says $(label version)"
v35=$(sed -n 's/^etcd Version: //p' "$work/etcd-3.5-etcd")
v34=$(sed -n 's/^etcd Version: //p' "$work/etcd-3.4-etcd")
[ "$v35 $v34" = "$(label etcd)" ] || die "etcd versions '$v35 $v34', label io.eco.etcd-versions says '$(label etcd)'"
grep -q "^etcd Version: $v35$" "$work/etcd-on-path" || die "etcd on the image's PATH is not 3.5"
[ "$v35" = "$(label etcd_default)" ] || die "etcd $v35 on the PATH, label io.eco.etcd-version says '$(label etcd_default)'"
[ -z "$want_etcd" ] || [ "$v35" = "$want_etcd" ] || die "the image runs etcd $v35, not $want_etcd"
grep -q '^etcdctl version: 3\.5\.' "$work/etcd-3.5-etcdctl" || die "etcd-3.5 etcdctl: $(cat "$work/etcd-3.5-etcdctl")"
grep -q '^etcdutl version: 3\.5\.' "$work/etcd-3.5-etcdutl" || die "etcd-3.5 etcdutl: $(cat "$work/etcd-3.5-etcdutl")"
grep -q '^etcdctl version: 3\.4\.' "$work/etcd-3.4-etcdctl" || die "etcd-3.4 etcdctl: $(cat "$work/etcd-3.4-etcdctl")"
[ "$(grep -c '^10\.11\.12\.13 .*eco-probe\.test' "$work/resolved")" = 2 ] || die "the image's libc did not resolve eco-probe.test from /etc/hosts: $(cat "$work/resolved")"
grep -qx 'eco:x:10001:10001:eco:/var/lib/eco:/usr/sbin/nologin' "$work/passwd-eco" || die "getent passwd eco: $(cat "$work/passwd-eco")"
grep -qx 'eco:x:10001:' "$work/group-eco" || die "getent group 10001: $(cat "$work/group-eco")"
log "as 10001 on a read-only root: eco $eco_version, etcd $v35 (on PATH) and $v34 run; /etc/hosts and /etc/passwd resolve through the image's libc alone"

# 4. Size.
unpacked=$(du -sb --apparent-size "$r" | cut -f1)
compressed=$(label compressed)
mib() { awk -v n="$1" 'BEGIN { printf "%.1f MiB (%d bytes)", n / 1048576, n }'; }
log "image $layout:$tag $(label digest): layer $(mib "$compressed") compressed, $(mib "$unpacked") unpacked"
log "OK"
