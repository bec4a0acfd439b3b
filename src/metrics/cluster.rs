//! The metrics of what this instance sees of its cluster and what it
//! decided: membership and roles, the voters' spread over zones
//! (`recovery::zone_spread`), the phase and next action (readiness is
//! `eco_etcd_ready`), the incarnation,
//! snapshots, and certificate expiry. Set from the status projection at
//! every scrape ([`ClusterMetrics::observe`]); output only, never read back.

use std::sync::Mutex;

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::Registry;

use crate::api::status::InstanceStatus;

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct RoleLabels {
    role: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct SeverityLabels {
    severity: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ZoneLabels {
    zone: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct PhaseLabels {
    phase: String,
    action: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct StateLabels {
    state: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct CertificateLabels {
    key: String,
}

/// This member's role, as `eco_member_role{role}` (1 for the current one,
/// 0 for the others, every one always present).
const ROLES: [&str; 4] = ["leader", "follower", "learner", "none"];
use crate::api::status::UPGRADE_STATES;

#[derive(Default)]
pub(super) struct ClusterMetrics {
    voters: Gauge,
    learners: Gauge,
    unhealthy: Gauge,
    leader_changes: Counter,
    last_leader: Mutex<Option<String>>,
    role: Family<RoleLabels, Gauge>,
    etcd_advisory: Family<SeverityLabels, Gauge>,
    zone_voters: Family<ZoneLabels, Gauge>,
    zones: Gauge,
    zone_loss_survivable: Gauge,
    phase: Family<PhaseLabels, Gauge>,
    incarnation: Gauge,
    snapshots_stored: Gauge,
    snapshots_taken: Counter,
    seen_taken: std::sync::atomic::AtomicU64,
    snapshot_newest_revision: Gauge,
    snapshot_newest_timestamp: Gauge,
    snapshot_store_alert: Gauge,
    snapshot_last_verified: Gauge,
    snapshot_verification_failed: Gauge,
    certificate_expiry: Family<CertificateLabels, Gauge>,
    gossip_members: Family<StateLabels, Gauge>,
    paused: Gauge,
    upgrade: Family<StateLabels, Gauge>,
    gossip_peer_downs: Counter,
    seen_peer_downs: std::sync::atomic::AtomicU64,
}

impl ClusterMetrics {
    pub(super) fn register(&self, registry: &mut Registry) {
        registry.register(
            "etcd_advisory",
            "Advisories of the etcd project that apply to the release the member runs, by severity (data_loss, end_of_life, upgrade_path; every one always present): recovery::etcd_advisories",
            self.etcd_advisory.clone(),
        );
        registry.register(
            "paused",
            "1 while a human has paused eco cluster-wide (eco pause, or a pause object eco cannot read): no membership or recovery action",
            self.paused.clone(),
        );
        registry.register(
            "etcd_upgrade",
            "This instance's part in a rolling etcd upgrade, one-hot by state: none (its member runs the configured etcd), waiting, refused, restarting, transferring_leadership, failed",
            self.upgrade.clone(),
        );
        registry.register(
            "gossip_members",
            "Other instances this instance's gossip knows, by state (up, down)",
            self.gossip_members.clone(),
        );
        registry.register(
            "gossip_peer_downs",
            "Times this instance's gossip saw another instance go down (failed or left)",
            self.gossip_peer_downs.clone(),
        );
        registry.register(
            "cluster_voters",
            "Voting members of the cluster, as this instance last saw the member list",
            self.voters.clone(),
        );
        registry.register(
            "cluster_learners",
            "Learners (non-voting members) of the cluster",
            self.learners.clone(),
        );
        registry.register(
            "cluster_unhealthy_members",
            "Members whose Status did not answer this instance's last probe",
            self.unhealthy.clone(),
        );
        registry.register(
            "cluster_leader_changes",
            "Changes of the raft leader this instance saw from one scrape of its /metrics to the next (two changes between scrapes count once)",
            self.leader_changes.clone(),
        );
        registry.register(
            "member_role",
            "1 for this instance's member's role (leader, follower, learner, or none when it is not a member)",
            self.role.clone(),
        );
        registry.register(
            "zone_voters",
            "Voting members per availability zone (the zone label is unknown when the provider does not say)",
            self.zone_voters.clone(),
        );
        registry.register(
            "zones",
            "Distinct known availability zones holding a voting member",
            self.zones.clone(),
        );
        registry.register(
            "zone_loss_survivable",
            "1 when the loss of any one availability zone leaves a quorum of voters (0 when it would not, or when zones are unknown)",
            self.zone_loss_survivable.clone(),
        );
        registry.register(
            "phase_info",
            "1 for this instance's phase and next action (the reason is in eco status)",
            self.phase.clone(),
        );
        registry.register(
            "incarnation",
            "The cluster incarnation this instance's member belongs to (a new one after each quorum-loss reseed); 0 before the first",
            self.incarnation.clone(),
        );
        registry.register(
            "snapshots_stored",
            "Snapshots of this cluster in the store at the last listing",
            self.snapshots_stored.clone(),
        );
        registry.register(
            "snapshots_taken",
            "Snapshots this instance took into the store",
            self.snapshots_taken.clone(),
        );
        registry.register(
            "snapshot_newest_revision",
            "etcd revision of the newest snapshot in the store (0 when none)",
            self.snapshot_newest_revision.clone(),
        );
        registry.register(
            "snapshot_newest_timestamp_seconds",
            "When the newest snapshot in the store was taken (its metadata, the taking machine's clock), in seconds since the epoch; 0 when none",
            self.snapshot_newest_timestamp.clone(),
        );
        registry.register(
            "snapshot_last_verified_timestamp_seconds",
            "When a stored snapshot last restored and matched its record (the store's verification record, the verifying machine's clock), in seconds since the epoch; 0 before the first, or when the record's time is in the future",
            self.snapshot_last_verified.clone(),
        );
        registry.register(
            "snapshot_verification_failed",
            "1 when the last verified restore failed (the snapshot did not restore, or its key space does not match its record): eco status says why",
            self.snapshot_verification_failed.clone(),
        );
        registry.register(
            "snapshot_store_alert",
            "1 when the store lost snapshots it had (for example wiped): eco status says what",
            self.snapshot_store_alert.clone(),
        );
        registry.register(
            "certificate_expiry_timestamp_seconds",
            "When each TLS certificate in force expires (key = its config key), in seconds since the epoch",
            self.certificate_expiry.clone(),
        );
    }

    pub(super) fn observe(&self, s: &InstanceStatus) {
        for severity in recovery::etcd_advisories::Severity::ALL {
            let n = s
                .etcd_advisories
                .iter()
                .filter(|a| a.severity == severity)
                .count();
            self.etcd_advisory
                .get_or_create(&SeverityLabels {
                    severity: severity.as_str(),
                })
                .set(n as i64);
        }
        let voters: Vec<_> = s.members.iter().filter(|m| !m.learner).collect();
        self.voters.set(voters.len() as i64);
        self.learners
            .set(s.members.iter().filter(|m| m.learner).count() as i64);
        self.unhealthy
            .set(s.members.iter().filter(|m| !m.healthy).count() as i64);
        let leader = s.members.iter().find(|m| m.leader).map(|m| m.id.clone());
        if let (Some(now), Ok(mut last)) = (leader, self.last_leader.lock()) {
            if last.as_ref().is_some_and(|l| *l != now) {
                self.leader_changes.inc();
            }
            *last = Some(now);
        }

        let own = s.members.iter().find(|m| m.name == s.instance_id);
        let role = match own {
            Some(m) if m.learner => "learner",
            Some(m) if m.leader => "leader",
            Some(_) => "follower",
            None => "none",
        };
        for r in ROLES {
            self.role
                .get_or_create(&RoleLabels { role: r.into() })
                .set((r == role) as i64);
        }

        self.paused
            .set((s.paused.is_some() || s.paused_unreadable.is_some()) as i64);
        let upgrade = s.upgrade.as_ref().map_or("none", |u| u.state.as_str());
        for state in UPGRADE_STATES {
            self.upgrade
                .get_or_create(&StateLabels { state })
                .set((state == upgrade) as i64);
        }
        // The other instances gossip knows, by state; the times they went
        // down (summed over peers: a flapping peer counts every time).
        let others: Vec<_> = s
            .gossip
            .iter()
            .filter(|p| p.instance_id != s.instance_id)
            .collect();
        let up = others.iter().filter(|p| p.up).count();
        for (state, n) in [("up", up), ("down", others.len() - up)] {
            self.gossip_members
                .get_or_create(&StateLabels { state })
                .set(n as i64);
        }
        super::advance(
            &self.gossip_peer_downs,
            &self.seen_peer_downs,
            others.iter().map(|p| p.times_down).sum(),
        );

        let zone_of = |name: &str| {
            s.group
                .as_ref()
                .and_then(|g| g.get(name))
                .and_then(|i| i.zone.as_deref())
        };
        let spread = recovery::zone_spread::zone_spread(voters.iter().map(|m| zone_of(&m.name)));
        self.zone_voters.clear();
        for (zone, n) in &spread.voters_per_zone {
            self.zone_voters
                .get_or_create(&ZoneLabels { zone: zone.clone() })
                .set(*n as i64);
        }
        self.zones.set(spread.zones as i64);
        self.zone_loss_survivable
            .set(spread.survives_zone_loss() as i64);

        self.phase.clear();
        self.phase
            .get_or_create(&PhaseLabels {
                phase: s.phase.as_str().into(),
                action: s.next.action.clone(),
            })
            .set(1);
        self.incarnation
            .set(s.state.as_ref().map_or(0, |st| st.incarnation as i64));

        if let Some(snap) = &s.snapshots {
            self.snapshots_stored.set(snap.stored as i64);
            super::advance(&self.snapshots_taken, &self.seen_taken, snap.taken);
            self.snapshot_newest_revision
                .set(snap.newest_revision.unwrap_or(0));
            self.snapshot_newest_timestamp
                .set(snap.newest_taken_unix_ms.map_or(0, |ms| (ms / 1000) as i64));
            self.snapshot_store_alert.set(snap.alert.is_some() as i64);
            let v = snap.verification.as_ref();
            // A success dated in the future is not counted: it would hide
            // that none is recent.
            self.snapshot_last_verified.set(
                recovery::restore_check::believed_last_ok(
                    crate::base::wall_clock::unix_ms(),
                    v.and_then(|v| v.last_ok_unix_ms),
                )
                .map_or(0, |ms| (ms / 1000) as i64),
            );
            self.snapshot_verification_failed
                .set(v.is_some_and(|v| !v.ok) as i64);
        }

        self.certificate_expiry.clear();
        for c in &s.certificates {
            if let Some(at) = c.not_after_unix {
                self.certificate_expiry
                    .get_or_create(&CertificateLabels { key: c.key.clone() })
                    .set(at);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::status::MemberRow;

    fn member(name: &str, learner: bool, leader: bool, healthy: bool) -> MemberRow {
        MemberRow {
            id: format!("id-{name}"),
            name: name.into(),
            learner,
            leader,
            healthy,
            revision: Some(1),
        }
    }

    fn render(m: &ClusterMetrics) -> String {
        let mut registry = Registry::with_prefix("eco");
        m.register(&mut registry);
        let mut out = String::new();
        prometheus_client::encoding::text::encode(&mut out, &registry).expect("encode");
        out
    }

    #[test]
    fn membership_roles_zones_and_leader_changes() {
        let m = ClusterMetrics::default();
        let mut s = super::super::tests::status();
        s.instance_id = "a".into();
        s.group = Some(
            toml::from_str(
                r#"self_id = "a"
desired_size = 3
[[instances]]
id = "a"
address = "10.0.0.1"
zone = "z1"
[[instances]]
id = "b"
address = "10.0.0.2"
zone = "z1"
[[instances]]
id = "c"
address = "10.0.0.3"
zone = "z2"
[[instances]]
id = "d"
address = "10.0.0.4"
"#,
            )
            .expect("a group"),
        );
        s.members = vec![
            member("a", false, false, true),
            member("b", false, true, true),
            member("c", false, false, false),
            member("d", true, false, true),
        ];
        m.observe(&s);
        let text = render(&m);
        for line in [
            "eco_cluster_voters 3",
            "eco_cluster_learners 1",
            "eco_cluster_unhealthy_members 1",
            "eco_member_role{role=\"follower\"} 1",
            "eco_member_role{role=\"leader\"} 0",
            "eco_zone_voters{zone=\"z1\"} 2",
            "eco_zone_voters{zone=\"z2\"} 1",
            "eco_zones 2",
            // losing z1 leaves 1 of 3 voters
            "eco_zone_loss_survivable 0",
            "eco_phase_info{phase=\"running\",action=\"\"} 1",
            "eco_cluster_leader_changes_total 0",
        ] {
            assert!(text.contains(line), "{line} missing:\n{text}");
        }
        // The leader moves: one change; the phase label follows.
        s.members[1].leader = false;
        s.members[0].leader = true;
        s.next.action = "hand leadership away".into();
        m.observe(&s);
        let text = render(&m);
        assert!(
            text.contains("eco_cluster_leader_changes_total 1"),
            "{text}"
        );
        assert!(
            text.contains("eco_member_role{role=\"leader\"} 1"),
            "{text}"
        );
        assert!(
            text.contains("eco_phase_info{phase=\"running\",action=\"hand leadership away\"} 1")
                && !text.contains("action=\"\""),
            "the old phase series is gone:\n{text}"
        );
    }
}
