//! `simulations chaos`: the real-process failure matrix. Does eco keep etcd
//! alive and lose nothing?
//!
//! Each scenario starts N `eco run` processes (the release binary) with
//! the static provider, a directory store and gossip on 127.0.x.y, puts a
//! write load on the cluster that records every acknowledged write
//! ([`load`]), injects its fault ([`scenario`]), waits (bounded) for the
//! cluster to be whole again, and verifies ([`verify`]): every
//! acknowledged write present (a lossy scenario, every disk lost: only
//! the writes of the change archive's last interval may be missing,
//! [`ARCHIVE_LOSS_BOUND`], and the loss is reported), one cluster
//! id, members = the group, all voters and healthy, `HashKV` equal. It
//! measures the time to detect (some eco instance stops saying "keep etcd
//! running"), to writable (the end of the last gap of more than 1.5 s
//! without an acknowledged write that began before the cluster was whole;
//! 0 when writes never stopped) and to full membership ([`observe`]).
//!
//! Partition scenarios run each instance in a network namespace of its own
//! ([`testkit::cluster::Network::Namespaces`]) and need root, `ip` and `nft`; without
//! them they are reported as skipped, with the reason.

pub mod load;
pub mod medians;
pub mod monkey;
pub mod observe;
pub mod outcome;
pub mod report;
pub mod scenario;
pub mod verify;

use anyhow::Context;

/// What a lossy scenario (every disk lost at once) may lose: the writes
/// acknowledged this long before the kill — `archive.interval` (1 s by
/// default) and a segment's upload on a loaded machine.
pub const ARCHIVE_LOSS_BOUND: std::time::Duration = std::time::Duration::from_secs(2);
use load::{Acked, Load};
use observe::Observer;
use outcome::{Mark, Outcome, Sample};
use scenario::Scenario;
use std::path::PathBuf;
use std::time::{Duration, Instant};
use testkit::cluster::{self, Cluster, Stopping};
use testkit::etcd::Timeouts;

/// The cluster's name (in the store: `<store>/chaos/...`).
pub const CLUSTER: &str = "chaos";

/// How to run the matrix.
pub struct Options {
    pub scenarios: Vec<Scenario>,
    pub instances: usize,
    pub eco: PathBuf,
    pub etcd_bin_dir: PathBuf,
    /// `recovery.quorum_loss_timeout` of the instances, in seconds.
    pub quorum_loss_timeout_s: u64,
    /// Writes per second of the load.
    pub rate: u32,
    /// Concurrent writers sharing the rate.
    pub writers: u32,
    /// Where each run's directories go (kept on failure for the logs).
    pub work: PathBuf,
    /// Runs of each scenario (their medians are reported).
    pub runs: usize,
    /// Keep every run's directory (logs, data), not only failed ones.
    pub keep: bool,
    /// The AWS provider and the S3 store on the local AWS emulator
    /// (`--provider aws`) instead of the group file and a directory.
    pub aws: bool,
    /// TLS on etcd's client and peer surfaces, client certificates
    /// required, from a CA of the run's own (`--tls`).
    pub tls: bool,
    /// etcd's authentication on (`--auth`): eco is `root` with a password
    /// file, JWT tokens (ES256); the harness's clients authenticate as
    /// `root` too.
    pub auth: bool,
}

/// `[auth]` of a chaos run, its secret files written in `root`; the
/// harness's clients of every address of the block authenticate as
/// `root`.
fn chaos_auth(root: &std::path::Path, net: u8) -> anyhow::Result<eco::config::AuthConfig> {
    const ROOT_PASSWORD: &str = "chaos-root-password";
    std::fs::create_dir_all(root)?;
    let password = root.join("root.password");
    testkit::auth::write_secret(&password, ROOT_PASSWORD)?;
    let (public, private) =
        testkit::auth::jwt_key_pair(root, "jwt", &rcgen::PKCS_ECDSA_P256_SHA256)?;
    for n in 1..=16 {
        for host in [format!("127.0.{net}.{n}"), format!("10.{net}.0.{n}")] {
            testkit::etcd::authenticate(&format!("{host}:2379"), "root", ROOT_PASSWORD);
        }
    }
    Ok(eco::config::AuthConfig {
        enabled: true,
        root_password_file: Some(password),
        roles: Vec::new(),
        users: Vec::new(),
        token: eco::config::TokenConfig {
            kind: eco::config::TokenKind::Jwt,
            sign_method: Some(eco::config::SignMethod::ES256),
            public_key_file: Some(public),
            private_key_file: Some(private),
            ttl: Some(eco::config::ConfigDuration::from_secs(600)),
        },
    })
}

/// Bound of every wait for the cluster to be whole.
const WHOLE_WITHIN: Duration = Duration::from_secs(180);

/// On SIGINT or SIGTERM: remove the namespaces and packet-filter tables,
/// then exit (eco and etcd die with the harness by their death signal).
fn clean_up_on_signal() {
    std::thread::spawn(|| {
        let Ok(rt) = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
        else {
            return;
        };
        rt.block_on(async {
            use tokio::signal::unix::{SignalKind, signal};
            let (Ok(mut int), Ok(mut term)) = (
                signal(SignalKind::interrupt()),
                signal(SignalKind::terminate()),
            ) else {
                return;
            };
            tokio::select! {
                _ = int.recv() => {}
                _ = term.recv() => {}
            }
            eprintln!("chaos: interrupted; removing namespaces and packet-filter rules");
            cluster::remove_all_namespaces();
            std::process::exit(130);
        });
    });
}

pub fn run_all(opts: &Options) -> Vec<Outcome> {
    if opts.scenarios.iter().any(|s| s.partitions()) && cluster::partitions_unavailable().is_none()
    {
        cluster::remove_all_namespaces();
    }
    clean_up_on_signal();
    let mut out = Vec::new();
    let runs = opts.runs.max(1);
    for (i, s) in opts.scenarios.iter().enumerate() {
        for run in 0..runs {
            out.push(run_scenario(*s, opts, i * runs + run, run));
        }
    }
    out
}

/// Run `run` of scenario `s`; `slot` picks its address block.
fn run_scenario(s: Scenario, opts: &Options, slot: usize, run: usize) -> Outcome {
    let mut o = Outcome {
        name: s.name().to_string(),
        instances: opts.instances,
        run,
        lossy: s.lossy(),
        quorum_loss_timeout_s: opts.quorum_loss_timeout_s as f64,
        ..Outcome::default()
    };
    if let Some(why) = s.unsupported(opts.aws) {
        o.skipped = Some(why);
        o.passed = true;
        return o;
    }
    eprintln!(
        "==> {} ({} instances, run {} of {})",
        s.name(),
        opts.instances,
        run + 1,
        opts.runs.max(1)
    );
    // A fresh address block per scenario run: no TIME_WAIT or stale
    // peer from the previous one.
    let net = 40 + (slot % 200) as u8;
    if let Err(e) = run_one(s, opts, net, &mut o) {
        o.failures.push(format!("{e:#}"));
    }
    o.passed = o.failures.is_empty();
    eprintln!(
        "    {}",
        if o.passed {
            "passed".to_string()
        } else {
            format!("FAILED: {}", o.failures.join("; "))
        }
    );
    o
}

fn secs(d: Duration) -> f64 {
    (d.as_secs_f64() * 10.0).round() / 10.0
}

/// How long a scenario's cluster runs under the load before its fault.
const WARM_UP: Duration = Duration::from_secs(6);

fn run_one(s: Scenario, opts: &Options, net: u8, o: &mut Outcome) -> anyhow::Result<()> {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("runtime")?;
    let root = opts
        .work
        .join(format!("{}-{}-r{}", opts.instances, s.name(), o.run));
    if root.exists() {
        std::fs::remove_dir_all(&root).context("clean the previous run")?;
    }
    let network = if s.partitions() {
        cluster::Network::Namespaces
    } else {
        cluster::Network::Loopback
    };
    let (mut c, group) = start_cluster(opts, &rt, root.clone(), network, net)?;
    let endpoints = c.endpoints(&group);

    let load = Load::start(endpoints.clone(), opts.rate, opts.writers);
    let targets = |c: &Cluster, ids: &[String]| -> Vec<(String, String)> {
        ids.iter()
            .filter_map(|id| c.nodes.get(id))
            .map(|n| (n.endpoint(), n.api()))
            .collect()
    };
    let observer = Observer::start(targets(&c, &group), load.started);
    // Warm up: a few seconds of writes and one snapshot interval, and
    // longer than etcd's `HealthInterval` (5 s): etcd adds a member only
    // once every voter has been connected that long (its strict
    // reconfiguration check), so a fault sooner after the formation
    // would measure that window — a second fault's — not the first.
    std::thread::sleep(WARM_UP);
    let leader = rt
        .block_on(leader_of(&c, &group))
        .context("no leader before the fault")?;
    let started = load.started;
    let t = move || started.elapsed();
    // Partitions: the load writes through the majority side only, so its
    // write gaps are the majority's.
    let cut_side = s.cut_side(&group, &leader);
    if !cut_side.is_empty() {
        let majority: Vec<String> = group
            .iter()
            .filter(|id| !cut_side.contains(id))
            .cloned()
            .collect();
        load.set_endpoints(c.endpoints(&majority));
        std::thread::sleep(Duration::from_secs(1));
    }
    let fault_at = t();
    let moved_before = verify::moved_aside(&c, &group);
    let injected = scenario::inject(s, &mut c, &group, &leader, &t);
    let injected = match injected {
        Ok(i) => i,
        Err(e) => {
            let _ = observer.finish();
            let _ = load.finish();
            return Err(e.context("injecting the fault"));
        }
    };
    for (at, label) in &injected.steps {
        o.marks.push(Mark {
            t_s: secs(*at),
            label: label.clone(),
        });
    }
    o.notes.extend(injected.notes.iter().cloned());
    let want = injected.want.clone();
    let fault_at = injected.measured_from.unwrap_or(fault_at);
    let now_endpoints = c.endpoints(&want);
    load.set_endpoints(now_endpoints.clone());
    observer.set_targets(targets(&c, &want));

    let whole = wait_whole(&rt, &want, &now_endpoints, WHOLE_WITHIN);
    let whole_at = t();
    if whole.is_ok() {
        for id in &injected.leaving {
            if let Err(e) = verify::left(&c, id, &moved_before) {
                o.failures.push(e);
            }
        }
        if !injected.leaving.is_empty()
            && let Err(e) = rt.block_on(verify::membership_stays(
                &now_endpoints,
                Duration::from_secs(5),
            ))
        {
            o.failures.push(e);
        }
    }
    // A little more load on the healed cluster.
    std::thread::sleep(Duration::from_secs(2));
    let ledger = load.finish();
    let seen = observer.finish();
    if let Err(e) = whole {
        for id in c.running() {
            o.notes.push(format!("{id}: {}", c.log_tail(&id, 8)));
        }
        anyhow::bail!("not whole within {WHOLE_WITHIN:?}: {e}");
    }
    o.time_to_full_membership_s = Some(secs(whole_at.saturating_sub(fault_at)));
    o.time_to_detect_s = seen
        .iter()
        .find(|x| x.at >= fault_at && x.reacting)
        .map(|x| secs(x.at - fault_at));
    // Writable again: the end of the last outage (a gap of more than
    // 1.5 s without an acknowledged write) that began before the cluster
    // was whole; 0 when writes never stopped. A lone failed write (the
    // load's client trying a dead or cut instance once, 1 s timeout, then
    // the next) is not an outage of the cluster.
    let mut previous = fault_at;
    let mut writable = 0.0;
    for a in ledger.acked.iter().filter(|a| a.at > fault_at) {
        if previous <= whole_at && a.at.saturating_sub(previous) > Duration::from_millis(1500) {
            writable = secs(a.at - fault_at);
        }
        previous = a.at;
    }
    o.time_to_writable_s = Some(writable);
    o.marks.push(Mark {
        t_s: secs(whole_at),
        label: "full membership".into(),
    });
    if let Some(w) = o.time_to_writable_s.filter(|w| *w > 0.0) {
        o.marks.push(Mark {
            t_s: secs(fault_at) + w,
            label: "writable".into(),
        });
    }
    o.acked_writes = ledger.acked.len();
    o.failed_writes = ledger.failed.len();
    o.samples = timeline(&ledger, &seen);
    let most_ids = seen.iter().map(|x| x.cluster_ids).max().unwrap_or(0);
    if most_ids > 1 {
        o.notes.push(format!(
            "{most_ids} cluster ids answered at once at some point (old and new incarnation during a reseed)"
        ));
    }
    let records = c.records();
    o.reseeded = records.len() > 1;
    o.notes.push(format!("incarnation records: {records:?}"));
    if ledger.failed_reads > 0 {
        o.notes
            .push(format!("{} linearizable reads failed", ledger.failed_reads));
    }

    // Verify.
    let reader = now_endpoints
        .first()
        .context("no instance left to read from")?;
    let lost = rt
        .block_on(verify::lost_writes(reader, &ledger.acked))
        .map_err(anyhow::Error::msg)?;
    o.lost_acked_writes = lost.len();
    if s.lossy() {
        // Every disk is lost: the newest snapshot, carried by the change
        // archive, seeds. Only the writes of the archive's last interval
        // (plus a segment's upload) may be missing.
        let killed = injected
            .steps
            .iter()
            .find(|(_, l)| l == scenario::KILLED_ALL)
            .map(|(at, _)| *at)
            .context("a lossy scenario without its kill step")?;
        let since = killed.saturating_sub(ARCHIVE_LOSS_BOUND);
        let allowed = |a: &load::Acked| a.at >= since && a.at <= killed;
        o.allowed_loss = ledger.acked.iter().filter(|a| allowed(a)).count();
        let beyond: Vec<&str> = lost
            .iter()
            .filter(|a| !allowed(a))
            .map(|a| a.key.as_str())
            .collect();
        if !beyond.is_empty() {
            o.failures.push(format!(
                "{} writes acknowledged more than {:?} before every disk was lost, or after it, are missing (the change archive, or the new cluster, holds those), e.g. {:?}",
                beyond.len(),
                ARCHIVE_LOSS_BOUND,
                &beyond[..beyond.len().min(5)]
            ));
        }
        let window = lost
            .iter()
            .map(|a| killed.saturating_sub(a.at))
            .max()
            .unwrap_or_default();
        // The load held over the ten seconds before the kill, or since its
        // first acknowledged write when it ran less long.
        let first = ledger.acked.first().map_or(killed, |a| a.at);
        let before = Duration::from_secs(10).min(killed.saturating_sub(first));
        let held = ledger
            .acked
            .iter()
            .filter(|a| a.at <= killed && a.at + before >= killed)
            .count();
        let rate = held as f64 / before.as_secs_f64().max(0.001);
        o.loss_window_s = Some(window.as_secs_f64());
        o.acked_per_s_before_loss = Some(rate);
        o.notes.push(format!(
            "every disk lost: {} acknowledged writes missing (from revision {}), the oldest acknowledged {:.2} s before the kill; {rate:.0} acknowledged writes/s over the {:.1} s before it",
            lost.len(),
            lost.iter().map(|a| a.revision).min().unwrap_or(0),
            window.as_secs_f64(),
            before.as_secs_f64()
        ));
    } else if !lost.is_empty() {
        let keys: Vec<&str> = lost.iter().take(5).map(|a| a.key.as_str()).collect();
        o.failures.push(format!(
            "{} acknowledged writes lost, e.g. {keys:?}",
            lost.len()
        ));
    }
    if s.partitions() {
        // The majority kept serving while the cut lasted.
        let at = |what: &str| {
            injected
                .steps
                .iter()
                .find(|(_, l)| l.contains(what))
                .map(|(t, _)| *t)
        };
        if let (Some(cut), Some(healed)) = (at("cut off"), at("healed")) {
            let during: Vec<&Acked> = ledger
                .acked
                .iter()
                .filter(|a| a.at > cut && a.at < healed)
                .collect();
            // The term before the cut: a write acknowledged in a higher
            // term came from the majority's new leader.
            let old_term = ledger
                .acked
                .iter()
                .filter(|a| a.at <= cut)
                .map(|a| a.term)
                .max()
                .unwrap_or(0);
            let gaps = |from: Duration, writes: &[Duration]| {
                let mut last = from;
                let mut worst = Duration::ZERO;
                for at in writes.iter().chain(std::iter::once(&healed)) {
                    worst = worst.max(at.saturating_sub(last));
                    last = *at;
                }
                worst
            };
            let times: Vec<Duration> = during.iter().map(|a| a.at).collect();
            let gap = gaps(cut, &times);
            o.max_write_gap_s = Some(gap.as_secs_f64());
            // For a cut leader: from the first write the new leader
            // acknowledged (before it, etcd elects; a write in flight to
            // the old leader waits for the client's timeout — etcd's and
            // the client's behaviour, not eco's).
            let new_term: Vec<Duration> = during
                .iter()
                .filter(|a| a.term > old_term)
                .map(|a| a.at)
                .collect();
            if let Some((first, rest)) = new_term.split_first() {
                let after = gaps(*first, rest);
                o.max_write_gap_new_leader_s = Some(after.as_secs_f64());
                // One election timeout of the instances (etcd's
                // election_timeout in the test config).
                let election = Duration::from_millis(250);
                let limit = if s == Scenario::PartitionLeader {
                    after
                } else {
                    gap
                };
                if limit > election {
                    o.failures.push(format!(
                        "the majority went {:.3} s without an acknowledged write while the cut lasted (more than one election timeout, {election:?})",
                        limit.as_secs_f64()
                    ));
                }
            }
            let from = cut + Duration::from_secs(2);
            let served = ledger
                .acked
                .iter()
                .filter(|a| a.at > from && a.at < healed)
                .count();
            o.notes
                .push(format!("{served} writes acknowledged while the cut lasted"));
            if served == 0 {
                o.failures
                    .push("the majority did not keep serving during the partition".into());
            }
        }
    }
    if let Err(e) = rt.block_on(verify::hash_kv_equal(&now_endpoints)) {
        o.failures.push(e);
    }
    let must_not_reseed = matches!(
        s,
        Scenario::LeaveFollower
            | Scenario::LeaveLeader
            | Scenario::PartitionMinority
            | Scenario::PartitionLeader
            | Scenario::PartitionMajorityReplaced
            | Scenario::KillEtcdLeader
            | Scenario::KillEtcdFollower
            | Scenario::KillMajority
            | Scenario::KillAll
            | Scenario::WipeOne
            | Scenario::StoreOutage
            | Scenario::StoreWiped
    );
    if must_not_reseed && o.reseeded {
        o.failures.push(format!(
            "reseeded ({records:?}) where a rejoin was expected"
        ));
    }
    if o.failures.is_empty() && !opts.keep {
        // Passed: nothing to keep.
        drop(c);
        let _ = std::fs::remove_dir_all(&root);
    }
    Ok(())
}

/// A cluster of `opts.instances` eco processes in `root` (on `network`,
/// address block `net`), formed, with its first snapshot in the store;
/// returns it and its group.
pub(crate) fn start_cluster(
    opts: &Options,
    rt: &tokio::runtime::Runtime,
    root: PathBuf,
    network: cluster::Network,
    net: u8,
) -> anyhow::Result<(Cluster, Vec<String>)> {
    // Absolute: the instances' config files name files under it (`--out`
    // is often relative), and eco reads a relative name from its config's
    // directory.
    let root = std::path::absolute(&root)
        .map_err(|e| anyhow::anyhow!("the run directory {}: {e}", root.display()))?;
    let t = Duration::from_secs(opts.quorum_loss_timeout_s);
    let mut config = Cluster::node_config(CLUSTER, &opts.etcd_bin_dir)
        .snapshot_interval(Duration::from_secs(10))
        .snapshot_max_age(Duration::from_secs(60))
        .quorum_loss_timeout(t)
        .unhealthy_member_ttl(t);
    if opts.auth {
        config = config.auth(chaos_auth(&root.join("auth"), net)?);
    }
    let mut c = Cluster::new(cluster::Options {
        eco: opts.eco.clone(),
        root: Some(root),
        network,
        net,
        config,
        gossip_key: cluster::key_pattern(53, 7),
        // eco (and so its etcd) dies with the harness, even on SIGKILL.
        die_with_harness: true,
        stopping: Stopping {
            wait: Duration::from_secs(30),
            force: true,
        },
        aws: opts.aws.then(cluster::AwsOptions::default),
        tls: opts.tls,
        generated_tls: false,
        loopback_source_name: true,
    })?;
    let group = c.launch(opts.instances)?;
    for id in &group {
        c.start(id)?;
    }
    let endpoints = c.endpoints(&group);
    if let Err(e) = wait_whole(rt, &group, &endpoints, Duration::from_secs(120)) {
        let tails: Vec<String> = group
            .iter()
            .map(|id| format!("--- {id}, the end of its log:\n{}", c.log_tail(id, 5)))
            .collect();
        anyhow::bail!("the cluster did not form: {e}\n{}", tails.join("\n"));
    }
    // The first snapshot is in the store before the load starts.
    let limit = Instant::now() + Duration::from_secs(30);
    while c.newest_snapshot_revision().is_none() && Instant::now() < limit {
        std::thread::sleep(Duration::from_millis(200));
    }
    Ok((c, group))
}

/// Waits until members = `want`, all voters and healthy, one cluster id.
pub(crate) fn wait_whole(
    rt: &tokio::runtime::Runtime,
    want: &[String],
    endpoints: &[String],
    limit: Duration,
) -> Result<u64, String> {
    let until = Instant::now() + limit;
    let mut last = String::from("never checked");
    while Instant::now() < until {
        match rt.block_on(verify::full_membership(want, endpoints)) {
            Ok(id) => return Ok(id),
            Err(e) => last = e,
        }
        std::thread::sleep(Duration::from_millis(250));
    }
    Err(last)
}

pub(crate) async fn leader_of(c: &Cluster, group: &[String]) -> Option<String> {
    for id in group {
        let n = c.nodes.get(id)?;
        let t = Timeouts {
            connect: Duration::from_millis(500),
            call: Duration::from_secs(1),
            attempt: Duration::from_secs(1),
        };
        let Some(mut client) = testkit::etcd::connect(&n.endpoint(), t).await else {
            continue;
        };
        if let Ok(Ok(s)) = tokio::time::timeout(Duration::from_secs(1), client.status()).await {
            let me = s.header().map(|h| h.member_id());
            if me.is_some() && me == Some(s.leader()) {
                return Some(id.clone());
            }
        }
    }
    None
}

/// Per-second writes and the healthy voters seen in that second.
fn timeline(ledger: &load::Ledger, seen: &[observe::Seen]) -> Vec<Sample> {
    let end = ledger
        .acked
        .last()
        .map(|a| a.at)
        .into_iter()
        .chain(ledger.failed.last().copied())
        .chain(seen.last().map(|s| s.at))
        .max()
        .unwrap_or_default();
    let seconds = end.as_secs() as usize + 1;
    let mut out: Vec<Sample> = (0..seconds)
        .map(|i| Sample {
            t_s: i as f64,
            ..Sample::default()
        })
        .collect();
    for a in &ledger.acked {
        if let Some(s) = out.get_mut(a.at.as_secs() as usize) {
            s.writes_ok += 1;
        }
    }
    for f in &ledger.failed {
        if let Some(s) = out.get_mut(f.as_secs() as usize) {
            s.writes_failed += 1;
        }
    }
    for x in seen {
        if let Some(s) = out.get_mut(x.at.as_secs() as usize) {
            s.healthy_voters = Some(x.healthy_voters);
        }
    }
    out
}

/// The scenarios named by `--scenario` (`all`, or a comma-separated list).
pub fn parse_scenarios(names: &[String]) -> anyhow::Result<Vec<Scenario>> {
    if names.iter().any(|n| n == "all") {
        return Ok(scenario::ALL.to_vec());
    }
    names
        .iter()
        .map(|n| {
            Scenario::parse(n).with_context(|| {
                let known: Vec<&str> = scenario::ALL.iter().map(|s| s.name()).collect();
                format!("unknown scenario {n}; known: {}", known.join(", "))
            })
        })
        .collect()
}
