//! `gossip-bench`: on the turmoil harness, per cluster size, over trials:
//! time until every live node marks a crashed node down, time until a
//! PeerState change reaches every node, and bytes sent per node per second
//! in steady state. Simulated time: deterministic for a seed.

use crate::gossip_sim::{self, name};
use gossip::GossipMetrics;
use std::time::Duration;

#[derive(Clone, Debug, serde::Serialize)]
pub struct BenchResult {
    pub nodes: usize,
    pub trials: usize,
    pub probe_period_ms: u64,
    pub detect_p50_s: f64,
    pub detect_p99_s: f64,
    pub propagate_p50_s: f64,
    pub propagate_p99_s: f64,
    pub bytes_per_node_per_s: f64,
}

/// After convergence, how long the join traffic is left to drain before
/// steady-state bandwidth is measured, and over how long it is measured.
/// The window is at least one republish interval long, so the periodic
/// republish is always inside it (it is 40 s at 100 nodes).
pub const SETTLE: Duration = Duration::from_secs(15);
pub const MIN_WINDOW: Duration = Duration::from_secs(20);

/// The bandwidth window for `n` nodes.
pub fn window(n: usize) -> Duration {
    MIN_WINDOW.max(gossip::GossipConfig::default_republish_every(n))
}

/// The p-th percentile (nearest rank) of `v`.
pub fn percentile(v: &mut [f64], p: f64) -> f64 {
    if v.is_empty() {
        return f64::NAN;
    }
    v.sort_by(|a, b| a.total_cmp(b));
    let rank = ((p / 100.0) * v.len() as f64).ceil().max(1.0) as usize;
    v[rank.min(v.len()) - 1]
}

fn bytes_sent(board: &gossip_sim::Shared) -> u64 {
    board
        .lock()
        .map(|b| {
            b.metrics
                .values()
                .map(|m| GossipMetrics::get(&m.bytes_sent))
                .sum()
        })
        .unwrap_or(0)
}

/// One trial; `None` if the cluster did not converge.
fn trial(n: usize, seed: u64, probe: Duration) -> Option<(f64, f64, f64)> {
    let (mut sim, board) = gossip_sim::build(n, seed, 0.0, probe);
    let all: Vec<String> = (0..n).map(name).collect();
    gossip_sim::step_until(&mut sim, Duration::from_secs(120), || {
        gossip_sim::converged(&board, &all, &[], |_| "up".into())
    })?;
    // Steady-state bandwidth: let the join traffic drain, then measure.
    gossip_sim::step_until(&mut sim, SETTLE, || false);
    let before = bytes_sent(&board);
    let window = window(n);
    gossip_sim::step_until(&mut sim, window, || false);
    let bw = (bytes_sent(&board) - before) as f64 / n as f64 / window.as_secs_f64();
    // Propagation of a state change from n0.
    if let Ok(mut b) = board.lock() {
        b.wanted_phase.insert(name(0), "changed".into());
    }
    let phase = |h: &str| {
        if h == "n0" {
            "changed".to_string()
        } else {
            "up".to_string()
        }
    };
    let propagate = gossip_sim::step_until(&mut sim, Duration::from_secs(60), || {
        gossip_sim::converged(&board, &all, &[], phase)
    })?;
    // Detection of a crashed node.
    let victim = name(n - 1);
    sim.crash(victim.as_str());
    let live: Vec<String> = all.iter().filter(|h| **h != victim).cloned().collect();
    let dead = vec![victim];
    let detect = gossip_sim::step_until(&mut sim, Duration::from_secs(60), || {
        gossip_sim::converged(&board, &live, &dead, phase)
    })?;
    Some((detect.as_secs_f64(), propagate.as_secs_f64(), bw))
}

pub fn run(n: usize, trials: usize, seed: u64, probe: Duration) -> BenchResult {
    let (mut detect, mut propagate, mut bw) = (Vec::new(), Vec::new(), Vec::new());
    for t in 0..trials {
        match trial(n, seed.wrapping_add(t as u64 * 7919), probe) {
            Some((d, p, b)) => {
                detect.push(d);
                propagate.push(p);
                bw.push(b);
            }
            None => eprintln!("gossip-bench: nodes={n} trial {t} did not converge"),
        }
    }
    let mean_bw = if bw.is_empty() {
        f64::NAN
    } else {
        bw.iter().sum::<f64>() / bw.len() as f64
    };
    BenchResult {
        nodes: n,
        trials: detect.len(),
        probe_period_ms: probe.as_millis() as u64,
        detect_p50_s: percentile(&mut detect.clone(), 50.0),
        detect_p99_s: percentile(&mut detect, 99.0),
        propagate_p50_s: percentile(&mut propagate.clone(), 50.0),
        propagate_p99_s: percentile(&mut propagate, 99.0),
        bytes_per_node_per_s: mean_bw,
    }
}
