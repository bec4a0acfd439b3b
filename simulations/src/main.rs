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
}

fn main() {
    match Cli::parse().command {
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
