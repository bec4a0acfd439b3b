//! eco on an EC2 auto-scaling group, end to end: real `eco` and etcd
//! processes whose instances are launched through the Auto Scaling API of
//! the local AWS emulator (moto, plus the test kit's IMDSv2 per instance
//! and lifecycle-hook wait: `testkit/aws/`), with private addresses on
//! loopback — so they find each other only through the AWS API — and
//! snapshots and the record of truth in the emulator's S3. Under a write
//! load whose every acknowledged write is recorded:
//!
//! - a 3-instance cluster forms from the group; an instance's etcd is
//!   frozen, and its eco, after `recovery.replace_unusable_after` with the
//!   other two healthy, marks the instance `Unhealthy`
//!   (`SetInstanceHealth`); it is terminated (the test kit stands in for
//!   the group, which moto does not make act on health), the group
//!   launches a replacement (new id, new address), and the cluster is
//!   back to three voters with nothing lost;
//! - desired capacity 3 → 5 → 3: the scale-out joins two learners one at
//!   a time; the scale-in goes through the termination hook — each chosen
//!   instance leaves gracefully and completes its lifecycle action
//!   (`CONTINUE`), writes never stop for long, nothing lost;
//! - two of three terminated and replaced: quorum loss, recovered with S3
//!   as the store, writable with every acknowledged write;
//! - a scale-in without a hook: the instance is terminated at once while
//!   its eco still runs (the test kit does not stop it): it is certified
//!   gone, its member is removed, and its eco stops etcd and says it left;
//! - an Auto Scaling and EC2 outage in steady state: nothing removed,
//!   nothing reseeded, and `/status` says the group view is stale.

use std::time::{Duration, Instant};
use testkit::cluster::{AwsOptions, Cluster, Options};
use testkit::eco_bin;
use testkit::etcd::{client, rt, write};
use testkit::ledger::{Ledger, lost_beyond_residual, lost_writes, wal_residual};
use testkit::wait_until;

/// A cluster on its own /16 (`127.<100+net>.0.0/16`) of the emulator,
/// its group with a termination hook.
fn aws_cluster(net: u8) -> Cluster {
    aws_cluster_with(net, Some(Duration::from_secs(60)))
}

fn aws_cluster_with(net: u8, hook: Option<Duration>) -> Cluster {
    let mut o = Options::integration(eco_bin!());
    o.net = net;
    o.aws = Some(AwsOptions {
        hook,
        refresh: Duration::from_secs(1),
    });
    Cluster::new(o).expect("cluster on the AWS emulator")
}

fn formed(c: &mut Cluster, n: usize) -> Vec<String> {
    let ids = c.launch(n).expect("the group launches its instances");
    for id in &ids {
        c.start(id).expect("start eco");
    }
    let names: Vec<&str> = ids.iter().map(String::as_str).collect();
    c.wait_voters(&names, Duration::from_secs(90))
        .unwrap_or_else(|| panic!("{n} voters formed from the group"));
    ids
}

fn names(ids: &[String]) -> Vec<&str> {
    ids.iter().map(String::as_str).collect()
}

fn assert_nothing_lost(c: &Cluster, ids: &[String], acked: &[(String, String)]) {
    assert!(
        acked.len() > 50,
        "the load wrote too little: {}",
        acked.len()
    );
    for id in ids {
        let lost = lost_writes(&c.nodes[id].endpoint(), acked);
        assert!(lost.is_empty(), "{id} misses acknowledged writes: {lost:?}");
    }
}

/// Writes a key every 100 ms through each of `endpoints`, each endpoint by
/// a thread of its own, and records when each write was acknowledged, until
/// stopped: the longest gap between acknowledgements (through any endpoint)
/// says whether the cluster stopped accepting writes. One thread per
/// endpoint, because a member that left (its etcd stopped, or still running
/// outside the cluster) takes a write's whole timeout to refuse it: tried in
/// turn, two of them put seconds between the live members' writes that the
/// cluster never stopped for.
struct GapProbe {
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
    handles: Vec<std::thread::JoinHandle<Vec<Instant>>>,
}

impl GapProbe {
    fn start(endpoints: Vec<String>) -> Self {
        let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let handles = endpoints
            .into_iter()
            .enumerate()
            .map(|(i, endpoint)| {
                let flag = stop.clone();
                std::thread::spawn(move || {
                    let mut acks = Vec::new();
                    let mut n = 0u64;
                    let until = Instant::now() + Duration::from_secs(600);
                    while !flag.load(std::sync::atomic::Ordering::Relaxed) && Instant::now() < until
                    {
                        n += 1;
                        if write(&endpoint, &format!("gap/{i}/{n:06}"), "x") {
                            acks.push(Instant::now());
                        }
                        std::thread::sleep(Duration::from_millis(100));
                    }
                    acks
                })
            })
            .collect();
        Self { stop, handles }
    }

    fn longest_gap(self) -> Duration {
        self.stop.store(true, std::sync::atomic::Ordering::Relaxed);
        let mut acks: Vec<Instant> = self
            .handles
            .into_iter()
            .flat_map(|h| h.join().unwrap_or_default())
            .collect();
        acks.sort();
        acks.windows(2)
            .map(|w| w[1] - w[0])
            .max()
            .unwrap_or_default()
    }
}

fn status_json(c: &Cluster, id: &str) -> Option<serde_json::Value> {
    let api = c.nodes.get(id)?.api();
    let mut stream =
        std::net::TcpStream::connect_timeout(&api.parse().ok()?, Duration::from_secs(2)).ok()?;
    stream.set_read_timeout(Some(Duration::from_secs(2))).ok()?;
    use std::io::{Read, Write};
    stream
        .write_all(format!("GET /status HTTP/1.0\r\nHost: {api}\r\n\r\n").as_bytes())
        .ok()?;
    let mut text = String::new();
    stream.read_to_string(&mut text).ok()?;
    let body = text.split("\r\n\r\n").nth(1)?;
    serde_json::from_str(body).ok()
}

#[test]
fn forms_from_the_group_and_an_unusable_instance_is_replaced_with_nothing_lost() {
    let mut o = Options::integration(eco_bin!());
    o.net = 11;
    o.aws = Some(AwsOptions {
        hook: Some(Duration::from_secs(60)),
        refresh: Duration::from_secs(1),
    });
    o.config = o
        .config
        .replace_unusable_after(Duration::from_secs(4))
        .unhealthy_member_ttl(Duration::from_secs(60));
    let mut c = Cluster::new(o).expect("cluster on the AWS emulator");
    let ids = formed(&mut c, 3);
    for id in &ids {
        assert!(id.starts_with("i-"), "instance ids are EC2 ids: {id}");
        let s = status_json(&c, id).expect("status");
        assert_eq!(
            s["group"]["instances"].as_array().map(Vec::len),
            Some(3),
            "{s}"
        );
        assert!(
            s["group"]["instances"][0]["zone"]
                .as_str()
                .unwrap_or_default()
                .starts_with("us-east-1"),
            "{s}"
        );
    }
    let ledger = Ledger::start(c.endpoints(&ids), 20_000);
    ledger.wait_acked(100, Duration::from_secs(30));

    let victim = ids[1].clone();
    let frozen_at = Instant::now();
    for pid in c.etcd_pids(&victim) {
        testkit::process::kill(pid, libc::SIGSTOP);
    }
    let group = c.aws.as_ref().expect("aws").group();
    let marked = wait_until(Duration::from_secs(60), || {
        group
            .instances()
            .into_iter()
            .any(|i| i.id == victim && i.health_status == "Unhealthy")
            .then_some(())
    });
    assert!(
        marked.is_some(),
        "{victim} was not marked Unhealthy\n{}",
        c.log_tail(&victim, 30)
    );
    eprintln!(
        "AWS: {victim} marked Unhealthy {:.1} s after its etcd froze",
        frozen_at.elapsed().as_secs_f64()
    );
    let log = c.nodes[&victim].log();
    assert!(
        log.contains("event=\"instance.replacement_requested\"")
            && log.contains("outcome=\"requested\""),
        "{}",
        c.log_tail(&victim, 30)
    );
    for id in ids.iter().filter(|id| **id != victim) {
        assert!(
            !c.nodes[id].log().contains("instance.replacement_requested"),
            "healthy {id} asked for a replacement"
        );
    }
    c.kill_with_etcd(&victim).unwrap();
    let at = Instant::now();
    let now = c
        .replace(&ids, std::slice::from_ref(&victim))
        .expect("replaced by the group");
    assert!(!now.contains(&victim));
    c.wait_voters(&names(&now), Duration::from_secs(120))
        .expect("three voters again, the replacement among them");
    eprintln!(
        "AWS: replacement a voter {:.1} s after the termination",
        at.elapsed().as_secs_f64()
    );
    let (acked, _) = ledger.finish();
    assert_nothing_lost(&c, &now, &acked);
    assert_eq!(c.records(), vec![1], "a minority failure never reseeds");
    assert!(!c.snapshot_names().is_empty(), "snapshots are in S3");
}

#[test]
fn scale_out_then_in_through_the_termination_hook_loses_nothing() {
    let mut c = aws_cluster(12);
    let three = formed(&mut c, 3);
    let ledger = Ledger::start(c.endpoints(&three), 20_000);

    let five = c.scale_to(5).expect("scale out");
    assert_eq!(five.len(), 5);
    c.wait_voters(&names(&five), Duration::from_secs(150))
        .expect("five voters after the scale-out");

    let probe = GapProbe::start(c.endpoints(&five));
    let at = Instant::now();
    let kept = c.scale_to(3).expect("scale in");
    let leaving: Vec<String> = five
        .iter()
        .filter(|id| !kept.contains(id))
        .cloned()
        .collect();
    assert_eq!(
        leaving.len(),
        2,
        "the group chose two instances: {leaving:?}"
    );
    // One of them has its eco killed and restarted in the middle of its
    // leave: it picks the leave up where the group's state says it is.
    c.stop(&leaving[0], libc::SIGKILL).expect("kill eco");
    c.start(&leaving[0]).expect("restart eco");
    c.wait_voters(&names(&kept), Duration::from_secs(150))
        .expect("three voters after the scale-in");
    let aws = c.aws.as_ref().expect("aws");
    let completed = wait_until(Duration::from_secs(60), || {
        let actions = aws.emulator.lifecycle_actions();
        leaving
            .iter()
            .all(|id| {
                actions.iter().any(|a| {
                    a.action == "CompleteLifecycleAction"
                        && a.instance_id.as_deref() == Some(id.as_str())
                        && a.error.is_none()
                        && a.result.as_deref() == Some("CONTINUE")
                })
            })
            .then_some(actions)
    })
    .unwrap_or_else(|| {
        panic!(
            "both leaving instances completed their lifecycle action: {:#?}",
            aws.emulator.lifecycle_actions()
        )
    });
    let heartbeats = completed
        .iter()
        .filter(|a| a.action == "RecordLifecycleActionHeartbeat" && a.error.is_none())
        .count();
    eprintln!(
        "AWS scale-in: three voters {:.1} s after the desired capacity changed; {heartbeats} heartbeat(s)",
        at.elapsed().as_secs_f64()
    );
    let gap = probe.longest_gap();
    assert!(
        gap < Duration::from_secs(5),
        "writes stopped for {gap:?} during the scale-in: quorum must hold"
    );
    for id in &leaving {
        wait_until(Duration::from_secs(30), || {
            (aws.group().ec2_state(id).as_deref() == Some("terminated")).then_some(())
        })
        .unwrap_or_else(|| panic!("{id} is terminated once its hook is completed"));
        assert!(
            c.nodes[id].data_dir().join("member/wal").exists(),
            "{id} kept its data (the instance's disk goes with it, eco never deletes)"
        );
        let log = c.nodes[id].log();
        assert!(
            log.contains("completed the lifecycle action"),
            "{id}: {log}"
        );
    }
    let (acked, _) = ledger.finish();
    assert_nothing_lost(&c, &kept, &acked);
    assert_eq!(c.records(), vec![1], "a scale-in never reseeds");
}

#[test]
fn two_of_three_terminated_and_replaced_recover_from_s3_with_every_acknowledged_write() {
    let mut c = aws_cluster(13);
    let ids = formed(&mut c, 3);
    let old = wait_until(Duration::from_secs(10), || {
        rt().block_on(async {
            let mut cl = client(&c.nodes[&ids[0]].endpoint()).await?;
            cl.status().await.ok()?.header().map(|h| h.cluster_id())
        })
    })
    .expect("cluster id");
    let ledger = Ledger::start(c.endpoints(&ids), 20_000);
    ledger.wait_acked(100, Duration::from_secs(30));
    let gone = vec![ids[1].clone(), ids[2].clone()];
    for id in &gone {
        c.kill_with_etcd(id).unwrap();
    }
    let at = Instant::now();
    let now = c.replace(&ids, &gone).expect("replaced by the group");
    let writable = wait_until(Duration::from_secs(120), || {
        write(&c.nodes[&ids[0]].endpoint(), "probe/writable", "yes").then(Instant::now)
    })
    .expect("writable again within 120 s");
    let new = c
        .wait_voters(&names(&now), Duration::from_secs(150))
        .expect("three voters again");
    eprintln!(
        "AWS quorum loss: writable {:.1} s after the loss, three voters after {:.1} s",
        (writable - at).as_secs_f64(),
        at.elapsed().as_secs_f64()
    );
    assert_ne!(new, old, "a reseed makes a new cluster id");
    assert_eq!(
        c.records(),
        vec![1, 2],
        "incarnation 2 is recorded in S3, once"
    );
    let timed = ledger.finish_timed();
    assert!(
        timed.acked.len() > 50,
        "the load wrote too little: {}",
        timed.acked.len()
    );
    let residual = wal_residual(&timed, &[at]);
    for id in &now {
        let lost = lost_beyond_residual(
            id,
            lost_writes(&c.nodes[id].endpoint(), &timed.acked),
            &residual,
        );
        assert!(lost.is_empty(), "{id} misses acknowledged writes: {lost:?}");
    }
}

#[test]
fn an_api_outage_in_steady_state_removes_nothing_and_reseeds_nothing() {
    let mut c = aws_cluster(14);
    let ids = formed(&mut c, 3);
    let members_before = c.member_ids().expect("members");
    let ledger = Ledger::start(c.endpoints(&ids), 20_000);
    let aws = c.aws.as_ref().expect("aws");
    aws.emulator
        .outage(&["autoscaling", "ec2"], Duration::from_secs(15));
    // Any time during the outage (15 s); what /status said last is in the
    // failure.
    let last_seen = std::cell::RefCell::new(None);
    let stale = wait_until(Duration::from_secs(14), || {
        let s = status_json(&c, &ids[0]);
        let problem = s
            .as_ref()
            .and_then(|s| s["group_problem"].as_str().map(str::to_string));
        *last_seen.borrow_mut() = Some(s.map(|s| s["group_problem"].clone()));
        problem
    })
    .unwrap_or_else(|| {
        panic!(
            "/status says the group view is stale during the outage; its group_problem was last {:?} (None: no answer)",
            last_seen.borrow()
        )
    });
    assert!(stale.contains("last complete view"), "{stale}");
    std::thread::sleep(Duration::from_secs(15));
    wait_until(Duration::from_secs(20), || {
        status_json(&c, &ids[0]).and_then(|s| s["group_problem"].is_null().then_some(()))
    })
    .expect("the stale mark goes once the API answers");
    assert_eq!(
        c.member_ids().expect("members"),
        members_before,
        "nothing removed"
    );
    assert_eq!(c.records(), vec![1], "nothing reseeded");
    let (acked, _) = ledger.finish();
    assert_nothing_lost(&c, &ids, &acked);
}

#[test]
fn a_scale_in_without_a_hook_leaves_through_the_departed_path() {
    let mut c = aws_cluster_with(15, None);
    let three = formed(&mut c, 3);
    let ledger = Ledger::start(c.endpoints(&three), 20_000);
    let kept = c.scale_to(2).expect("scale in");
    let gone: Vec<String> = three
        .iter()
        .filter(|id| !kept.contains(id))
        .cloned()
        .collect();
    assert_eq!(gone.len(), 1, "{gone:?}");
    let gone = &gone[0];
    let aws = c.aws.as_ref().expect("aws");
    wait_until(Duration::from_secs(30), || {
        (aws.group().ec2_state(gone).as_deref() == Some("terminated")).then_some(())
    })
    .expect("terminated at once: no hook waits");
    c.wait_voters(&names(&kept), Duration::from_secs(120))
        .expect("two voters: the terminated instance's member is removed");
    // Its eco still runs (nothing stopped it): it stops etcd and says so.
    wait_until(Duration::from_secs(30), || {
        c.etcd_pids(gone).is_empty().then_some(())
    })
    .expect("the removed instance's etcd is stopped by its eco");
    // (Its phase is "leaving" from the moment the group drops it, while
    // it still hands leadership away: wait for what it says once removed.)
    let s = wait_until(Duration::from_secs(20), || {
        let s = status_json(&c, gone)?;
        (s["phase"] == "leaving"
            && s["next"]["reason"]
                .as_str()
                .unwrap_or_default()
                .contains("not in the group"))
        .then_some(s)
    })
    .unwrap_or_else(|| {
        panic!(
            "the removed instance does not say it left: {}",
            status_json(&c, gone).unwrap_or_default()
        )
    });
    assert!(
        s["next"]["reason"]
            .as_str()
            .unwrap_or_default()
            .contains("not in the group"),
        "{s}"
    );
    assert!(
        aws.emulator.lifecycle_actions().is_empty(),
        "no hook, no lifecycle action"
    );
    let (acked, _) = ledger.finish();
    assert_nothing_lost(&c, &kept, &acked);
}
