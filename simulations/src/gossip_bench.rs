//! `gossip-bench`: on the turmoil harness, per cluster size, over trials:
//! time until every live node marks a crashed node down, time until a
//! PeerState change reaches every node, bytes sent per node per second
//! in steady state, and the price of fast detection: the false "down"
//! verdicts about live nodes under packet loss and while one node is
//! paused. Simulated time: deterministic for a seed.

use crate::gossip_sim::{self, Tuning, name};
use gossip::GossipMetrics;
use std::time::Duration;

#[derive(Clone, Debug, serde::Serialize)]
pub struct BenchResult {
    pub nodes: usize,
    pub trials: usize,
    pub probe_period_ms: u64,
    pub suspicion_ms: u64,
    pub gossip_fanout: usize,
    pub detect_p50_s: f64,
    pub detect_p99_s: f64,
    pub propagate_p50_s: f64,
    pub propagate_p99_s: f64,
    pub bytes_per_node_per_s: f64,
    /// The packet loss of the loss window, and the false "down" verdicts
    /// (an observer marking a live node down) during it and until every
    /// node sees every other up again, summed over trials.
    pub loss: f64,
    pub loss_window_s: u64,
    pub false_downs_under_loss: u64,
    /// The pause, and how many observers marked the paused node down
    /// (summed over trials; each trial has n − 1 observers), and the false
    /// verdicts about any node in that phase.
    pub pause_ms: u64,
    pub paused_node_marked_down_by: u64,
    pub false_downs_around_pause: u64,
}

/// The faults a trial measures false verdicts under (none when zero).
#[derive(Clone, Copy, Debug, Default)]
pub struct Faults {
    /// Per-message loss rate during the loss window.
    pub loss: f64,
    /// How long one node's links hold every datagram (a paused process:
    /// nothing it sends leaves, what is sent to it waits).
    pub pause: Duration,
}

/// How long the loss window lasts.
pub const LOSS_WINDOW: Duration = Duration::from_secs(60);
/// How long after a fault the group has to see every node up again.
const RECOVER_WITHIN: Duration = Duration::from_secs(60);

/// Every (observer, node) "down" verdict so far, summed.
fn downs(board: &gossip_sim::Shared) -> u64 {
    board
        .lock()
        .map(|b| b.times_down.values().flat_map(|m| m.values()).sum())
        .unwrap_or(0)
}

/// How many observers have marked `node` down so far, in total.
fn downs_of(board: &gossip_sim::Shared, node: &str) -> u64 {
    board
        .lock()
        .map(|b| b.times_down.values().filter_map(|m| m.get(node)).sum())
        .unwrap_or(0)
}

/// What one trial measured.
struct Trial {
    detect: f64,
    propagate: f64,
    bandwidth: f64,
    false_downs_under_loss: u64,
    paused_marked_down_by: u64,
    false_downs_around_pause: u64,
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
fn trial(n: usize, seed: u64, tuning: Tuning, faults: Faults) -> Option<Trial> {
    let (mut sim, board) = gossip_sim::build(n, seed, 0.0, tuning);
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
    // False verdicts under packet loss: every node is alive throughout.
    let mut false_downs_under_loss = 0;
    if faults.loss > 0.0 {
        let before = downs(&board);
        sim.set_fail_rate(faults.loss);
        gossip_sim::step_until(&mut sim, LOSS_WINDOW, || false);
        sim.set_fail_rate(0.0);
        gossip_sim::step_until(&mut sim, RECOVER_WITHIN, || {
            gossip_sim::converged(&board, &all, &[], phase)
        })?;
        false_downs_under_loss = downs(&board) - before;
    }
    // A paused node: its datagrams held both ways, then let go.
    let (mut paused_marked_down_by, mut false_downs_around_pause) = (0, 0);
    if !faults.pause.is_zero() && n > 1 {
        let paused = name(1);
        let (before, before_paused) = (downs(&board), downs_of(&board, &paused));
        for other in all.iter().filter(|h| **h != paused) {
            sim.hold(paused.as_str(), other.as_str());
        }
        gossip_sim::step_until(&mut sim, faults.pause, || false);
        for other in all.iter().filter(|h| **h != paused) {
            sim.release(paused.as_str(), other.as_str());
        }
        gossip_sim::step_until(&mut sim, RECOVER_WITHIN, || {
            gossip_sim::converged(&board, &all, &[], phase)
        })?;
        paused_marked_down_by = downs_of(&board, &paused) - before_paused;
        false_downs_around_pause = downs(&board) - before;
    }
    // Detection of a crashed node.
    let victim = name(n - 1);
    sim.crash(victim.as_str());
    let live: Vec<String> = all.iter().filter(|h| **h != victim).cloned().collect();
    let dead = vec![victim];
    let detect = gossip_sim::step_until(&mut sim, Duration::from_secs(60), || {
        gossip_sim::converged(&board, &live, &dead, phase)
    })?;
    Some(Trial {
        detect: detect.as_secs_f64(),
        propagate: propagate.as_secs_f64(),
        bandwidth: bw,
        false_downs_under_loss,
        paused_marked_down_by,
        false_downs_around_pause,
    })
}

pub fn run(n: usize, trials: usize, seed: u64, tuning: Tuning, faults: Faults) -> BenchResult {
    let (mut detect, mut propagate, mut bw) = (Vec::new(), Vec::new(), Vec::new());
    let (mut under_loss, mut paused_down, mut around_pause) = (0, 0, 0);
    for t in 0..trials {
        match trial(n, seed.wrapping_add(t as u64 * 7919), tuning, faults) {
            Some(r) => {
                detect.push(r.detect);
                propagate.push(r.propagate);
                bw.push(r.bandwidth);
                under_loss += r.false_downs_under_loss;
                paused_down += r.paused_marked_down_by;
                around_pause += r.false_downs_around_pause;
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
        probe_period_ms: tuning.probe.as_millis() as u64,
        suspicion_ms: tuning.suspicion.as_millis() as u64,
        gossip_fanout: tuning.gossip_fanout,
        detect_p50_s: percentile(&mut detect.clone(), 50.0),
        detect_p99_s: percentile(&mut detect, 99.0),
        propagate_p50_s: percentile(&mut propagate.clone(), 50.0),
        propagate_p99_s: percentile(&mut propagate, 99.0),
        bytes_per_node_per_s: mean_bw,
        loss: faults.loss,
        loss_window_s: if faults.loss > 0.0 {
            LOSS_WINDOW.as_secs()
        } else {
            0
        },
        false_downs_under_loss: under_loss,
        pause_ms: faults.pause.as_millis() as u64,
        paused_node_marked_down_by: paused_down,
        false_downs_around_pause: around_pause,
    }
}
