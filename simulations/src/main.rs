//! `simulations`: deterministic simulations and benchmarks of eco's crates.

mod archive_bench;
mod bench_cluster;
mod chaos;
mod process_cpu;
mod scale_bench;
mod snapshot_bench;
mod tls_bench;

use clap::{Parser, Subcommand};
use std::path::PathBuf;
use std::time::Duration;

#[derive(Parser)]
#[command(
    name = "simulations",
    about = "Deterministic simulations and benchmarks of eco's crates."
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// The real-process failure matrix: N eco instances (the release
    /// binary) with etcd on 127.0.x.y under a write load; each scenario
    /// injects its fault, waits for the cluster to be whole, and verifies
    /// that no acknowledged write was lost. Exits 1 if any scenario fails.
    /// Needs `cargo build --release -p eco` and scripts/install-deps.sh.
    Chaos(ChaosArgs),
    /// Measure gossip on a simulated network: time to detect a crashed node,
    /// time for a state change to reach every node, and bandwidth per node.
    GossipBench {
        /// Cluster sizes, comma-separated.
        #[arg(long, value_delimiter = ',', default_value = "10,50,100")]
        nodes: Vec<usize>,
        /// Trials per size (percentiles are over trials).
        #[arg(long, default_value_t = 5)]
        trials: usize,
        /// Seed of the first trial.
        #[arg(long, default_value_t = 1)]
        seed: u64,
        /// SWIM probe period in milliseconds (default: eco's).
        #[arg(long, default_value_t = gossip::DEFAULT_PROBE_PERIOD.as_millis() as u64)]
        probe_ms: u64,
        /// How long a member stays suspected before it is marked down, in
        /// milliseconds (default: eco's).
        #[arg(long, default_value_t = gossip::DEFAULT_SUSPICION.as_millis() as u64)]
        suspicion_ms: u64,
        /// Members each periodic gossip round sends to (default: eco's).
        #[arg(long, default_value_t = gossip::DEFAULT_GOSSIP_FANOUT)]
        gossip_fanout: usize,
        /// Per-message loss during a 60 s window of every live node, where
        /// the false "down" verdicts are counted (0: no window).
        #[arg(long, default_value_t = 0.01)]
        loss: f64,
        /// How long one node is paused (its datagrams held both ways);
        /// the observers that mark it down are counted (0: no pause).
        #[arg(long, default_value_t = 2000)]
        pause_ms: u64,
        /// Print JSON (one object for a single size, else an array).
        #[arg(long)]
        json: bool,
    },
    /// Run the fenced seeding protocol (recovery::fenced) on its
    /// deterministic harness over many seeds: invariants checked on every
    /// step, liveness at the end; prints a summary with decision times.
    /// Exits 1 if any seed violates an invariant.
    Sim {
        /// Number of seeds.
        #[arg(long, default_value_t = 1000)]
        seeds: u64,
        /// First seed of the sweep.
        #[arg(long, default_value_t = 0)]
        from: u64,
        /// Replay this one seed and print a readable account of it
        /// (overrides --seeds).
        #[arg(long)]
        seed: Option<u64>,
        /// Print JSON: `runs`, `violations`, `first_failing_seed`,
        /// `failing_seeds`, `decision_p50_s`, `decision_p99_s`, ...
        #[arg(long)]
        json: bool,
    },
    /// The fenced seeding protocol end to end on turmoil: the real
    /// protocol and the real gossip node per host, a simulated etcd and
    /// store, partitions, loss, crashes, replacements. Prints every seed
    /// with a violation; exits 1 if any.
    SimTurmoil {
        /// Number of seeds (per cluster size).
        #[arg(long, default_value_t = 50)]
        seeds: u64,
        /// First seed of the sweep.
        #[arg(long, default_value_t = 0)]
        from: u64,
        /// Cluster sizes, comma-separated.
        #[arg(long, value_delimiter = ',', default_value = "3,5")]
        nodes: Vec<usize>,
        /// Replay this one seed (with the first of --nodes) and print a
        /// readable account of it.
        #[arg(long)]
        seed: Option<u64>,
        /// Print JSON (the outcome of --seed, else the summary).
        #[arg(long)]
        json: bool,
    },
    /// M7: fill a real etcd (started here, on 127.0.20.1) with --size-mib
    /// MiB, then time `eco snapshot now` against what users do by hand on
    /// the same etcd, alternating: into a directory store against
    /// `etcdctl snapshot save` (--store dir), or streaming into S3 on the
    /// local AWS emulator against `etcdctl snapshot save` + `aws s3 cp`
    /// (--store s3); prints the median time ratio and eco's peak RSS.
    /// Needs `cargo build --release -p eco` and scripts/install-deps.sh
    /// (`make deps`: the emulator and the AWS CLI for --store s3).
    SnapshotBench {
        /// MiB of values to write into etcd before the snapshots.
        #[arg(long, default_value_t = 1024)]
        size_mib: u64,
        /// Snapshots taken by each tool (medians are over runs).
        #[arg(long, default_value_t = 3)]
        runs: usize,
        #[command(flatten)]
        binaries: Binaries,
        /// Where the temporary directory (etcd data, snapshots) goes
        /// [default: the system's temporary directory].
        #[arg(long)]
        work_dir: Option<PathBuf>,
        /// Where eco's snapshots go: `dir` (a directory store, against
        /// `etcdctl snapshot save`) or `s3` (the local AWS emulator,
        /// against `etcdctl snapshot save` + `aws s3 cp`).
        #[arg(long, value_enum, default_value = "dir")]
        store: snapshot_bench::Store,
        /// With --store s3: eco's `snapshot.s3.part_size` in MiB
        /// [default: eco's].
        #[arg(long)]
        part_size_mib: Option<u64>,
        /// With --store s3: eco's `snapshot.s3.parts_in_flight`
        /// [default: eco's].
        #[arg(long)]
        parts_in_flight: Option<u32>,
        /// With --store dir: what eco's snapshots carry — `none` (the
        /// bytes as etcd sent them), `zstd` (a new cluster's default:
        /// the store records format 3) or `zstd+age` (and encrypted to a
        /// key made by `eco snapshot keygen`).
        #[arg(long, value_enum, default_value = "none")]
        encoding: snapshot_bench::Encoding,
        /// With --encoding zstd or zstd+age: `snapshot.compression_level`
        /// (1 to 19).
        #[arg(long, default_value_t = 3, value_parser = clap::value_parser!(i32).range(1..=19))]
        compression_level: i32,
        /// What fills etcd: `random` (incompressible values of 512 KiB to
        /// 1 MiB) or `mixed` (objects as Kubernetes stores them — 1 to 8
        /// KiB of structured text with random names and ids — and one
        /// random 100 KiB value every 25 keys), or `kubernetes` (as
        /// `mixed`, one put in four an update of an earlier object, the
        /// history compacted each tenth of the fill).
        #[arg(long, value_enum, default_value = "random")]
        fill: snapshot_bench::Fill,
        /// Keep the temporary directory (the logs of the last runs, etcd's
        /// data) instead of removing it.
        #[arg(long)]
        keep: bool,
        /// Print JSON: `peak_rss_mib`, `eco_median_s`, the ratio
        /// (`time_ratio_vs_etcdctl`, or `time_ratio_vs_manual` with
        /// --store s3), every run, `goals_met`, ...
        #[arg(long)]
        json: bool,
    },
    /// eco at the sizes production etcd holds: for each size, one real
    /// etcd 3.5 member (on 127.0.20.1) filled with Kubernetes-like objects,
    /// updates and compactions; snapshots to a directory and to S3 against
    /// etcdctl (+ aws s3 cp), `eco restore` against etcdutl, and the check
    /// of `eco snapshot import`, alternating. Each size's files are removed
    /// before the next. Needs `cargo build --release -p eco` and
    /// scripts/install-deps.sh.
    ScaleBench {
        /// Database sizes, MiB of values written, comma-separated.
        #[arg(long, value_delimiter = ',', default_value = "1024,4096,8192")]
        sizes_mib: Vec<u64>,
        /// Runs of each timed pair (medians are over runs).
        #[arg(long, default_value_t = 3)]
        runs: usize,
        /// Snapshot stores to measure, comma-separated.
        #[arg(long, value_enum, value_delimiter = ',', default_value = "dir,s3")]
        stores: Vec<snapshot_bench::Store>,
        /// What to measure at each size, comma-separated: `snapshots`,
        /// `restore` (one member, filled once for both), `rejoin` (an
        /// empty-disk instance of three back to a voter, against etcd's
        /// own snapshot transfer; three members filled), `steady` (eco's
        /// CPU and memory beside the member at rest; one instance filled),
        /// `quorum-loss` (two of three replaced empty under a write
        /// ledger) and `defrag` (the space governor defragmenting every
        /// member; after the quorum loss when both: three members filled
        /// once).
        #[arg(
            long,
            value_enum,
            value_delimiter = ',',
            default_value = "snapshots,restore"
        )]
        measure: Vec<scale_bench::Measure>,
        #[command(flatten)]
        binaries: Binaries,
        /// Where every temporary directory of the run goes — each size's
        /// files and the clusters' data directories (TMPDIR is set to it)
        /// [default: the system's temporary directory].
        #[arg(long)]
        work_dir: Option<PathBuf>,
        /// Print the results as a JSON array (for
        /// scripts/plot-scale-bench.py).
        #[arg(long)]
        json: bool,
    },
    /// The change archive on a three-instance cluster of real eco and etcd
    /// processes: mixed-load throughput with the archive off and on
    /// (alternating), the archive's bytes per operation and segment upload
    /// p99, and `--points` sampled revisions restored with `eco restore
    /// --at-revision` and compared key for key with the source read at
    /// them. Needs `cargo build --release -p eco` and scripts/install-deps.sh.
    ArchiveBench {
        /// Seconds of load per run.
        #[arg(long, default_value_t = 60)]
        seconds: u64,
        /// Concurrent writers (spread over the three members).
        #[arg(long, default_value_t = 16)]
        clients: usize,
        /// Runs of each mode.
        #[arg(long, default_value_t = 3)]
        runs: usize,
        /// Sampled revisions restored and compared in each archive run.
        #[arg(long, default_value_t = 20)]
        points: usize,
        /// Seed of the choice of points.
        #[arg(long, default_value_t = 1)]
        seed: u64,
        /// Only runs with the archive on (the points in time, without the
        /// throughput comparison).
        #[arg(long)]
        archive_only: bool,
        /// `snapshot.interval` of the instances, in seconds (each
        /// snapshot starts a new chain: a point is replayed from the
        /// newest snapshot at or before it).
        #[arg(long, default_value_t = 600, value_parser = clap::value_parser!(u64).range(10..))]
        snapshot_interval_s: u64,
        #[command(flatten)]
        binaries: Binaries,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// Write throughput of a three-instance cluster of real eco and etcd
    /// processes without TLS and with generated TLS on both etcd surfaces,
    /// alternating in one invocation; prints the medians and their ratio.
    /// Needs `cargo build --release -p eco` and scripts/install-deps.sh.
    TlsBench {
        /// Seconds of writes per run.
        #[arg(long, default_value_t = 20)]
        seconds: u64,
        /// Concurrent writers (spread over the three members).
        #[arg(long, default_value_t = 16)]
        clients: usize,
        /// Runs of each mode.
        #[arg(long, default_value_t = 3)]
        runs: usize,
        #[command(flatten)]
        binaries: Binaries,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
}

/// The binaries a benchmark runs.
#[derive(clap::Args)]
struct Binaries {
    /// Directory with etcd, etcdctl and etcdutl [default: .tools/etcd-3.5/bin].
    #[arg(long)]
    etcd_bin_dir: Option<PathBuf>,
    /// The eco binary [default: $ECO_BIN, else target/release/eco].
    #[arg(long)]
    eco_bin: Option<PathBuf>,
}

impl Binaries {
    /// The etcd directory given, or the workspace's etcd 3.5.
    fn etcd_bin_dir(&self) -> PathBuf {
        self.etcd_bin_dir
            .clone()
            .unwrap_or_else(|| testkit::etcd::bin_dir_of(testkit::etcd::DEFAULT_VERSION))
    }

    /// The eco binary given, else `$ECO_BIN`, else the release build.
    fn eco(&self) -> PathBuf {
        self.eco_bin
            .clone()
            .or_else(|| std::env::var_os("ECO_BIN").map(PathBuf::from))
            .unwrap_or_else(|| testkit::workspace_root().join("target/release/eco"))
    }
}

/// `simulations chaos`'s options.
#[derive(clap::Args)]
struct ChaosArgs {
    /// Scenario names, comma-separated, or `all`.
    #[arg(long, value_delimiter = ',', default_value = "all")]
    scenario: Vec<String>,
    /// Instances in the group (3 or 5).
    #[arg(long, default_value_t = 3)]
    instances: usize,
    /// Print one JSON object `{"scenarios": [...]}`.
    #[arg(long)]
    json: bool,
    /// Also write a Markdown report and one SVG timeline per scenario
    /// into this directory.
    #[arg(long)]
    out: Option<PathBuf>,
    /// `recovery.quorum_loss_timeout` of the instances, in seconds.
    #[arg(long, default_value_t = 5)]
    quorum_loss_timeout_s: u64,
    /// Writes per second of the load.
    #[arg(long, default_value_t = 200)]
    rate: u32,
    /// Concurrent writers sharing --rate (one write in flight each; one
    /// writer reaches about 1 / the commit latency: more for ≥ 500/s).
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=64))]
    writers: u32,
    /// Runs of each scenario; the report adds their medians.
    #[arg(long, default_value_t = 1)]
    runs: usize,
    /// Keep every run's directory under <out>/runs (logs of eco and
    /// etcd), not only those of failed runs.
    #[arg(long)]
    keep: bool,
    /// Directory with etcd, etcdctl, etcdutl [default: .tools/etcd-3.5/bin].
    #[arg(long)]
    etcd_bin_dir: Option<PathBuf>,
    /// The eco binary [default: $ECO_BIN, else target/release/eco].
    #[arg(long)]
    eco_bin: Option<PathBuf>,
    /// A soak instead of the matrix: random faults of the matrix's
    /// vocabulary, one at a time, for --duration, under the write ledger.
    #[arg(long)]
    monkey: bool,
    /// How long the soak lasts (`30m`, `3m`).
    #[arg(long, default_value = "30m", value_parser = humantime::parse_duration)]
    duration: std::time::Duration,
    /// The soak's seed: the same seed, the same schedule of faults.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Where the group and the store come from: `static` (a group file
    /// and a directory store) or `aws` (an auto-scaling group and S3 on
    /// the local AWS emulator, `make deps` installs it).
    #[arg(long, default_value = "static", value_parser = ["static", "aws"])]
    provider: String,
    /// TLS on etcd's client and peer surfaces (client certificates
    /// required), from a CA the run makes.
    #[arg(long)]
    tls: bool,
    /// etcd's authentication on: eco is `root` with a password file, JWT
    /// tokens (ES256).
    #[arg(long)]
    auth: bool,
}

fn main() {
    match Cli::parse().command {
        Command::Chaos(args) => {
            let code = chaos_command(args);
            std::process::exit(code);
        }
        Command::ScaleBench {
            sizes_mib,
            runs,
            stores,
            measure,
            binaries,
            work_dir,
            json,
        } => {
            if let Some(dir) = &work_dir {
                if let Err(e) = std::fs::create_dir_all(dir) {
                    eprintln!("scale-bench: --work-dir {}: {e}", dir.display());
                    std::process::exit(2);
                }
                // SAFETY: no other thread runs yet (every runtime and
                // process is started below); the clusters' temporary
                // directories (testkit) follow TMPDIR.
                unsafe { std::env::set_var("TMPDIR", dir) };
            }
            let opts = scale_bench::Options {
                measure,
                sizes_mib,
                runs,
                etcd_bin_dir: binaries.etcd_bin_dir(),
                eco_bin: binaries.eco(),
                work_dir,
                stores,
            };
            match scale_bench::run(&opts) {
                Ok(r) if json => {
                    println!("{}", serde_json::to_string_pretty(&r).unwrap_or_default());
                }
                Ok(r) => print!("{}", scale_bench::render(&r)),
                Err(e) => {
                    eprintln!("scale-bench: {e:#}");
                    std::process::exit(1);
                }
            }
        }
        Command::ArchiveBench {
            seconds,
            clients,
            runs,
            points,
            seed,
            archive_only,
            snapshot_interval_s,
            binaries,
            json,
        } => {
            let opts = archive_bench::Options {
                eco: binaries.eco(),
                etcd_bin_dir: binaries.etcd_bin_dir(),
                seconds,
                clients,
                runs,
                points,
                seed,
                archive_only,
                snapshot_interval: std::time::Duration::from_secs(snapshot_interval_s),
            };
            match archive_bench::run(&opts) {
                Ok(r) if json => {
                    println!("{}", serde_json::to_string_pretty(&r).unwrap_or_default())
                }
                Ok(r) => println!(
                    "ops/s (median of {runs}): archive off {:.0}, on {:.0}, ratio {:.3}; {:.0} store bytes per op; {} points restored, {} differing ({clients} writers, {seconds} s per run)",
                    r.off_median_per_s,
                    r.on_median_per_s,
                    r.ratio,
                    r.bytes_per_op,
                    r.points_checked,
                    r.points_differing
                ),
                Err(e) => {
                    eprintln!("archive-bench: {e:#}");
                    std::process::exit(1);
                }
            }
        }
        Command::TlsBench {
            seconds,
            clients,
            runs,
            binaries,
            json,
        } => {
            let opts = tls_bench::Options {
                eco: binaries.eco(),
                etcd_bin_dir: binaries.etcd_bin_dir(),
                seconds,
                clients,
                runs,
            };
            match tls_bench::run(&opts) {
                Ok(r) if json => {
                    println!("{}", serde_json::to_string_pretty(&r).unwrap_or_default())
                }
                Ok(r) => println!(
                    "writes/s (median of {runs}): plaintext {:.0}, generated TLS {:.0}, ratio {:.2} ({clients} writers, {seconds} s per run)",
                    r.plain_median_per_s, r.tls_median_per_s, r.tls_ratio
                ),
                Err(e) => {
                    eprintln!("tls-bench: {e:#}");
                    std::process::exit(1);
                }
            }
        }
        Command::SnapshotBench {
            size_mib,
            runs,
            binaries,
            work_dir,
            store,
            part_size_mib,
            parts_in_flight,
            encoding,
            compression_level,
            fill,
            keep,
            json,
        } => {
            if store != snapshot_bench::Store::S3
                && (part_size_mib.is_some() || parts_in_flight.is_some())
            {
                eprintln!("snapshot-bench: --part-size-mib and --parts-in-flight need --store s3");
                std::process::exit(2);
            }
            if store != snapshot_bench::Store::Dir && encoding != snapshot_bench::Encoding::None {
                eprintln!("snapshot-bench: --encoding needs --store dir");
                std::process::exit(2);
            }
            let opts = snapshot_bench::Options {
                size_mib,
                runs,
                etcd_bin_dir: Some(binaries.etcd_bin_dir()),
                eco_bin: Some(binaries.eco()),
                work_dir,
                store,
                part_size_mib,
                parts_in_flight,
                encoding,
                compression_level,
                fill,
                keep,
            };
            match snapshot_bench::run(&opts) {
                Ok(r) if json => {
                    println!("{}", serde_json::to_string_pretty(&r).unwrap_or_default());
                }
                Ok(r) => print!("{}", snapshot_bench::render(&r)),
                Err(e) => {
                    eprintln!("snapshot-bench: error: {e:#}");
                    std::process::exit(1);
                }
            }
        }
        Command::SimTurmoil {
            seeds,
            from,
            nodes,
            seed,
            json,
        } => sim_turmoil(seeds, from, &nodes, seed, json),
        Command::Sim {
            seeds,
            from,
            seed,
            json,
        } => {
            let faults = recovery::fenced::Faults::default();
            if let Some(seed) = seed {
                let (outcome, text) = recovery::fenced::harness::replay(seed, &faults);
                if json {
                    println!(
                        "{}",
                        serde_json::to_string_pretty(&outcome).unwrap_or_default()
                    );
                } else {
                    print!("{text}");
                }
                std::process::exit(i32::from(!outcome.violations.is_empty()));
            }
            let s = recovery::fenced::harness::run_many(from..from + seeds, &faults);
            if json {
                println!("{}", serde_json::to_string_pretty(&s).unwrap_or_default());
            } else {
                println!(
                    "seeds {}..{}: {} runs, {} with violations {:?} (first: {:?}); {} decided, decision p50 {:.1} s, p99 {:.1} s; {} steps",
                    from,
                    from + seeds,
                    s.runs,
                    s.violations,
                    s.failing_seeds,
                    s.first_violation,
                    s.decisions,
                    s.decision_p50_s,
                    s.decision_p99_s,
                    s.steps
                );
            }
            std::process::exit(i32::from(s.violations > 0));
        }
        Command::GossipBench {
            nodes,
            trials,
            seed,
            probe_ms,
            suspicion_ms,
            gossip_fanout,
            loss,
            pause_ms,
            json,
        } => {
            let tuning = simulations::gossip_sim::Tuning {
                probe: Duration::from_millis(probe_ms),
                suspicion: Duration::from_millis(suspicion_ms),
                gossip_fanout,
            };
            let faults = simulations::gossip_bench::Faults {
                loss,
                pause: Duration::from_millis(pause_ms),
            };
            let results: Vec<_> = nodes
                .iter()
                .map(|n| simulations::gossip_bench::run(*n, trials, seed, tuning, faults))
                .collect();
            if json {
                let text = if results.len() == 1 {
                    serde_json::to_string_pretty(&results[0])
                } else {
                    serde_json::to_string_pretty(&results)
                };
                println!("{}", text.unwrap_or_default());
            } else {
                println!(
                    "{:>6} {:>7} {:>13} {:>13} {:>16} {:>16} {:>18} {:>16} {:>16} {:>18}",
                    "nodes",
                    "trials",
                    "detect p50 s",
                    "detect p99 s",
                    "propagate p50 s",
                    "propagate p99 s",
                    "bytes/node/s",
                    "false downs/loss",
                    "paused down by",
                    "false downs/pause"
                );
                for r in results {
                    println!(
                        "{:>6} {:>7} {:>13.2} {:>13.2} {:>16.2} {:>16.2} {:>18.0} {:>16} {:>16} {:>18}",
                        r.nodes,
                        r.trials,
                        r.detect_p50_s,
                        r.detect_p99_s,
                        r.propagate_p50_s,
                        r.propagate_p99_s,
                        r.bytes_per_node_per_s,
                        r.false_downs_under_loss,
                        r.paused_node_marked_down_by,
                        r.false_downs_around_pause
                    );
                }
            }
        }
    }
}

/// `simulations sim-turmoil`.
fn sim_turmoil(seeds: u64, from: u64, nodes: &[usize], seed: Option<u64>, json: bool) {
    use simulations::fenced_turmoil;
    let faults = recovery::fenced::Faults::default();
    if let Some(seed) = seed {
        let n = nodes.first().copied().unwrap_or(3);
        let (outcome, text) = fenced_turmoil::replay(seed, n, &faults);
        if json {
            println!(
                "{}",
                serde_json::to_string_pretty(&outcome).unwrap_or_default()
            );
        } else {
            print!("{text}");
        }
        std::process::exit(i32::from(!outcome.violations.is_empty()));
    }
    let started = std::time::Instant::now();
    let s = fenced_turmoil::run_many(from..from + seeds, nodes, &faults, |o| {
        if o.lost_writes > 0 {
            eprintln!(
                "seed {} ({} instances): {} acknowledged write(s) lost that no surviving instance held",
                o.seed, o.nodes, o.lost_writes
            );
        }
        if !o.violations.is_empty() {
            eprintln!(
                "seed {} ({} instances): {:?}\n  replay: cargo run --release -p simulations -- sim-turmoil --seed {} --nodes {}",
                o.seed, o.nodes, o.violations, o.seed, o.nodes
            );
        }
    });
    if json {
        println!("{}", serde_json::to_string_pretty(&s).unwrap_or_default());
    } else {
        println!(
            "seeds {}..{} x sizes {:?}: {} runs in {:.1} s, {} with violations {:?} (first: {:?}); {} recovered through the protocol, {} with a second loss in a recovery's aftermath, {} correctly waiting, {} lost acknowledged writes no survivor held, {} lost {} as the documented residual; {} decisions, loss to record p50 {:.1} s, p99 {:.1} s; {} steps",
            from,
            from + seeds,
            nodes,
            s.runs,
            started.elapsed().as_secs_f64(),
            s.failing.len(),
            s.failing,
            s.first_violation,
            s.recovered,
            s.second_losses,
            s.waiting,
            s.runs_with_lost_writes,
            s.runs_with_residual,
            s.residual_writes,
            s.decisions,
            s.decision_p50_s,
            s.decision_p99_s,
            s.steps
        );
    }
    std::process::exit(i32::from(!s.failing.is_empty()));
}

/// `simulations chaos`; returns the exit code.
fn chaos_command(args: ChaosArgs) -> i32 {
    let ChaosArgs {
        scenario: names,
        instances,
        json,
        out,
        quorum_loss_timeout_s,
        rate,
        writers,
        runs,
        keep,
        etcd_bin_dir,
        eco_bin,
        monkey,
        duration,
        seed,
        provider,
        tls,
        auth,
    } = args;
    let aws = provider == "aws";
    if aws && monkey {
        eprintln!("chaos: the soak runs on the static provider; --provider aws runs the matrix");
        return 2;
    }
    let root = testkit::workspace_root();
    let scenarios = match chaos::parse_scenarios(&names) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("chaos: {e:#}");
            return 2;
        }
    };
    if !(3..=7).contains(&instances) {
        eprintln!("chaos: --instances must be 3 to 7");
        return 2;
    }
    let eco = eco_bin
        .or_else(|| std::env::var_os("ECO_BIN").map(PathBuf::from))
        .unwrap_or_else(|| root.join("target/release/eco"));
    if !eco.exists() {
        eprintln!(
            "chaos: {} does not exist: build it with `cargo build --release -p eco` (or pass --eco-bin)",
            eco.display()
        );
        return 2;
    }
    let etcd_bin_dir =
        etcd_bin_dir.unwrap_or_else(|| testkit::etcd::bin_dir_of(testkit::etcd::DEFAULT_VERSION));
    let work = out
        .clone()
        .unwrap_or_else(|| root.join("target/chaos"))
        .join("runs");
    let opts = chaos::Options {
        scenarios,
        instances,
        eco,
        etcd_bin_dir,
        quorum_loss_timeout_s,
        rate,
        writers,
        work,
        runs,
        keep,
        aws,
        tls,
        auth,
    };
    if monkey {
        return monkey_command(&opts, duration, seed, json, out.as_deref());
    }
    let outcomes = chaos::run_all(&opts);
    let medians = chaos::medians::summarize(&outcomes);
    if json {
        let doc = serde_json::json!({ "scenarios": outcomes, "medians": medians });
        println!("{}", serde_json::to_string_pretty(&doc).unwrap_or_default());
    } else {
        print!("{}", chaos::report::table(&outcomes));
        if runs > 1 {
            println!("\nMedians over {runs} runs:\n");
            print!("{}", chaos::medians::markdown_table(&medians));
        }
    }
    if let Some(dir) = out {
        let command = format!(
            "cargo run --release -p simulations -- chaos --scenario {} --instances {instances} --runs {runs} --provider {provider}{}{}",
            names.join(","),
            if tls { " --tls" } else { "" },
            if auth { " --auth" } else { "" }
        );
        let write = || -> std::io::Result<()> {
            std::fs::create_dir_all(&dir)?;
            let report = dir.join(format!("report-{instances}.md"));
            let mut text = chaos::report::markdown(&outcomes, &command);
            if runs > 1 {
                text.push_str(&format!(
                    "## Medians over {runs} runs\n\n{}",
                    chaos::medians::markdown_table(&medians)
                ));
            }
            std::fs::write(&report, text)?;
            for o in outcomes.iter().filter(|o| o.skipped.is_none()) {
                std::fs::write(
                    dir.join(chaos::report::svg_file_name(o)),
                    chaos::report::svg(o),
                )?;
            }
            Ok(())
        };
        if let Err(e) = write() {
            eprintln!("chaos: cannot write the report into {}: {e}", dir.display());
            return 1;
        }
    }
    i32::from(outcomes.iter().any(|o| !o.passed))
}

/// `simulations chaos --monkey`; returns the exit code.
fn monkey_command(
    opts: &chaos::Options,
    duration: std::time::Duration,
    seed: u64,
    json: bool,
    out: Option<&std::path::Path>,
) -> i32 {
    let report = chaos::monkey::run(opts, duration, seed);
    let text = chaos::monkey::render(&report);
    if json {
        println!(
            "{}",
            serde_json::to_string_pretty(&report).unwrap_or_default()
        );
    } else {
        print!("{text}");
    }
    if let Some(dir) = out {
        let file = dir.join(format!("monkey-{}-s{seed}.txt", opts.instances));
        if let Err(e) = std::fs::create_dir_all(dir).and_then(|()| std::fs::write(&file, &text)) {
            eprintln!("chaos: cannot write {}: {e}", file.display());
            return 1;
        }
    }
    i32::from(!report.passed)
}
