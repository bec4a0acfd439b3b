//! What one chaos scenario measured: the plain data the terminal table, the
//! JSON, the Markdown report and the SVG timeline are made from.

use serde::Serialize;

/// One second of the run, counted from the start of the write load.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Sample {
    /// Seconds since the load started (the sample covers `[t_s, t_s + 1)`).
    pub t_s: f64,
    /// Writes acknowledged in that second.
    pub writes_ok: u32,
    /// Writes that failed in that second.
    pub writes_failed: u32,
    /// Healthy voters at the last check in that second (a member that
    /// answers Status with a leader), `None` when nothing answered.
    pub healthy_voters: Option<u32>,
}

/// A moment worth marking on the timeline.
#[derive(Clone, Debug, Serialize)]
pub struct Mark {
    pub t_s: f64,
    /// "fault", "detected", "writable", "full membership", or a step of the
    /// scenario ("replaced", "restarted", ...).
    pub label: String,
}

/// The result of one scenario.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Outcome {
    pub name: String,
    pub instances: usize,
    /// Which run of the scenario this is (`chaos --runs K`: 0..K).
    pub run: usize,
    pub passed: bool,
    /// Why the scenario was not run (e.g. partitions need root and nft).
    pub skipped: Option<String>,
    /// Declared lossy: writes after the newest snapshot may be lost.
    pub lossy: bool,
    pub acked_writes: usize,
    pub failed_writes: usize,
    pub lost_acked_writes: usize,
    /// Lost writes allowed by a lossy scenario (acknowledged after the
    /// newest snapshot the recovery could use).
    pub allowed_loss: usize,
    /// Every disk lost: from the oldest missing acknowledged write to the
    /// kill (the archive's recovery point), and the acknowledged writes per
    /// second over the ten seconds before the kill (or since the load's
    /// first acknowledged write: the load it held).
    pub loss_window_s: Option<f64>,
    pub acked_per_s_before_loss: Option<f64>,
    pub time_to_detect_s: Option<f64>,
    pub time_to_writable_s: Option<f64>,
    pub time_to_full_membership_s: Option<f64>,
    /// Partition scenarios: the longest time the majority side went
    /// without an acknowledged write while the cut lasted, and the same
    /// from the first write the majority's new leader acknowledged (a
    /// higher raft term than before the cut: a cut-off leader costs one
    /// election and a write in flight to it; nothing else may stall the
    /// majority).
    pub max_write_gap_s: Option<f64>,
    pub max_write_gap_new_leader_s: Option<f64>,
    pub quorum_loss_timeout_s: f64,
    /// The cluster was reseeded (a new incarnation record appeared).
    pub reseeded: bool,
    /// Why it failed (empty when it passed).
    pub failures: Vec<String>,
    /// Things observed along the way (alerts, incarnations, ...).
    pub notes: Vec<String>,
    pub samples: Vec<Sample>,
    pub marks: Vec<Mark>,
}

impl Outcome {
    /// The majority's write gap the partition check holds to one election
    /// timeout: the whole cut's, or — when the leader was cut off, which
    /// costs one election — the one from the new leader's first write.
    pub fn majority_gap_s(&self) -> Option<f64> {
        if self.name == "partition-leader" {
            self.max_write_gap_new_leader_s
        } else {
            self.max_write_gap_s
        }
    }
}
