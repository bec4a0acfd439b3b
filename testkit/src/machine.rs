//! A booted machine: systemd as PID 1 of its own PID, mount, UTS and network
//! namespaces, on a copy-on-write overlay of this host's root, so that
//! packages are installed, units started and user data run as on a real
//! Debian machine, and the host is left untouched.
//!
//! - **Root:** an overlayfs whose lower layer is the host's `/` and whose
//!   upper layer is `<files_root>/<name>/upper` ([`files_root`]:
//!   `target/machines` of the checkout): `dpkg -i`, users made by
//!   `systemd-sysusers`, files written by a script land there. `/run` and
//!   `/tmp` are fresh tmpfs (a checkout under `/tmp` is bound into it, at
//!   its own path), `/proc` the machine's own.
//! - **systemd:** the host's `/lib/systemd/systemd`, booted to
//!   `basic.target` (so the host's own services, such as Debian's etcd
//!   or PostgreSQL, are not started), in a cgroup subtree of its own
//!   (`eco-machine-<name>` in every hierarchy), so that two machines'
//!   units never share a cgroup. Units run with systemd's real sandboxing
//!   (namespaces, seccomp, capability bounds), which is what the tests of
//!   eco's unit want to see.
//! - **Network:** its own namespace with loopback only
//!   ([`Machine::boot`]; [`Machine::spawn`] starts a process of the test
//!   in it, outside the machine's root), or the host's
//!   ([`Machine::boot_on_host_network`]: for a machine that reaches the
//!   test's servers on their loopback addresses, such as the AWS emulator
//!   and its per-instance metadata servers).
//!
//! Commands run in the machine through `nsenter` ([`Machine::exec`]), like
//! `machinectl shell`. Dropping the machine kills its PID 1 by pid (the
//! kernel then kills every process of its PID namespace) and removes its
//! cgroups; the upper layer stays for the next run to look at and is
//! removed when a machine of the same name boots again.
//!
//! Needs root, `unshare`, `nsenter`, `ip`, overlayfs and a writable cgroup
//! tree: [`unavailable`] says what is missing.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::Context;

/// Boots the machine: run by bash as PID 1 of the new namespaces, with the
/// machine's name and directory as arguments; execs systemd.
const BOOT: &str = r#"set -euo pipefail
name=$1 dir=$2
for h in /sys/fs/cgroup/*/; do
  [ -e "$h/cgroup.procs" ] || continue
  mkdir -p "$h/eco-machine-$name"
  # (cgroup v1's cpuset: a new group has no CPUs until given its parent's)
  for f in cpuset.cpus cpuset.mems; do
    [ -e "$h/$f" ] && cat "$h/$f" > "$h/eco-machine-$name/$f"
  done
  echo $$ > "$h/eco-machine-$name/cgroup.procs"
done
m=$dir/merged
mount -t overlay overlay -o "lowerdir=/,upperdir=$dir/upper,workdir=$dir/work" "$m"
mount -t proc proc "$m/proc"
mount --rbind /sys "$m/sys"
mount --rbind /dev "$m/dev"
mount -t tmpfs -o mode=0755 tmpfs "$m/run"
mount -t tmpfs -o mode=1777 tmpfs "$m/tmp"
# A checkout under /tmp stays visible at its own path (its tools).
if [ -n "${4:-}" ]; then mkdir -p "$m$4"; mount --rbind "$4" "$m$4"; fi
if [ "$3" = own ]; then ip link set lo up; fi
hostname "$name"
echo "$name" > "$m/etc/hostname"
# Loopback is the machine's whole network: nothing to wait for (a real
# machine's network-online.target is reached once its network is up).
ln -sf /dev/null "$m/etc/systemd/system/systemd-networkd-wait-online.service"
# pivot_root, not chroot: in a chroot the kernel refuses new user
# namespaces, which the unit's PrivateUsers= needs.
cd "$m"
pivot_root . .
umount -l .
exec env container=eco-testkit /lib/systemd/systemd --unit=basic.target --log-target=console
"#;

/// Where machines' files go, and files a test makes for a machine's units
/// to read: `target/machines` of the checkout — or, for a checkout under
/// `/tmp` or `/var/tmp`, `/var/lib/eco-testkit/<the checkout's path as a
/// name>/machines`: a machine mounts a `/tmp` of its own and a unit with
/// `PrivateTmp=` gets another, either of which would hide them.
pub fn files_root() -> PathBuf {
    let checkout = crate::workspace_root();
    if under_a_private_tmp(&checkout) {
        let name: String = checkout
            .to_string_lossy()
            .trim_matches('/')
            .chars()
            .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
            .collect();
        PathBuf::from("/var/lib/eco-testkit")
            .join(name)
            .join("machines")
    } else {
        checkout.join("target/machines")
    }
}

fn under_a_private_tmp(path: &Path) -> bool {
    path.starts_with("/tmp") || path.starts_with("/var/tmp")
}

/// One booted machine; see the module docs.
pub struct Machine {
    name: String,
    dir: PathBuf,
    outer: Child,
    pid1: i32,
}

impl Machine {
    /// Boots a machine named `name` (letters, digits, '-') with its files
    /// under `<files_root>/<name>` and a network namespace of its own
    /// (loopback only), and waits (at most 60 s) until systemd says the
    /// boot is over.
    pub fn boot(name: &str) -> anyhow::Result<Machine> {
        Self::boot_with(name, true)
    }

    /// [`Machine::boot`], on the host's network namespace: what the
    /// machine binds, the host sees, so its addresses must not collide with
    /// another test's.
    pub fn boot_on_host_network(name: &str) -> anyhow::Result<Machine> {
        Self::boot_with(name, false)
    }

    fn boot_with(name: &str, own_network: bool) -> anyhow::Result<Machine> {
        anyhow::ensure!(
            !name.is_empty() && name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-'),
            "machine name {name:?}: letters, digits and '-' only"
        );
        let dir = files_root().join(name);
        let checkout = crate::workspace_root();
        // (the processes of an earlier machine of this name whose test was
        // itself killed before it could clean up)
        crate::process::kill_processes_rooted_under(&dir);
        remove_cgroups(name);
        if dir.exists() {
            std::fs::remove_dir_all(&dir).with_context(|| format!("remove {}", dir.display()))?;
        }
        for sub in ["upper", "work", "merged"] {
            std::fs::create_dir_all(dir.join(sub))?;
        }
        let log = std::fs::File::create(dir.join("console.log"))?;
        let mut unshare = Command::new("unshare");
        unshare.args(["--mount", "--pid", "--fork", "--uts"]);
        if own_network {
            unshare.arg("--net");
        }
        let outer = unshare
            .args(["--propagation", "private", "bash", "-c", BOOT, "boot", name])
            .arg(&dir)
            .arg(if own_network { "own" } else { "host" })
            .arg(if checkout.starts_with("/tmp") {
                checkout.as_os_str()
            } else {
                std::ffi::OsStr::new("")
            })
            .stdin(Stdio::null())
            .stdout(log.try_clone()?)
            .stderr(log)
            .spawn()
            .context("start unshare")?;
        let mut machine = Machine {
            name: name.to_string(),
            dir,
            outer,
            pid1: 0,
        };
        let pid1 = crate::wait_until(Duration::from_secs(10), || {
            crate::process::pid1_of(&machine.outer).filter(|p| {
                std::fs::read_link(format!("/proc/{p}/exe")).is_ok_and(|e| e.ends_with("systemd"))
            })
        });
        machine.pid1 =
            pid1.with_context(|| format!("systemd did not start: {}", machine.console()))?;
        let until = Instant::now() + Duration::from_secs(60);
        loop {
            let (_, out, _) = machine.exec(&["systemctl", "is-system-running"])?;
            match out.trim() {
                "running" | "degraded" => break,
                _ if Instant::now() > until => {
                    anyhow::bail!("the machine did not finish booting: {}", machine.console())
                }
                _ => std::thread::sleep(Duration::from_millis(200)),
            }
        }
        Ok(machine)
    }

    /// The machine's name (also its host name).
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The host pid of the machine's systemd.
    pub fn pid1(&self) -> i32 {
        self.pid1
    }

    /// `path` of the machine, as the host reaches it (through its PID 1's
    /// root: the machine's own `/tmp` and `/run` included).
    pub fn path(&self, path: &str) -> PathBuf {
        Path::new(&format!("/proc/{}/root", self.pid1)).join(path.trim_start_matches('/'))
    }

    /// Runs `args` in the machine as root (its mounts, network, PIDs and
    /// root), at most `limit`; its exit code (-1 when killed), stdout and
    /// stderr.
    pub fn exec_for(
        &self,
        limit: Duration,
        args: &[&str],
    ) -> anyhow::Result<(i32, String, String)> {
        let pid = self.pid1.to_string();
        let out = Command::new("timeout")
            .args(["--signal=KILL", &format!("{}", limit.as_secs_f64())])
            .args([
                "nsenter", "--target", &pid, "--mount", "--uts", "--net", "--pid", "--root",
                "--wd", "--",
            ])
            .args([
                "env",
                "-i",
                "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
                "LANG=C.UTF-8",
            ])
            .args(args)
            .stdin(Stdio::null())
            .output()
            .with_context(|| format!("nsenter {args:?}"))?;
        Ok((
            out.status.code().unwrap_or(-1),
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        ))
    }

    /// [`Machine::exec_for`] with 60 s.
    pub fn exec(&self, args: &[&str]) -> anyhow::Result<(i32, String, String)> {
        self.exec_for(Duration::from_secs(60), args)
    }

    /// Runs `args` and fails unless it exits 0; its stdout.
    pub fn run(&self, args: &[&str]) -> anyhow::Result<String> {
        let (code, out, err) = self.exec(args)?;
        anyhow::ensure!(
            code == 0,
            "{args:?} in {}: exit {code}: {}{}",
            self.name,
            out,
            err
        );
        Ok(out)
    }

    /// Starts `cmd` (a program of the test, from the host's root) in the
    /// machine's network namespace only (the host's, when booted on it), so the machine reaches it on its
    /// loopback. The caller owns the child and kills it.
    pub fn spawn(&self, cmd: &mut Command) -> anyhow::Result<Child> {
        let mut nsenter = Command::new("nsenter");
        nsenter
            .arg(format!("--net=/proc/{}/ns/net", self.pid1))
            .arg("--")
            .arg(cmd.get_program())
            .args(cmd.get_args());
        for (k, v) in cmd.get_envs() {
            match v {
                Some(v) => nsenter.env(k, v),
                None => nsenter.env_remove(k),
            };
        }
        if let Some(dir) = cmd.get_current_dir() {
            nsenter.current_dir(dir);
        }
        nsenter
            .spawn()
            .with_context(|| format!("start {cmd:?} in {}", self.name))
    }

    /// What systemd printed on the machine's console so far.
    pub fn console(&self) -> String {
        std::fs::read_to_string(self.dir.join("console.log")).unwrap_or_default()
    }

    /// The journal of `unit` in the machine (its last 200 lines).
    pub fn journal(&self, unit: &str) -> String {
        self.exec(&["journalctl", "--no-pager", "-n", "200", "-u", unit])
            .map(|(_, out, err)| out + &err)
            .unwrap_or_else(|e| e.to_string())
    }
}

impl Drop for Machine {
    fn drop(&mut self) {
        if self.pid1 > 0 {
            crate::process::kill(self.pid1, libc::SIGKILL);
        }
        if !crate::process::wait_exit(&mut self.outer, Duration::from_secs(10)) {
            let _ = self.outer.kill();
            let _ = self.outer.wait();
        }
        remove_cgroups(&self.name);
    }
}

/// Removes the machine's cgroup subtrees, deepest first (a cgroup goes
/// once its processes are gone, which the kernel finishes shortly after
/// they were killed: a few tries).
fn remove_cgroups(name: &str) {
    let Ok(hierarchies) = std::fs::read_dir("/sys/fs/cgroup") else {
        return;
    };
    let roots: Vec<PathBuf> = hierarchies
        .flatten()
        .map(|h| h.path().join(format!("eco-machine-{name}")))
        .filter(|p| p.is_dir())
        .collect();
    for _ in 0..50 {
        let mut left = false;
        for root in &roots {
            let mut dirs = Vec::new();
            collect_dirs(root, &mut dirs);
            for dir in dirs.iter().rev() {
                left |= std::fs::remove_dir(dir).is_err();
            }
        }
        if !left {
            return;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// `dir` and every directory under it, parents before children.
fn collect_dirs(dir: &Path, out: &mut Vec<PathBuf>) {
    if !dir.is_dir() {
        return;
    }
    out.push(dir.to_path_buf());
    for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        if entry.file_type().is_ok_and(|t| t.is_dir()) {
            collect_dirs(&entry.path(), out);
        }
    }
}

/// Why machines cannot boot here, if they cannot.
pub fn unavailable() -> Option<String> {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        return Some("machines need root (namespaces, mounts, cgroups)".into());
    }
    if !Path::new("/lib/systemd/systemd").exists() {
        return Some("machines need systemd (/lib/systemd/systemd)".into());
    }
    crate::process::missing_tool(&["unshare", "nsenter", "ip", "timeout"])
        .map(|tool| format!("machines need `{tool}`"))
}

/// Builds eco's Debian package from `eco_bin` into `out` with
/// `scripts/build-deb.sh`; its path.
pub fn build_debian_package(eco_bin: &Path, out: &Path) -> anyhow::Result<PathBuf> {
    let built = Command::new("bash")
        .arg(crate::workspace_root().join("scripts/build-deb.sh"))
        .arg("--eco")
        .arg(eco_bin)
        .arg("--out")
        .arg(out)
        .output()
        .context("run scripts/build-deb.sh")?;
    anyhow::ensure!(
        built.status.success(),
        "scripts/build-deb.sh: {}",
        String::from_utf8_lossy(&built.stderr)
    );
    Ok(PathBuf::from(String::from_utf8_lossy(&built.stdout).trim()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_checkout_under_a_private_tmp_keeps_machine_files_outside_it() {
        assert!(under_a_private_tmp(Path::new("/tmp/x/eco")));
        assert!(under_a_private_tmp(Path::new("/var/tmp/eco")));
        assert!(!under_a_private_tmp(Path::new("/tmpfoo/eco")));
        assert!(!under_a_private_tmp(Path::new("/work/eco")));
        assert!(!under_a_private_tmp(&files_root()), "never under /tmp");
    }
}
