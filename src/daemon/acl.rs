//! The ACL reconciler: a task beside the daemon's loop (like the snapshot
//! writer). Every [`CHECK_EVERY`] it looks at the config file for a new
//! `[auth]` (`auth/config_watch.rs`), reads the password files (a changed file
//! is a changed fingerprint), and asks the pure `recovery::acl::due`
//! whether this instance reconciles now — only when it is ready and its
//! etcd member leads (the daemon's pass says so through the typed facts
//! it sends the snapshot writer, never `/status`). Reconciling: connect
//! to the own member as eco (`EtcdAccess`), read whether authentication is
//! enabled and the users and roles, `recovery::acl::plan`, carry out the
//! steps in order (each call under the call timeout, the whole under
//! [`BOUND_CALLS`] call timeouts), record each password set
//! (`auth/applied.rs`), and stop at the first error — logged once with its
//! context, tried again after `RETRY_AFTER_MS`. Each step is logged with
//! its reason; `/status` shows the state (`auth`). No password is ever
//! logged or shown.

use crate::api::status::{AuthStatus, InstanceStatus};
use crate::auth::applied::AppliedFile;
use crate::auth::config_watch::ConfigWatch;
use crate::auth::desired::{self, Desired};
use crate::auth::files::describe_identity;
use crate::base::events::Event;
use crate::base::wall_clock::unix_ms;
use crate::config::Config;
use crate::etcd::access::{Authentication, EtcdAccess};
use crate::etcd::acl as calls;
use crate::snapshot::writer::WriterInput;
use anyhow::Context;
use recovery::acl::{AclAction, CurrentAcl, DesiredAcl, Due, DueFacts, due, plan};
use std::path::PathBuf;
use std::time::{Duration, Instant};
use tokio::sync::watch;
use tracing::Instrument;

/// How often the config file and the password files are looked at.
pub const CHECK_EVERY: Duration = Duration::from_secs(1);

/// A whole reconcile is bounded by this many call timeouts.
pub const BOUND_CALLS: u32 = 60;

/// What the reconciler needs, fixed at start.
pub struct AclReconciler {
    /// The config eco started with (its `[auth]` follows the file).
    pub config: Config,
    /// The config file, looked at again for `[auth]` changes; `None`: the
    /// start's `[auth]` only.
    pub config_file: Option<PathBuf>,
    /// How eco reaches etcd (its credentials included).
    pub access: EtcdAccess,
    /// The own member's client URL (its scheme follows the listener).
    pub endpoint: crate::etcd::local_endpoint::LocalEndpoint,
    pub status: watch::Sender<InstanceStatus>,
}

/// The running reconciler; dropping it ends the task.
pub struct AclReconcilerTask(tokio::task::JoinHandle<()>);

impl Drop for AclReconcilerTask {
    fn drop(&mut self) {
        self.0.abort();
    }
}

impl AclReconciler {
    /// Starts the task, reading the pass's facts from `facts`.
    pub fn spawn(self, facts: watch::Receiver<WriterInput>) -> AclReconcilerTask {
        let span = tracing::info_span!("acl");
        AclReconcilerTask(tokio::spawn(self.run(facts).instrument(span)))
    }

    async fn run(self, facts: watch::Receiver<WriterInput>) {
        let mut r = Runner::new(self);
        let mut tick = tokio::time::interval(CHECK_EVERY);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tick.tick().await;
            let leader = {
                let f = &facts.borrow().facts;
                f.ready_leader()
            };
            r.pass(leader).await;
        }
    }
}

struct Runner {
    config: Config,
    watch: Option<ConfigWatch>,
    access: EtcdAccess,
    endpoint: crate::etcd::local_endpoint::LocalEndpoint,
    applied: AppliedFile,
    status: watch::Sender<InstanceStatus>,
    shown: AuthStatus,
    /// The desired ACL of the last complete reconcile.
    reconciled: Option<DesiredAcl>,
    /// The last complete reconcile while leading (reset when not leading).
    success_at: Option<Instant>,
    /// The last failed attempt, while it is the latest attempt.
    failure_at: Option<Instant>,
    /// The problem last logged (each is logged once).
    logged: Option<String>,
}

impl Runner {
    fn new(r: AclReconciler) -> Self {
        let applied = AppliedFile::beside(&r.config.etcd.data_dir);
        let shown = AuthStatus {
            managed: r.config.auth.enabled,
            identity: describe_identity(&r.config),
            ..Default::default()
        };
        if let Some(who) = &shown.identity {
            tracing::info!(identity = %who, managed = shown.managed, "eco's identity inside etcd");
        }
        if shown.managed && r.config.auth.token.kind == crate::config::TokenKind::Simple {
            tracing::warn!(
                "[auth.token] is etcd's simple token: a member recovered from a raft snapshot (a replaced or reseeded member) may refuse every token until it restarts (etcd issues 9629, 13134); JWT is recommended (docs/security.md)"
            );
        }
        Self {
            watch: r.config_file.as_deref().map(ConfigWatch::new),
            config: r.config,
            access: r.access,
            endpoint: r.endpoint,
            applied,
            status: r.status,
            shown,
            reconciled: None,
            success_at: None,
            failure_at: None,
            logged: None,
        }
    }

    fn publish(&self) {
        let shown =
            (self.shown.managed || self.shown.identity.is_some()).then(|| self.shown.clone());
        self.status.send_modify(|s| s.auth = shown);
    }

    /// A new config file: its `[auth]` roles, users and `enabled` take
    /// effect; what etcd or eco's client read at start waits for a restart.
    fn take_config(&mut self, new: Config) {
        let (old, mut auth) = (&self.config.auth, new.auth);
        if *old == auth {
            return;
        }
        if auth.root_password_file != old.root_password_file {
            tracing::warn!(
                "auth.root_password_file names another file: eco's client reads it from the next start; the ACL keeps the current one until then"
            );
            auth.root_password_file = old.root_password_file.clone();
        }
        if auth.token != old.token {
            tracing::warn!(
                "[auth.token] changed: etcd reads it when it starts (restart eco on every instance, one at a time)"
            );
            auth.token = old.token.clone();
        }
        tracing::info!(
            enabled = auth.enabled,
            roles = auth.roles.len(),
            users = auth.users.len(),
            "[auth] changed in the config file"
        );
        self.config.auth = auth;
        self.shown.managed = self.config.auth.enabled;
        self.shown.identity = describe_identity(&self.config);
    }

    /// Logs `problem` once (until another one, or a success).
    fn fail(&mut self, problem: String) {
        self.failure_at = Some(Instant::now());
        if self.logged.as_deref() != Some(problem.as_str()) {
            tracing::error!(error = %problem, "cannot reconcile etcd's users and roles; trying again");
            self.logged = Some(problem.clone());
        }
        self.shown.last_error = Some(problem);
    }

    async fn pass(&mut self, leader: bool) {
        if let Some(new) = self.watch.as_mut().and_then(ConfigWatch::changed) {
            self.take_config(new);
        }
        if !leader {
            self.success_at = None;
        }
        let auth = &self.config.auth;
        let desired = if auth.enabled {
            match desired::build(auth, &self.config.etcd.tls_files(), self.applied.salt()) {
                Ok(d) => Some(d),
                Err(e) => {
                    self.fail(format!("the ACL of the config cannot be read: {e}"));
                    self.shown.reconciles = false;
                    self.shown.why = "the config's ACL cannot be read".into();
                    self.publish();
                    return;
                }
            }
        } else {
            None
        };
        let ms = |at: Option<Instant>| at.map(|t| t.elapsed().as_millis() as u64);
        let facts = DueFacts {
            managed: desired.is_some(),
            leader,
            desired_changed: desired.as_ref().map(|d| &d.acl) != self.reconciled.as_ref(),
            since_success_ms: ms(self.success_at),
            since_failure_ms: ms(self.failure_at),
        };
        let (now, why) = match due(&facts) {
            Due::Now(why) => (true, why),
            Due::Not(why) => (false, why),
        };
        self.shown.reconciles = leader && desired.is_some();
        self.shown.why = why.to_string();
        let Some(desired) = desired.filter(|_| now) else {
            self.publish();
            return;
        };
        tracing::debug!(why, "reconciling etcd's ACL");
        let bound = self.access.call_timeout() * BOUND_CALLS;
        match tokio::time::timeout(bound, self.reconcile(&desired)).await {
            Ok(Ok(enabled)) => {
                self.shown.enabled = Some(enabled);
                self.shown.reconciled_unix_ms = Some(unix_ms());
                self.shown.last_error = None;
                if self.logged.take().is_some() {
                    tracing::info!("etcd's users and roles are reconciled again");
                }
                self.reconciled = Some(desired.acl);
                self.success_at = Some(Instant::now());
                self.failure_at = None;
            }
            Ok(Err(e)) => self.fail(format!("{e:#}")),
            Err(_) => self.fail(format!("the reconcile did not finish within {bound:?}")),
        }
        self.publish();
    }

    /// One reconcile of the own member's ACL; whether authentication is
    /// enabled at its end.
    async fn reconcile(&mut self, desired: &Desired) -> anyhow::Result<bool> {
        let timeout = self.access.call_timeout();
        let identity = desired.acl.identity.user.clone();
        let (mut client, how) = self
            .access
            .connect_authenticated(&self.endpoint.get())
            .await
            .context("connecting to the local etcd")?;
        let enabled = match how {
            Authentication::As(_) => true,
            Authentication::NotEnabled => false,
            Authentication::NoCredentials => calls::enabled(&mut client, &identity, timeout)
                .await
                .context("asking etcd whether authentication is enabled")?,
        };
        self.shown.enabled = Some(enabled);
        let read = calls::read(&mut client, timeout)
            .await
            .context("reading etcd's users and roles")?;
        let cluster_id = read.cluster_id;
        let current = CurrentAcl {
            enabled,
            roles: read.roles,
            users: read.users,
        };
        let steps = plan(&desired.acl, &current, &self.applied.applied_in(cluster_id));
        for step in &steps {
            let name = step.action.name();
            crate::event!(info, Event::AclApplied, action = name, reason = %step.reason, "ACL: applying");
            let password = match &step.action {
                AclAction::AddUser {
                    user,
                    password: Some(_),
                }
                | AclAction::ChangePassword { user, .. } => desired.secrets.password(user),
                _ => None,
            };
            calls::apply(&mut client, &step.action, password, timeout)
                .await
                .with_context(|| format!("{name} ({})", step.reason))?;
            self.shown.applied += 1;
            self.shown.last_action = Some(name.to_string());
            self.shown.last_reason = Some(step.reason.clone());
            self.publish();
            let record = match &step.action {
                AclAction::AddUser { user, password } => Some((user, password.as_ref())),
                AclAction::ChangePassword { user, password } => Some((user, Some(password))),
                AclAction::DeleteUser { user } => Some((user, None)),
                _ => None,
            };
            if let Some((user, fingerprint)) = record {
                if let Err(e) = self.applied.record(cluster_id, user, fingerprint) {
                    tracing::warn!(error = %e, "cannot record the password set (it is set again next time)");
                }
                // A new password of eco's own invalidates its token.
                if *user == identity && current.enabled {
                    client = self
                        .access
                        .connect(&self.endpoint.get())
                        .await
                        .context("connecting again with eco's new password")?;
                }
            }
        }
        let enabled_now = enabled || steps.iter().any(|s| s.action == AclAction::EnableAuth);
        if enabled_now && !enabled {
            // eco must still act as itself: read the ACL again as eco.
            let mut again = self
                .access
                .connect(&self.endpoint.get())
                .await
                .context("reaching etcd as eco after enabling authentication")?;
            calls::read(&mut again, timeout)
                .await
                .context("reading the ACL as eco after enabling authentication")?;
            crate::event!(info, Event::AuthEnabled, %identity, "authentication is enabled in etcd; eco acts as {identity} (root role)");
        }
        Ok(enabled_now)
    }
}
