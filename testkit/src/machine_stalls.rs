//! The moments the test machine itself stood still: a probe thread that
//! sleeps 20 ms at a time and syncs a 4 KiB write to disk after each
//! sleep, recording every step that took far longer than it should
//! (a sleep overslept, or an `fdatasync` that waited). A shared CI machine
//! sometimes stops every process on it for seconds (the scheduler, the
//! disk); etcd fsyncs its log before it acknowledges a write, so while
//! the disk stands still no cluster on this machine can acknowledge
//! anything, whatever eco does.
//!
//! The tests that bound a write gap ([`crate::timed_load`]) take the
//! machine's stalls within the gap out of it, and print both: the bound
//! holds for what the cluster and eco did, not for the machine. What the
//! probe cannot see is a stall of one process alone (eco's own threads
//! blocked): that stays in the gap, as it should.

use std::io::Write;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// How long the probe sleeps between its disk syncs.
const TICK: Duration = Duration::from_millis(20);

/// A step slower than this (beyond its own sleep) is a stall.
const STALL_OVER: Duration = Duration::from_millis(100);

/// The probe stops by itself after this long (a test that forgets to
/// finish it leaves no thread running for ever).
const AT_MOST: Duration = Duration::from_secs(900);

/// One span during which the machine stood still, and where its time
/// went: the probe's sleep (a 20 ms sleep that overslept: the scheduler
/// did not run the probe) and its 4 KiB `fdatasync` (the disk).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Stall {
    pub from: Instant,
    pub to: Instant,
    pub slept: Duration,
    pub synced: Duration,
}

/// The stalls a probe saw, in order.
#[derive(Debug, Clone, Default)]
pub struct Stalls(pub Vec<Stall>);

impl Stalls {
    /// How much of `from..to` the machine stood still.
    pub fn within(&self, from: Instant, to: Instant) -> Duration {
        self.0
            .iter()
            .map(|s| {
                let (a, b) = (s.from.max(from), s.to.min(to));
                b.saturating_duration_since(a)
            })
            .sum()
    }

    /// The stalls that overlap `from..to`, whole.
    pub fn overlapping(&self, from: Instant, to: Instant) -> Vec<Stall> {
        self.0
            .iter()
            .filter(|s| s.from < to && s.to > from)
            .copied()
            .collect()
    }

    /// The stalls as text relative to `origin`: `+12.3 s for 3200 ms, …`.
    pub fn describe(&self, origin: Instant) -> String {
        if self.0.is_empty() {
            return "none".into();
        }
        self.0
            .iter()
            .map(|s| {
                format!(
                    "+{:.1} s for {} ms",
                    s.from.saturating_duration_since(origin).as_secs_f64(),
                    (s.to - s.from).as_millis()
                )
            })
            .collect::<Vec<_>>()
            .join(", ")
    }
}

/// A running probe, stopped by [`StallProbe::finish`].
pub struct StallProbe {
    stop: Arc<AtomicBool>,
    thread: std::thread::JoinHandle<Stalls>,
}

impl StallProbe {
    /// Starts probing, syncing its writes to a file in `dir` (on the disk
    /// the test's etcd members write to). A `dir` that cannot take the
    /// file leaves the probe measuring sleeps only.
    pub fn start(dir: &Path) -> Self {
        let stop = Arc::new(AtomicBool::new(false));
        let path = dir.join("machine-stall-probe");
        let s = stop.clone();
        let thread = std::thread::spawn(move || probe(&path, &s));
        Self { stop, thread }
    }

    /// Stops the probe; the stalls it saw.
    pub fn finish(self) -> Stalls {
        self.stop.store(true, Ordering::Relaxed);
        self.thread.join().unwrap_or_default()
    }
}

fn probe(path: &Path, stop: &AtomicBool) -> Stalls {
    let mut file = std::fs::File::create(path).ok();
    let block = [0u8; 4096];
    let started = Instant::now();
    let mut stalls = Vec::new();
    while !stop.load(Ordering::Relaxed) && started.elapsed() < AT_MOST {
        let from = Instant::now();
        std::thread::sleep(TICK);
        let woke = Instant::now();
        if let Some(f) = file.as_mut() {
            let synced = f
                .write_all(&block)
                .and_then(|()| f.sync_data())
                .and_then(|()| f.set_len(0));
            if synced.is_err() {
                file = None;
            }
        }
        let to = Instant::now();
        if to - from > TICK + STALL_OVER {
            stalls.push(Stall {
                from,
                to,
                slept: woke - from,
                synced: to - woke,
            });
        }
    }
    drop(file);
    let _ = std::fs::remove_file(path);
    Stalls(stalls)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn within_counts_only_the_overlap() {
        let t = Instant::now();
        let ms = Duration::from_millis;
        let stall = |from: Duration, to: Duration| Stall {
            from: t + from,
            to: t + to,
            slept: ms(20),
            synced: to - from - ms(20),
        };
        let stalls = Stalls(vec![stall(ms(0), ms(300)), stall(ms(1000), ms(1500))]);
        assert_eq!(stalls.within(t + ms(200), t + ms(1200)), ms(100 + 200));
        assert_eq!(stalls.within(t + ms(400), t + ms(900)), Duration::ZERO);
        assert_eq!(stalls.within(t, t + ms(2000)), ms(800));
        assert_eq!(stalls.describe(t), "+0.0 s for 300 ms, +1.0 s for 500 ms");
        assert_eq!(stalls.overlapping(t + ms(200), t + ms(1200)), stalls.0);
        assert_eq!(
            stalls.overlapping(t + ms(1200), t + ms(2000)),
            vec![stalls.0[1]]
        );
        assert!(stalls.overlapping(t + ms(300), t + ms(1000)).is_empty());
    }

    #[test]
    fn a_quiet_probe_finishes_with_what_it_saw() {
        let dir = tempfile::tempdir().expect("temp dir");
        let probe = StallProbe::start(dir.path());
        std::thread::sleep(Duration::from_millis(200));
        let stalls = probe.finish();
        // Whatever it saw, every stall is longer than the threshold.
        assert!(stalls.0.iter().all(|s| s.to - s.from > STALL_OVER));
        assert!(stalls.0.iter().all(|s| s.slept + s.synced == s.to - s.from));
        assert!(!dir.path().join("machine-stall-probe").exists());
    }
}
