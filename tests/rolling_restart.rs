//! A planned stop costs no election: every eco of a cluster restarted in
//! turn (SIGTERM, started again, the next one once its member answers as a
//! voter with a leader), under a write load, on the etcd of the run
//! (`ECO_TEST_ETCD_VERSION`: 3.5.30 in `make test`, 3.4.23 in its 3.4
//! pass). The instance whose member leads hands leadership away before it
//! stops its etcd (`recovery::handover`, the `leadership.transferred`
//! event), so the writes never wait for an election. Also with a short
//! grace period: the leader's eco is killed with SIGKILL 300 ms after its
//! SIGTERM (what a pod deleted with a short grace period, or a stop that
//! reaches its timeout, does), which leaves etcd no time for its own
//! graceful transfer.
//!
//! Each restart's longest write gap is printed (`rolling restart: ...`
//! lines; the figures of docs/benchmarks.md). Election timeout here: 250 ms
//! (the integration timings). 127.0.110.x (three), 127.0.111.x (five),
//! 127.0.112.x (short grace).

use std::time::{Duration, Instant};

use testkit::cluster::{Cluster, Options};
use testkit::eco_bin;
use testkit::timed_load::{Acked, TimedLoad, etcd_release, longest_gap, missing};

fn ids(n: usize) -> Vec<String> {
    (1..=n).map(|i| format!("eco-{i}")).collect()
}

fn form(base: &str, n: usize) -> (Cluster, Vec<String>) {
    let mut c = Cluster::new(Options::integration(eco_bin!())).expect("cluster");
    let ids = ids(n);
    for (i, id) in ids.iter().enumerate() {
        c.add(id, &format!("{base}.{}", i + 1)).expect("add");
    }
    c.set_group(&ids).expect("group");
    for id in &ids {
        c.start(id).expect("start");
    }
    let names: Vec<&str> = ids.iter().map(String::as_str).collect();
    c.wait_voters(&names, Duration::from_secs(120))
        .unwrap_or_else(|| panic!("{n} voters did not form\n{}", c.log_tail("eco-1", 40)));
    (c, ids)
}

fn handovers(c: &Cluster, id: &str) -> usize {
    c.nodes[id]
        .log()
        .matches("event=\"leadership.transferred\"")
        .count()
}

/// Stops `id` with SIGTERM (SIGKILL `kill_after` later, if given), starts
/// it again, and waits until every member is a voter with a leader again.
/// Returns when it was stopped, whether its member led, and when the
/// cluster was whole again.
fn restart(
    c: &mut Cluster,
    all: &[String],
    id: &str,
    kill_after: Option<Duration>,
) -> (Instant, bool, Instant) {
    let led = c.leader().as_deref() == Some(id);
    let before = handovers(c, id);
    let stopped = Instant::now();
    match kill_after {
        None => c.stop(id, libc::SIGTERM).expect("stop"),
        Some(after) => {
            c.signal_eco(id, libc::SIGTERM).expect("SIGTERM");
            std::thread::sleep(after);
            c.stop(id, libc::SIGKILL).expect("SIGKILL");
        }
    }
    if led {
        assert_eq!(
            handovers(c, id),
            before + 1,
            "{id} led and did not hand leadership away before stopping\n{}",
            c.log_tail(id, 30)
        );
    }
    c.start(id).expect("start");
    let names: Vec<&str> = all.iter().map(String::as_str).collect();
    c.wait_voters(&names, Duration::from_secs(60))
        .unwrap_or_else(|| panic!("{id} did not come back as a voter\n{}", c.log_tail(id, 40)));
    // Its member answers with a leader (wait_voters reads the list).
    testkit::wait_until(Duration::from_secs(30), || c.leader().map(|_| ()))
        .expect("a leader after the restart");
    (stopped, led, Instant::now())
}

fn report(what: &str, steps: &[(String, Instant, bool, Instant)], acked: &Acked) -> Duration {
    let version = etcd_release();
    let mut longest = Duration::ZERO;
    for (id, stopped, led, back) in steps {
        let gap = longest_gap(acked, Some(*stopped), Some(*back));
        longest = longest.max(gap);
        eprintln!(
            "rolling restart: etcd {version}, {what}: {id}{} restarted, back in {:.1} s, longest write gap {} ms",
            if *led { " (the leader)" } else { "" },
            (*back - *stopped).as_secs_f64(),
            gap.as_millis()
        );
    }
    eprintln!(
        "rolling restart: etcd {version}, {what}: {} writes, longest write gap {} ms",
        acked.len(),
        longest.as_millis()
    );
    longest
}

fn check_kept(c: &Cluster, acked: &Acked) {
    let endpoint = c.nodes["eco-1"].endpoint();
    let lost = missing(&endpoint, acked);
    assert!(lost.is_empty(), "acknowledged writes lost: {lost:?}");
}

fn rolling(base: &str, n: usize) {
    let (mut c, all) = form(base, n);
    let endpoints = c.endpoints(&all);
    let load = TimedLoad::start(&endpoints, "/rolling");
    std::thread::sleep(Duration::from_secs(1));
    // Highest first, as a StatefulSet rolls; the leader is wherever raft
    // put it, so some restart stops a leading member.
    let mut steps = Vec::new();
    let mut any_led = false;
    for id in all.iter().rev() {
        let (stopped, led, back) = restart(&mut c, &all, id, None);
        any_led |= led;
        steps.push((id.clone(), stopped, led, back));
        std::thread::sleep(Duration::from_millis(500));
    }
    // Make sure a leading member was stopped at least once.
    if !any_led {
        let leader = c.leader().expect("a leader");
        let (stopped, led, back) = restart(&mut c, &all, &leader, None);
        steps.push((leader, stopped, led, back));
    }
    std::thread::sleep(Duration::from_secs(1));
    let acked = load.finish();
    report(&format!("{n} instances, SIGTERM"), &steps, &acked);
    check_kept(&c, &acked);
    for id in &all {
        let _ = c.stop(id, libc::SIGTERM);
    }
}

#[test]
fn three_instances_restarted_in_turn_keep_every_write_and_the_leader_hands_over() {
    rolling("127.0.110", 3);
}

#[test]
fn five_instances_restarted_in_turn_keep_every_write_and_the_leader_hands_over() {
    rolling("127.0.111", 5);
}

#[test]
fn a_leader_killed_soon_after_its_sigterm_has_handed_over_first() {
    let (mut c, all) = form("127.0.112", 3);
    let endpoints = c.endpoints(&all);
    let load = TimedLoad::start(&endpoints, "/grace");
    std::thread::sleep(Duration::from_secs(1));
    let mut steps = Vec::new();
    for _ in 0..2 {
        let leader = c.leader().expect("a leader");
        let (stopped, led, back) = restart(&mut c, &all, &leader, Some(Duration::from_millis(300)));
        assert!(led);
        steps.push((leader, stopped, led, back));
        std::thread::sleep(Duration::from_millis(500));
    }
    let acked = load.finish();
    report(
        "3 instances, the leader SIGKILLed 300 ms after SIGTERM",
        &steps,
        &acked,
    );
    check_kept(&c, &acked);
    for id in &all {
        let _ = c.stop(id, libc::SIGTERM);
    }
}
