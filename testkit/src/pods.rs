//! StatefulSet "pods" run from eco's container image, the way a runtime
//! would, without a container engine (none runs on this machine) and
//! without a Kubernetes API server (none can be installed here).
//!
//! - **The image**: the OCI layout `make image` builds is unpacked with
//!   `umoci unpack` into a runtime bundle; its `config.json` gives the
//!   process exactly as a runtime reads it (arguments, environment, user,
//!   working directory). Mount points the pods need are made in the
//!   unpacked root once, as a runtime does, before any pod mounts it.
//! - **A pod** is a network namespace `ecopod<net>-<pod>` with a veth into
//!   the bridge `ecopod<net>` (the harness, in the root namespace, reaches
//!   pods through the bridge's `10.<net>.0.254`), and in it a new mount,
//!   UTS and PID namespace: the image's root bind-mounted **read-only**,
//!   the pod's volume at `/var/lib/eco`, the config (a ConfigMap) at
//!   `/etc/eco` read-only, the replicas file (a second ConfigMap, mounted
//!   as a directory so a scale reaches running pods) at
//!   `/etc/eco/replicas`, the shared snapshot directory (a ReadWriteMany
//!   volume: a tmpfs of its own, so another filesystem than the volumes)
//!   at `/var/lib/eco-snapshots`, a tmpfs at `/tmp`, a minimal `/dev`
//!   (`null`, `zero`, `full`, `random`, `urandom`, `tty`, as a runtime
//!   makes), and the pod's hosts file at `/etc/hosts`. The image's entrypoint runs as **PID 1**, as
//!   the image's user (`unshare --setuid/--setgid`: no capabilities), with
//!   the image's environment plus the downward API's `POD_NAME`,
//!   `POD_NAMESPACE` and `ECO_ZONE`.
//! - **DNS**: every pod's hosts file lists every existing pod as
//!   `<ip> <pod>.<service>.<namespace>.svc.cluster.local <pod>` — the
//!   headless service with `publishNotReadyAddresses`: a record exists
//!   while its pod exists, whether ready or not. The C library (glibc's
//!   built-in `files` source) resolves from it; files are rewritten in
//!   place (the bind mounts follow the inode).
//! - **Lifecycle**: [`PodSet::start`] makes a new namespace with a new IP
//!   (a recreated pod never gets its old address back); [`PodSet::delete`]
//!   sends SIGTERM to PID 1, waits for the grace period, then kills, and
//!   removes the pod's namespace and DNS record; its volume stays unless
//!   [`PodSet::lose_volume`] replaces it with an empty one (a new claim).
//!
//! A pod is killed through its PID 1 (the whole PID namespace goes with
//! it); pods of an earlier run in the same directory that was killed before
//! it could clean up are killed when a set is made there again.
//!
//! [`PodSet::exec`] runs a command in a pod as `kubectl exec` does
//! (`nsenter` into its namespaces and root, as the image's user).
//!
//! Needs root, `ip`, `unshare`, `nsenter`, `mount` and `umoci`. Every process is
//! tracked by pid and killed by pid; [`Drop`] kills the pods, removes the
//! namespaces and the bridge, and unmounts the shared tmpfs.

use crate::cluster::netns::ip;
use crate::config::ConfigBuilder;
use anyhow::Context;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// The process of an unpacked image, as its runtime bundle says.
#[derive(Clone, Debug)]
pub struct Image {
    /// The unpacked root filesystem (mount points added).
    pub rootfs: PathBuf,
    pub args: Vec<String>,
    pub env: Vec<(String, String)>,
    pub uid: u32,
    pub gid: u32,
    pub cwd: String,
}

/// Mount points a pod needs that the image does not have (a runtime
/// creates them in the container's root before mounting).
const MOUNT_POINTS: &[&str] = &[
    "proc",
    "dev",
    "tmp",
    "etc/eco",
    "var/lib/eco",
    "var/lib/eco-snapshots",
];

impl Image {
    /// Unpacks `layout:tag` into `into/bundle` with `umoci unpack` and
    /// reads its `config.json`.
    pub fn unpack(layout: &Path, tag: &str, into: &Path) -> anyhow::Result<Image> {
        let bundle = into.join("bundle");
        let _ = std::fs::remove_dir_all(&bundle);
        std::fs::create_dir_all(into)?;
        run(Command::new("umoci")
            .arg("unpack")
            .arg("--image")
            .arg(format!("{}:{tag}", layout.display()))
            .arg(&bundle))
        .context("umoci unpack")?;
        let text = std::fs::read_to_string(bundle.join("config.json"))
            .context("the bundle's config.json")?;
        let spec: serde_json::Value = serde_json::from_str(&text)?;
        let process = &spec["process"];
        let strings = |v: &serde_json::Value| -> Vec<String> {
            v.as_array()
                .into_iter()
                .flatten()
                .filter_map(|s| s.as_str().map(str::to_string))
                .collect()
        };
        let env = strings(&process["env"])
            .into_iter()
            .filter_map(|kv| kv.split_once('=').map(|(k, v)| (k.into(), v.into())))
            .collect();
        let rootfs = bundle.join(spec["root"]["path"].as_str().unwrap_or("rootfs"));
        for m in MOUNT_POINTS {
            std::fs::create_dir_all(rootfs.join(m))?;
        }
        Ok(Image {
            rootfs,
            args: strings(&process["args"]),
            env,
            uid: process["user"]["uid"].as_u64().unwrap_or(0) as u32,
            gid: process["user"]["gid"].as_u64().unwrap_or(0) as u32,
            cwd: process["cwd"].as_str().unwrap_or("/").to_string(),
        })
    }
}

fn run(cmd: &mut Command) -> anyhow::Result<String> {
    let out = cmd.output().with_context(|| format!("run {cmd:?}"))?;
    anyhow::ensure!(
        out.status.success(),
        "{cmd:?}: {}",
        String::from_utf8_lossy(&out.stderr).trim()
    );
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// One running (or deleted) pod.
struct Pod {
    netns: String,
    veth: String,
    ip: String,
    /// Whether its DNS record is published: from when it has an IP (before
    /// its container starts, as with `publishNotReadyAddresses`) until it
    /// is deleted.
    dns: bool,
    /// The outer `unshare` (PID 1 is its only child); `None` once deleted.
    process: Option<Child>,
}

/// A StatefulSet of pods from one image; see the module docs.
pub struct PodSet {
    net: u8,
    dir: PathBuf,
    image: Image,
    pub set: String,
    pub service: String,
    pub namespace: String,
    config: PathBuf,
    replicas: PathBuf,
    store: PathBuf,
    pods: BTreeMap<u32, Pod>,
    next_host: u8,
    /// Its `10.<net>` block, held against other tests
    /// ([`crate::address_claim`]).
    _claim: crate::address_claim::AddressClaim,
}

impl PodSet {
    /// A set named `set` in `dir` (made if missing), network block `net`
    /// (`10.<net>.0.0/24`; distinct per concurrent test), `replicas` desired;
    /// `config` is every pod's eco config (paths inside the pod).
    pub fn new(
        dir: &Path,
        net: u8,
        image: Image,
        set: &str,
        replicas: u32,
        config: &ConfigBuilder,
        gossip_key: &str,
    ) -> anyhow::Result<Self> {
        let dir = std::path::absolute(dir)?;
        let claim = crate::address_claim::claim(&format!("ns-10.{net}"))?;
        crate::process::kill_processes_rooted_under(&dir);
        std::fs::create_dir_all(&dir)?;
        let s = PodSet {
            net,
            config: dir.join("configmap"),
            replicas: dir.join("replicas"),
            store: dir.join("shared-snapshots"),
            dir,
            image,
            set: set.into(),
            service: format!("{set}-headless"),
            namespace: "eco-test".into(),
            pods: BTreeMap::new(),
            next_host: 1,
            _claim: claim,
        };
        s.remove_network();
        ip(&["link", "add", &s.bridge(), "type", "bridge"])?;
        ip(&[
            "addr",
            "add",
            &format!("10.{net}.0.254/24"),
            "dev",
            &s.bridge(),
        ])?;
        ip(&["link", "set", &s.bridge(), "up"])?;
        for d in [&s.config, &s.replicas, &s.store, &s.dir.join("hosts")] {
            std::fs::create_dir_all(d)?;
        }
        // The shared volume is a filesystem of its own (as an NFS claim
        // would be), so eco can tell it from a pod's own volume.
        let _ = Command::new("umount")
            .arg(&s.store)
            .stderr(Stdio::null())
            .status();
        run(Command::new("mount")
            .args(["-t", "tmpfs", "-o", "size=512m,mode=0770", "tmpfs"])
            .arg(&s.store))?;
        std::fs::create_dir_all(s.config.join("replicas"))?;
        config.write(&s.config.join("eco.toml"))?;
        let keys = s.config.join("gossip.keys");
        std::fs::write(&keys, format!("{gossip_key}\n"))?;
        s.own(&keys, 0o400)?;
        s.own(&s.store, 0o770)?;
        s.set_replicas(replicas)?;
        Ok(s)
    }

    fn bridge(&self) -> String {
        format!("ecopod{}", self.net)
    }

    /// The pod named for `ordinal`.
    pub fn pod_name(&self, ordinal: u32) -> String {
        format!("{}-{ordinal}", self.set)
    }

    /// The pod's stable DNS name.
    pub fn dns_name(&self, ordinal: u32) -> String {
        format!(
            "{}.{}.{}.svc.cluster.local",
            self.pod_name(ordinal),
            self.service,
            self.namespace
        )
    }

    fn volume(&self, ordinal: u32) -> PathBuf {
        self.dir.join("volumes").join(self.pod_name(ordinal))
    }

    /// The pod's volume on the host (its data directory is `etcd/`).
    pub fn volume_dir(&self, ordinal: u32) -> PathBuf {
        self.volume(ordinal)
    }

    /// The shared snapshot directory on the host.
    pub fn store_dir(&self) -> &Path {
        &self.store
    }

    fn own(&self, path: &Path, mode: u32) -> anyhow::Result<()> {
        use std::os::unix::fs::PermissionsExt;
        std::os::unix::fs::chown(path, Some(self.image.uid), Some(self.image.gid))?;
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode))?;
        Ok(())
    }

    /// Writes the desired size into the replicas ConfigMap (in place:
    /// running pods see it at their next refresh).
    pub fn set_replicas(&self, n: u32) -> anyhow::Result<()> {
        std::fs::write(self.replicas.join("replicas"), format!("{n}\n"))?;
        Ok(())
    }

    /// Rewrites every running pod's hosts file from the pods that exist.
    fn publish_dns(&self) -> anyhow::Result<()> {
        let mut text = String::from("127.0.0.1 localhost\n");
        for (o, p) in &self.pods {
            if p.dns {
                text.push_str(&format!(
                    "{} {} {}\n",
                    p.ip,
                    self.dns_name(*o),
                    self.pod_name(*o)
                ));
            }
        }
        for entry in std::fs::read_dir(self.dir.join("hosts"))? {
            // In place: the pods' bind mounts hold the inode.
            std::fs::write(entry?.path(), &text)?;
        }
        Ok(())
    }

    /// Starts (or recreates) the pod at `ordinal` on a new IP, its volume
    /// kept; `zone` is what the downward API would give as ECO_ZONE.
    pub fn start(&mut self, ordinal: u32, zone: &str) -> anyhow::Result<()> {
        anyhow::ensure!(
            self.pods.get(&ordinal).is_none_or(|p| p.process.is_none()),
            "pod {ordinal} is running"
        );
        let name = self.pod_name(ordinal);
        let host = self.next_host;
        anyhow::ensure!(host < 250, "out of addresses");
        self.next_host += 1;
        let net = self.net;
        let netns = format!("ecopod{net}-{name}");
        let veth = format!("ecopod{net}v{host}");
        let address = format!("10.{net}.0.{host}");
        let _ = ip(&["netns", "del", &netns]);
        crate::cluster::netns::add_host(&netns, &veth, &self.bridge(), &address)?;

        let volume = self.volume(ordinal);
        if !volume.exists() {
            std::fs::create_dir_all(&volume)?;
            self.own(&volume, 0o750)?;
        }
        let hosts = self.dir.join("hosts").join(&name);
        std::fs::write(&hosts, "")?;
        let pod_dir = self.dir.join("pods").join(&name);
        let root = pod_dir.join("root");
        std::fs::create_dir_all(&root)?;
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(pod_dir.join("log"))?;
        self.pods.insert(
            ordinal,
            Pod {
                netns: netns.clone(),
                veth,
                ip: address,
                dns: true,
                process: None,
            },
        );
        self.publish_dns()?;

        let q = |p: &Path| format!("'{}'", p.display());
        let i = &self.image;
        let script = format!(
            "set -e\n\
             R={root}\n\
             hostname {name}\n\
             mount --bind {rootfs} \"$R\"\n\
             mount -o remount,bind,ro \"$R\"\n\
             mount --bind {volume} \"$R/var/lib/eco\"\n\
             mount --bind {store} \"$R/var/lib/eco-snapshots\"\n\
             mount --bind {config} \"$R/etc/eco\"\n\
             mount -o remount,bind,ro \"$R/etc/eco\"\n\
             mount --bind {replicas} \"$R/etc/eco/replicas\"\n\
             mount -o remount,bind,ro \"$R/etc/eco/replicas\"\n\
             mount --bind {hosts} \"$R/etc/hosts\"\n\
             mount -t tmpfs -o mode=1777,size=64m tmpfs \"$R/tmp\"\n\
             mount -t tmpfs -o mode=0755,size=1m,nosuid,noexec tmpfs \"$R/dev\"\n\
             for d in null zero full random urandom tty; do touch \"$R/dev/$d\"; mount --bind \"/dev/$d\" \"$R/dev/$d\"; done\n\
             ln -s /proc/self/fd \"$R/dev/fd\"\n\
             exec /usr/bin/unshare --pid --fork --mount-proc --root=\"$R\" --wd={cwd} --setgid {gid} --setuid {uid} -- \"$@\"\n",
            root = q(&root),
            rootfs = q(&i.rootfs),
            volume = q(&volume),
            store = q(&self.store),
            config = q(&self.config),
            replicas = q(&self.replicas),
            hosts = q(&hosts),
            cwd = i.cwd,
            gid = i.gid,
            uid = i.uid,
        );
        let mut cmd = Command::new("/usr/bin/ip");
        cmd.args(["netns", "exec", &netns])
            .args([
                "/usr/bin/unshare",
                "--mount",
                "--uts",
                "--propagation",
                "private",
                "--",
                "/bin/sh",
                "-c",
                &script,
                "pod",
            ])
            .args(&i.args)
            .env_clear()
            .envs(i.env.iter().map(|(k, v)| (k, v)))
            .env("HOSTNAME", &name)
            .env("POD_NAME", &name)
            .env("POD_NAMESPACE", &self.namespace)
            .env("ECO_ZONE", zone)
            .stdin(Stdio::null())
            .stdout(log.try_clone()?)
            .stderr(log);
        let child = cmd.spawn().context("start the pod")?;
        if let Some(p) = self.pods.get_mut(&ordinal) {
            p.process = Some(child);
        }
        Ok(())
    }

    /// The pod's IP now.
    pub fn ip(&self, ordinal: u32) -> Option<String> {
        self.pods
            .get(&ordinal)
            .filter(|p| p.process.is_some())
            .map(|p| p.ip.clone())
    }

    /// The pod's etcd client endpoint (by IP: the harness has no DNS).
    pub fn endpoint(&self, ordinal: u32) -> Option<String> {
        self.ip(ordinal).map(|a| format!("http://{a}:2379"))
    }

    /// Every pod's endpoint as the set's DNS publishes it now, read from
    /// disk at each call (for a load that follows pods recreated on new
    /// IPs: `timed_load::TimedLoad::following`).
    pub fn endpoints_source(&self) -> impl Fn() -> Vec<String> + Send + 'static {
        let dir = self.dir.join("hosts");
        move || {
            let Some(text) = std::fs::read_dir(&dir)
                .ok()
                .and_then(|mut d| d.next())
                .and_then(|e| std::fs::read_to_string(e.ok()?.path()).ok())
            else {
                return Vec::new();
            };
            text.lines()
                .filter(|l| !l.contains("localhost"))
                .filter_map(|l| l.split_whitespace().next())
                .map(|ip| format!("http://{ip}:2379"))
                .collect()
        }
    }

    /// Every running pod's endpoint.
    pub fn endpoints(&self) -> Vec<String> {
        self.pods.keys().filter_map(|o| self.endpoint(*o)).collect()
    }

    /// The ordinals of the running pods.
    pub fn running(&self) -> Vec<u32> {
        self.pods
            .iter()
            .filter(|(_, p)| p.process.is_some())
            .map(|(o, _)| *o)
            .collect()
    }

    /// The host pid of the pod's PID 1.
    pub fn pid1(&self, ordinal: u32) -> Option<i32> {
        crate::process::pid1_of(self.pods.get(&ordinal)?.process.as_ref()?)
    }

    /// Every process of the pod's PID namespace: (host pid, pid in the
    /// pod, state letter, command name).
    pub fn processes(&self, ordinal: u32) -> Vec<(i32, i32, char, String)> {
        let Some(pid1) = self.pid1(ordinal) else {
            return Vec::new();
        };
        let Ok(ns) = std::fs::read_link(format!("/proc/{pid1}/ns/pid")) else {
            return Vec::new();
        };
        let mut out = Vec::new();
        for pid in crate::process::host_pids() {
            if std::fs::read_link(format!("/proc/{pid}/ns/pid")).ok() != Some(ns.clone()) {
                continue;
            }
            let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
            let field = |k: &str| {
                status
                    .lines()
                    .find_map(|l| l.strip_prefix(k))
                    .map(|v| v.trim().to_string())
                    .unwrap_or_default()
            };
            let state = field("State:").chars().next().unwrap_or('?');
            let inner = field("NSpid:")
                .split_whitespace()
                .last()
                .and_then(|p| p.parse().ok())
                .unwrap_or(0);
            out.push((pid, inner, state, field("Name:")));
        }
        out
    }

    /// Runs `args` in the running pod the way `kubectl exec` does: in its
    /// network, mount, UTS and PID namespaces, at its root and working
    /// directory, as the image's user, with the image's environment and the
    /// pod's; returns (exit code, stdout, stderr).
    pub fn exec(&self, ordinal: u32, args: &[&str]) -> anyhow::Result<(i32, String, String)> {
        let out = self.exec_output(ordinal, args)?;
        Ok((
            out.status.code().unwrap_or(-1),
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        ))
    }

    /// [`Self::exec`], its output as bytes (`kubectl exec … > file`).
    pub fn exec_output(&self, ordinal: u32, args: &[&str]) -> anyhow::Result<std::process::Output> {
        let pid = self.pid1(ordinal).context("the pod has no PID 1")?;
        let name = self.pod_name(ordinal);
        let i = &self.image;
        Command::new("/usr/bin/nsenter")
            .arg(format!("--target={pid}"))
            .args(["--net", "--mount", "--uts", "--pid", "--root", "--wd"])
            .arg(format!("--setuid={}", i.uid))
            .arg(format!("--setgid={}", i.gid))
            .arg("--")
            .args(args)
            .env_clear()
            .envs(i.env.iter().map(|(k, v)| (k, v)))
            .env("HOSTNAME", &name)
            .env("POD_NAME", &name)
            .env("POD_NAMESPACE", &self.namespace)
            .stdin(Stdio::null())
            .output()
            .context("nsenter")
    }

    /// SIGTERM to the pod's PID 1 (what a runtime sends on deletion).
    pub fn terminate(&self, ordinal: u32) -> anyhow::Result<()> {
        let pid = self.pid1(ordinal).context("the pod has no PID 1")?;
        crate::process::kill(pid, libc::SIGTERM);
        Ok(())
    }

    /// Deletes the pod: SIGTERM to PID 1, up to `grace` for it to exit,
    /// then SIGKILL; its namespace and DNS record go, its volume stays.
    /// Returns PID 1's exit status (`None` if it had to be killed).
    pub fn delete(&mut self, ordinal: u32, grace: Duration) -> anyhow::Result<Option<i32>> {
        let _ = self.terminate(ordinal);
        let pod = self.pods.get_mut(&ordinal).context("no such pod")?;
        pod.dns = false;
        let mut status = None;
        if let Some(mut child) = pod.process.take() {
            let until = Instant::now() + grace;
            loop {
                if let Ok(Some(s)) = child.try_wait() {
                    status = s.code();
                    break;
                }
                if Instant::now() >= until {
                    kill_pod(&mut child);
                    break;
                }
                std::thread::sleep(Duration::from_millis(50));
            }
        }
        let _ = ip(&["netns", "del", &pod.netns]);
        let _ = ip(&["link", "del", &pod.veth]);
        let _ = std::fs::remove_file(self.dir.join("hosts").join(self.pod_name(ordinal)));
        self.publish_dns()?;
        Ok(status)
    }

    /// Replaces the pod's volume with an empty one (the claim was lost and
    /// a new one bound); the pod must be deleted. The old one is kept
    /// beside it for the test's inspection.
    pub fn lose_volume(&self, ordinal: u32) -> anyhow::Result<()> {
        anyhow::ensure!(self.ip(ordinal).is_none(), "delete the pod first");
        let v = self.volume(ordinal);
        let lost = v.with_extension(format!("lost-{}", self.next_host));
        std::fs::rename(&v, lost)?;
        Ok(())
    }

    /// The pod's log (eco's output).
    pub fn log(&self, ordinal: u32) -> String {
        std::fs::read_to_string(
            self.dir
                .join("pods")
                .join(self.pod_name(ordinal))
                .join("log"),
        )
        .unwrap_or_default()
    }

    /// eco's status of the pod, through its API (`eco status --json`).
    pub fn status(&self, eco: &Path, ordinal: u32) -> Option<serde_json::Value> {
        let api = format!("{}:2390", self.ip(ordinal)?);
        let out = Command::new(eco)
            .args(["status", "--api", &api, "--json"])
            .output()
            .ok()?;
        serde_json::from_slice(&out.stdout).ok()
    }

    fn remove_network(&self) {
        let net = self.net;
        crate::cluster::netns::remove_network(
            &format!("ecopod{net}-"),
            &format!("ecopod{net}v"),
            &self.bridge(),
        );
    }
}

impl Drop for PodSet {
    fn drop(&mut self) {
        let panicking = std::thread::panicking();
        for (o, p) in &mut self.pods {
            if let Some(mut c) = p.process.take() {
                kill_pod(&mut c);
            }
            if panicking {
                let log = std::fs::read_to_string(
                    self.dir
                        .join("pods")
                        .join(format!("{}-{o}", self.set))
                        .join("log"),
                )
                .unwrap_or_default();
                let lines: Vec<&str> = crate::process::eco_lines(&log);
                let tail = &lines[lines.len().saturating_sub(40)..];
                eprintln!("--- pod {}-{o} ---\n{}", self.set, tail.join("\n"));
            }
        }
        self.remove_network();
        let _ = Command::new("umount")
            .arg(&self.store)
            .stderr(Stdio::null())
            .status();
    }
}

/// Kills a pod: SIGKILL to its PID 1, which takes every process of its PID
/// namespace with it (the kernel kills them and PID 1 exits last), then
/// reaps the outer `unshare`. (`unshare --kill-child` cannot do this: the
/// death signal it sets is cleared by the kernel when `--setuid` changes
/// the credentials.)
fn kill_pod(outer: &mut Child) {
    if let Some(pid1) = crate::process::pid1_of(outer) {
        crate::process::kill(pid1, libc::SIGKILL);
    }
    if !crate::process::wait_exit(outer, Duration::from_secs(10)) {
        let _ = outer.kill();
        let _ = outer.wait();
    }
}

/// Why pods cannot run here, if they cannot.
pub fn unavailable() -> Option<String> {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        return Some("pods need root (namespaces, mounts)".into());
    }
    crate::process::missing_tool(&["umoci", "unshare", "nsenter", "ip", "mount"])
        .map(|tool| format!("pods need `{tool}` (scripts/install-deps.sh)"))
}
