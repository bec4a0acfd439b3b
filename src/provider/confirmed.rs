//! The group eco acts on: a provider's reads, with the last good group
//! kept over a bad read and every departure confirmed
//! (`recovery::departures` decides). [`super::from_config`] wraps every
//! provider in it, so every consumer — the planner (a departed instance's
//! member removed, this instance leaving), the gossip seeds, a join's last
//! look at the group, quorum-loss recovery's certified-gone facts — sees
//! one confirmed view.
//!
//! - A read that fails, or lists no instance at all: the last good group
//!   is answered (the error logged once per distinct error, and in
//!   [`Provider::problem`], `/status` `group_problem`); it counts for no
//!   departure. Before the first good read, the error is the answer.
//! - An instance a good read leaves out stays in the group, as the last
//!   good read listed it, until consecutive reads confirm its departure
//!   (the rule comes from the provider's refresh interval,
//!   `Rule::for_refresh_ms`); logged when its absence starts, when it is
//!   called off and when the departure is confirmed, and shown in
//!   [`Provider::problem`] and `Group::departing` meanwhile. An instance
//!   that appears is in at once.
//! - [`Provider::departed`]: the provider's certified-gone answers,
//!   confirmed the same way; a failed question is no answer (logged once
//!   per distinct error) and the confirmed answer stands.
//!
//! Time is one monotonic clock, in milliseconds since the view was built.

use super::{
    Group, Identity, Provider, ProviderError, Replacement, TerminationHook, TerminationNotice,
};
use recovery::departures::{Absences, GroupReads, Rule};
use std::collections::BTreeSet;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

/// Milliseconds of one monotonic clock.
type Clock = Box<dyn Fn() -> u64 + Send + Sync>;

/// A provider's reads, confirmed.
pub(super) struct Confirmed {
    inner: Arc<dyn Provider>,
    rule: Rule,
    clock: Clock,
    state: Mutex<State>,
}

#[derive(Default)]
struct State {
    reads: GroupReads,
    /// The group eco acts on (its ids are `reads.acting`); `None` before
    /// the first good read.
    group: Option<Group>,
    /// When the last good read was (the clock's ms).
    read_at_ms: Option<u64>,
    /// Why the last read was not used.
    failure: Option<String>,
    gone: Absences,
    /// Why the last certified-gone question had no answer.
    gone_failure: Option<String>,
}

impl Confirmed {
    pub(super) fn new(inner: Arc<dyn Provider>) -> Self {
        let epoch = Instant::now();
        Self::with_clock(
            inner,
            Box::new(move || u64::try_from(epoch.elapsed().as_millis()).unwrap_or(u64::MAX)),
        )
    }

    fn with_clock(inner: Arc<dyn Provider>, clock: Clock) -> Self {
        let refresh_ms = u64::try_from(inner.refresh_interval().as_millis()).unwrap_or(u64::MAX);
        Self {
            inner,
            rule: Rule::for_refresh_ms(refresh_ms),
            clock,
            state: Mutex::default(),
        }
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn span(&self) -> String {
        format!(
            "{} reads over {:.1} s",
            self.rule.min_reads,
            Duration::from_millis(self.rule.min_span_ms).as_secs_f64()
        )
    }
}

impl State {
    /// The answer to a read that cannot be used: the last good group.
    fn keep(&mut self, e: ProviderError) -> Result<Group, ProviderError> {
        let Some(group) = &self.group else {
            return Err(e);
        };
        let text = e.to_string();
        if self.failure.as_deref() != Some(text.as_str()) {
            tracing::error!(error = %text, "keeping the last good group");
            self.failure = Some(text);
        }
        Ok(group.clone())
    }
}

#[async_trait::async_trait]
impl Provider for Confirmed {
    fn identity(&self) -> &Identity {
        self.inner.identity()
    }

    async fn discover(&self) -> Result<Group, ProviderError> {
        let result = self.inner.discover().await;
        let now_ms = (self.clock)();
        let mut s = self.lock();
        let read = match result {
            Ok(read) => read,
            Err(e) => return s.keep(e),
        };
        let listed: BTreeSet<String> = read.ids().map(str::to_string).collect();
        let next = match s.reads.read(self.rule, now_ms, &listed) {
            Ok(next) => next,
            Err(refused) => return s.keep(refused.into()),
        };
        if let Some(failure) = s.failure.take() {
            tracing::info!(was = %failure, "the group reads again");
        }
        for id in s.reads.acting.difference(&next.acting) {
            tracing::info!(instance = %id, "its departure is confirmed ({}): it is out of the group", self.span());
        }
        for (id, _) in s.reads.unconfirmed() {
            if listed.contains(id) {
                tracing::info!(instance = %id, "listed again: its departure is called off");
            }
        }
        let mut instances = read.instances;
        for (id, _) in next.unconfirmed() {
            if s.reads.absent.run(id).is_none() {
                tracing::warn!(instance = %id, "absent from the group: kept until {} confirm its departure", self.span());
            }
            // Kept as the last good read listed it (`acting` is its ids).
            if let Some(kept) = s.group.as_ref().and_then(|g| g.get(id)) {
                instances.push(kept.clone());
            }
        }
        instances.sort_by(|a, b| a.id.cmp(&b.id));
        let group = Group {
            self_id: read.self_id,
            instances,
            desired_size: read.desired_size,
            departing: next.unconfirmed().map(|(id, _)| id.to_string()).collect(),
        };
        s.reads = next;
        s.group = Some(group.clone());
        s.read_at_ms = Some(now_ms);
        Ok(group)
    }

    async fn departed(&self, ids: &BTreeSet<String>) -> Result<BTreeSet<String>, ProviderError> {
        let answer = self.inner.departed(ids).await;
        let now_ms = (self.clock)();
        let mut s = self.lock();
        match answer {
            Ok(answer) => {
                if s.gone_failure.take().is_some() {
                    tracing::info!("the provider tells which instances are gone again");
                }
                let certified: BTreeSet<String> = answer.intersection(ids).cloned().collect();
                s.gone = s.gone.after_read(now_ms, &certified);
            }
            // No answer: the runs stand as they are, and so does the answer.
            Err(e) => {
                let text = e.to_string();
                if s.gone_failure.as_deref() != Some(text.as_str()) {
                    tracing::warn!(error = %text, "cannot ask the provider which instances are gone; keeping the last answer");
                    s.gone_failure = Some(text);
                }
            }
        }
        Ok(s.gone
            .confirmed(self.rule)
            .intersection(ids)
            .cloned()
            .collect())
    }

    fn problem(&self) -> Option<String> {
        let now_ms = (self.clock)();
        let s = self.lock();
        let mut parts = Vec::new();
        if let Some(failure) = &s.failure {
            let age = s
                .read_at_ms
                .map(|at| format!("read {} s ago", now_ms.saturating_sub(at) / 1000))
                .unwrap_or_else(|| "read at start".into());
            parts.push(format!(
                "{failure}: keeping the last complete view of the group ({age}); nothing is removed or reseeded on a failed answer"
            ));
        }
        for (id, run) in s.reads.unconfirmed() {
            parts.push(format!(
                "{id} is absent from the group for {} s ({} read(s)): kept until {} confirm its departure",
                now_ms.saturating_sub(run.first_ms) / 1000,
                run.reads,
                self.span()
            ));
        }
        (!parts.is_empty()).then(|| parts.join("; "))
    }

    fn absences_confirmed(&self) -> bool {
        self.lock().reads.absences_confirmed(self.rule)
    }

    fn termination(&self) -> Option<TerminationNotice> {
        self.inner.termination()
    }

    async fn termination_heartbeat(&self, hook: &TerminationHook) -> Result<(), ProviderError> {
        self.inner.termination_heartbeat(hook).await
    }

    async fn complete_termination(&self, hook: &TerminationHook) -> Result<(), ProviderError> {
        self.inner.complete_termination(hook).await
    }

    async fn request_replacement(&self, reason: &str) -> Result<Replacement, ProviderError> {
        self.inner.request_replacement(reason).await
    }

    fn refresh_interval(&self) -> Duration {
        self.inner.refresh_interval()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::provider::statefulset::{PodEnvironment, StatefulSetProvider};
    use crate::provider::static_file::StaticProvider;
    use std::sync::atomic::{AtomicU64, Ordering};

    const A: &str = "[[instance]]\nid = \"a\"\naddress = \"127.0.0.11\"\n";
    const B: &str = "[[instance]]\nid = \"b\"\naddress = \"127.0.0.12\"\n";
    const C: &str = "[[instance]]\nid = \"c\"\naddress = \"127.0.0.13\"\n";

    /// The static provider of instance `a` over a file, read every second
    /// (a departure: 3 reads over 5 s), on a clock the test moves.
    struct Fixture {
        _dir: tempfile::TempDir,
        path: std::path::PathBuf,
        now: Arc<AtomicU64>,
        view: Confirmed,
    }

    impl Fixture {
        fn new(text: &str) -> Self {
            let dir = tempfile::tempdir().unwrap();
            let path = dir.path().join("group.toml");
            std::fs::write(&path, text).unwrap();
            let inner =
                StaticProvider::open(path.clone(), "a".into(), Duration::from_secs(1)).unwrap();
            let now = Arc::new(AtomicU64::new(0));
            let clock = now.clone();
            let view = Confirmed::with_clock(
                Arc::new(inner),
                Box::new(move || clock.load(Ordering::SeqCst)),
            );
            Fixture {
                _dir: dir,
                path,
                now,
                view,
            }
        }

        /// Writes `text` and reads the group at `at_ms`: its ids.
        async fn read_at(&self, at_ms: u64, text: &str) -> Vec<String> {
            std::fs::write(&self.path, text).unwrap();
            self.now.store(at_ms, Ordering::SeqCst);
            let g = self.view.discover().await.unwrap();
            g.ids().map(str::to_string).collect()
        }
    }

    fn ids(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| s.to_string()).collect()
    }

    #[tokio::test]
    async fn a_group_file_that_lists_nobody_removes_nobody() {
        let all = format!("{A}{B}{C}");
        let f = Fixture::new(&all);
        assert_eq!(f.read_at(0, &all).await, ids(&["a", "b", "c"]));
        let ask: BTreeSet<String> = ["a", "b", "c"].iter().map(|s| s.to_string()).collect();
        assert!(f.view.departed(&ask).await.unwrap().is_empty());
        // Emptied, or only `desired_size`, for a minute: never evidence.
        for (i, text) in ["", "desired_size = 3\n", "# being rewritten\n"]
            .iter()
            .enumerate()
        {
            for t in 0..60u64 {
                let at = 1_000 + (i as u64 * 60 + t) * 1_000;
                assert_eq!(f.read_at(at, text).await, ids(&["a", "b", "c"]), "{text:?}");
                assert!(f.view.departed(&ask).await.unwrap().is_empty(), "{text:?}");
            }
            let problem = f.view.problem().expect("a problem");
            assert!(
                problem.contains("lists no instance")
                    && problem.contains("keeping the last complete view"),
                "{problem}"
            );
        }
        // A rewrite in place: truncated, a half-written file naming only
        // `a`, then the whole file 1.5 s later.
        let t0 = 200_000;
        assert_eq!(f.read_at(t0, "").await, ids(&["a", "b", "c"]));
        assert_eq!(f.read_at(t0 + 300, A).await, ids(&["a", "b", "c"]));
        let problem = f.view.problem().expect("pending departures");
        assert!(
            problem.contains("b is absent") && problem.contains("3 reads over 5.0 s"),
            "{problem}"
        );
        assert_eq!(f.read_at(t0 + 1_500, &all).await, ids(&["a", "b", "c"]));
        assert_eq!(f.view.problem(), None, "back to the file as read");
        assert!(f.view.departed(&ask).await.unwrap().is_empty());
    }

    #[tokio::test]
    async fn a_departure_counts_once_reads_over_the_span_confirm_it() {
        let all = format!("{A}{B}{C}");
        let two = format!("{A}{B}");
        let f = Fixture::new(&all);
        let c: BTreeSet<String> = ["c".to_string()].into();
        f.read_at(0, &all).await;
        for (at, want, gone) in [
            (1_000, &["a", "b", "c"][..], false),
            (3_000, &["a", "b", "c"], false),
            (5_999, &["a", "b", "c"], false),
            (6_000, &["a", "b"], true),
            (7_000, &["a", "b"], true),
        ] {
            assert_eq!(f.read_at(at, &two).await, ids(want), "at {at} ms");
            assert_eq!(
                f.view.departed(&c).await.unwrap() == c,
                gone,
                "c certified gone at {at} ms"
            );
        }
        // A failed read between two that leave c out neither confirms nor
        // calls off its departure.
        let f = Fixture::new(&all);
        f.read_at(0, &all).await;
        for (at, text, gone) in [
            (1_000, two.as_str(), false),
            (3_000, "[[instance]\nbroken", false),
            (6_000, &two, false),
            (7_000, "", false),
            (8_000, &two, true),
        ] {
            f.read_at(at, text).await;
            assert_eq!(f.view.departed(&c).await.unwrap() == c, gone, "at {at} ms");
        }
        let kept = Fixture::new(&all);
        kept.read_at(0, &all).await;
        kept.read_at(1_000, &two).await;
        let g = kept.view.discover().await.unwrap();
        assert_eq!(
            g.get("c").map(|i| i.host.to_string()).as_deref(),
            Some("127.0.0.13"),
            "kept as last read"
        );
        assert_eq!(g.desired_size, 2, "the read's desired size");
        assert_eq!(g.departing, ["c".to_string()].into());
    }

    #[tokio::test]
    async fn a_flapping_group_file_removes_nobody() {
        let all = format!("{A}{B}{C}");
        let two = format!("{A}{B}");
        let f = Fixture::new(&all);
        let c: BTreeSet<String> = ["c".to_string()].into();
        for i in 0..100u64 {
            let text = if i % 2 == 0 { &all } else { &two };
            assert_eq!(f.read_at(i * 300, text).await, ids(&["a", "b", "c"]));
            assert!(f.view.departed(&c).await.unwrap().is_empty());
        }
    }

    #[tokio::test]
    async fn this_instance_left_out_once_is_still_in_its_group() {
        let all = format!("{A}{B}{C}");
        let f = Fixture::new(&all);
        f.read_at(0, &all).await;
        f.read_at(1_000, &format!("{B}{C}")).await;
        let g = f.view.discover().await.unwrap();
        assert!(g.me().is_some(), "not leaving on one read");
        assert_eq!(g.departing, ["a".to_string()].into(), "but departing");
        f.read_at(3_000, &format!("{B}{C}")).await;
        f.read_at(6_000, &format!("{B}{C}")).await;
        let g = f.view.discover().await.unwrap();
        assert!(g.me().is_none(), "leaving once confirmed");
        assert!(g.departing.is_empty());
    }

    #[tokio::test]
    async fn absences_are_confirmed_once_the_group_was_read_over_the_span() {
        let all = format!("{A}{B}{C}");
        let f = Fixture::new(&all);
        assert!(!f.view.absences_confirmed(), "nothing read yet");
        f.read_at(0, &all).await;
        f.read_at(2_000, "").await;
        f.read_at(5_000, &all).await;
        assert!(!f.view.absences_confirmed(), "a refused read is no read");
        f.read_at(5_300, &all).await;
        assert!(f.view.absences_confirmed());
    }

    #[tokio::test]
    async fn a_bad_replicas_file_keeps_the_last_good_size() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("replicas");
        std::fs::write(&file, "3").unwrap();
        let mut c: crate::config::StatefulSetProviderConfig =
            toml::from_str("service = \"s\"\n").unwrap();
        c.replicas_file = Some(file.clone());
        let env = PodEnvironment {
            pod_name: Some("eco-0".into()),
            namespace_env: Some("ns".into()),
            ..Default::default()
        };
        let now = Arc::new(AtomicU64::new(0));
        let clock = now.clone();
        let view = Confirmed::with_clock(
            Arc::new(StatefulSetProvider::open(&c, &env, Duration::from_secs(1)).unwrap()),
            Box::new(move || clock.load(Ordering::SeqCst)),
        );
        let members = ["eco-0", "eco-1", "eco-2"].map(String::from);
        let ask: BTreeSet<String> = members.iter().cloned().collect();
        assert_eq!(view.discover().await.unwrap().desired_size, 3);
        for (i, bad) in ["100000000", "4294967295", "", "three"].iter().enumerate() {
            std::fs::write(&file, bad).unwrap();
            for t in 0..10u64 {
                now.store((i as u64 * 10 + t + 1) * 1_000, Ordering::SeqCst);
                let g = view.discover().await.unwrap();
                assert_eq!(g.ids().collect::<Vec<_>>(), members, "{bad:?}");
                assert!(view.departed(&ask).await.unwrap().is_empty());
            }
            let problem = view.problem().expect("a problem");
            assert!(
                problem.contains(&format!("replicas file {}", file.display())),
                "{problem}"
            );
        }
        // A valid size that drops two pods: a departure, once confirmed.
        std::fs::write(&file, "1").unwrap();
        now.store(100_000, Ordering::SeqCst);
        assert_eq!(view.discover().await.unwrap().instances.len(), 3);
        assert!(view.departed(&ask).await.unwrap().is_empty());
    }
}
