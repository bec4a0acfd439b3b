//! `tls-bench`: the write throughput of a three-instance cluster without
//! TLS and with generated TLS on both etcd surfaces (client certificates
//! required), in the same invocation, alternating (ABAB…). Each run forms
//! a fresh cluster of real eco and etcd processes on loopback, then
//! `--clients` writers put sequential keys for `--seconds` through the
//! three members; acknowledged writes per second are compared by their
//! medians. What it measures is TLS's cost on etcd's paths (client
//! handshakes once per writer, raft traffic between members, fsync
//! unchanged).

use serde::Serialize;
use std::path::PathBuf;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

pub struct Options {
    pub eco: PathBuf,
    pub etcd_bin_dir: PathBuf,
    pub seconds: u64,
    pub clients: usize,
    pub runs: usize,
}

#[derive(Debug, Serialize)]
pub struct Run {
    pub tls: bool,
    pub writes: u64,
    pub failed: u64,
    pub writes_per_s: f64,
}

#[derive(Debug, Serialize)]
pub struct Report {
    pub seconds: u64,
    pub clients: usize,
    pub runs: Vec<Run>,
    pub plain_median_per_s: f64,
    pub tls_median_per_s: f64,
    /// TLS throughput over plaintext throughput.
    pub tls_ratio: f64,
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    match v.len() {
        0 => 0.0,
        n if n % 2 == 1 => v[n / 2],
        n => (v[n / 2 - 1] + v[n / 2]) / 2.0,
    }
}

fn one(opts: &Options, tls: bool, net: u8) -> anyhow::Result<Run> {
    let (c, group) = crate::bench_cluster::form(&opts.eco, &opts.etcd_bin_dir, net, 41, tls, |c| c)
        .map_err(|e| anyhow::anyhow!("{e} (tls: {tls})"))?;
    let endpoints = c.endpoints(&group);
    let counts = crate::bench_cluster::Counts::default();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?;
    let until = Instant::now() + Duration::from_secs(opts.seconds);
    let started = Instant::now();
    runtime.block_on(async {
        let tasks = crate::bench_cluster::write_for(
            &endpoints,
            opts.clients,
            until,
            &counts,
            |mut client: etcd_client::Client, w, n| async move {
                let ok = client
                    .put(format!("bench/{w}/{n}"), "x".repeat(64), None)
                    .await
                    .is_ok();
                (client, ok)
            },
        );
        for t in tasks {
            let _ = t.await;
        }
    });
    let elapsed = started.elapsed().as_secs_f64();
    let writes = counts.ok.load(Ordering::Relaxed);
    drop(c);
    Ok(Run {
        tls,
        writes,
        failed: counts.failed.load(Ordering::Relaxed),
        writes_per_s: writes as f64 / elapsed,
    })
}

pub fn run(opts: &Options) -> anyhow::Result<Report> {
    let mut runs = Vec::new();
    for i in 0..opts.runs {
        // ABBA: plaintext first on even runs.
        let order = if i % 2 == 0 {
            [false, true]
        } else {
            [true, false]
        };
        for (j, tls) in order.into_iter().enumerate() {
            let net = 60 + (2 * i + j) as u8 % 60;
            let r = one(opts, tls, net)?;
            eprintln!(
                "tls-bench: run {} {}: {} writes ({} failed), {:.0} writes/s",
                i + 1,
                if tls {
                    "generated TLS"
                } else {
                    "plaintext    "
                },
                r.writes,
                r.failed,
                r.writes_per_s
            );
            runs.push(r);
        }
    }
    let of = |tls: bool| {
        median(
            runs.iter()
                .filter(|r| r.tls == tls)
                .map(|r| r.writes_per_s)
                .collect(),
        )
    };
    let (plain, tls) = (of(false), of(true));
    Ok(Report {
        seconds: opts.seconds,
        clients: opts.clients,
        plain_median_per_s: plain,
        tls_median_per_s: tls,
        tls_ratio: if plain > 0.0 { tls / plain } else { 0.0 },
        runs,
    })
}
