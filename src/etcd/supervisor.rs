//! Supervising the local etcd process.
//!
//! - Start etcd with a given command line; restart it when it exits without
//!   being asked to, after a capped exponential back-off, keeping its data.
//! - Stop it: SIGTERM, wait (bounded), then SIGKILL.
//! - Never leave an orphan: etcd gets `PR_SET_PDEATHSIG = SIGKILL`, so it dies
//!   with eco even when eco is killed with SIGKILL. The death signal is tied
//!   to the *thread* that forked, so the supervisor runs on a dedicated OS
//!   thread (with its own single-threaded runtime) that lives exactly as
//!   long as the supervision; a pool thread that may retire would kill etcd
//!   when it does. etcd also gets its own process group, so a Ctrl-C in a
//!   terminal reaches eco, which stops etcd in order, not etcd directly.
//! - A pid file beside the data directory lets a restarted eco kill an etcd
//!   left over from a previous life (belt and braces for the above).
//! - etcd does not inherit eco's secrets: every `ECO_*` variable (the
//!   gossip keys of `ECO_GOSSIP_KEYS`, which in generated mode open the
//!   cluster's CA) and the AWS credentials of the snapshot store are
//!   removed from its environment ([`withheld_from_etcd`]).
//!
//! Restart counts, the last exit status and the current back-off are
//! published through a `watch` channel.

use crate::base::events::Event;
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};
use tokio::process::{Child, Command};
use tokio::sync::{mpsc, oneshot, watch};
use tracing::Instrument;

/// How to run etcd.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ProcessSpec {
    pub binary: PathBuf,
    pub args: Vec<String>,
    pub instance_id: String,
    /// etcd's output goes here instead of eco's log when set.
    pub log_file: Option<PathBuf>,
    pub pid_file: PathBuf,
    /// Used to recognise a leftover etcd of ours.
    pub data_dir: PathBuf,
}

/// Restart back-off.
#[derive(Clone, Copy, Debug)]
pub struct Backoff {
    pub initial: Duration,
    pub max: Duration,
    /// A process that ran this long before exiting restarts after `initial`.
    pub stable_after: Duration,
    pub stop_timeout: Duration,
}

/// What the supervisor reports.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProcessStatus {
    pub running: bool,
    pub pid: Option<u32>,
    /// When the running etcd was started (Unix ms, this machine's clock);
    /// absent while it does not run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub started_unix_ms: Option<u64>,
    /// Starts, including restarts.
    pub starts: u64,
    /// Exits that eco did not ask for.
    pub crashes: u64,
    /// Human-readable last exit, e.g. `killed by SIGKILL`.
    pub last_exit: Option<String>,
    /// etcd's own reason for the last exit: its last fatal line
    /// (`crate::etcd::exit_reason`), when it logged one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_exit_reason: Option<String>,
    pub last_exit_code: Option<i32>,
    /// When a restart is pending: in how many milliseconds (at publication).
    pub restart_in_ms: Option<u64>,
    /// Why the last start failed, if it did.
    pub start_error: Option<String>,
}

#[derive(Debug, thiserror::Error)]
pub enum SupervisorError {
    #[error("cannot start {binary}: {source}")]
    Spawn {
        binary: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("cannot open etcd log file {path}: {source}")]
    LogFile {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("the supervisor has stopped")]
    Gone,
    #[error("cannot start the supervisor thread: {0}")]
    Thread(std::io::Error),
}

enum Request {
    Start(ProcessSpec, oneshot::Sender<Result<(), SupervisorError>>),
    Stop(oneshot::Sender<()>),
}

/// Handle to the supervisor thread. Dropping it stops etcd.
pub struct Supervisor {
    requests: Option<mpsc::UnboundedSender<Request>>,
    status: watch::Receiver<ProcessStatus>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Supervisor {
    pub fn new(backoff: Backoff) -> Result<Self, SupervisorError> {
        let (tx, rx) = mpsc::unbounded_channel();
        let (status_tx, status_rx) = watch::channel(ProcessStatus::default());
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(SupervisorError::Thread)?;
        // Its events (etcd.started, etcd.exited, …) carry the instance of
        // the span it was made in, as the daemon's do.
        let span = tracing::Span::current();
        let thread = std::thread::Builder::new()
            .name("etcd-supervisor".into())
            .spawn(move || runtime.block_on(run(rx, status_tx, backoff).instrument(span)))
            .map_err(SupervisorError::Thread)?;
        Ok(Self {
            requests: Some(tx),
            status: status_rx,
            thread: Some(thread),
        })
    }

    /// Starts etcd (restarting it if it runs with another command line).
    /// Returns once the process is spawned, or with the reason it was not.
    pub async fn start(&self, spec: ProcessSpec) -> Result<(), SupervisorError> {
        let (tx, rx) = oneshot::channel();
        self.send(Request::Start(spec, tx))?;
        rx.await.map_err(|_| SupervisorError::Gone)?
    }

    /// Stops etcd and keeps it stopped. Returns when it has exited.
    pub async fn stop(&self) -> Result<(), SupervisorError> {
        let (tx, rx) = oneshot::channel();
        self.send(Request::Stop(tx))?;
        rx.await.map_err(|_| SupervisorError::Gone)
    }

    pub fn status(&self) -> watch::Receiver<ProcessStatus> {
        self.status.clone()
    }

    fn send(&self, request: Request) -> Result<(), SupervisorError> {
        self.requests
            .as_ref()
            .ok_or(SupervisorError::Gone)?
            .send(request)
            .map_err(|_| SupervisorError::Gone)
    }

    /// Stops etcd and ends the supervisor thread.
    pub fn shutdown(mut self) {
        self.finish();
    }

    fn finish(&mut self) {
        // Closing the channel makes the thread stop etcd and return.
        self.requests.take();
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

impl Drop for Supervisor {
    fn drop(&mut self) {
        self.finish();
    }
}

struct Running {
    child: Child,
    started: Instant,
    /// The latest fatal line of its output (piped into eco's log).
    fatal: super::exit_reason::FatalLine,
    /// Its log file and the file's length when it started.
    log_from: Option<(PathBuf, u64)>,
    /// The readers of its piped output.
    readers: Vec<tokio::task::JoinHandle<u64>>,
}

impl Running {
    /// etcd's own reason for exiting: its last fatal line, once its output
    /// was read to the end (a second at most: the pipes close with it).
    async fn reason(&mut self) -> Option<String> {
        for r in self.readers.drain(..) {
            let _ = tokio::time::timeout(Duration::from_secs(1), r).await;
        }
        self.fatal.take().or_else(|| {
            self.log_from
                .as_ref()
                .and_then(|(path, from)| super::exit_reason::fatal_in_file(path, *from))
        })
    }
}

async fn run(
    mut requests: mpsc::UnboundedReceiver<Request>,
    status: watch::Sender<ProcessStatus>,
    backoff: Backoff,
) {
    let mut wanted: Option<ProcessSpec> = None;
    let mut running: Option<Running> = None;
    let mut restart_at: Option<tokio::time::Instant> = None;
    let mut delay = backoff.initial;

    loop {
        tokio::select! {
            biased;
            request = requests.recv() => match request {
                None => {
                    stop(&mut running, &status, backoff.stop_timeout, wanted.as_ref()).await;
                    return;
                }
                Some(Request::Stop(done)) => {
                    let stopped = wanted.take();
                    restart_at = None;
                    status.send_modify(|s| s.restart_in_ms = None);
                    stop(&mut running, &status, backoff.stop_timeout, stopped.as_ref()).await;
                    let _ = done.send(());
                }
                Some(Request::Start(spec, done)) => {
                    // The same command line, running or waiting out its
                    // restart back-off: being asked again is no reason to
                    // start sooner (a join that keeps failing would
                    // otherwise restart etcd as often as it is asked).
                    if (running.is_some() || restart_at.is_some()) && wanted.as_ref() == Some(&spec) {
                        let _ = done.send(Ok(()));
                        continue;
                    }
                    stop(&mut running, &status, backoff.stop_timeout, wanted.as_ref()).await;
                    restart_at = None;
                    delay = backoff.initial;
                    let result = spawn(&spec, &status).await.map(|r| running = Some(r));
                    wanted = result.is_ok().then_some(spec);
                    let _ = done.send(result);
                }
            },
            exit = wait(&mut running) => {
                let mut ended = running.take();
                let ran_for = ended.as_ref().map(|r| r.started.elapsed()).unwrap_or_default();
                let reason = match ended.as_mut() {
                    Some(r) => r.reason().await,
                    None => None,
                };
                if let Some(spec) = &wanted {
                    remove_pid_file(&spec.pid_file);
                }
                let (text, code) = describe(exit);
                crate::event!(error, Event::EtcdExited, exit = %text, ran_for = ?ran_for, reason = %reason.as_deref().unwrap_or("-"), "etcd exited unexpectedly");
                if ran_for >= backoff.stable_after {
                    delay = backoff.initial;
                }
                if wanted.is_some() {
                    restart_at = Some(tokio::time::Instant::now() + delay);
                    let in_ms = delay.as_millis() as u64;
                    crate::event!(info, Event::EtcdRestarting, restart_in_ms = in_ms, "restarting etcd after back-off");
                    delay = (delay * 2).min(backoff.max);
                    status.send_modify(|s| {
                        s.running = false;
                        s.pid = None;
                        s.started_unix_ms = None;
                        s.crashes += 1;
                        s.last_exit = Some(text);
                        s.last_exit_code = code;
                        s.last_exit_reason = reason;
                        s.restart_in_ms = Some(in_ms);
                    });
                }
            },
            _ = sleep_until(restart_at) => {
                restart_at = None;
                if let Some(spec) = wanted.clone() {
                    match spawn(&spec, &status).await {
                        Ok(r) => running = Some(r),
                        Err(e) => {
                            tracing::error!(error = %e, "cannot restart etcd; trying again after back-off");
                            restart_at = Some(tokio::time::Instant::now() + delay);
                            delay = (delay * 2).min(backoff.max);
                        }
                    }
                }
            },
        }
    }
}

async fn wait(running: &mut Option<Running>) -> std::io::Result<std::process::ExitStatus> {
    match running {
        Some(r) => r.child.wait().await,
        None => std::future::pending().await,
    }
}

async fn sleep_until(at: Option<tokio::time::Instant>) {
    match at {
        Some(at) => tokio::time::sleep_until(at).await,
        None => std::future::pending().await,
    }
}

fn describe(exit: std::io::Result<std::process::ExitStatus>) -> (String, Option<i32>) {
    use std::os::unix::process::ExitStatusExt;
    match exit {
        Err(e) => (format!("cannot wait for etcd: {e}"), None),
        Ok(s) => match (s.code(), s.signal()) {
            (Some(code), _) => (format!("exit code {code}"), Some(code)),
            (None, Some(sig)) => {
                let name = nix::sys::signal::Signal::try_from(sig)
                    .map(|s| s.as_str().to_string())
                    .unwrap_or_else(|_| format!("signal {sig}"));
                (format!("killed by {name}"), None)
            }
            (None, None) => ("exited".to_string(), None),
        },
    }
}

async fn spawn(
    spec: &ProcessSpec,
    status: &watch::Sender<ProcessStatus>,
) -> Result<Running, SupervisorError> {
    kill_leftover(&spec.pid_file, &spec.data_dir).await;
    let log_from = spec.log_file.as_ref().map(|path| {
        let len = std::fs::metadata(path).map_or(0, |m| m.len());
        (path.clone(), len)
    });
    let fatal = super::exit_reason::FatalLine::default();
    let result = spawn_child(spec);
    match result {
        Ok(mut child) => {
            let pid = child.id();
            if let Some(pid) = pid
                && let Err(e) = crate::base::atomic_file::write_atomic(
                    &spec.pid_file,
                    format!("{pid}\n").as_bytes(),
                )
            {
                tracing::warn!(error = %e, "cannot write the etcd pid file");
            }
            let mut readers = Vec::new();
            if spec.log_file.is_none() {
                if let Some(out) = child.stdout.take() {
                    readers.push(tokio::spawn(super::output::forward(
                        out,
                        spec.instance_id.clone(),
                        "stdout",
                        fatal.clone(),
                    )));
                }
                if let Some(err) = child.stderr.take() {
                    readers.push(tokio::spawn(super::output::forward(
                        err,
                        spec.instance_id.clone(),
                        "stderr",
                        fatal.clone(),
                    )));
                }
            }
            crate::event!(info, Event::EtcdStarted, pid = ?pid, binary = %spec.binary.display(), "started etcd");
            status.send_modify(|s| {
                s.running = true;
                s.pid = pid;
                s.started_unix_ms = Some(crate::base::wall_clock::unix_ms());
                s.starts += 1;
                s.restart_in_ms = None;
                s.start_error = None;
            });
            Ok(Running {
                child,
                started: Instant::now(),
                fatal,
                log_from,
                readers,
            })
        }
        Err(e) => {
            status.send_modify(|s| s.start_error = Some(e.to_string()));
            Err(e)
        }
    }
}

fn spawn_child(spec: &ProcessSpec) -> Result<Child, SupervisorError> {
    let mut command = Command::new(&spec.binary);
    command
        .args(&spec.args)
        .stdin(Stdio::null())
        .kill_on_drop(true)
        .process_group(0);
    withhold_from_etcd(&mut command);
    match &spec.log_file {
        Some(path) => {
            let open = || {
                std::fs::OpenOptions::new()
                    .create(true)
                    .append(true)
                    .open(path)
                    .map_err(|source| SupervisorError::LogFile {
                        path: path.clone(),
                        source,
                    })
            };
            command.stdout(open()?).stderr(open()?);
        }
        None => {
            command.stdout(Stdio::piped()).stderr(Stdio::piped());
        }
    }
    let parent = std::process::id();
    // SAFETY: the closure runs between fork and exec and only calls
    // async-signal-safe functions (prctl, getppid, _exit).
    unsafe {
        command.pre_exec(move || {
            if libc::prctl(
                libc::PR_SET_PDEATHSIG,
                libc::SIGKILL as libc::c_ulong,
                0,
                0,
                0,
            ) != 0
            {
                return Err(std::io::Error::last_os_error());
            }
            // eco died between fork and prctl: do not outlive it.
            if libc::getppid() as u32 != parent {
                libc::_exit(1);
            }
            Ok(())
        });
    }
    command.spawn().map_err(|source| SupervisorError::Spawn {
        binary: spec.binary.clone(),
        source,
    })
}

/// Removes from `command`'s environment what etcd must not see: every
/// variable [`withheld_from_etcd`] names, and systemd's `NOTIFY_SOCKET`
/// (under `Type=notify` eco alone speaks for the unit: etcd would
/// otherwise send its own READY=1 as soon as it serves, which systemd
/// ignores only thanks to `NotifyAccess=main`). For every etcd eco
/// starts: the member and the throwaway ones.
pub fn withhold_from_etcd(command: &mut Command) {
    command.env_remove("NOTIFY_SOCKET");
    for (name, _) in std::env::vars_os() {
        if name.to_str().is_some_and(withheld_from_etcd) {
            command.env_remove(&name);
        }
    }
}

/// Whether the environment variable `name` is eco's alone: every
/// `ECO_*` variable (`ECO_GOSSIP_KEYS` is a secret; the others mean
/// nothing to etcd) and the credentials the snapshot store's clients read
/// (the AWS SDK's; object_store's for Azure and GCS). etcd reads its own
/// `ETCD_*` variables, which stay.
pub fn withheld_from_etcd(name: &str) -> bool {
    name.starts_with("ECO_")
        || matches!(
            name,
            "AWS_ACCESS_KEY_ID"
                | "AWS_SECRET_ACCESS_KEY"
                | "AWS_SESSION_TOKEN"
                | "AZURE_STORAGE_ACCOUNT_KEY"
                | "AZURE_STORAGE_ACCESS_KEY"
                | "AZURE_STORAGE_MASTER_KEY"
                | "AZURE_STORAGE_CLIENT_SECRET"
                | "AZURE_CLIENT_SECRET"
                | "AZURE_STORAGE_SAS_KEY"
                | "AZURE_STORAGE_SAS_TOKEN"
                | "AZURE_STORAGE_TOKEN"
                | "AZURE_STORAGE_ENCRYPTION_KEY"
                | "AZURE_FABRIC_SESSION_TOKEN"
                | "GOOGLE_SERVICE_ACCOUNT_KEY"
                | "GOOGLE_BEARER_TOKEN"
        )
}

async fn stop(
    running: &mut Option<Running>,
    status: &watch::Sender<ProcessStatus>,
    timeout: Duration,
    spec: Option<&ProcessSpec>,
) {
    let Some(mut r) = running.take() else { return };
    if let Some(pid) = r.child.id() {
        let pid = nix::unistd::Pid::from_raw(pid as i32);
        let _ = nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGTERM);
    }
    let exit = match tokio::time::timeout(timeout, r.child.wait()).await {
        Ok(exit) => exit,
        Err(_) => {
            tracing::warn!(?timeout, "etcd did not stop after SIGTERM; killing it");
            let _ = r.child.start_kill();
            r.child.wait().await
        }
    };
    let (text, code) = describe(exit);
    crate::event!(info, Event::EtcdStopped, exit = %text, "stopped etcd");
    if let Some(spec) = spec {
        remove_pid_file(&spec.pid_file);
    }
    status.send_modify(|s| {
        s.running = false;
        s.pid = None;
        s.started_unix_ms = None;
        s.last_exit = Some(text);
        s.last_exit_code = code;
    });
}

fn remove_pid_file(path: &Path) {
    let _ = std::fs::remove_file(path);
}

/// Kills an etcd recorded in `pid_file` that still runs on `data_dir`;
/// waits (5 s at most) for one that is already exiting: a killed etcd
/// holds its ports until its memory is torn down (seen at 8 GiB when eco
/// and its etcd were killed together and eco was started again at once:
/// "address already in use"), and its command line reads empty while it
/// does.
pub async fn kill_leftover(pid_file: &Path, data_dir: &Path) {
    let Ok(text) = std::fs::read_to_string(pid_file) else {
        return;
    };
    let Ok(pid) = text.trim().parse::<i32>() else {
        remove_pid_file(pid_file);
        return;
    };
    let Ok(cmdline) = std::fs::read(format!("/proc/{pid}/cmdline")) else {
        remove_pid_file(pid_file);
        return;
    };
    if cmdline.is_empty() {
        tracing::info!(
            pid,
            "the etcd recorded in the pid file is exiting; waiting for it"
        );
        wait_gone(pid).await;
        remove_pid_file(pid_file);
        return;
    }
    let ours = format!("--data-dir={}", data_dir.display());
    let is_ours = cmdline.split(|b| *b == 0).any(|arg| arg == ours.as_bytes());
    if !is_ours {
        remove_pid_file(pid_file);
        return;
    }
    crate::event!(
        warn,
        Event::EtcdLeftoverKilled,
        pid,
        "an etcd from a previous eco is still running on our data directory; killing it"
    );
    let target = nix::unistd::Pid::from_raw(pid);
    let _ = nix::sys::signal::kill(target, nix::sys::signal::Signal::SIGKILL);
    wait_gone(pid).await;
    remove_pid_file(pid_file);
}

/// Waits until process `pid` has exited, 5 s at most.
async fn wait_gone(pid: i32) {
    for _ in 0..100 {
        if exited(pid) {
            return;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Whether process `pid` is gone, or a zombie with no thread left: it
/// holds nothing then. A zombie first thread is not enough: etcd has many
/// threads, and its first one reads as a zombie while the others still
/// tear the process down, its ports held (seen at 8 GiB). Whoever reaps it
/// (not eco, once eco restarted) may take its time.
pub fn exited(pid: i32) -> bool {
    let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
        return true;
    };
    let zombie = stat
        .rsplit_once(')')
        .is_some_and(|(_, rest)| rest.trim_start().starts_with('Z'));
    zombie
        && std::fs::read_dir(format!("/proc/{pid}/task")).map_or(true, |tasks| tasks.count() <= 1)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn backoff() -> Backoff {
        Backoff {
            initial: Duration::from_millis(50),
            max: Duration::from_millis(200),
            stable_after: Duration::from_secs(60),
            stop_timeout: Duration::from_secs(2),
        }
    }

    fn spec(dir: &Path, script: &str) -> ProcessSpec {
        ProcessSpec {
            binary: "/bin/sh".into(),
            args: vec!["-c".into(), script.into()],
            instance_id: "t".into(),
            log_file: None,
            pid_file: dir.join("etcd.pid"),
            data_dir: dir.join("etcd"),
        }
    }

    async fn wait_for(
        rx: &mut watch::Receiver<ProcessStatus>,
        what: impl Fn(&ProcessStatus) -> bool,
    ) -> ProcessStatus {
        let got = tokio::time::timeout(Duration::from_secs(10), rx.wait_for(|s| what(s))).await;
        got.expect("condition within 10s")
            .expect("supervisor alive")
            .clone()
    }

    #[tokio::test]
    async fn restarts_a_crashing_process_with_backoff_and_counts() {
        let d = tempfile::tempdir().unwrap();
        let sup = Supervisor::new(backoff()).unwrap();
        let mut st = sup.status();
        sup.start(spec(d.path(), "sleep 0.1; exit 3"))
            .await
            .unwrap();
        let s = wait_for(&mut st, |s| s.crashes >= 3).await;
        assert_eq!(s.last_exit_code, Some(3));
        assert!(s.starts >= 3);
        sup.stop().await.unwrap();
        let s = st.borrow().clone();
        assert!(!s.running && s.restart_in_ms.is_none());
    }

    #[tokio::test]
    async fn stop_escalates_to_sigkill_when_sigterm_is_ignored() {
        let d = tempfile::tempdir().unwrap();
        let sup = Supervisor::new(Backoff {
            stop_timeout: Duration::from_millis(300),
            ..backoff()
        })
        .unwrap();
        let mut st = sup.status();
        sup.start(spec(
            d.path(),
            "trap '' TERM; while true; do sleep 0.05; done",
        ))
        .await
        .unwrap();
        let pid = wait_for(&mut st, |s| s.running).await.pid.unwrap();
        tokio::time::sleep(Duration::from_millis(100)).await;
        sup.stop().await.unwrap();
        assert_eq!(st.borrow().last_exit.as_deref(), Some("killed by SIGKILL"));
        assert!(std::fs::metadata(format!("/proc/{pid}")).is_err());
        assert!(!d.path().join("etcd.pid").exists());
    }

    #[test]
    fn eco_secrets_are_withheld_from_etcd_and_etcds_own_variables_are_not() {
        for name in [
            "ECO_GOSSIP_KEYS",
            "ECO_INSTANCE_ID",
            "AWS_SECRET_ACCESS_KEY",
            "AWS_SESSION_TOKEN",
            "AWS_ACCESS_KEY_ID",
            "AZURE_STORAGE_ACCOUNT_KEY",
            "AZURE_CLIENT_SECRET",
            "AZURE_STORAGE_SAS_TOKEN",
            "GOOGLE_SERVICE_ACCOUNT_KEY",
        ] {
            assert!(withheld_from_etcd(name), "{name}");
        }
        for name in [
            "ETCD_UNSUPPORTED_ARCH",
            "PATH",
            "HOME",
            "GOMAXPROCS",
            "AZURE_CLIENT_ID",
        ] {
            assert!(!withheld_from_etcd(name), "{name}");
        }
    }

    #[tokio::test]
    async fn spawn_failure_is_reported_not_retried() {
        let d = tempfile::tempdir().unwrap();
        let sup = Supervisor::new(backoff()).unwrap();
        let mut bad = spec(d.path(), "");
        bad.binary = "/nonexistent/etcd".into();
        let e = sup.start(bad).await.unwrap_err().to_string();
        assert!(e.contains("/nonexistent/etcd"), "{e}");
        assert_eq!(sup.status().borrow().starts, 0);
    }

    /// A pid file naming a process that has exited but is not reaped yet
    /// (its command line reads empty, as an exiting etcd's does): nothing
    /// is killed, it holds nothing (no thread left), the call does not
    /// wait for its reaping, and the pid file goes.
    #[tokio::test]
    async fn a_leftover_that_exited_is_not_waited_for() {
        let d = tempfile::tempdir().unwrap();
        let mut child = std::process::Command::new("true").spawn().unwrap();
        let pid = child.id() as i32;
        let zombie = || {
            std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|s| {
                s.rsplit_once(')')
                    .is_some_and(|(_, r)| r.trim_start().starts_with('Z'))
            })
        };
        for _ in 0..100 {
            if zombie() {
                break;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        assert!(zombie(), "the child is a zombie");
        let pid_file = d.path().join("etcd.pid");
        std::fs::write(&pid_file, pid.to_string()).unwrap();
        let asked = std::time::Instant::now();
        kill_leftover(&pid_file, &d.path().join("data")).await;
        assert!(asked.elapsed() < Duration::from_secs(2));
        assert!(!pid_file.exists());
        let _ = child.wait();
    }

    #[tokio::test]
    async fn dropping_the_supervisor_stops_the_process() {
        let d = tempfile::tempdir().unwrap();
        let sup = Supervisor::new(backoff()).unwrap();
        let mut st = sup.status();
        sup.start(spec(d.path(), "sleep 30")).await.unwrap();
        let pid = wait_for(&mut st, |s| s.running).await.pid.unwrap();
        tokio::task::spawn_blocking(move || drop(sup))
            .await
            .unwrap();
        assert!(
            std::fs::metadata(format!("/proc/{pid}")).is_err(),
            "child gone after drop"
        );
    }
}
