//! Structured events: every consequential thing eco does is one log line
//! whose `event` field is a stable name from [`Event`], with the fields
//! [`Event::fields`] lists. A log pipeline can select on `event` (with
//! `[log] format = "json"` every field is a JSON key) without parsing
//! messages, which may change; names and fields only grow.
//!
//! Events are emitted with [`crate::event!`], a thin layer over tracing's
//! macros that adds the `event` field. docs/operations.md ("Events") lists
//! every event with its fields; a test holds the table, this enum and
//! the emitting call sites to each other.
//!
//! What it is not: a second log. Diagnostics (a retry, a probe that did
//! not answer) stay plain log lines; an event says that something changed.

/// A consequential action or outcome, by its stable name.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Event {
    // The etcd process.
    EtcdStarted,
    EtcdStopped,
    EtcdExited,
    EtcdRestarting,
    EtcdLeftoverKilled,
    DataLeftoverRemoved,
    JoinFailing,
    EtcdFallback,
    EtcdAdvisory,
    // Starting, forming and the steady state.
    StartDecided,
    StartRefused,
    StaleIncarnationMovedAside,
    ClusterForming,
    ActionStarted,
    ActionRefused,
    ActionFailed,
    MemberAddedAsLearner,
    MemberPromoted,
    MemberRemoved,
    LeadershipTransferred,
    DataMovedAside,
    MovedAsideDeleted,
    PeerSchemeChanged,
    // Seeding a new incarnation (formation or recovery).
    SeedingStarted,
    SeedingReplayed,
    SeedingRestored,
    SeedingStored,
    // Quorum-loss recovery.
    RecoveryFrozen,
    RecoveryUnfrozen,
    RecoveryMessageSent,
    RecoveryRecordCreating,
    RecoverySeeding,
    RecoverySeeded,
    RecoverySeedFailed,
    RecoveryJoining,
    RecoveryJoinFailed,
    RecoveryAlert,
    RecoveryDataLossAccepted,
    // Snapshots.
    SnapshotStored,
    SnapshotFailed,
    SnapshotDeleted,
    SnapshotStoreLost,
    SnapshotVerified,
    SnapshotVerificationFailed,
    // The change archive.
    ArchiveResumed,
    ArchiveChainStarted,
    ArchiveFailed,
    ArchiveSegmentDeleted,
    ArchiveRestored,
    // Leaving the group.
    TerminationNoticed,
    TerminationWithdrawn,
    TerminationCompleted,
    // The space governor.
    SpaceCompacted,
    SpaceDefragmented,
    SpaceDisarmed,
    SpaceFailed,
    // Rolling etcd upgrades.
    UpgradeRefused,
    UpgradeRestarting,
    UpgradeRestarted,
    UpgradeFailed,
    // Self-replacement.
    ReplacementRequested,
    ReplacementFailed,
    // The maintenance switch.
    MaintenancePaused,
    MaintenanceResumed,
    // eco's own releases.
    ClusterVersionFinalized,
    // Security.
    AclApplied,
    AuthEnabled,
    CertificateIssued,
    GossipKeysInstalled,
}

impl Event {
    pub const ALL: [Event; 69] = [
        Event::EtcdStarted,
        Event::EtcdStopped,
        Event::EtcdExited,
        Event::EtcdRestarting,
        Event::EtcdLeftoverKilled,
        Event::DataLeftoverRemoved,
        Event::JoinFailing,
        Event::EtcdFallback,
        Event::EtcdAdvisory,
        Event::StartDecided,
        Event::StartRefused,
        Event::StaleIncarnationMovedAside,
        Event::ClusterForming,
        Event::ActionStarted,
        Event::ActionRefused,
        Event::ActionFailed,
        Event::MemberAddedAsLearner,
        Event::MemberPromoted,
        Event::MemberRemoved,
        Event::LeadershipTransferred,
        Event::DataMovedAside,
        Event::MovedAsideDeleted,
        Event::PeerSchemeChanged,
        Event::SeedingStarted,
        Event::SeedingReplayed,
        Event::SeedingRestored,
        Event::SeedingStored,
        Event::RecoveryFrozen,
        Event::RecoveryUnfrozen,
        Event::RecoveryMessageSent,
        Event::RecoveryRecordCreating,
        Event::RecoverySeeding,
        Event::RecoverySeeded,
        Event::RecoverySeedFailed,
        Event::RecoveryJoining,
        Event::RecoveryJoinFailed,
        Event::RecoveryAlert,
        Event::RecoveryDataLossAccepted,
        Event::SnapshotStored,
        Event::SnapshotFailed,
        Event::SnapshotDeleted,
        Event::SnapshotStoreLost,
        Event::SnapshotVerified,
        Event::SnapshotVerificationFailed,
        Event::ArchiveResumed,
        Event::ArchiveChainStarted,
        Event::ArchiveFailed,
        Event::ArchiveSegmentDeleted,
        Event::ArchiveRestored,
        Event::TerminationNoticed,
        Event::TerminationWithdrawn,
        Event::TerminationCompleted,
        Event::SpaceCompacted,
        Event::SpaceDefragmented,
        Event::SpaceDisarmed,
        Event::SpaceFailed,
        Event::UpgradeRefused,
        Event::UpgradeRestarting,
        Event::UpgradeRestarted,
        Event::UpgradeFailed,
        Event::ReplacementRequested,
        Event::ReplacementFailed,
        Event::MaintenancePaused,
        Event::MaintenanceResumed,
        Event::ClusterVersionFinalized,
        Event::AclApplied,
        Event::AuthEnabled,
        Event::CertificateIssued,
        Event::GossipKeysInstalled,
    ];

    /// The stable name: the `event` field of the log line.
    pub const fn name(self) -> &'static str {
        match self {
            Event::EtcdStarted => "etcd.started",
            Event::EtcdStopped => "etcd.stopped",
            Event::EtcdExited => "etcd.exited",
            Event::EtcdRestarting => "etcd.restarting",
            Event::EtcdLeftoverKilled => "etcd.leftover_killed",
            Event::DataLeftoverRemoved => "data.leftover_removed",
            Event::JoinFailing => "join.failing",
            Event::EtcdAdvisory => "etcd.advisory",
            Event::EtcdFallback => "etcd.fallback",
            Event::StartDecided => "start.decided",
            Event::StartRefused => "start.refused",
            Event::StaleIncarnationMovedAside => "start.stale_incarnation_moved_aside",
            Event::ClusterForming => "cluster.forming",
            Event::ActionStarted => "action.started",
            Event::ActionRefused => "action.refused",
            Event::ActionFailed => "action.failed",
            Event::MemberAddedAsLearner => "member.added_as_learner",
            Event::MemberPromoted => "member.promoted",
            Event::MemberRemoved => "member.removed",
            Event::LeadershipTransferred => "leadership.transferred",
            Event::DataMovedAside => "data.moved_aside",
            Event::MovedAsideDeleted => "data.moved_aside_deleted",
            Event::PeerSchemeChanged => "peer_scheme.changed",
            Event::SeedingStarted => "seeding.started",
            Event::SeedingReplayed => "seeding.replayed",
            Event::SeedingRestored => "seeding.restored",
            Event::SeedingStored => "seeding.stored",
            Event::RecoveryFrozen => "recovery.frozen",
            Event::RecoveryUnfrozen => "recovery.unfrozen",
            Event::RecoveryMessageSent => "recovery.message_sent",
            Event::RecoveryRecordCreating => "recovery.record_creating",
            Event::RecoverySeeding => "recovery.seeding",
            Event::RecoverySeeded => "recovery.seeded",
            Event::RecoverySeedFailed => "recovery.seed_failed",
            Event::RecoveryJoining => "recovery.joining",
            Event::RecoveryJoinFailed => "recovery.join_failed",
            Event::RecoveryAlert => "recovery.alert",
            Event::RecoveryDataLossAccepted => "recovery.data_loss_accepted",
            Event::SnapshotStored => "snapshot.stored",
            Event::SnapshotFailed => "snapshot.failed",
            Event::SnapshotDeleted => "snapshot.deleted",
            Event::SnapshotStoreLost => "snapshot.store_lost",
            Event::SnapshotVerified => "snapshot.verified",
            Event::SnapshotVerificationFailed => "snapshot.verification_failed",
            Event::ArchiveResumed => "archive.resumed",
            Event::ArchiveChainStarted => "archive.chain_started",
            Event::ArchiveFailed => "archive.failed",
            Event::ArchiveSegmentDeleted => "archive.segment_deleted",
            Event::ArchiveRestored => "archive.restored",
            Event::TerminationNoticed => "termination.noticed",
            Event::TerminationWithdrawn => "termination.withdrawn",
            Event::TerminationCompleted => "termination.completed",
            Event::SpaceCompacted => "space.compacted",
            Event::SpaceDefragmented => "space.defragmented",
            Event::SpaceDisarmed => "space.disarmed",
            Event::SpaceFailed => "space.failed",
            Event::UpgradeRefused => "upgrade.refused",
            Event::UpgradeRestarting => "upgrade.restarting",
            Event::UpgradeRestarted => "upgrade.restarted",
            Event::UpgradeFailed => "upgrade.failed",
            Event::ReplacementRequested => "instance.replacement_requested",
            Event::ReplacementFailed => "instance.replacement_failed",
            Event::MaintenancePaused => "maintenance.paused",
            Event::MaintenanceResumed => "maintenance.resumed",
            Event::ClusterVersionFinalized => "cluster_version.finalized",
            Event::AclApplied => "acl.applied",
            Event::AuthEnabled => "auth.enabled",
            Event::CertificateIssued => "certificate.issued",
            Event::GossipKeysInstalled => "gossip.keys_installed",
        }
    }

    /// The fields every line of this event carries, beside `event` and the
    /// message (and the `instance` of the span eco's daemon runs in).
    pub const fn fields(self) -> &'static [&'static str] {
        match self {
            Event::EtcdStarted => &["pid", "binary"],
            Event::EtcdStopped => &["exit"],
            Event::EtcdExited => &["exit", "ran_for", "reason"],
            Event::EtcdRestarting => &["restart_in_ms"],
            Event::EtcdLeftoverKilled => &["pid"],
            Event::DataLeftoverRemoved => &["path", "reason"],
            Event::JoinFailing => &["problem"],
            Event::EtcdAdvisory => &["version", "severity", "advisory", "source"],
            Event::EtcdFallback => &["from", "to", "reason"],
            Event::StartDecided => &["decision"],
            Event::StartRefused => &["reason"],
            Event::StaleIncarnationMovedAside => &["reason"],
            Event::ClusterForming => &["reason"],
            Event::ActionStarted => &["action", "reason"],
            Event::ActionRefused => &["action", "reason", "error"],
            Event::ActionFailed => &["action", "reason", "error"],
            Event::MemberAddedAsLearner => &["member_id"],
            Event::MemberPromoted => &["member_id", "name"],
            Event::MemberRemoved => &["member_id", "name"],
            Event::LeadershipTransferred => &["member_id", "name"],
            Event::DataMovedAside => &["from", "to", "reason"],
            Event::MovedAsideDeleted => &["path", "why"],
            Event::PeerSchemeChanged => &["scheme", "reason"],
            Event::SeedingStarted => &["incarnation", "steps"],
            Event::SeedingReplayed => &["incarnation", "revision", "bytes", "snapshot"],
            Event::SeedingRestored => &["snapshot", "incarnation"],
            Event::SeedingStored => &["snapshot"],
            Event::RecoveryFrozen => &["reason"],
            Event::RecoveryUnfrozen => &["reason"],
            Event::RecoveryMessageSent => &["to", "kind", "reason"],
            Event::RecoveryRecordCreating => &["incarnation", "value", "reason"],
            Event::RecoverySeeding => &["plan", "reason"],
            Event::RecoverySeeded => &["incarnation"],
            Event::RecoverySeedFailed => &["error"],
            Event::RecoveryJoining => &["incarnation", "seeder", "reason"],
            Event::RecoveryJoinFailed => &["incarnation", "error"],
            Event::RecoveryAlert => &["kind", "reason"],
            Event::RecoveryDataLossAccepted => &["incarnation", "skipped", "reason"],
            Event::SnapshotStored => &["name", "size", "duration_ms", "reason"],
            Event::SnapshotFailed => &["failure", "error", "reason"],
            Event::SnapshotDeleted => &["name", "why"],
            Event::SnapshotStoreLost => &["alert"],
            Event::SnapshotVerified => &["snapshot", "detail", "duration_ms", "reason"],
            Event::SnapshotVerificationFailed => &["snapshot", "error", "duration_ms", "reason"],
            Event::ArchiveResumed => &["incarnation", "from_revision", "reason"],
            Event::ArchiveChainStarted => &["snapshot", "revision", "reason"],
            Event::ArchiveFailed => &["failure", "error"],
            Event::ArchiveSegmentDeleted => &["name", "why"],
            Event::ArchiveRestored => &[
                "revision",
                "snapshot",
                "segments",
                "revisions",
                "leases_dropped",
            ],
            Event::TerminationNoticed => &["source", "hook"],
            Event::TerminationWithdrawn => &[],
            Event::TerminationCompleted => &["hook", "reason"],
            Event::SpaceCompacted => &["revision", "reason"],
            Event::SpaceDefragmented => &["member_id", "name", "duration_ms", "reason"],
            Event::SpaceDisarmed => &["members", "reason"],
            Event::SpaceFailed => &["step", "error", "reason"],
            Event::UpgradeRefused => &["running", "configured", "reason"],
            Event::UpgradeRestarting => &["from", "to", "reason"],
            Event::UpgradeRestarted => &["from", "to", "duration_ms"],
            Event::UpgradeFailed => &["step", "error", "reason"],
            Event::ReplacementRequested => &["outcome", "detail", "reason"],
            Event::ReplacementFailed => &["error", "reason"],
            Event::MaintenancePaused => &["by", "reason"],
            Event::MaintenanceResumed => &["by"],
            Event::ClusterVersionFinalized => &["format", "by", "reason"],
            Event::AclApplied => &["action", "reason"],
            Event::AuthEnabled => &["identity"],
            Event::CertificateIssued => &["certificate", "names", "reason"],
            Event::GossipKeysInstalled => &["file", "keys"],
        }
    }
}

/// Logs one event: `event!(warn, Event::MemberRemoved, member_id = …,
/// %name, "removed a member")` (called as `crate::event!`) is tracing's
/// `warn!` with `event = "member.removed"` first.
#[macro_export]
macro_rules! event {
    ($level:ident, $event:expr, $($rest:tt)+) => {
        ::tracing::$level!(event = $crate::base::events::Event::name($event), $($rest)+)
    };
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

    #[test]
    fn names_are_unique_dotted_and_lower_case() {
        let mut seen = HashSet::new();
        for e in Event::ALL {
            let n = e.name();
            assert!(seen.insert(n), "{n} twice");
            let (area, what) = n.split_once('.').expect("area.what");
            for part in [area, what] {
                assert!(
                    !part.is_empty() && part.chars().all(|c| c.is_ascii_lowercase() || c == '_'),
                    "{n}"
                );
            }
        }
    }
}
