//! The local etcd: its supervised process and its data directory. Every
//! start goes through [`LocalEtcd::start`] (a leftover etcd of ours is
//! killed, the ports checked, the command line derived by `etcd/flags.rs`).

use super::context::Ctx;
use crate::config::Scheme;
use crate::etcd::binaries::EtcdBinaries;
use crate::etcd::flags::{self, InitialClusterState, LaunchSpec};
use crate::etcd::launched::{self, LaunchRecord};
use crate::etcd::supervisor::{self, Backoff, ProcessSpec, ProcessStatus, Supervisor};
use crate::local::data_dir::{self, DataState};
use recovery::moved_aside::Retention;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};
use tokio::sync::watch;

/// How often moved-aside copies are looked at for deletion.
const PRUNE_EVERY: Duration = Duration::from_secs(60);

pub(super) struct LocalEtcd {
    supervisor: Supervisor,
    data_dir: PathBuf,
    pid_file: PathBuf,
    pruned_at: Option<Instant>,
    /// The peer scheme of the last start (what the listener speaks while
    /// etcd runs).
    peer_scheme: std::sync::Mutex<Option<Scheme>>,
    /// The launch in force, and what `etcd-launched.json` holds.
    launch: std::sync::Mutex<Launches>,
}

/// The binaries of the last launch, as this eco follows them.
#[derive(Default)]
struct Launches {
    current: Option<Launch>,
    record: LaunchRecord,
}

struct Launch {
    binaries: EtcdBinaries,
    /// The supervisor's count of exits at the launch.
    exits_before: u64,
    answered: bool,
}

/// The launch in force, as [`LocalEtcd::launch`] reports it.
pub(super) struct LaunchFacts {
    pub binaries: EtcdBinaries,
    /// The member answered since the launch.
    pub answered: bool,
    /// etcd's exits since the launch (the supervisor restarts it).
    pub exits: u64,
}

impl LocalEtcd {
    /// `pid_file` sits beside the state file.
    pub fn new(ctx: &Ctx, pid_file: PathBuf) -> anyhow::Result<Self> {
        let e = &ctx.config.etcd;
        let supervisor = Supervisor::new(Backoff {
            initial: e.restart_backoff_initial.get(),
            max: e.restart_backoff_max.get(),
            stable_after: Duration::from_secs(60),
            stop_timeout: e.stop_timeout.get(),
        })?;
        let record = launched::load(&launched::path_beside(&pid_file));
        Ok(Self {
            supervisor,
            data_dir: e.data_dir.clone(),
            pid_file,
            pruned_at: None,
            peer_scheme: std::sync::Mutex::new(None),
            launch: std::sync::Mutex::new(Launches {
                current: None,
                record,
            }),
        })
    }

    /// The launch in force: its binaries, whether the member answered
    /// since, and etcd's exits since.
    pub fn launch(&self) -> Option<LaunchFacts> {
        let exits = self.supervisor.status().borrow().crashes;
        let l = self.launch.lock().ok()?;
        l.current.as_ref().map(|c| LaunchFacts {
            binaries: c.binaries.clone(),
            answered: c.answered,
            exits: exits.saturating_sub(c.exits_before),
        })
    }

    /// The last binary the member answered on, as recorded.
    pub fn last_answered(&self) -> Option<launched::Launched> {
        self.launch.lock().ok()?.record.answered.clone()
    }

    /// The member answered: the binary of the launch in force runs, and is
    /// recorded as the last one that answered (once per launch).
    pub fn answered(&self) {
        let Ok(mut l) = self.launch.lock() else {
            return;
        };
        let Some(current) = l.current.as_mut() else {
            return;
        };
        if current.answered {
            return;
        }
        current.answered = true;
        let ran = launched::Launched {
            etcd: current.binaries.etcd.clone(),
            version: current.binaries.version.to_string(),
        };
        if l.record.answered.as_ref() != Some(&ran) {
            l.record.answered = Some(ran);
            self.store_record(&l.record);
        }
    }

    /// The member leaves the binary of the launch in force (it is stopped,
    /// to be started on another): nothing more is known of a launch until
    /// the next.
    pub fn left_launch(&self) {
        if let Ok(mut l) = self.launch.lock() {
            l.current = None;
        }
    }

    fn store_record(&self, record: &LaunchRecord) {
        let path = launched::path_beside(&self.pid_file);
        if let Err(e) = launched::store(&path, record) {
            tracing::warn!(file = %path.display(), error = %format!("{e:#}"), "cannot record the launched etcd");
        }
    }

    pub fn data_dir(&self) -> &Path {
        &self.data_dir
    }

    pub fn process(&self) -> ProcessStatus {
        self.supervisor.status().borrow().clone()
    }

    /// The process runs, or a restart is pending.
    pub fn running(&self) -> bool {
        let p = self.supervisor.status().borrow().clone();
        p.running || p.restart_in_ms.is_some()
    }

    pub fn watch(&self) -> watch::Receiver<ProcessStatus> {
        self.supervisor.status()
    }

    /// What the data directory holds now.
    pub fn data(&self) -> anyhow::Result<DataState> {
        Ok(data_dir::inspect(&self.data_dir)?)
    }

    /// Renames the data directory aside (never deletes it).
    pub fn move_aside(&self, why: &str) -> anyhow::Result<Option<PathBuf>> {
        Ok(data_dir::move_aside(&self.data_dir, why)?)
    }

    /// Deletes the moved-aside copies `retention` lets go, at most once per
    /// [`PRUNE_EVERY`].
    pub fn prune_moved_aside(&mut self, retention: Retention) {
        if self.pruned_at.is_some_and(|at| at.elapsed() < PRUNE_EVERY) {
            return;
        }
        self.pruned_at = Some(Instant::now());
        data_dir::prune(&self.data_dir, retention);
    }

    /// Starts etcd under `token` with this `--initial-cluster`, its peer
    /// listener on `peer_scheme` (the cluster's record of this member).
    pub async fn start(
        &self,
        ctx: &Ctx,
        token: &str,
        initial_cluster: Vec<(String, String)>,
        state: InitialClusterState,
        peer_scheme: Scheme,
    ) -> anyhow::Result<()> {
        supervisor::kill_leftover(&self.pid_file, &self.data_dir).await;
        // Read once: the ports checked and the flags follow the binary
        // launched.
        let binaries = ctx.binaries.get();
        if !self.supervisor.status().borrow().running {
            let e = &ctx.config.etcd;
            let mut ports = vec![
                ("etcd.client_port", e.client_port),
                ("etcd.peer_port", e.peer_port),
                ("etcd.metrics_port", e.metrics_port),
            ];
            if flags::client_http_apart(e, binaries.version) {
                ports.push(("etcd.client_http_port", e.client_http_port));
            }
            crate::local::preflight::ports_free(ctx.me.bind, &ports)?;
        }
        let spec = LaunchSpec {
            name: ctx.id().to_string(),
            data_dir: self.data_dir.clone(),
            host: ctx.me.host.clone(),
            bind: ctx.me.bind,
            initial_cluster,
            initial_state: state,
            token: token.to_string(),
            auth_token: crate::config::auth_token_flag(&ctx.config.auth.token),
            peer_scheme,
            release: binaries.version,
        };
        if let Ok(mut launched) = self.peer_scheme.lock() {
            *launched = Some(peer_scheme);
        }
        let client = flags::client_scheme(&ctx.config.etcd, peer_scheme);
        ctx.client_url.set(flags::url(
            client,
            &ctx.me.host,
            ctx.config.etcd.client_port,
        ));
        let spec = ProcessSpec {
            binary: binaries.etcd.clone(),
            args: flags::etcd_args(&ctx.config.etcd, &spec),
            instance_id: ctx.id().to_string(),
            log_file: ctx.config.etcd.log_file.clone(),
            pid_file: self.pid_file.clone(),
            data_dir: self.data_dir.clone(),
        };
        let exits_before = self.supervisor.status().borrow().crashes;
        self.supervisor.start(spec).await?;
        if let Ok(mut l) = self.launch.lock() {
            // The same binary again (a restart on the same command line,
            // or one that already answered): what is known of it stays.
            let same = l.current.as_ref().is_some_and(|c| {
                c.binaries.etcd == binaries.etcd && c.binaries.version == binaries.version
            });
            if !same {
                l.current = Some(Launch {
                    binaries: binaries.clone(),
                    exits_before,
                    answered: false,
                });
            }
            let launched = launched::Launched {
                etcd: binaries.etcd,
                version: binaries.version.to_string(),
            };
            if l.record.launched.as_ref() != Some(&launched) {
                l.record.launched = Some(launched);
                self.store_record(&l.record);
            }
        }
        Ok(())
    }

    /// Starts etcd again on its existing data (etcd ignores
    /// `--initial-cluster` then), its peer listener on `peer_scheme`.
    pub async fn start_on_data(
        &self,
        ctx: &Ctx,
        token: &str,
        peer_scheme: Scheme,
    ) -> anyhow::Result<()> {
        let own = vec![(ctx.id().to_string(), ctx.peer_url.clone())];
        self.start(ctx, token, own, InitialClusterState::Existing, peer_scheme)
            .await
    }

    /// Starts etcd alone, as a new one-member cluster under `token` (its
    /// member made with the config's peer URL).
    pub async fn start_alone(&self, ctx: &Ctx, token: &str) -> anyhow::Result<()> {
        let own = vec![(ctx.id().to_string(), ctx.peer_url.clone())];
        let scheme = ctx.config.etcd.effective_peer_scheme();
        self.start(ctx, token, own, InitialClusterState::New, scheme)
            .await
    }

    /// The scheme etcd's peer listener was last started with.
    pub fn peer_scheme(&self) -> Option<Scheme> {
        self.peer_scheme.lock().ok().and_then(|s| *s)
    }

    /// Stops etcd and keeps it stopped.
    pub async fn stop(&self) -> anyhow::Result<()> {
        Ok(self.supervisor.stop().await?)
    }

    /// Ends the supervision (etcd must be stopped first).
    pub fn shutdown(self) {
        self.supervisor.shutdown();
    }
}
