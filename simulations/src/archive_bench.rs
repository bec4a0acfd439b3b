//! `archive-bench`: the change archive's cost and its points in time, on a
//! three-instance cluster of real eco and etcd processes on loopback with
//! a directory store.
//!
//! Each run forms a fresh cluster, with the archive on or off
//! (alternating, ABAB…, or on only with `--archive-only`), and puts a
//! mixed load on it for `--seconds`: `--clients` writers doing puts,
//! overwrites, deletes and transactions over several keys, each over its
//! own 2,000 keys. Acknowledged operations per second are compared by
//! their medians (the archive's overhead). A reader samples the key space
//! (`Range` at a revision, paged, before any compaction) every second
//! during the load, in both modes; with the archive on, afterwards
//! `--points` of the sampled revisions, chosen at random, are restored
//! with `eco restore --at-revision` into a plain etcd each and compared
//! key for key (value, create and mod revision, version) with the sample.
//! It reports the archive's bytes in the store per acknowledged operation
//! and the segment upload times (the writer's
//! `eco_archive_segment_upload_seconds` histogram: its p99 bucket).

use crate::process_cpu::Cpu;
use anyhow::Context;
use serde::Serialize;
use sha2::Digest;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

pub struct Options {
    pub eco: PathBuf,
    pub etcd_bin_dir: PathBuf,
    pub seconds: u64,
    pub clients: usize,
    pub runs: usize,
    pub points: usize,
    pub seed: u64,
    /// Only runs with the archive on.
    pub archive_only: bool,
    /// `snapshot.interval` of the instances.
    pub snapshot_interval: Duration,
}

#[derive(Debug, Serialize)]
pub struct Run {
    pub archive: bool,
    pub ops: u64,
    pub failed: u64,
    pub ops_per_s: f64,
    /// Archive runs: the archive's bytes and segments in the store.
    pub archive_bytes: u64,
    pub segments: u64,
    /// Archive runs: the p99 bucket of the segment upload times (s).
    pub upload_p99_s: Option<f64>,
    /// Archive runs: points restored and compared, and those that differed.
    pub points_checked: usize,
    pub points_differing: Vec<i64>,
    pub restore_s_median: Option<f64>,
    /// CPU seconds the three eco processes, and the three etcd members,
    /// used during the load (the machine's cores are shared by all of
    /// them and the load: what eco takes, etcd cannot).
    pub eco_cpu_s: f64,
    pub etcd_cpu_s: f64,
}

#[derive(Debug, Serialize)]
pub struct Report {
    pub seconds: u64,
    pub clients: usize,
    pub runs: Vec<Run>,
    pub off_median_per_s: f64,
    pub on_median_per_s: f64,
    /// Throughput with the archive over without.
    pub ratio: f64,
    pub bytes_per_op: f64,
    pub points_checked: usize,
    pub points_differing: usize,
}

fn median(mut v: Vec<f64>) -> Option<f64> {
    v.sort_by(f64::total_cmp);
    match v.len() {
        0 => None,
        n if n % 2 == 1 => Some(v[n / 2]),
        n => Some((v[n / 2 - 1] + v[n / 2]) / 2.0),
    }
}

/// A reader's view of every key: a hash over key, value, create and mod
/// revision and version, in key order.
fn digest(kvs: &[etcd_client::KeyValue]) -> String {
    let mut h = sha2::Sha256::new();
    let mut sorted: Vec<&etcd_client::KeyValue> = kvs.iter().collect();
    sorted.sort_by(|a, b| a.key().cmp(b.key()));
    for kv in sorted {
        h.update(kv.key());
        h.update([0]);
        h.update(kv.value());
        h.update(kv.create_revision().to_le_bytes());
        h.update(kv.mod_revision().to_le_bytes());
        h.update(kv.version().to_le_bytes());
    }
    hex::encode(h.finalize())
}

/// Keys per page of a whole read (a gRPC answer has a size limit).
const PAGE: i64 = 2_000;

/// The whole key space at one revision (the current one when `revision`
/// is 0), read in pages at that revision: its revision, digest and keys.
async fn read_all(client: &mut etcd_client::Client, revision: i64) -> Option<(i64, String, usize)> {
    let end = "bench0".to_string(); // just past "bench/"
    let mut from = b"bench/".to_vec();
    let mut at = revision;
    let mut kvs: Vec<etcd_client::KeyValue> = Vec::new();
    for _ in 0..10_000 {
        let mut opts = etcd_client::GetOptions::new()
            .with_range(end.clone())
            .with_limit(PAGE);
        if at > 0 {
            opts = opts.with_revision(at);
        }
        let r = tokio::time::timeout(
            Duration::from_secs(10),
            client.get(from.clone(), Some(opts)),
        )
        .await
        .ok()?
        .ok()?;
        if at == 0 {
            at = r.header()?.revision();
        }
        kvs.extend_from_slice(r.kvs());
        match r.kvs().last() {
            Some(last) if r.more() => {
                from = last.key().to_vec();
                from.push(0);
            }
            _ => return Some((at, digest(&kvs), kvs.len())),
        }
    }
    None
}

/// Keys each writer cycles through (a bounded key space, as a
/// Kubernetes cluster's objects are: mostly overwrites once it is full).
const KEYS_PER_WRITER: u64 = 2_000;

/// One writer's operation `n`: mostly puts (a third overwrite older
/// keys), every tenth a delete, every twentieth a transaction over three
/// keys, over [`KEYS_PER_WRITER`] keys.
async fn operate(client: &mut etcd_client::Client, w: usize, n: u64) -> bool {
    let key = |k: u64| format!("bench/{w}/{:08}", k % KEYS_PER_WRITER);
    let result = if n.is_multiple_of(20) {
        let txn = etcd_client::Txn::new().and_then(vec![
            etcd_client::TxnOp::put(key(n), "t".repeat(100), None),
            etcd_client::TxnOp::put(key(n + 1), "t".repeat(100), None),
            etcd_client::TxnOp::delete(key(n / 2), None),
        ]);
        client.txn(txn).await.map(|_| ())
    } else if n.is_multiple_of(10) {
        client.delete(key(n / 3), None).await.map(|_| ())
    } else {
        let k = if n.is_multiple_of(3) { n / 4 } else { n };
        client
            .put(key(k), format!("{n}-{}", "v".repeat(200)), None)
            .await
            .map(|_| ())
    };
    result.is_ok()
}

fn archive_size(store: &Path) -> (u64, u64) {
    let mut bytes = 0;
    let mut n = 0;
    for e in std::fs::read_dir(store.join("bench/archive"))
        .into_iter()
        .flatten()
        .flatten()
    {
        let name = e.file_name().to_string_lossy().to_string();
        if name.ends_with(".seg") && !name.starts_with('.') {
            bytes += e.metadata().map(|m| m.len()).unwrap_or(0);
            n += 1;
        }
    }
    (bytes, n)
}

/// The p99 bucket of `eco_archive_segment_upload_seconds` on the instance
/// at `api`.
fn upload_p99(api: &str) -> Option<f64> {
    let addr: std::net::SocketAddr = api.parse().ok()?;
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .ok()?;
    let (code, body) = rt
        .block_on(eco::api::status_client::get(
            addr,
            "/metrics",
            Duration::from_secs(2),
        ))
        .ok()?;
    if code != 200 {
        return None;
    }
    let text = String::from_utf8_lossy(&body);
    let mut buckets: Vec<(f64, f64)> = text
        .lines()
        .filter(|l| l.starts_with("eco_archive_segment_upload_seconds_bucket"))
        .filter_map(|l| {
            let le = l.split("le=\"").nth(1)?.split('"').next()?;
            let le = if le == "+Inf" {
                f64::INFINITY
            } else {
                le.parse().ok()?
            };
            let count: f64 = l.rsplit(' ').next()?.parse().ok()?;
            Some((le, count))
        })
        .collect();
    buckets.sort_by(|a, b| a.0.total_cmp(&b.0));
    let total = buckets.last()?.1;
    if total == 0.0 {
        return None;
    }
    buckets
        .iter()
        .find(|(_, c)| *c >= 0.99 * total)
        .map(|(le, _)| *le)
}

fn one(opts: &Options, archive: bool, net: u8, rng: &mut u64) -> anyhow::Result<Run> {
    let (c, group) =
        crate::bench_cluster::form(&opts.eco, &opts.etcd_bin_dir, net, 43, false, |c| {
            c.archive(archive).snapshot_interval(opts.snapshot_interval)
        })?;
    // The archive follows etcd before the load starts.
    if archive {
        let following = testkit::wait_until(Duration::from_secs(30), || {
            group
                .iter()
                .any(|id| c.nodes[id].log().contains("event=\"archive."))
                .then_some(())
        });
        following.context("the archive did not start")?;
    }
    let endpoints = c.endpoints(&group);
    let counts = crate::bench_cluster::Counts::default();
    let done = Arc::new(AtomicBool::new(false));
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?;
    let eco_pids: Vec<i32> = group
        .iter()
        .filter_map(|id| c.nodes[id].process.as_ref().map(|p| p.id() as i32))
        .collect();
    let etcd_pids: Vec<i32> = group.iter().flat_map(|id| c.etcd_pids(id)).collect();
    let cpu = |pids: &[i32]| pids.iter().map(|p| Cpu::of(*p).total()).sum::<f64>();
    let (eco_before, etcd_before) = (cpu(&eco_pids), cpu(&etcd_pids));
    let until = Instant::now() + Duration::from_secs(opts.seconds);
    let started = Instant::now();
    let samples: BTreeMap<i64, (String, usize)> = runtime.block_on(async {
        let tasks = crate::bench_cluster::write_for(
            &endpoints,
            opts.clients,
            until,
            &counts,
            |mut client: etcd_client::Client, w, n| async move {
                let ok = operate(&mut client, w, n).await;
                (client, ok)
            },
        );
        // The reader: a sample of the whole key space every second, in
        // both modes (the same load on the cluster; the samples of a run
        // without the archive are not used).
        let reader_endpoint = vec![endpoints[0].clone()];
        let reader_done = done.clone();
        let reader = tokio::spawn(async move {
            let mut samples = BTreeMap::new();
            let options = testkit::etcd::options(
                &reader_endpoint,
                Duration::from_secs(2),
                Duration::from_secs(10),
            );
            let Ok(mut client) = etcd_client::Client::connect(reader_endpoint, Some(options)).await
            else {
                return samples;
            };
            while !reader_done.load(Ordering::Relaxed) {
                if let Some((rev, hash, keys)) = read_all(&mut client, 0).await {
                    samples.insert(rev, (hash, keys));
                }
                tokio::time::sleep(Duration::from_secs(1)).await;
            }
            samples
        });
        for t in tasks {
            let _ = t.await;
        }
        done.store(true, Ordering::Relaxed);
        reader.await.unwrap_or_default()
    });
    let elapsed = started.elapsed().as_secs_f64();
    let (eco_cpu_s, etcd_cpu_s) = (cpu(&eco_pids) - eco_before, cpu(&etcd_pids) - etcd_before);
    let ops = counts.ok.load(Ordering::Relaxed);
    let mut run = Run {
        archive,
        ops,
        failed: counts.failed.load(Ordering::Relaxed),
        ops_per_s: ops as f64 / elapsed,
        archive_bytes: 0,
        segments: 0,
        upload_p99_s: None,
        points_checked: 0,
        points_differing: Vec::new(),
        restore_s_median: None,
        eco_cpu_s,
        etcd_cpu_s,
    };
    if !archive {
        return Ok(run);
    }
    // Every acknowledged change archived: the newest sample's revision
    // at least, then a little more for the load's last seconds.
    let newest = *samples.keys().next_back().context("no sample was read")?;
    let reached = testkit::wait_until(Duration::from_secs(60), || {
        group
            .iter()
            .filter_map(|id| c.status_json(id))
            .filter_map(|s| s["archive"]["newest_revision"].as_i64())
            .max()
            .filter(|r| *r >= newest)
    });
    reached.context("the archive did not reach the newest sample")?;
    let (bytes, segments) = archive_size(&c.store());
    run.archive_bytes = bytes;
    run.segments = segments;
    run.upload_p99_s = group
        .iter()
        .filter_map(|id| upload_p99(&c.nodes[id].api()))
        .reduce(f64::max);
    // Restore `points` random samples and compare.
    let revisions: Vec<i64> = samples.keys().copied().collect();
    let config = c.nodes[&group[0]].config.clone();
    let scratch = tempfile::Builder::new()
        .prefix("eco-archive-bench-")
        .tempdir()?;
    let mut times = Vec::new();
    for p in 0..opts.points.min(revisions.len()) {
        *rng ^= *rng << 13;
        *rng ^= *rng >> 7;
        *rng ^= *rng << 17;
        let r = revisions[(*rng % revisions.len() as u64) as usize];
        let target = scratch.path().join(format!("p{p}/etcd"));
        let address = format!("127.0.{net}.{}", 100 + p);
        let t0 = Instant::now();
        let (code, out, err) = testkit::process::run_eco(
            &opts.eco,
            &[
                "restore",
                "--at-revision",
                &r.to_string(),
                "--config",
                config.to_str().context("config path")?,
                "--data-dir",
                target.to_str().context("target path")?,
                "--name",
                "point",
                "--peer-url",
                &format!("http://{address}:2380"),
            ],
        );
        anyhow::ensure!(code == 0, "restoring revision {r}: {out}{err}");
        times.push(t0.elapsed().as_secs_f64());
        let _etcd = testkit::etcd::RawEtcd::start_with(&target, "point", &address, &[]);
        let endpoint = format!("http://{address}:2379");
        testkit::etcd::wait_serving(&endpoint, Duration::from_secs(30))
            .with_context(|| format!("the etcd restored at revision {r} does not serve"))?;
        let got = testkit::etcd::block_on(async {
            let mut client = testkit::etcd::client(&endpoint).await?;
            read_all(&mut client, 0).await
        })
        .with_context(|| format!("reading the etcd restored at revision {r}"))?;
        let (hash, keys) = &samples[&r];
        run.points_checked += 1;
        if got.1 != *hash || got.2 != *keys {
            run.points_differing.push(r);
        }
    }
    run.restore_s_median = median(times);
    Ok(run)
}

pub fn run(opts: &Options) -> anyhow::Result<Report> {
    let mut runs = Vec::new();
    let mut rng = opts.seed.max(1);
    for i in 0..opts.runs {
        let order: &[bool] = match (opts.archive_only, i % 2) {
            (true, _) => &[true],
            (false, 0) => &[false, true],
            (false, _) => &[true, false],
        };
        for (j, &archive) in order.iter().enumerate() {
            let net = 120 + (2 * i + j) as u8 % 60;
            let r = one(opts, archive, net, &mut rng)?;
            eprintln!(
                "archive-bench: run {} archive {}: {} ops ({} failed), {:.0} ops/s, CPU eco {:.1} s etcd {:.1} s{}",
                i + 1,
                if archive { "on " } else { "off" },
                r.ops,
                r.failed,
                r.ops_per_s,
                r.eco_cpu_s,
                r.etcd_cpu_s,
                if archive {
                    format!(
                        "; {} segments, {} bytes ({:.0} B/op), upload p99 ≤ {:?} s; {} points restored, {} differing, restore median {:.1} s",
                        r.segments,
                        r.archive_bytes,
                        r.archive_bytes as f64 / r.ops.max(1) as f64,
                        r.upload_p99_s,
                        r.points_checked,
                        r.points_differing.len(),
                        r.restore_s_median.unwrap_or(0.0)
                    )
                } else {
                    String::new()
                }
            );
            runs.push(r);
        }
    }
    let of = |archive: bool| {
        median(
            runs.iter()
                .filter(|r| r.archive == archive)
                .map(|r| r.ops_per_s)
                .collect(),
        )
        .unwrap_or(0.0)
    };
    let (off, on) = (of(false), of(true));
    let on_runs: Vec<&Run> = runs.iter().filter(|r| r.archive).collect();
    let bytes: u64 = on_runs.iter().map(|r| r.archive_bytes).sum();
    let ops: u64 = on_runs.iter().map(|r| r.ops).sum();
    Ok(Report {
        seconds: opts.seconds,
        clients: opts.clients,
        off_median_per_s: off,
        on_median_per_s: on,
        ratio: if off > 0.0 { on / off } else { 0.0 },
        bytes_per_op: bytes as f64 / ops.max(1) as f64,
        points_checked: on_runs.iter().map(|r| r.points_checked).sum(),
        points_differing: on_runs.iter().map(|r| r.points_differing.len()).sum(),
        runs,
    })
}
