//! What this instance knows and intends, as served by `GET /status` and
//! printed by `eco status`. Output only: no decision reads it back (the
//! decisions read typed facts; see `recovery::pass`).

use crate::etcd::probe::MemberStatus;
use crate::etcd::supervisor::ProcessStatus;
use crate::local::state_file::LocalState;
use crate::provider::Group;
use serde::{Deserialize, Serialize};

/// Where the instance is in its life (decided by `recovery::pass`).
pub use recovery::pass::Phase;

/// The next thing this instance will do, and why.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct NextAction {
    pub action: String,
    pub reason: String,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct InstanceStatus {
    pub instance_id: String,
    pub cluster: String,
    pub eco_version: String,
    pub etcd_version: String,
    pub client_url: String,
    pub peer_url: String,
    pub phase: Phase,
    pub next: NextAction,
    /// etcd is running and its member knows a leader.
    pub ready: bool,
    pub process: ProcessStatus,
    pub member: Option<MemberStatus>,
    pub probe_error: Option<String>,
    pub group: Option<Group>,
    /// Why the group shown is not the provider's latest answer (the last
    /// complete view is kept while the provider fails or answers
    /// incompletely); absent when it is.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub group_problem: Option<String>,
    /// The provider announced this instance's termination (a lifecycle
    /// hook waits for its graceful leave).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub termination: Option<crate::provider::TerminationNotice>,
    /// Why the snapshot store cannot serve quorum-loss recovery (it does
    /// not honour conditional creates), found at start.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub store_problem: Option<String>,
    pub state: Option<LocalState>,
    /// The snapshot writer's view (absent when no store is configured).
    #[serde(default)]
    pub snapshots: Option<SnapshotStatus>,
    /// The change archive's writer (absent when no store is configured or
    /// the archive is off).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub archive: Option<ArchiveStatus>,
    /// What gossip says about every instance it knows (empty without gossip).
    #[serde(default)]
    pub gossip: Vec<GossipPeer>,
    /// A human paused eco cluster-wide (`eco pause`): who, when, why.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub paused: Option<crate::store::pause::Pause>,
    /// The pause object is there but cannot be read: the instance treats
    /// the cluster as paused, and this says why (`eco resume` removes it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub paused_unreadable: Option<String>,
    /// What is wrong with the pause object (unreadable, not committed by
    /// the store, or the store does not answer), when something is.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pause_problem: Option<String>,
    /// A rolling etcd upgrade as this instance sees it: absent while its
    /// member runs the version of the binary its config names.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub upgrade: Option<UpgradeStatus>,
    /// The etcd members as last observed (empty when none answered).
    #[serde(default)]
    pub members: Vec<MemberRow>,
    /// The quorum-loss protocol: its phase, what it waits for, and why
    /// (absent without gossip or a store).
    #[serde(default)]
    pub recovery: Option<recovery::fenced::Explanation>,
    /// The TLS certificates in force (`[etcd.tls]`, generated or given),
    /// read from their files at every pass: empty without TLS.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub certificates: Vec<CertificateExpiry>,
    /// `[etcd.tls]`'s files as they are on disk cannot be used (etcd reads
    /// them on every new connection): which file and why; absent while
    /// they can. Readiness follows etcd's answer (a broken file breaks new
    /// connections, not the ones open), and names this when etcd does not
    /// answer.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tls_problem: Option<String>,
    /// Why this instance's join keeps failing (its member was added but
    /// its etcd exits before it joins): etcd's own reason and what eco can
    /// tell of the cause (`recovery::join_diagnosis`); absent otherwise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub join_problem: Option<String>,
    /// What the etcd project says about the release the member runs
    /// (`recovery::etcd_advisories`): known data-loss bugs, the end of its
    /// series, the release a later upgrade must start from; most serious
    /// first, empty for a release with none.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub etcd_advisories: Vec<recovery::etcd_advisories::Advisory>,
    /// Why etcd's own `/readyz` says the member is not ready (the instance
    /// is then not ready either); absent when it is ready or its release
    /// has no `/readyz` (before 3.5.11 and 3.4.29).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub etcd_not_ready: Option<String>,
    /// `[api.tls]`: why the certificate files on disk are not the pair the
    /// API serves (expired, not yet valid, not matching their key, no
    /// longer naming the instance's host); absent while they are.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub api_tls_problem: Option<String>,
    /// Authentication inside etcd (`[auth]`; absent when eco neither
    /// manages it nor authenticates).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub auth: Option<AuthStatus>,
    /// eco across its releases (`recovery::cluster_version`): the formats
    /// written and finalized, who is behind, what happens next and why;
    /// absent until the first pass.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cluster_version: Option<ClusterVersionStatus>,
}

/// The cluster version as this instance sees it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ClusterVersionStatus {
    /// The formats this eco reads (its own and the previous release's).
    pub reads: (u16, u16),
    /// The format everything this instance writes is in.
    pub writing: u16,
    /// The format the store's cluster-version records finalized (1: none).
    pub finalized: u16,
    /// The group's instances that do not read this eco's newest format:
    /// `instance (reads format N)` or `instance (not heard in gossip)`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub behind: Vec<String>,
    /// What happens next (`current`, `finalize`, `waits for instances`,
    /// `finalizes at`, `waits for eco upgrade finalize`).
    pub next: String,
    pub reason: String,
    /// Why the store's cluster version could not be read or written.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub problem: Option<String>,
}

/// One TLS certificate and when it expires.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct CertificateExpiry {
    /// The config key of its file (`etcd.tls.client.cert_file`, …).
    pub key: String,
    pub subject: String,
    pub names: Vec<String>,
    /// Seconds since the Unix epoch; absent when the file cannot be read.
    pub not_after_unix: Option<i64>,
    /// Why the file cannot be read.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub problem: Option<String>,
}

/// Authentication inside etcd as this instance knows it. Names and
/// reasons only: never a password.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct AuthStatus {
    /// `[auth] enabled`: eco keeps the ACL and enables authentication.
    pub managed: bool,
    /// Who eco is inside etcd (user, and where its password or CN comes
    /// from).
    pub identity: Option<String>,
    /// Whether this instance reconciles the ACL now, and why (or why not).
    pub reconciles: bool,
    pub why: String,
    /// etcd's authentication, as last read by this instance.
    pub enabled: Option<bool>,
    /// When this instance last completed a reconcile (Unix ms).
    pub reconciled_unix_ms: Option<u64>,
    /// Steps this instance applied since it started.
    pub applied: u64,
    /// The last step it applied, and why.
    pub last_action: Option<String>,
    pub last_reason: Option<String>,
    /// The last reconcile failed: why (cleared by a success).
    pub last_error: Option<String>,
}

/// One etcd member, as the member list and its own Status report it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct MemberRow {
    pub id: String,
    pub name: String,
    pub learner: bool,
    pub leader: bool,
    pub healthy: bool,
    pub revision: Option<i64>,
}

/// One instance as this instance's gossip sees it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct GossipPeer {
    pub instance_id: String,
    pub up: bool,
    pub phase: String,
    pub heard_ms_ago: u64,
    pub has_state: bool,
    pub data_present: bool,
    /// How many times this instance's gossip saw it go down (failed or
    /// left) since this eco started: a flapping member shows here even
    /// when it is up again.
    #[serde(default)]
    pub times_down: u64,
}

/// The states of [`UpgradeStatus::state`], and `none` (no upgrade).
pub const UPGRADE_STATES: [&str; 6] = [
    "none",
    "waiting",
    "refused",
    "restarting",
    "transferring_leadership",
    "failed",
];

/// This instance's part in a rolling etcd upgrade (`recovery::upgrade`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct UpgradeStatus {
    /// The version the local member runs.
    pub running: String,
    /// The version of the binary the config names now.
    pub configured: String,
    /// `waiting`, `refused`, `restarting`, `transferring_leadership` or
    /// `failed` (this member's step failed: the roll stops until the
    /// configured binary changes).
    pub state: String,
    pub reason: String,
}

/// What the snapshot writer knows and did.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SnapshotStatus {
    /// Snapshots of this cluster in the store at the last listing.
    pub stored: usize,
    pub newest: Option<String>,
    pub newest_revision: Option<i64>,
    /// When the newest snapshot was taken (Unix ms, from its metadata: the
    /// taking machine's clock).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub newest_taken_unix_ms: Option<u64>,
    pub taken: u64,
    pub failures: u64,
    pub last_error: Option<String>,
    /// Why the last snapshot was taken.
    pub last_reason: Option<String>,
    /// Raised when the store lost snapshots it had (e.g. wiped).
    pub alert: Option<String>,
    /// The last verified restore (the store's record, read by every
    /// instance), absent before the first.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub verification: Option<crate::snapshot::verify::VerificationRecord>,
    /// What is wrong with the verification record, when its times are
    /// not believed (dated in the future: `recovery::restore_check`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub verification_problem: Option<String>,
}

/// What the change archive's writer knows and did on this instance.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ArchiveStatus {
    /// Whether this instance archives now (it writes snapshots).
    pub writing: bool,
    /// The newest revision this instance archived (or resumed after).
    pub newest_revision: Option<i64>,
    /// When it received that revision (Unix ms, its clock).
    pub newest_seen_unix_ms: Option<u64>,
    /// How long the archive has been behind the revision this instance
    /// knows of.
    pub lag_ms: u64,
    pub lag_revisions: i64,
    /// Which chain it continues, and why.
    pub chain: Option<String>,
    /// Segments this instance stored, and failures.
    pub segments: u64,
    pub failures: u64,
    pub last_error: Option<String>,
}

impl InstanceStatus {
    /// An instance known only by its name, in `phase`, about to do
    /// `next`: not ready, nothing probed, read or served yet; this
    /// build's eco version (the daemon's first status starts from it).
    pub fn known_only_by_name(
        instance_id: String,
        cluster: String,
        phase: Phase,
        next: NextAction,
    ) -> Self {
        InstanceStatus {
            instance_id,
            cluster,
            eco_version: crate::base::version::VERSION.to_string(),
            etcd_version: String::new(),
            client_url: String::new(),
            peer_url: String::new(),
            phase,
            next,
            ready: false,
            process: Default::default(),
            member: None,
            probe_error: None,
            group: None,
            group_problem: None,
            termination: None,
            store_problem: None,
            state: None,
            snapshots: None,
            archive: None,
            gossip: Vec::new(),
            members: Vec::new(),
            paused: None,
            paused_unreadable: None,
            pause_problem: None,
            cluster_version: None,
            upgrade: None,
            recovery: None,
            auth: None,
            certificates: Vec::new(),
            api_tls_problem: None,
            tls_problem: None,
            join_problem: None,
            etcd_advisories: Vec::new(),
            etcd_not_ready: None,
        }
    }

    /// Why the instance is not ready, or `None` when it is.
    pub fn not_ready_reason(&self) -> Option<String> {
        if self.ready {
            return None;
        }
        if matches!(self.phase, Phase::Leaving | Phase::Frozen | Phase::Seeding) {
            return Some(format!("{}: {}", self.phase.as_str(), self.next.reason));
        }
        if !self.process.running {
            return Some(format!(
                "etcd is not running (phase {:?}): {}",
                self.phase, self.next.reason
            ));
        }
        match (&self.member, &self.probe_error) {
            (_, Some(e)) => Some(match &self.tls_problem {
                Some(tls) => format!("etcd does not answer: {e} (its TLS files: {tls})"),
                None => format!("etcd does not answer: {e}"),
            }),
            (Some(m), None) if !m.has_leader() => Some("etcd knows no leader".into()),
            _ => Some("etcd has not been probed yet".into()),
        }
    }
}

/// A status of instance `id` of cluster `cluster`: running and ready,
/// nothing else known (tests build on it).
#[cfg(test)]
pub(crate) fn example(id: &str, cluster: &str) -> InstanceStatus {
    InstanceStatus {
        etcd_version: "3.5.1".into(),
        eco_version: "0".into(),
        ready: true,
        ..InstanceStatus::known_only_by_name(
            id.into(),
            cluster.into(),
            Phase::Running,
            NextAction {
                action: String::new(),
                reason: String::new(),
            },
        )
    }
}
