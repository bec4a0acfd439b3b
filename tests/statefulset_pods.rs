//! The StatefulSet provider and the container image, run the way a
//! Kubernetes node would run them — without Kubernetes: no API server can
//! be installed on this machine and no container engine runs here, so the
//! image `make image` builds is unpacked and its entrypoint run as PID 1
//! in namespaces of its own, one network namespace per pod, pod names
//! resolved by the C library from each pod's hosts file (the headless
//! service's records; see `testkit::pods`).
//!
//! The image comes from `ECO_TEST_IMAGE` (an OCI layout) and
//! `ECO_TEST_IMAGE_TAG` when `make test` built it; else this test builds
//! one from the test's own `eco` with `scripts/build-image.sh`.
//!
//! Needs root; skipped with a message otherwise.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};
use testkit::config::ConfigBuilder;
use testkit::doc_commands::{kubectl_exec, sh_blocks};
use testkit::eco_bin;
use testkit::etcd::{block_on, client};
use testkit::ledger::{Ledger, lost_writes};
use testkit::pods::{Image, PodSet};
use testkit::timed_load::{TimedLoad, longest_gap, missing};
use testkit::wait_until;

const KEY: &str = "7a1c9e3b5d2f4a6c8e0b1d3f5a7c9e1b3d5f7a9c1e3b5d7f9a1c3e5b7d9f1a3c";

/// The image to run: `(layout, tag)`: `make test`'s (`ECO_TEST_IMAGE`),
/// or built from the test's own eco into `target/image-pods-test/<name>`,
/// one per test (cargo nextest runs the tests at once, each in a process
/// of its own: one image being rebuilt while another test unpacks it would
/// lose its blobs).
fn image(name: &str) -> (PathBuf, String) {
    if let (Ok(layout), Ok(tag)) = (
        std::env::var("ECO_TEST_IMAGE"),
        std::env::var("ECO_TEST_IMAGE_TAG"),
    ) {
        return (PathBuf::from(layout), tag);
    }
    let root = testkit::workspace_root();
    let out = root.join("target/image-pods-test").join(name);
    let status = Command::new("bash")
        .arg(root.join("scripts/build-image.sh"))
        .arg("--eco")
        .arg(eco_bin!())
        .arg("--out")
        .arg(&out)
        .arg("--tag")
        .arg("pods-test")
        .status()
        .expect("run scripts/build-image.sh");
    assert!(status.success(), "scripts/build-image.sh failed");
    (out.join("eco-oci"), "pods-test".into())
}

/// The test's directory, `target/pods-test/<name>`: emptied at the start
/// and left behind, so a failed run's pod logs (etcd's included) can be
/// read afterwards.
fn run_dir(name: &str) -> PathBuf {
    let dir = testkit::workspace_root()
        .join("target/pods-test")
        .join(name);
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("the test's directory");
    dir
}

fn skip() -> bool {
    if let Some(why) = testkit::pods::unavailable() {
        eprintln!("skipped: {why}");
        return true;
    }
    false
}

/// Every pod's config: the paths are the pod's (the image's layout and
/// the chart's mounts).
fn pod_config() -> ConfigBuilder {
    ConfigBuilder::new("pods", "unused")
        .statefulset_provider(
            "eco-headless",
            "/etc/eco/replicas/replicas",
            Duration::from_millis(300),
        )
        .data_dir("/var/lib/eco/etcd")
        .gossip_key_file("/etc/eco/gossip.keys")
        .dir_store("/var/lib/eco-snapshots")
        .probe_interval(Duration::from_millis(300))
        .call_timeout(Duration::from_secs(2))
        .learner_timeout(Duration::from_secs(60))
        .unhealthy_member_ttl(Duration::from_secs(10))
}

/// `(member id, name, is learner, peer URLs)`.
type Member = (u64, String, bool, Vec<String>);

/// The members as `endpoint` sees them, by name.
fn members(endpoint: &str) -> Option<Vec<Member>> {
    block_on(async {
        let mut c = client(endpoint).await?;
        let r = tokio::time::timeout(Duration::from_secs(2), c.member_list())
            .await
            .ok()?
            .ok()?;
        let mut v: Vec<_> = r
            .members()
            .iter()
            .map(|m| {
                (
                    m.id(),
                    m.name().to_string(),
                    m.is_learner(),
                    m.peer_urls().to_vec(),
                )
            })
            .collect();
        v.sort_by(|a, b| a.1.cmp(&b.1));
        Some(v)
    })
}

/// Waits until every running pod answers with exactly the started voters
/// `names`; returns name → member id.
fn wait_voters(
    pods: &PodSet,
    names: &[&str],
    limit: Duration,
) -> std::collections::BTreeMap<String, u64> {
    let want: Vec<String> = names.iter().map(|s| s.to_string()).collect();
    let mut last = None;
    let found = wait_until(limit, || {
        let mut answer = None;
        for e in pods.endpoints() {
            let m = members(&e)?;
            let voters: Vec<String> = m
                .iter()
                .filter(|(_, name, learner, _)| !learner && !name.is_empty())
                .map(|(_, n, _, _)| n.clone())
                .collect();
            last = Some(m.clone());
            if voters != want || m.len() != want.len() {
                return None;
            }
            answer = Some(m.into_iter().map(|(id, n, _, _)| (n, id)).collect());
        }
        answer
    });
    found.unwrap_or_else(|| panic!("voters {want:?} not reached; last member list: {last:?}"))
}

fn write_some(pods: &PodSet, prefix: &str, span: Duration) -> Vec<(String, String)> {
    let ledger = Ledger::with_prefix(pods.endpoints(), 100_000, prefix);
    std::thread::sleep(span);
    let (acked, _failed) = ledger.finish();
    assert!(!acked.is_empty(), "no write was acknowledged ({prefix})");
    acked
}

fn assert_none_lost(pods: &PodSet, ordinal: u32, acked: &[(String, String)]) {
    let endpoint = pods.endpoint(ordinal).expect("running");
    let lost = wait_until(Duration::from_secs(20), || {
        let lost = lost_writes(&endpoint, acked);
        lost.is_empty().then_some(())
    });
    assert!(
        lost.is_some(),
        "acknowledged writes missing on {}: {:?}",
        pods.pod_name(ordinal),
        lost_writes(&endpoint, acked)
    );
}

/// PID 1 is eco, and it reaps: a child that just exited is a zombie until
/// eco's next wait, so a zombie must be gone within seconds, not absent at
/// one instant (on a loaded machine the instant can fall in between).
fn assert_no_zombie(pods: &PodSet, ordinal: u32) {
    let procs = pods.processes(ordinal);
    let pid1 = procs.iter().find(|p| p.1 == 1).expect("a PID 1");
    assert_eq!(pid1.3, "eco", "PID 1 is eco: {procs:?}");
    let reaped = wait_until(Duration::from_secs(10), || {
        let procs = pods.processes(ordinal);
        (!procs.iter().any(|p| p.2 == 'Z')).then_some(())
    });
    let procs = pods.processes(ordinal);
    let zombies: Vec<_> = procs.iter().filter(|p| p.2 == 'Z').collect();
    assert!(
        reaped.is_some(),
        "zombies in pod {ordinal} for 10 s: {zombies:?}"
    );
}

fn snapshot_names(store: &Path) -> std::collections::BTreeSet<String> {
    testkit::cluster::snapshot_names(store, "pods")
        .into_iter()
        .collect()
}

/// `(up, times down)` of `target` in `viewer`'s gossip.
fn gossip_view(pods: &PodSet, viewer: u32, target: &str) -> Option<(bool, u64)> {
    let status = pods.status(&eco_bin!(), viewer)?;
    let peer = status["gossip"]
        .as_array()?
        .iter()
        .find(|p| p["instance_id"] == target)?
        .clone();
    Some((peer["up"].as_bool()?, peer["times_down"].as_u64()?))
}

/// Prints how long a step took (for docs/benchmarks.md; not asserted).
fn took(what: &str, since: Instant) {
    eprintln!("pods: {what} in {:.1} s", since.elapsed().as_secs_f64());
}

fn phase(pods: &PodSet, ordinal: u32) -> Option<String> {
    pods.status(&eco_bin!(), ordinal)?["phase"]
        .as_str()
        .map(str::to_string)
}

/// docs/kubernetes.md's example stored snapshot name.
const K8S_EXAMPLE_SNAPSHOT: &str =
    "eco/snapshots/i0000000001-r00000000000000012345-eco-1-1a2b3c4d.db";

/// Runs a `kubectl -n etcd exec eco-N -- …` line of a document in the
/// pod it names, as `kubectl exec` would (the image has no shell: the
/// words after `--` are the argument vector); (exit code, stdout, stderr).
fn kubectl_exec_line(pods: &PodSet, line: &str) -> (i32, String, String) {
    let k = kubectl_exec(line).unwrap_or_else(|e| panic!("{e:#}"));
    let ordinal = pods
        .running()
        .into_iter()
        .find(|o| pods.pod_name(*o) == k.pod)
        .unwrap_or_else(|| panic!("{}: no such running pod ({line})", k.pod));
    let argv: Vec<&str> = k.argv.iter().map(String::as_str).collect();
    pods.exec(ordinal, &argv)
        .unwrap_or_else(|e| panic!("kubectl exec {line}: {e:#}"))
}

/// docs/kubernetes.md's `kubectl exec` lines of "Backup and restore" and
/// "Disaster recovery", taken from its text and run in the pods: the
/// snapshot list, a snapshot now, a stored snapshot restored into the
/// pod's `/tmp` (the example name replaced by one `eco snapshot list`
/// gives), the status.
fn kubernetes_md_exec_lines_work_in_a_pod(pods: &PodSet) {
    let doc = testkit::workspace_root().join("docs/kubernetes.md");
    let backup = sh_blocks(&doc, "Backup and restore").unwrap();
    assert_eq!(backup.len(), 2, "list and now, a restore: {backup:#?}");
    for line in backup[0].commands() {
        let (code, out, err) = kubectl_exec_line(pods, line);
        assert_eq!(code, 0, "{line}: {out}{err}");
        assert!(out.contains("/snapshots/i"), "{line}: {out}");
    }
    let (code, out, err) = pods
        .exec(
            0,
            &[
                "eco",
                "snapshot",
                "list",
                "--config",
                "/etc/eco/eco.toml",
                "--json",
            ],
        )
        .unwrap();
    assert_eq!(code, 0, "{out}{err}");
    let list: serde_json::Value = serde_json::from_str(&out).unwrap();
    // The newest (names sort by incarnation, then revision).
    let name = list
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|o| o["name"].as_str())
        .max()
        .unwrap_or_else(|| panic!("a stored snapshot: {list}"))
        .to_string();
    let restore = backup[1]
        .clone()
        .replace_example(K8S_EXAMPLE_SNAPSHOT, &name);
    let lines = restore.commands();
    assert_eq!(lines.len(), 1, "{restore:#?}");
    let (code, out, err) = kubectl_exec_line(pods, lines[0]);
    assert_eq!(code, 0, "{}: {out}{err}", lines[0]);
    assert!(
        out.contains(&name) && out.contains("/tmp/restored"),
        "{out}{err}"
    );
    eprintln!(
        "pods: docs/kubernetes.md's restore in a pod: {}",
        out.trim()
    );
    let recovery = sh_blocks(&doc, "Disaster recovery").unwrap();
    assert_eq!(recovery.len(), 1, "the status: {recovery:#?}");
    for line in recovery[0].commands() {
        let (code, out, err) = kubectl_exec_line(pods, line);
        assert_eq!(code, 0, "{line}: {out}{err}");
        assert!(out.contains("eco-0"), "{line}: {out}");
    }
}

/// A three-pod set from the image: DNS-named members, what NOTES.txt and
/// docs/kubernetes.md say to run with `kubectl exec` works in a pod (the
/// document's lines taken from its text), a pod recreated on a new IP
/// with its volume rejoins with its data, one recreated without
/// its volume is replaced, a scale to five and back removes the two pods
/// that are still running, SIGTERM to PID 1 takes the final snapshot and
/// leaves no zombie, and the whole set stopped and started again resumes.
#[test]
fn a_statefulset_of_image_pods_lives_through_its_lifecycle() {
    if skip() {
        return;
    }
    let (layout, tag) = image("lifecycle");
    let dir = run_dir("lifecycle");
    let img = Image::unpack(&layout, &tag, &dir.join("image")).unwrap();
    assert_eq!(img.args, ["/usr/bin/eco", "run"], "the image's entrypoint");
    assert_ne!(img.uid, 0, "the image runs as a non-root user");
    let mut pods = PodSet::new(&dir.join("set"), 201, img, "eco", 3, &pod_config(), KEY).unwrap();
    let zones = ["zone-a", "zone-b", "zone-c", "zone-a", "zone-b"];
    let t = Instant::now();
    for o in 0..3 {
        pods.start(o, zones[o as usize]).unwrap();
    }
    let first = wait_voters(
        &pods,
        &["eco-0", "eco-1", "eco-2"],
        Duration::from_secs(120),
    );
    took("formed, 3 voters", t);
    // etcd was given the pods' DNS names, never their IPs.
    for (_, name, _, urls) in members(&pods.endpoint(0).unwrap()).unwrap() {
        let o: u32 = name.trim_start_matches("eco-").parse().unwrap();
        assert_eq!(urls, [format!("http://{}:2380", pods.dns_name(o))]);
    }
    let status = pods.status(&eco_bin!(), 1).expect("status of eco-1");
    assert_eq!(
        status["client_url"],
        format!("http://{}:2379", pods.dns_name(1))
    );
    let me = status["group"]["instances"]
        .as_array()
        .unwrap()
        .iter()
        .find(|i| i["id"] == "eco-1")
        .cloned()
        .unwrap();
    assert_eq!(me["zone"], "zone-b", "the zone from ECO_ZONE");
    for o in 0..3 {
        assert_no_zombie(&pods, o);
    }
    // What NOTES.txt tells a user to run, with `kubectl exec`.
    let (code, out, err) = pods
        .exec(0, &["eco", "status", "--config", "/etc/eco/eco.toml"])
        .unwrap();
    assert_eq!(code, 0, "eco status in the pod: {out}{err}");
    assert!(out.contains("eco-0") && out.contains("running"), "{out}");
    let (code, out, err) = pods
        .exec(
            1,
            &[
                "etcdctl",
                "--endpoints",
                &format!("http://{}:2379", pods.dns_name(2)),
                "endpoint",
                "health",
            ],
        )
        .unwrap();
    assert_eq!(code, 0, "etcdctl in the pod, by the DNS name: {out}{err}");
    // (the first snapshot is taken moments after formation)
    let listed = wait_until(Duration::from_secs(20), || {
        let (code, out, _) = pods
            .exec(
                2,
                &["eco", "snapshot", "list", "--config", "/etc/eco/eco.toml"],
            )
            .ok()?;
        (code == 0 && out.contains(".db")).then_some(())
    });
    assert!(listed.is_some(), "eco snapshot list in the pod");
    let t = Instant::now();
    kubernetes_md_exec_lines_work_in_a_pod(&pods);
    took("docs/kubernetes.md's kubectl exec lines run", t);
    let mut acked = write_some(&pods, "formed", Duration::from_secs(2));

    // A pod deleted and recreated with its volume, on a new IP under the
    // same name: the same member, with its data.
    let old_ip = pods.ip(1).unwrap();
    let exit = pods.delete(1, Duration::from_secs(30)).unwrap();
    assert_eq!(exit, Some(0), "PID 1 exits 0 on SIGTERM");
    acked.extend(write_some(&pods, "one-down", Duration::from_secs(1)));
    let t = Instant::now();
    pods.start(1, "zone-b").unwrap();
    assert_ne!(pods.ip(1).unwrap(), old_ip, "a new IP");
    let now = wait_voters(&pods, &["eco-0", "eco-1", "eco-2"], Duration::from_secs(90));
    took("recreated on a new IP with its volume, a voter again", t);
    assert_eq!(now, first, "rejoined as the same member, not replaced");
    assert_none_lost(&pods, 1, &acked);
    // Gossip follows the new address without flapping: each other pod saw
    // eco-1 go down at most once (its pod was deleted: a pod that heard of
    // the new address before it noticed the old one gone sees no down at
    // all), and once the old address's identity is surely declared dead
    // (suspicion takes 1.5 s after failed probes) nothing changes.
    // (A status call may fail on a loaded machine: a view is read until
    // every pod answers, never compared with a missing answer.)
    let views = |pods: &PodSet| -> Vec<Option<(bool, u64)>> {
        [0, 2]
            .iter()
            .map(|o| gossip_view(pods, *o, "eco-1"))
            .collect()
    };
    let answered = |pods: &PodSet| {
        wait_until(Duration::from_secs(30), || {
            let v = views(pods);
            v.iter().all(|x| x.is_some()).then_some(v)
        })
        .expect("every pod's status")
    };
    wait_until(Duration::from_secs(30), || {
        let v = answered(&pods);
        v.iter().all(|x| x.is_some_and(|(up, _)| up)).then_some(v)
    })
    .expect("eco-1 up in every other pod's gossip");
    std::thread::sleep(Duration::from_secs(8));
    let settled = answered(&pods);
    for view in &settled {
        assert!(
            view.is_some_and(|(up, down)| up && down <= 1),
            "eco-1 flapped (views of eco-0 and eco-2: (up, times down)): {settled:?}"
        );
    }
    std::thread::sleep(Duration::from_secs(5));
    assert_eq!(
        answered(&pods),
        settled,
        "eco-1's gossip standing changed (views of eco-0 and eco-2: (up, times down))"
    );

    // A pod recreated without its volume (a new claim) is replaced.
    pods.delete(2, Duration::from_secs(30)).unwrap();
    pods.lose_volume(2).unwrap();
    let t = Instant::now();
    pods.start(2, "zone-c").unwrap();
    let now = wait_voters(
        &pods,
        &["eco-0", "eco-1", "eco-2"],
        Duration::from_secs(120),
    );
    took("recreated without its volume, replaced (a voter)", t);
    assert_ne!(
        now["eco-2"], first["eco-2"],
        "a new member for a new volume"
    );
    assert_eq!(now["eco-0"], first["eco-0"]);
    acked.extend(write_some(&pods, "replaced", Duration::from_secs(1)));
    assert_none_lost(&pods, 2, &acked);

    // Scale to five, then back to three while pods 3 and 4 still run:
    // their ordinals are at or above the desired size, so they leave.
    let t = Instant::now();
    pods.set_replicas(5).unwrap();
    pods.start(3, zones[3]).unwrap();
    pods.start(4, zones[4]).unwrap();
    wait_voters(
        &pods,
        &["eco-0", "eco-1", "eco-2", "eco-3", "eco-4"],
        Duration::from_secs(120),
    );
    took("3 -> 5 voters", t);
    let t = Instant::now();
    pods.set_replicas(3).unwrap();
    let removed = wait_until(Duration::from_secs(90), || {
        let m = members(&pods.endpoint(0)?)?;
        let names: Vec<&str> = m.iter().map(|(_, n, _, _)| n.as_str()).collect();
        (names == ["eco-0", "eco-1", "eco-2"]).then_some(())
    });
    assert!(removed.is_some(), "eco-3 and eco-4 were not removed");
    took("5 -> 3 members, pods 3 and 4 still running", t);
    for o in [3, 4] {
        let leaving = wait_until(Duration::from_secs(30), || {
            (phase(&pods, o)? == "leaving").then_some(())
        });
        assert!(leaving.is_some(), "eco-{o} does not say it is leaving");
        pods.delete(o, Duration::from_secs(30)).unwrap();
    }
    acked.extend(write_some(&pods, "scaled", Duration::from_secs(1)));

    // SIGTERM to the PID 1 of the pod that writes snapshots: the final
    // snapshot is stored before it exits.
    let writer = (0..3)
        .find(|o| {
            pods.status(&eco_bin!(), *o)
                .is_some_and(|s| s["snapshots"]["taken"].as_u64().is_some())
        })
        .expect("a pod that writes snapshots");
    for o in 0..3 {
        assert_no_zombie(&pods, o);
    }
    let before = snapshot_names(pods.store_dir());
    assert_eq!(
        pods.delete(writer, Duration::from_secs(60)).unwrap(),
        Some(0)
    );
    let after = snapshot_names(pods.store_dir());
    assert!(
        after.difference(&before).next().is_some(),
        "no final snapshot from eco-{writer}: before {before:?}, after {after:?}"
    );
    pods.start(writer, zones[writer as usize]).unwrap();
    wait_voters(&pods, &["eco-0", "eco-1", "eco-2"], Duration::from_secs(90));

    // A rolling restart of the set, as the StatefulSet controller rolls a
    // template change: each pod deleted (SIGTERM to PID 1, the default
    // grace) and recreated on a new IP with its volume, the highest
    // ordinal first, the next once every member is a voter again. Under a
    // write load that follows the pods' addresses: the longest write gap
    // of each restart is reported (docs/benchmarks.md); the pod whose
    // member leads hands leadership away before it stops.
    let load = TimedLoad::following(pods.endpoints_source(), "/rolling");
    std::thread::sleep(Duration::from_secs(1));
    let mut steps = Vec::new();
    for o in (0..3).rev() {
        let led = pods
            .status(&eco_bin!(), o)
            .is_some_and(|s| s["member"]["leader"] == s["member"]["member_id"]);
        let stopped = Instant::now();
        assert_eq!(pods.delete(o, Duration::from_secs(30)).unwrap(), Some(0));
        if led {
            assert!(
                pods.log(o).contains("event=\"leadership.transferred\""),
                "eco-{o} led and did not hand leadership away"
            );
        }
        pods.start(o, zones[o as usize]).unwrap();
        wait_voters(&pods, &["eco-0", "eco-1", "eco-2"], Duration::from_secs(90));
        steps.push((o, led, stopped, Instant::now()));
        std::thread::sleep(Duration::from_millis(500));
    }
    let rolled = load.finish();
    for (o, led, stopped, back) in &steps {
        eprintln!(
            "rolling restart: pods, eco-{o}{} deleted and recreated, a voter again in {:.1} s, longest write gap {} ms",
            if *led { " (the leader)" } else { "" },
            (*back - *stopped).as_secs_f64(),
            longest_gap(&rolled, Some(*stopped), Some(*back)).as_millis()
        );
    }
    eprintln!(
        "rolling restart: pods, {} writes, longest write gap {} ms",
        rolled.len(),
        longest_gap(&rolled, None, None).as_millis()
    );
    let lost = missing(&pods.endpoint(0).unwrap(), &rolled);
    assert!(
        lost.is_empty(),
        "acknowledged writes lost in the rolling restart: {lost:?}"
    );

    // The whole set stopped, then started again (every pod on a new IP).
    for o in 0..3 {
        pods.terminate(o).unwrap();
    }
    for o in 0..3 {
        pods.delete(o, Duration::from_secs(60)).unwrap();
    }
    let t = Instant::now();
    for o in 0..3 {
        pods.start(o, zones[o as usize]).unwrap();
    }
    let resumed = wait_voters(
        &pods,
        &["eco-0", "eco-1", "eco-2"],
        Duration::from_secs(120),
    );
    took("the whole set restarted on new IPs, 3 voters again", t);
    assert_eq!(resumed, now, "the same members resume");
    acked.extend(write_some(&pods, "resumed", Duration::from_secs(1)));
    for o in 0..3 {
        assert_none_lost(&pods, o, &acked);
    }
}

/// A snapshot directory on the pod's own volume is refused for quorum-loss
/// recovery, and eco says why.
#[test]
fn a_store_on_the_pods_own_volume_is_refused_for_quorum_loss_recovery() {
    if skip() {
        return;
    }
    let (layout, tag) = image("own-volume");
    let dir = run_dir("own-volume");
    let img = Image::unpack(&layout, &tag, &dir.join("image")).unwrap();
    // The volume itself: the data directory's filesystem.
    let config = pod_config().dir_store("/var/lib/eco");
    let mut pods = PodSet::new(&dir.join("set"), 202, img, "eco", 1, &config, KEY).unwrap();
    pods.start(0, "zone-a").unwrap();
    let problem = wait_until(Duration::from_secs(60), || {
        pods.status(&eco_bin!(), 0)?["store_problem"]
            .as_str()
            .map(str::to_string)
    })
    .expect("a store problem in the status");
    assert!(
        problem.contains("own volume") && problem.contains("quorum-loss recovery is off"),
        "{problem}"
    );
    // Everything else works: the member runs and is writable.
    assert!(
        wait_until(Duration::from_secs(60), || testkit::etcd::write(
            &pods.endpoint(0)?,
            "k",
            "v"
        )
        .then_some(()))
        .is_some()
    );
}

/// A pod set with eco's default TLS (generated: the cluster's own CA, in
/// the store): an operator's client certificate comes out of a pod whose
/// image has no shell as NOTES.txt says — `kubectl exec … -- eco certs
/// client … --out - | tar -x` — and reads and writes over TLS, the server's
/// name verified (the certificates name the pods, not their IPs).
#[test]
fn a_generated_tls_pod_set_hands_out_client_certificates_without_a_shell() {
    if skip() {
        return;
    }
    let (layout, tag) = image("generated-tls");
    let dir = run_dir("generated-tls");
    let img = Image::unpack(&layout, &tag, &dir.join("image")).unwrap();
    let config = pod_config().edit(|c| c.etcd.tls = Default::default());
    let mut pods = PodSet::new(&dir.join("set"), 203, img, "eco", 3, &config, KEY).unwrap();
    for o in 0..3 {
        pods.start(o, "zone-a").unwrap();
    }
    let unpacked = dir.join("operator");
    let issued = wait_until(Duration::from_secs(120), || {
        let out = pods
            .exec_output(
                0,
                &[
                    "eco",
                    "certs",
                    "client",
                    "--config",
                    "/etc/eco/eco.toml",
                    "--user",
                    "operator",
                    "--out",
                    "-",
                ],
            )
            .ok()?;
        out.status.success().then_some(out.stdout)
    })
    .expect("eco certs client answers once the cluster's CA exists");
    testkit::process::untar(&issued, &unpacked, "what the pod wrote");
    let read = |name: &str| std::fs::read_to_string(unpacked.join(name)).unwrap();
    let (ca, cert, key) = (read("ca.crt"), read("operator.crt"), read("operator.key"));
    // Three started voters, as the operator's certificate sees them.
    let voters = wait_until(Duration::from_secs(120), || {
        let ip = pods.ip(1)?;
        block_on(async {
            let tls = etcd_client::TlsOptions::new()
                .ca_certificate(etcd_client::Certificate::from_pem(ca.clone()))
                .identity(etcd_client::Identity::from_pem(cert.clone(), key.clone()))
                .domain_name(pods.dns_name(1));
            let opts = etcd_client::ConnectOptions::new()
                .with_timeout(Duration::from_secs(3))
                .with_tls(tls);
            let mut c = etcd_client::Client::connect([format!("https://{ip}:2379")], Some(opts))
                .await
                .ok()?;
            let members = c.member_list().await.ok()?;
            let started = members
                .members()
                .iter()
                .filter(|m| !m.is_learner() && !m.name().is_empty())
                .count();
            if started < 3 {
                return None;
            }
            c.put("operator/hello", "world", None).await.ok()?;
            let got = c.get("operator/hello", None).await.ok()?;
            Some(got.kvs().len())
        })
    });
    assert_eq!(
        voters,
        Some(1),
        "the operator's certificate, out of a shell-less pod, writes and reads over TLS"
    );
}
