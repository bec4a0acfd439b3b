//! Gathering what the pass needs to know about the cluster: the own
//! member's Status, the member list (from the local etcd, else any group
//! instance that answers) and each member's health through its own client
//! (Status answers for the member it is connected to). Every call has a
//! timeout and they run concurrently, so a slow or silent member never
//! makes a pass slower than two call timeouts (the quorum-loss detector's
//! evidence comes one sample per pass). Since when a member has been
//! unhealthy, a learner or promoted is kept by `member_clocks`.

use crate::etcd::access::EtcdAccess;
use crate::etcd::member_clocks::MemberClocks;
use crate::etcd::members::{self, Member};
use crate::etcd::probe::{MemberProbe, MemberStatus};
use recovery::planner::MemberFacts;
use std::collections::HashMap;

/// A Status answer: member id, endpoint, the probe, the status if any.
type Asked = (u64, String, MemberProbe, Option<MemberStatus>);

pub struct ClusterView {
    access: EtcdAccess,
    /// The members of the last list, `(member id, client URL)`: probed at
    /// once, while this pass's list is being fetched.
    last_members: Vec<(u64, String)>,
    /// Which of them were learners.
    last_learners: std::collections::HashSet<u64>,
    /// How long a learner's Status is waited for (see [`ClusterView::new`]).
    learner_bound: std::time::Duration,
    probes: HashMap<String, MemberProbe>,
    clocks: MemberClocks,
    /// Where the next pass's few other candidates start (they rotate).
    cursor: usize,
}

/// Candidates outside the last member list asked for the list in one pass:
/// a group of thousands must not cost thousands of connections a pass. They
/// rotate, so every instance is asked within a few passes when no member
/// answers (a joiner that knows no member yet).
pub const OTHER_CANDIDATES_PER_PASS: usize = 5;

/// Of `candidates` (in order of preference), those asked this pass: the
/// first (this instance's own etcd, when it runs), every member of the last
/// list, and [`OTHER_CANDIDATES_PER_PASS`] others from `cursor` on.
pub fn pick_candidates(
    candidates: &[String],
    members: &[(u64, String)],
    cursor: usize,
) -> Vec<String> {
    let is_member = |c: &String| members.iter().any(|(_, e)| e == c);
    let mut out: Vec<String> = candidates.first().cloned().into_iter().collect();
    for c in candidates.iter().skip(1) {
        if is_member(c) && !out.contains(c) {
            out.push(c.clone());
        }
    }
    let others: Vec<&String> = candidates
        .iter()
        .skip(1)
        .filter(|c| !is_member(c))
        .collect();
    for k in 0..OTHER_CANDIDATES_PER_PASS.min(others.len()) {
        let c = others[(cursor + k) % others.len()];
        if !out.contains(c) {
            out.push(c.clone());
        }
    }
    out
}

/// One candidate's answer to the member list, in a pass.
#[derive(Clone, Debug, Default)]
enum ListAnswer {
    #[default]
    Pending,
    Failed,
    Answered((Vec<Member>, String)),
}

/// The rank of the answer that wins — the first in candidate order —
/// once it is known: every candidate before it failed. `None` while a
/// candidate before the first answer is pending, or when none answered.
fn preferred(answers: &[ListAnswer]) -> Option<usize> {
    answers
        .iter()
        .position(|a| !matches!(a, ListAnswer::Failed))
        .filter(|&rank| matches!(answers[rank], ListAnswer::Answered(_)))
}

/// One observation of the cluster.
#[derive(Clone, Debug, Default)]
pub struct Seen {
    /// The member list and the endpoint that gave it.
    pub members: Option<(Vec<Member>, String)>,
    /// Status by member id, for members that answered.
    pub statuses: HashMap<u64, MemberStatus>,
    /// Where each listed member is asked (`EtcdAccess::member_endpoint`).
    pub endpoints: HashMap<u64, String>,
}

impl Seen {
    /// Client URL of a healthy member, preferring the leader.
    pub fn healthy_endpoint(&self) -> Option<String> {
        self.healthy_endpoints().into_iter().next()
    }

    /// Client URLs of every healthy member (one that knows a leader), the
    /// leader first, then in member-list order.
    pub fn healthy_endpoints(&self) -> Vec<String> {
        let Some((members, _)) = self.members.as_ref() else {
            return Vec::new();
        };
        let healthy = |m: &&Member| self.statuses.get(&m.id).is_some_and(|s| s.has_leader());
        let is_leader = |m: &&Member| self.statuses.get(&m.id).is_some_and(|s| s.is_leader());
        let leader = members.iter().filter(healthy).filter(is_leader);
        let others = members.iter().filter(healthy).filter(|m| !is_leader(m));
        leader
            .chain(others)
            .filter_map(|m| self.endpoints.get(&m.id).cloned())
            .collect()
    }

    /// The cluster's highest raft index seen (for the voters record).
    pub fn raft_index(&self) -> u64 {
        self.statuses
            .values()
            .map(|s| s.raft_index)
            .max()
            .unwrap_or(0)
    }
}

impl ClusterView {
    /// A view asking through `access`; a learner's Status — and the member
    /// list asked of it: this instance's own etcd while it joins — is
    /// waited for at most `learner_bound` (the daemon passes the probe
    /// interval, capped by the call timeout). A learner that receives or restores the
    /// database it was sent answers nothing for as long as that takes —
    /// seconds to minutes at gigabytes — and a pass that waited a whole
    /// call timeout on it every time would ask for its promotion only that
    /// often. Nothing waits on a learner's health: it counts for no quorum,
    /// and etcd says itself when it may be promoted; a learner slower
    /// than the bound is shown unhealthy for that pass.
    pub fn new(access: EtcdAccess, learner_bound: std::time::Duration) -> Self {
        Self {
            learner_bound: learner_bound.min(access.call_timeout()),
            last_learners: std::collections::HashSet::new(),
            access,
            last_members: Vec::new(),
            probes: HashMap::new(),
            clocks: MemberClocks::default(),
            cursor: 0,
        }
    }

    async fn status_of(&mut self, endpoint: &str) -> Option<MemberStatus> {
        let probe = self
            .probes
            .entry(endpoint.to_string())
            .or_insert_with(|| MemberProbe::new(endpoint.to_string(), self.access.clone()));
        probe.status(self.access.call_timeout()).await.ok()
    }

    /// One observation: the own member's Status (`local`, when etcd runs
    /// here), the member list — asked at once of the candidates
    /// [`pick_candidates`] takes this pass, the first answer in `candidates`
    /// order wins — and every member's Status, the
    /// members of the last list probed at the same time (those new in this
    /// list right after). Each call, connection included, is bounded by the
    /// call timeout: a pass waits on etcd for one call timeout while the
    /// membership stays the same, two when it changed, however many members
    /// are silent — so protocol messages and the quorum-loss detector's
    /// probes are never held up for long.
    ///
    /// `own_stopped` is this instance's own client URL while its etcd is
    /// not running: a member listed there (a stale member of this instance)
    /// is asked within the learner bound, as nothing of this instance's
    /// answers there — unless a leftover etcd does, which answers at once.
    pub async fn observe(
        &mut self,
        local: Option<&str>,
        own_stopped: Option<&str>,
        candidates: &[String],
    ) -> (Option<MemberStatus>, Seen) {
        let timeout = self.access.call_timeout();
        let started = std::time::Instant::now();
        let previous = std::mem::take(&mut self.last_members);
        let previous_learners = std::mem::take(&mut self.last_learners);
        // Where a learner was listed last pass (this instance's own etcd
        // too, while it joins): asked within the learner bound.
        let learner_at = |endpoint: &str| {
            previous
                .iter()
                .any(|(id, e)| e == endpoint && previous_learners.contains(id))
        };
        let mut own = local.map(|endpoint| {
            let bound = self.bound_for(learner_at(endpoint));
            tokio::spawn(self.ask_status(0, endpoint.to_string(), bound))
        });
        let mut known = tokio::task::JoinSet::new();
        for (id, endpoint) in &previous {
            if Some(endpoint.as_str()) != local {
                let bound = self.bound_for(
                    previous_learners.contains(id) || Some(endpoint.as_str()) == own_stopped,
                );
                known.spawn(self.ask_status(*id, endpoint.clone(), bound));
            }
        }
        let asked = pick_candidates(candidates, &previous, self.cursor);
        self.cursor = self.cursor.wrapping_add(OTHER_CANDIDATES_PER_PASS);
        let mut lists = tokio::task::JoinSet::new();
        for (rank, endpoint) in asked.iter().enumerate() {
            let (access, endpoint) = (self.access.clone(), endpoint.clone());
            let bound = self.bound_for(learner_at(&endpoint));
            lists.spawn(async move {
                let answer = tokio::time::timeout(bound, async {
                    let mut client = access.connect_for_status(&endpoint).await.ok()?;
                    members::list(&mut client, timeout).await.ok()
                })
                .await
                .ok()
                .flatten();
                (rank, answer.map(|list| (list, endpoint)))
            });
        }
        // The first answer in `asked` order wins; once it is known (every
        // candidate before it failed), the others are not waited for — a
        // silent one (a learner still receiving its database) would hold
        // the pass for a whole call timeout.
        let mut answers: Vec<ListAnswer> = vec![ListAnswer::Pending; asked.len()];
        let mut lists_left = asked.len();
        while lists_left > 0 {
            let Some(done) = lists.join_next().await else {
                break;
            };
            lists_left -= 1;
            if let Ok((rank, answer)) = done {
                answers[rank] = match answer {
                    Some(a) => ListAnswer::Answered(a),
                    None => ListAnswer::Failed,
                };
            }
            if preferred(&answers).is_some() {
                break;
            }
        }
        lists.abort_all();
        let listed_ms = started.elapsed().as_millis();
        let members =
            preferred(&answers).and_then(|rank| match std::mem::take(&mut answers[rank]) {
                ListAnswer::Answered(a) => Some(a),
                _ => None,
            });
        let mut seen = Seen {
            members,
            statuses: HashMap::new(),
            endpoints: HashMap::new(),
        };
        let mut statuses: HashMap<String, (u64, MemberStatus)> = HashMap::new();
        let mut collect = |done: Result<Asked, tokio::task::JoinError>,
                           probes: &mut HashMap<String, MemberProbe>| {
            if let Ok((id, endpoint, probe, status)) = done {
                probes.insert(endpoint.clone(), probe);
                if let Some(s) = status {
                    statuses.insert(endpoint, (id, s));
                }
            }
        };
        let local_status = match own.take() {
            Some(task) => {
                let done = task.await;
                let status = done.as_ref().ok().and_then(|d| d.3.clone());
                collect(done, &mut self.probes);
                status
            }
            None => None,
        };
        while let Some(done) = known.join_next().await {
            collect(done, &mut self.probes);
        }
        let probed_ms = started.elapsed().as_millis();
        let Some((list, _)) = &seen.members else {
            return (local_status, seen);
        };
        let endpoints: Vec<(u64, String)> = list
            .iter()
            .filter_map(|m| self.access.member_endpoint(m).map(|u| (m.id, u)))
            .collect();
        // Members this pass has not probed yet (new in the list).
        let learners: std::collections::HashSet<u64> =
            list.iter().filter(|m| m.is_learner).map(|m| m.id).collect();
        let mut new = tokio::task::JoinSet::new();
        for (id, endpoint) in &endpoints {
            let probed =
                Some(endpoint.as_str()) == local || previous.iter().any(|(_, e)| e == endpoint);
            if !probed {
                let bound =
                    self.bound_for(learners.contains(id) || Some(endpoint.as_str()) == own_stopped);
                new.spawn(self.ask_status(*id, endpoint.clone(), bound));
            }
        }
        while let Some(done) = new.join_next().await {
            collect(done, &mut self.probes);
        }
        tracing::debug!(listed_ms, probed_ms, new_probed_ms = started.elapsed().as_millis(), asked = ?asked, "cluster view timings");
        for (id, endpoint) in &endpoints {
            match statuses.get(endpoint) {
                Some((_, s)) if s.member_id == *id || s.member_id == 0 => {
                    seen.statuses.insert(*id, s.clone());
                }
                _ => {}
            }
            if let (Some(s), Some(l)) = (&local_status, local)
                && endpoint == l
                && s.member_id == *id
            {
                seen.statuses.insert(*id, s.clone());
            }
        }
        seen.endpoints = endpoints.iter().cloned().collect();
        self.last_members = endpoints;
        self.last_learners = learners;
        (local_status, seen)
    }

    /// Asks the member at `endpoint` (member `id`) for its Status; the
    /// probe comes back to be kept for the next pass.
    fn ask_status(
        &mut self,
        id: u64,
        endpoint: String,
        within: std::time::Duration,
    ) -> impl std::future::Future<Output = Asked> + Send + 'static {
        let mut probe = self
            .probes
            .remove(&endpoint)
            .unwrap_or_else(|| MemberProbe::new(endpoint.clone(), self.access.clone()));
        async move {
            let status = probe.status(within).await.ok();
            (id, endpoint, probe, status)
        }
    }

    /// How long a member's Status is waited for: a learner's (or one at
    /// this instance's own stopped address) for `learner_bound`, a
    /// voter's for the call timeout.
    fn bound_for(&self, short: bool) -> std::time::Duration {
        if short {
            self.learner_bound
        } else {
            self.access.call_timeout()
        }
    }

    /// Status of one endpoint (the local member).
    pub async fn local(&mut self, endpoint: &str) -> Option<MemberStatus> {
        self.status_of(endpoint).await
    }

    /// Waits until the member at `endpoint` answers with a leader, at most
    /// `within` (asked every 200 ms); `what` names it in the error.
    pub async fn await_leader(
        &mut self,
        endpoint: &str,
        within: std::time::Duration,
        what: &str,
    ) -> anyhow::Result<MemberStatus> {
        let started = std::time::Instant::now();
        loop {
            if let Some(m) = self.local(endpoint).await
                && m.has_leader()
            {
                return Ok(m);
            }
            if started.elapsed() > within {
                anyhow::bail!("{what} has no leader after {within:?}");
            }
            tokio::time::sleep(std::time::Duration::from_millis(200)).await;
        }
    }

    /// Member facts for the planner, with the since-times updated.
    pub fn facts(&mut self, seen: &Seen, now_ms: u64) -> Option<Vec<MemberFacts>> {
        let (list, _) = seen.members.as_ref()?;
        let healthy = |id: u64| seen.statuses.get(&id).is_some_and(|st| st.has_leader());
        Some(self.clocks.facts(list, healthy, now_ms))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_large_group_asks_the_members_and_a_few_others_in_turn() {
        let candidates: Vec<String> = (0..10_000).map(|i| format!("http://e{i}")).collect();
        let members = vec![
            (1, "http://e7".to_string()),
            (2, "http://e9000".to_string()),
        ];
        let first = pick_candidates(&candidates, &members, 0);
        assert_eq!(first.len(), 1 + 2 + OTHER_CANDIDATES_PER_PASS);
        assert_eq!(first[0], "http://e0", "the own etcd first");
        assert!(first.contains(&"http://e7".to_string()));
        assert!(first.contains(&"http://e9000".to_string()));
        // Over enough passes every other candidate is asked.
        let mut asked = std::collections::HashSet::new();
        for pass in 0..(10_000 / OTHER_CANDIDATES_PER_PASS + 1) {
            asked.extend(pick_candidates(
                &candidates,
                &members,
                pass * OTHER_CANDIDATES_PER_PASS,
            ));
        }
        assert_eq!(asked.len(), 10_000);
        // A small group is asked whole.
        let three: Vec<String> = candidates[..3].to_vec();
        assert_eq!(pick_candidates(&three, &[], 0), three);
    }

    /// An address that accepts connections and never answers (as etcd's
    /// client port does while its member receives the database it was
    /// sent): each connection is held until the test ends.
    async fn silent_endpoint() -> (String, tokio::task::JoinHandle<()>) {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let held = tokio::spawn(async move {
            let mut open = Vec::new();
            while let Ok((socket, _)) = listener.accept().await {
                open.push(socket);
            }
        });
        (url, held)
    }

    #[tokio::test]
    async fn a_silent_learner_holds_a_pass_for_the_learner_bound_only() {
        let call_timeout = std::time::Duration::from_secs(2);
        let bound = std::time::Duration::from_millis(100);
        let (silent, held) = silent_endpoint().await;
        let mut took = Vec::new();
        for learner in [true, false] {
            let mut view = ClusterView::new(EtcdAccess::new(call_timeout), bound);
            view.last_members = vec![(7, silent.clone())];
            if learner {
                view.last_learners.insert(7);
            }
            let t = std::time::Instant::now();
            let (local, seen) = view
                .observe(None, None, std::slice::from_ref(&silent))
                .await;
            took.push(t.elapsed());
            assert!(local.is_none() && seen.members.is_none() && seen.statuses.is_empty());
        }
        held.abort();
        assert!(
            took[0] < call_timeout / 2,
            "a silent learner (its Status and the list asked of it) held the pass {:?}",
            took[0]
        );
        assert!(
            took[1] >= call_timeout,
            "a silent voter is waited for a whole call timeout: {:?}",
            took[1]
        );
    }

    #[test]
    fn the_member_list_is_the_first_candidates_answer_once_known() {
        use ListAnswer::{Answered, Failed, Pending};
        let list = || Answered((Vec::new(), "http://e".to_string()));
        let cases: Vec<(&str, Vec<ListAnswer>, Option<usize>)> = vec![
            (
                "the own etcd answered: the others are not waited for",
                vec![list(), Pending, Pending],
                Some(0),
            ),
            (
                "the own etcd pending: wait, whoever else answered",
                vec![Pending, list(), list()],
                None,
            ),
            (
                "the own etcd failed, the next answered",
                vec![Failed, list(), Pending],
                Some(1),
            ),
            (
                "the own etcd failed, the next pending",
                vec![Failed, Pending, list()],
                None,
            ),
            (
                "only the last answered",
                vec![Failed, Failed, list()],
                Some(2),
            ),
            ("none answered", vec![Failed, Failed, Failed], None),
            ("nothing asked", vec![], None),
        ];
        for (what, answers, want) in cases {
            assert_eq!(preferred(&answers), want, "{what}");
        }
    }

    #[test]
    fn healthy_endpoints_are_the_leader_then_every_other_member_that_knows_it() {
        let member = |id: u64| Member {
            id,
            name: format!("m{id}"),
            peer_urls: Vec::new(),
            client_urls: Vec::new(),
            is_learner: false,
        };
        let status = |id: u64, leader: u64| MemberStatus {
            member_id: id,
            leader,
            ..Default::default()
        };
        let mut seen = Seen {
            members: Some(((1..=4).map(member).collect(), "x".into())),
            // 3 leads; 1 and 3 and 4 know it; 2 knows no leader.
            statuses: [
                (1, status(1, 3)),
                (2, status(2, 0)),
                (3, status(3, 3)),
                (4, status(4, 3)),
            ]
            .into_iter()
            .collect(),
            endpoints: (1..=4).map(|i| (i, format!("http://m{i}"))).collect(),
        };
        assert_eq!(
            seen.healthy_endpoints(),
            ["http://m3", "http://m1", "http://m4"]
        );
        assert_eq!(seen.healthy_endpoint().as_deref(), Some("http://m3"));
        seen.statuses.clear();
        assert!(seen.healthy_endpoints().is_empty());
        assert_eq!(seen.healthy_endpoint(), None);
    }
}
