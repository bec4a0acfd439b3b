//! `snapshot-bench --store s3`: `eco snapshot now` streaming into S3 (the
//! local AWS emulator of `testkit::aws`: moto and the kit's additions, on
//! loopback) against what users do by hand: `etcdctl snapshot save FILE`,
//! then `aws s3 cp FILE s3://bucket/key` with the AWS CLI of
//! `.tools/aws-venv` (`make deps`), the two commands' times added up.
//!
//! Both get the emulator's environment (credentials, region, endpoint,
//! empty AWS config files). eco's config: the static provider, the
//! benchmark's group file, `[snapshot] store = "s3"` on the emulator with
//! eco's defaults (`part_size`, `parts_in_flight`, timeouts, attempts)
//! unless `--part-size-mib` / `--parts-in-flight` say otherwise.
//!
//! After each run the stored objects are checked (eco's snapshot exists,
//! once, and has etcd's size; `aws s3 cp`'s object has the file's size)
//! and deleted, so the emulator holds at most one snapshot at a time.
//! eco's stored sha256 is compared with the file's (`sha256sum`, not
//! timed): nothing writes to etcd during the benchmark, so both are the
//! same snapshot. The emulator's CPU time during each command is recorded
//! (from `/proc/<pid>/stat`): a single Python process serves every request,
//! and it is the first suspect when eco is slow.

use super::{
    ADDRESS, CLUSTER, Measured, Options, Prepared, RSS_GOAL_MIB, max, measure, median, prepare,
};
use crate::process_cpu::Cpu;
use anyhow::{Context, anyhow, bail};
use std::path::Path;
use std::process::Command;
use std::time::Duration;
use testkit::aws::Emulator;

/// The time goal of M7 for S3: eco / (etcdctl + aws s3 cp), medians.
pub const RATIO_GOAL: f64 = 1.0;
const BUCKET: &str = "eco-snapshot-bench";
/// Where `aws s3 cp` puts etcdctl's file.
const MANUAL_KEY: &str = "manual/etcdctl.db";

#[derive(Clone, Debug, serde::Serialize)]
pub struct S3Result {
    /// `"s3"`.
    pub store: String,
    pub size_mib: u64,
    /// Size of the snapshot (etcd's bbolt database and its sha256).
    pub snapshot_mib: f64,
    pub etcd_version: String,
    pub runs: usize,
    /// eco's `snapshot.s3.part_size` (MiB) and `parts_in_flight`.
    pub part_size_mib: f64,
    pub parts_in_flight: u32,
    pub eco_median_s: f64,
    pub etcdctl_median_s: f64,
    pub aws_cp_median_s: f64,
    /// Median over runs of (etcdctl + aws s3 cp) of the same run.
    pub manual_median_s: f64,
    /// Median eco time / median (etcdctl + aws s3 cp) time.
    pub time_ratio_vs_manual: f64,
    /// eco's peak RSS, the largest over its runs.
    pub peak_rss_mib: f64,
    pub etcdctl_peak_rss_mib: f64,
    pub aws_cp_peak_rss_mib: f64,
    pub eco_throughput_mib_s: f64,
    pub eco_s: Vec<f64>,
    pub etcdctl_s: Vec<f64>,
    pub aws_cp_s: Vec<f64>,
    pub manual_s: Vec<f64>,
    pub eco_rss_mib: Vec<f64>,
    pub etcdctl_rss_mib: Vec<f64>,
    pub aws_cp_rss_mib: Vec<f64>,
    /// CPU seconds (user + system) of each eco run and of each `aws s3 cp`.
    pub eco_cpu_s: Vec<f64>,
    pub aws_cp_cpu_s: Vec<f64>,
    /// CPU seconds the emulator used during each eco run and each
    /// `aws s3 cp`.
    pub emulator_cpu_during_eco_s: Vec<f64>,
    pub emulator_cpu_during_aws_cp_s: Vec<f64>,
    /// The objects checked after the runs (the last run's sizes).
    pub eco_object_bytes: u64,
    pub etcdctl_file_bytes: u64,
    pub aws_cp_object_bytes: u64,
    /// eco's stored sha256 equals the sha256 of etcdctl's file, in every
    /// run.
    pub sha256_equal: bool,
    pub time_ratio_goal: f64,
    pub peak_rss_goal_mib: f64,
    pub goals_met: bool,
}

/// An error of the AWS SDK with its sources (the SDK's Display alone says
/// "service error").
fn chain(e: &dyn std::error::Error) -> String {
    let mut out = e.to_string();
    let mut source = e.source();
    while let Some(s) = source {
        out.push_str(&format!(": {s}"));
        source = s.source();
    }
    out
}

/// The keys under `prefix` (one page: the benchmark keeps a handful).
fn list(emulator: &Emulator, prefix: &str) -> anyhow::Result<Vec<String>> {
    let out = emulator
        .block_on(
            emulator
                .s3()
                .list_objects_v2()
                .bucket(BUCKET)
                .prefix(prefix)
                .send(),
        )
        .map_err(|e| anyhow!("listing s3://{BUCKET}/{prefix}: {}", chain(&e)))?;
    Ok(out
        .contents()
        .iter()
        .filter_map(|o| o.key().map(str::to_string))
        .collect())
}

/// The size and eco's sha256 metadata (if any) of `key`.
fn head(emulator: &Emulator, key: &str) -> anyhow::Result<(u64, Option<String>)> {
    let out = emulator
        .block_on(emulator.s3().head_object().bucket(BUCKET).key(key).send())
        .map_err(|e| anyhow!("HEAD s3://{BUCKET}/{key}: {}", chain(&e)))?;
    let size = out.content_length().unwrap_or(-1).max(0) as u64;
    let sha256 = out.metadata().and_then(|m| m.get("sha256")).cloned();
    Ok((size, sha256))
}

fn delete(emulator: &Emulator, key: &str) -> anyhow::Result<()> {
    emulator
        .block_on(emulator.s3().delete_object().bucket(BUCKET).key(key).send())
        .map_err(|e| anyhow!("deleting s3://{BUCKET}/{key}: {}", chain(&e)))?;
    Ok(())
}

/// `sha256sum file` (bounded by `limit`).
fn sha256_of(file: &Path, log: &Path, limit: Duration) -> anyhow::Result<String> {
    let mut cmd = Command::new("sha256sum");
    cmd.arg(file);
    measure(cmd, log, limit)?;
    let out = std::fs::read_to_string(log).context("sha256sum's output")?;
    out.split_whitespace()
        .next()
        .filter(|h| h.len() == 64)
        .map(str::to_ascii_lowercase)
        .ok_or_else(|| anyhow!("sha256sum printed {out:?}"))
}

/// `a` and `b` differ by at most 1 %.
fn close(a: u64, b: u64) -> bool {
    a.abs_diff(b) as f64 <= 0.01 * a.max(b) as f64
}

/// One timed command with the emulator's CPU time during it.
fn measure_with_emulator(
    emulator: &Emulator,
    cmd: Command,
    log: &Path,
    limit: Duration,
) -> anyhow::Result<(Measured, Cpu)> {
    let before = Cpu::of(emulator.pid());
    let m = measure(cmd, log, limit)?;
    Ok((m, Cpu::of(emulator.pid()).since(before)))
}

pub fn run(opts: &Options) -> anyhow::Result<S3Result> {
    let venv = testkit::workspace_root().join(".tools/aws-venv/bin");
    for b in ["python", "aws"] {
        if !venv.join(b).exists() {
            bail!(
                "{} is missing: run `make deps` (scripts/install-deps.sh installs moto and the AWS CLI there)",
                venv.join(b).display()
            );
        }
    }
    let mut p = prepare(opts)?;
    run_on(&mut p, opts)
}

/// The runs of [`run`] on an etcd already filled (`p`), with an emulator of
/// their own (stopped, and its files removed, at the end).
pub(crate) fn run_on(p: &mut Prepared, opts: &Options) -> anyhow::Result<S3Result> {
    let aws = testkit::workspace_root().join(".tools/aws-venv/bin/aws");
    if !aws.exists() {
        bail!(
            "{} is missing: run `make deps` (scripts/install-deps.sh installs moto and the AWS CLI there)",
            aws.display()
        );
    }
    let dir = p.dir().to_path_buf();
    let limit = p.limit;
    // Declared after `p`: the emulator is stopped (by pid) before the
    // temporary directory goes.
    let emulator = Emulator::start(&dir.join("aws"));
    emulator.create_bucket(BUCKET);
    let env = emulator.env(ADDRESS);
    let endpoint = emulator.endpoint();

    let builder = p.eco_config().s3_store(&endpoint, BUCKET).edit(|c| {
        if let Some(s3) = c.snapshot.s3.as_mut() {
            // eco's defaults, not the tests' short ones.
            s3.max_attempts = eco::config::defaults::aws_max_attempts();
            if let Some(mib) = opts.part_size_mib {
                s3.part_size = mib << 20;
            }
            if let Some(n) = opts.parts_in_flight {
                s3.parts_in_flight = n;
            }
        }
    });
    let s3 = builder
        .config()
        .snapshot
        .s3
        .clone()
        .context("the config has no [snapshot.s3]")?;
    let config = dir.join("eco.toml");
    builder.write(&config).context("writing the eco config")?;
    let snapshots = format!("{}/{CLUSTER}/snapshots/", s3.prefix);
    let markers = format!("{}/{CLUSTER}/.sha256/snapshots/", s3.prefix);
    let saved = dir.join("etcdctl.db");
    eprintln!(
        "snapshot-bench: S3 on the emulator {endpoint}, bucket {BUCKET}, part_size {} MiB, parts_in_flight {}",
        s3.part_size >> 20,
        s3.parts_in_flight
    );

    let (mut eco_s, mut ctl_s, mut cp_s, mut manual_s) =
        (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    let (mut eco_rss, mut ctl_rss, mut cp_rss) = (Vec::new(), Vec::new(), Vec::new());
    let (mut eco_cpu, mut cp_cpu, mut emu_eco, mut emu_cp) =
        (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    let (mut eco_bytes, mut file_bytes, mut cp_bytes) = (0u64, 0u64, 0u64);
    let (mut eco_shas, mut file_shas) = (Vec::new(), Vec::new());
    for i in 0..opts.runs {
        // ABBA: eco first on even runs, by hand first on odd ones.
        let order = if i % 2 == 0 {
            [true, false]
        } else {
            [false, true]
        };
        for is_eco in order {
            p.etcd.check_running()?;
            // Each command starts with no dirty pages of the one before
            // (the emulator spills objects to files).
            // SAFETY: sync(2) has no preconditions.
            unsafe { libc::sync() };
            if is_eco {
                let mut cmd = p.eco_snapshot(&config);
                cmd.envs(env.iter().map(|(k, v)| (k, v)));
                let (m, emu) =
                    measure_with_emulator(&emulator, cmd, &dir.join("eco-run.log"), limit)?;
                let stored = list(&emulator, &snapshots)?;
                let [key] = stored.as_slice() else {
                    bail!(
                        "eco reported success; s3://{BUCKET}/{snapshots} holds {} objects: {stored:?}",
                        stored.len()
                    );
                };
                let (len, own) = head(&emulator, key)?;
                // A multipart object's sha256 is in its commit marker.
                let marker = key.replacen(&snapshots, &markers, 1);
                let sha256 = match own {
                    Some(sha256) => sha256,
                    None => head(&emulator, &marker)?
                        .1
                        .with_context(|| format!("{key} has no sha256, nor has its marker"))?,
                };
                eprintln!(
                    "snapshot-bench: run {}: eco            {:7.2} s, peak RSS {:6.1} MiB, CPU {:5.2} s, emulator CPU {:5.2} s ({:5.2} s user), {} MiB",
                    i + 1,
                    m.seconds,
                    m.rss_mib,
                    m.cpu_s,
                    emu.total(),
                    emu.user,
                    len >> 20
                );
                delete(&emulator, &marker)?;
                delete(&emulator, key)?;
                eco_bytes = len;
                eco_shas.push(sha256);
                eco_s.push(m.seconds);
                eco_rss.push(m.rss_mib);
                eco_cpu.push(m.cpu_s);
                emu_eco.push(emu.total());
            } else {
                let ctl = measure(p.etcdctl_save(&saved), &dir.join("etcdctl-run.log"), limit)?;
                let len = std::fs::metadata(&saved)
                    .with_context(|| format!("etcdctl saved no {}", saved.display()))?
                    .len();
                let mut cmd = Command::new(&aws);
                cmd.envs(env.iter().map(|(k, v)| (k, v)))
                    .args(["s3", "cp"])
                    .arg(&saved)
                    .arg(format!("s3://{BUCKET}/{MANUAL_KEY}"))
                    .args(["--endpoint-url", &endpoint]);
                let (cp, emu) =
                    measure_with_emulator(&emulator, cmd, &dir.join("aws-run.log"), limit)?;
                let (object_len, _) = head(&emulator, MANUAL_KEY)
                    .context("aws s3 cp reported success but stored no object")?;
                if object_len != len {
                    bail!(
                        "aws s3 cp stored {object_len} bytes of a {len}-byte file at s3://{BUCKET}/{MANUAL_KEY}"
                    );
                }
                eprintln!(
                    "snapshot-bench: run {}: etcdctl        {:7.2} s, peak RSS {:6.1} MiB, {} MiB",
                    i + 1,
                    ctl.seconds,
                    ctl.rss_mib,
                    len >> 20
                );
                eprintln!(
                    "snapshot-bench: run {}: aws s3 cp      {:7.2} s, peak RSS {:6.1} MiB, CPU {:5.2} s, emulator CPU {:5.2} s ({:5.2} s user)",
                    i + 1,
                    cp.seconds,
                    cp.rss_mib,
                    cp.cpu_s,
                    emu.total(),
                    emu.user
                );
                eprintln!(
                    "snapshot-bench: run {}: etcdctl + aws  {:7.2} s",
                    i + 1,
                    ctl.seconds + cp.seconds
                );
                delete(&emulator, MANUAL_KEY)?;
                file_shas.push(sha256_of(&saved, &dir.join("sha256sum.log"), limit)?);
                std::fs::remove_file(&saved).context("removing etcdctl's snapshot")?;
                file_bytes = len;
                cp_bytes = object_len;
                ctl_s.push(ctl.seconds);
                ctl_rss.push(ctl.rss_mib);
                cp_s.push(cp.seconds);
                cp_rss.push(cp.rss_mib);
                cp_cpu.push(cp.cpu_s);
                emu_cp.push(emu.total());
                manual_s.push(ctl.seconds + cp.seconds);
            }
        }
    }
    if !close(eco_bytes, file_bytes) {
        bail!(
            "eco stored {eco_bytes} bytes, etcdctl saved {file_bytes}: not the same snapshot of an etcd nothing writes to"
        );
    }
    let sha256_equal = eco_shas
        .iter()
        .chain(&file_shas)
        .all(|h| Some(h) == file_shas.first());
    if !sha256_equal {
        eprintln!(
            "snapshot-bench: warning: eco's sha256 {eco_shas:?} differ from etcdctl's {file_shas:?}"
        );
    }
    let etcd_version = p.etcd_version.clone();
    drop(emulator);
    let _ = std::fs::remove_dir_all(dir.join("aws"));

    let eco_median_s = median(&eco_s);
    let manual_median_s = median(&manual_s);
    let ratio = eco_median_s / manual_median_s;
    let peak = max(&eco_rss);
    let snapshot_mib = eco_bytes.max(file_bytes) as f64 / (1u64 << 20) as f64;
    Ok(S3Result {
        store: "s3".into(),
        size_mib: opts.size_mib,
        snapshot_mib,
        etcd_version,
        runs: opts.runs,
        part_size_mib: s3.part_size as f64 / (1u64 << 20) as f64,
        parts_in_flight: s3.parts_in_flight,
        eco_median_s,
        etcdctl_median_s: median(&ctl_s),
        aws_cp_median_s: median(&cp_s),
        manual_median_s,
        time_ratio_vs_manual: ratio,
        peak_rss_mib: peak,
        etcdctl_peak_rss_mib: max(&ctl_rss),
        aws_cp_peak_rss_mib: max(&cp_rss),
        eco_throughput_mib_s: snapshot_mib / eco_median_s,
        eco_s,
        etcdctl_s: ctl_s,
        aws_cp_s: cp_s,
        manual_s,
        eco_rss_mib: eco_rss,
        etcdctl_rss_mib: ctl_rss,
        aws_cp_rss_mib: cp_rss,
        eco_cpu_s: eco_cpu,
        aws_cp_cpu_s: cp_cpu,
        emulator_cpu_during_eco_s: emu_eco,
        emulator_cpu_during_aws_cp_s: emu_cp,
        eco_object_bytes: eco_bytes,
        etcdctl_file_bytes: file_bytes,
        aws_cp_object_bytes: cp_bytes,
        sha256_equal,
        time_ratio_goal: RATIO_GOAL,
        peak_rss_goal_mib: RSS_GOAL_MIB,
        goals_met: ratio <= RATIO_GOAL && peak <= RSS_GOAL_MIB,
    })
}

/// The human-readable table.
pub fn render(r: &S3Result) -> String {
    let mut out = format!(
        "{:>8} {:>9} {:>5} {:>12} {:>16} {:>15} {:>16} {:>6} {:>16}\n",
        "size MiB",
        "snap MiB",
        "runs",
        "eco med. s",
        "etcdctl med. s",
        "aws cp med. s",
        "by hand med. s",
        "ratio",
        "eco peak RSS MiB"
    );
    out.push_str(&format!(
        "{:>8} {:>9.0} {:>5} {:>12.2} {:>16.2} {:>15.2} {:>16.2} {:>6.2} {:>16.1}\n",
        r.size_mib,
        r.snapshot_mib,
        r.runs,
        r.eco_median_s,
        r.etcdctl_median_s,
        r.aws_cp_median_s,
        r.manual_median_s,
        r.time_ratio_vs_manual,
        r.peak_rss_mib
    ));
    out.push_str(&format!(
        "store s3 (the AWS emulator), part_size {} MiB, parts_in_flight {}; etcd {}; by hand = etcdctl snapshot save + aws s3 cp (peak RSS {:.1} / {:.1} MiB); objects checked: {} bytes, sha256 {}\n",
        r.part_size_mib,
        r.parts_in_flight,
        r.etcd_version,
        r.etcdctl_peak_rss_mib,
        r.aws_cp_peak_rss_mib,
        r.eco_object_bytes,
        if r.sha256_equal {
            "equal to the file's"
        } else {
            "DIFFERENT from the file's"
        }
    ));
    let verdict = |ok: bool| if ok { "PASS" } else { "FAIL" };
    out.push_str(&format!(
        "goals: ratio <= {:.1} {}, eco peak RSS <= {} MiB {}\n",
        r.time_ratio_goal,
        verdict(r.time_ratio_vs_manual <= r.time_ratio_goal),
        r.peak_rss_goal_mib,
        verdict(r.peak_rss_mib <= r.peak_rss_goal_mib)
    ));
    out
}
