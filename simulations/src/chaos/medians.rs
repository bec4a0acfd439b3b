//! Several runs of one scenario folded into one row: how many passed, the
//! median of each timing, the worst loss. This is what `chaos --runs K`
//! prints after the per-run table, and what `docs/benchmarks.md` quotes.
//!
//! A timing that one run did not measure (e.g. "detect" in a scenario that
//! never stops etcd) is left out of that median; a row whose runs measured
//! nothing says `-`.

use super::outcome::Outcome;
use serde::Serialize;
use std::fmt::Write as _;

/// One scenario at one size over its runs.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ScenarioMedians {
    pub name: String,
    pub instances: usize,
    pub runs: usize,
    pub passed: usize,
    pub skipped: usize,
    /// The most acknowledged writes any run lost.
    pub max_lost_acked_writes: usize,
    pub median_time_to_detect_s: Option<f64>,
    pub median_time_to_writable_s: Option<f64>,
    pub median_time_to_full_membership_s: Option<f64>,
    /// Fastest and slowest full membership (the spread).
    pub min_time_to_full_membership_s: Option<f64>,
    pub max_time_to_full_membership_s: Option<f64>,
    /// Runs in which the cluster was reseeded.
    pub reseeded: usize,
}

/// The median of the measured values (the mean of the middle two for an
/// even count), `None` when none was measured.
pub fn median(values: impl IntoIterator<Item = Option<f64>>) -> Option<f64> {
    let mut v: Vec<f64> = values.into_iter().flatten().collect();
    if v.is_empty() {
        return None;
    }
    v.sort_by(f64::total_cmp);
    let m = v.len() / 2;
    let mid = if v.len() % 2 == 1 {
        v[m]
    } else {
        (v[m - 1] + v[m]) / 2.0
    };
    Some((mid * 10.0).round() / 10.0)
}

/// One row per (scenario, instances), in order of first appearance.
pub fn summarize(outcomes: &[Outcome]) -> Vec<ScenarioMedians> {
    let mut keys: Vec<(&str, usize)> = Vec::new();
    for o in outcomes {
        if !keys.contains(&(o.name.as_str(), o.instances)) {
            keys.push((o.name.as_str(), o.instances));
        }
    }
    keys.into_iter()
        .map(|(name, instances)| {
            let runs: Vec<&Outcome> = outcomes
                .iter()
                .filter(|o| o.name == name && o.instances == instances)
                .collect();
            let ran = || runs.iter().filter(|o| o.skipped.is_none());
            let full = || ran().map(|o| o.time_to_full_membership_s);
            ScenarioMedians {
                name: name.to_string(),
                instances,
                runs: runs.len(),
                passed: ran().filter(|o| o.passed).count(),
                skipped: runs.len() - ran().count(),
                max_lost_acked_writes: ran().map(|o| o.lost_acked_writes).max().unwrap_or(0),
                median_time_to_detect_s: median(ran().map(|o| o.time_to_detect_s)),
                median_time_to_writable_s: median(ran().map(|o| o.time_to_writable_s)),
                median_time_to_full_membership_s: median(full()),
                min_time_to_full_membership_s: full().flatten().min_by(f64::total_cmp),
                max_time_to_full_membership_s: full().flatten().max_by(f64::total_cmp),
                reseeded: ran().filter(|o| o.reseeded).count(),
            }
        })
        .collect()
}

fn seconds(v: Option<f64>) -> String {
    v.map_or_else(|| "-".to_string(), |s| format!("{s:.1}"))
}

/// A Markdown table of the medians (also readable on a terminal).
pub fn markdown_table(rows: &[ScenarioMedians]) -> String {
    let mut out = String::from(
        "| scenario | instances | passed | max lost | detect s (median) | writable s (median) | full membership s (median) | full membership s (min–max) | reseeded |\n\
         |---|---:|---|---:|---:|---:|---:|---:|---|\n",
    );
    for r in rows {
        let spread = match (
            r.min_time_to_full_membership_s,
            r.max_time_to_full_membership_s,
        ) {
            (Some(a), Some(b)) => format!("{a:.1}–{b:.1}"),
            _ => "-".to_string(),
        };
        let skipped = if r.skipped > 0 {
            format!(" ({} skipped)", r.skipped)
        } else {
            String::new()
        };
        let _ = writeln!(
            out,
            "| {} | {} | {}/{}{skipped} | {} | {} | {} | {} | {spread} | {}/{} |",
            r.name,
            r.instances,
            r.passed,
            r.runs - r.skipped,
            r.max_lost_acked_writes,
            seconds(r.median_time_to_detect_s),
            seconds(r.median_time_to_writable_s),
            seconds(r.median_time_to_full_membership_s),
            r.reseeded,
            r.runs - r.skipped,
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(name: &str, passed: bool, full: Option<f64>, lost: usize) -> Outcome {
        Outcome {
            name: name.into(),
            instances: 3,
            passed,
            lost_acked_writes: lost,
            time_to_full_membership_s: full,
            time_to_writable_s: Some(0.0),
            ..Outcome::default()
        }
    }

    #[test]
    fn median_of_odd_even_and_missing_values() {
        assert_eq!(median([Some(3.0), Some(1.0), Some(2.0)]), Some(2.0));
        assert_eq!(median([Some(4.0), None, Some(1.0)]), Some(2.5));
        assert_eq!(median([None, None]), None);
        assert_eq!(median([]), None);
    }

    #[test]
    fn one_row_per_scenario_with_passes_spread_and_worst_loss() {
        let rows = summarize(&[
            run("wipe-one", true, Some(0.8), 0),
            run("wipe-majority", true, Some(14.0), 0),
            run("wipe-one", false, Some(2.0), 3),
            run("wipe-one", true, Some(1.0), 0),
        ]);
        assert_eq!(rows.len(), 2);
        let w = &rows[0];
        assert_eq!((w.name.as_str(), w.runs, w.passed), ("wipe-one", 3, 2));
        assert_eq!(w.max_lost_acked_writes, 3);
        assert_eq!(w.median_time_to_full_membership_s, Some(1.0));
        assert_eq!(
            (
                w.min_time_to_full_membership_s,
                w.max_time_to_full_membership_s
            ),
            (Some(0.8), Some(2.0))
        );
        let table = markdown_table(&rows);
        assert!(table.contains("| wipe-one | 3 | 2/3 | 3 | - | 0.0 | 1.0 | 0.8–2.0 | 0/3 |"));
    }

    #[test]
    fn skipped_runs_are_not_counted_as_measured() {
        let mut s = run("partition-minority", true, None, 0);
        s.skipped = Some("not root".into());
        let rows = summarize(&[s.clone(), s]);
        assert_eq!((rows[0].runs, rows[0].skipped, rows[0].passed), (2, 2, 0));
        assert!(markdown_table(&rows).contains("0/0 (2 skipped)"));
    }
}
