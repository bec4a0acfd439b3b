//! Processes: signals by pid, children that die with the harness, and
//! starting `eco run`.

use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// Sends `signal` to `pid` (a process this harness started or found on
/// its own data directory).
pub fn kill(pid: i32, signal: i32) {
    // SAFETY: kill(2) has no memory-safety preconditions.
    unsafe {
        libc::kill(pid, signal);
    }
}

/// Whether process `pid` is gone, or a zombie with no thread left
/// (eco's own rule: [`eco::etcd::supervisor::exited`]).
pub fn exited(pid: i32) -> bool {
    eco::etcd::supervisor::exited(pid)
}

/// The child gets `PR_SET_PDEATHSIG = SIGKILL`: it dies when the thread
/// that spawned it ends, whatever ends it (SIGKILL of the harness
/// included). Spawn from a thread that lives as long as the child should.
pub fn die_with_parent(cmd: &mut Command) -> &mut Command {
    // SAFETY: only async-signal-safe calls between fork and exec.
    unsafe {
        cmd.pre_exec(|| {
            if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL, 0, 0, 0) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        })
    }
}

/// How to start one `eco run`.
pub struct EcoRun<'a> {
    /// The `eco` binary.
    pub eco: &'a Path,
    pub config: &'a Path,
    pub instance_id: &'a str,
    /// eco's output is appended to this file.
    pub log: &'a Path,
    /// Run inside this network namespace (`ip netns exec`).
    pub netns: Option<&'a str>,
    /// See [`die_with_parent`].
    pub die_with_parent: bool,
    /// Environment variables added to eco's (the AWS emulator's endpoints
    /// and credentials).
    pub env: &'a [(String, String)],
}

impl EcoRun<'_> {
    /// Starts `eco run --config <config> --instance-id <id>`, stdin closed,
    /// stdout and stderr appended to the log.
    pub fn spawn(&self) -> std::io::Result<Child> {
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(self.log)?;
        let mut command = match self.netns {
            None => Command::new(self.eco),
            Some(ns) => {
                let mut c = Command::new("ip");
                c.args(["netns", "exec", ns]).arg(self.eco);
                c
            }
        };
        command
            .args(["run", "--config"])
            .arg(self.config)
            .arg("--instance-id")
            .arg(self.instance_id)
            .envs(self.env.iter().map(|(k, v)| (k, v)))
            .stdin(Stdio::null())
            .stdout(log.try_clone()?)
            .stderr(log);
        if self.die_with_parent {
            die_with_parent(&mut command);
        }
        command.spawn()
    }
}

/// Runs `eco <args>` to its end; returns (exit code, stdout, stderr).
///
/// # Panics
/// When `eco` cannot be run at all (a test helper: the test's failure
/// report).
pub fn run_eco(eco: &Path, args: &[&str]) -> (i32, String, String) {
    let out = Command::new(eco).args(args).output().expect("run eco");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into(),
        String::from_utf8_lossy(&out.stderr).into(),
    )
}

/// Polls `child` every 50 ms until it exits or `limit` passes; whether it
/// exited (and was reaped).
pub fn wait_exit(child: &mut Child, limit: Duration) -> bool {
    let until = Instant::now() + limit;
    loop {
        if child.try_wait().ok().flatten().is_some() {
            return true;
        }
        if Instant::now() >= until {
            return false;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// eco's log without the lines it relays from etcd.
pub fn eco_lines(log: &str) -> Vec<&str> {
    log.lines().filter(|l| !l.contains(" etcd:")).collect()
}

/// The host pid of the PID 1 of the namespaces `outer` (an `unshare
/// --fork`) made: its only child.
pub fn pid1_of(outer: &Child) -> Option<i32> {
    let pid = outer.id();
    let children = std::fs::read_to_string(format!("/proc/{pid}/task/{pid}/children")).ok()?;
    children.split_whitespace().next()?.parse().ok()
}

/// Every process of the host, by pid.
pub fn host_pids() -> impl Iterator<Item = i32> {
    std::fs::read_dir("/proc")
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse().ok())
}

/// Kills (by pid) every process whose root directory is under `dir`: the
/// pods of an earlier run of the same set that was itself killed before it
/// could clean up (their roots are `dir/pods/<pod>/root`), or the processes
/// of an earlier [`crate::machine::Machine`] of that directory.
pub fn kill_processes_rooted_under(dir: &Path) {
    let prefix = dir.to_string_lossy().into_owned();
    for pid in host_pids() {
        let root = std::fs::read_link(format!("/proc/{pid}/root")).unwrap_or_default();
        if root.to_string_lossy().starts_with(&prefix) {
            kill(pid, libc::SIGKILL);
        }
    }
}

/// The first of `tools` that cannot be run (`TOOL --version`), if any.
pub fn missing_tool<'a>(tools: &[&'a str]) -> Option<&'a str> {
    tools.iter().copied().find(|tool| {
        Command::new(tool)
            .arg("--version")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .is_err()
    })
}

/// Pids of the processes with `arg` as one of their arguments (a data
/// directory or a config file of this run: paths unique to a test).
pub fn pids_with_arg(arg: &[u8]) -> Vec<i32> {
    let mut pids = Vec::new();
    for entry in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<i32>() else {
            continue;
        };
        let Ok(cmdline) = std::fs::read(entry.path().join("cmdline")) else {
            continue;
        };
        // Zombies have an empty command line and are not running.
        if cmdline.split(|b| *b == 0).any(|a| a == arg) {
            pids.push(pid);
        }
    }
    pids
}

/// Unpacks the tar archive `archive` into `dir` (made if missing) with
/// tar(1), as a user does with `… --out - | tar -x`; panics saying `what`
/// when tar fails.
pub fn untar(archive: &[u8], dir: &Path, what: &str) {
    std::fs::create_dir_all(dir).expect("the directory to unpack into");
    let mut tar = Command::new("tar")
        .args(["-x", "-f", "-", "-C"])
        .arg(dir)
        .stdin(Stdio::piped())
        .spawn()
        .expect("tar");
    if let Some(mut stdin) = tar.stdin.take() {
        std::io::Write::write_all(&mut stdin, archive).expect("tar's input");
    }
    assert!(tar.wait().expect("tar").success(), "tar -x of {what}");
}
