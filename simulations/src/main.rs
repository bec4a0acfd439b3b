//! `simulations`: deterministic simulations and benchmarks of eco's crates.

use clap::{Parser, Subcommand};
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
        /// SWIM probe period in milliseconds (the default LAN config: 500).
        #[arg(long, default_value_t = 500)]
        probe_ms: u64,
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
}

fn main() {
    match Cli::parse().command {
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
            json,
        } => {
            let results: Vec<_> = nodes
                .iter()
                .map(|n| {
                    simulations::gossip_bench::run(
                        *n,
                        trials,
                        seed,
                        Duration::from_millis(probe_ms),
                    )
                })
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
                    "{:>6} {:>7} {:>13} {:>13} {:>16} {:>16} {:>18}",
                    "nodes",
                    "trials",
                    "detect p50 s",
                    "detect p99 s",
                    "propagate p50 s",
                    "propagate p99 s",
                    "bytes/node/s"
                );
                for r in results {
                    println!(
                        "{:>6} {:>7} {:>13.2} {:>13.2} {:>16.2} {:>16.2} {:>18.0}",
                        r.nodes,
                        r.trials,
                        r.detect_p50_s,
                        r.detect_p99_s,
                        r.propagate_p50_s,
                        r.propagate_p99_s,
                        r.bytes_per_node_per_s
                    );
                }
            }
        }
    }
}
