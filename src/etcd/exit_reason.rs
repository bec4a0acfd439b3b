//! Why etcd exited, in etcd's own words: the last fatal line of the run
//! that ended. etcd 3.5 logs JSON lines (`--logger=zap`) and ends a fatal
//! run with a line of level `fatal` or `panic` carrying `msg` and usually
//! `error`; etcd 3.4 logs capnslog text lines, the fatal one marked
//! ` C | ` (critical) or ` F | `, and a Go panic starts with `panic: `.
//!
//! [`FatalLine`] keeps the latest such line of a running etcd, fed line by
//! line from its output (piped into eco's log) or read back from the
//! part of its log file the run wrote.
//!
//! What it does not do: interpret the reason (the daemon adds what eco can
//! tell about a failing join), or keep anything but the one line.

use std::io::{Read, Seek, SeekFrom};
use std::path::Path;
use std::sync::{Arc, Mutex};

/// The longest reason kept (a fatal line with a stack trace is cut).
const MAX_REASON: usize = 1_024;
/// The most of a log file read back at an exit.
const MAX_TAIL: u64 = 256 * 1024;

/// The reason `line` states, if it is a fatal line of etcd 3.4 or 3.5.
pub fn fatal_reason(line: &str) -> Option<String> {
    let line = line.trim();
    if line.starts_with('{') {
        #[derive(serde::Deserialize)]
        struct Zap<'a> {
            level: &'a str,
            #[serde(default)]
            msg: String,
            #[serde(default)]
            error: Option<String>,
        }
        let z: Zap = serde_json::from_str(line).ok()?;
        if !matches!(z.level, "fatal" | "panic" | "dpanic") {
            return None;
        }
        let text = match z.error {
            Some(e) if !e.is_empty() => format!("{}: {e}", z.msg),
            _ => z.msg,
        };
        return Some(cut(text));
    }
    if let Some(rest) = line.strip_prefix("panic: ") {
        return Some(cut(format!("panic: {rest}")));
    }
    for mark in [" C | ", " F | "] {
        if let Some((_, rest)) = line.split_once(mark) {
            // "etcdmain: cannot fetch cluster info …": the package, then the text.
            return Some(cut(rest.to_string()));
        }
    }
    None
}

fn cut(mut text: String) -> String {
    if text.len() > MAX_REASON {
        let mut end = MAX_REASON;
        while !text.is_char_boundary(end) {
            end -= 1;
        }
        text.truncate(end);
        text.push('…');
    }
    text
}

/// The latest fatal line of a running etcd, shared between the reader of
/// its output and the supervisor.
#[derive(Clone, Debug, Default)]
pub struct FatalLine(Arc<Mutex<Option<String>>>);

impl FatalLine {
    /// Looks at one output line.
    pub fn see(&self, line: &str) {
        if let Some(reason) = fatal_reason(line) {
            *self.0.lock().unwrap_or_else(|p| p.into_inner()) = Some(reason);
        }
    }

    /// The reason seen, forgotten (for the next run).
    pub fn take(&self) -> Option<String> {
        self.0.lock().unwrap_or_else(|p| p.into_inner()).take()
    }
}

/// The last fatal line in what `path` gained after `from` (its length when
/// the run started), reading at most the last 256 KiB of it.
pub fn fatal_in_file(path: &Path, from: u64) -> Option<String> {
    let mut f = std::fs::File::open(path).ok()?;
    let len = f.metadata().ok()?.len();
    let start = from.max(len.saturating_sub(MAX_TAIL)).min(len);
    f.seek(SeekFrom::Start(start)).ok()?;
    let mut buf = Vec::new();
    f.take(MAX_TAIL).read_to_end(&mut buf).ok()?;
    String::from_utf8_lossy(&buf)
        .lines()
        .rev()
        .find_map(fatal_reason)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_etcd_3_5_and_3_4_fatal_lines() {
        let v35 = r#"{"level":"fatal","ts":"2026-11-26T23:19:21.611Z","caller":"etcdmain/etcd.go:203","msg":"discovery failed","error":"cannot fetch cluster info from peer urls: could not retrieve cluster information from the given URLs","stacktrace":"x"}"#;
        assert_eq!(
            fatal_reason(v35).as_deref(),
            Some(
                "discovery failed: cannot fetch cluster info from peer urls: could not retrieve cluster information from the given URLs"
            )
        );
        let v34 = "2026-11-26 23:19:21.683669 C | etcdmain: cannot fetch cluster info from peer urls: could not retrieve cluster information from the given URLs";
        assert_eq!(
            fatal_reason(v34).as_deref(),
            Some(
                "etcdmain: cannot fetch cluster info from peer urls: could not retrieve cluster information from the given URLs"
            )
        );
        assert_eq!(
            fatal_reason("panic: removed all voters").as_deref(),
            Some("panic: removed all voters")
        );
        for not in [
            r#"{"level":"info","msg":"starting"}"#,
            r#"{"level":"error","msg":"x"}"#,
            "2026-11-26 W | etcdserver: could not get cluster response",
            "",
            "{not json",
        ] {
            assert_eq!(fatal_reason(not), None, "{not}");
        }
        let long = format!(r#"{{"level":"fatal","msg":"{}"}}"#, "é".repeat(2_000));
        assert!(fatal_reason(&long).is_some_and(|r| r.len() <= MAX_REASON + '…'.len_utf8()));
    }

    #[test]
    fn keeps_the_latest_and_forgets_it_when_taken() {
        let f = FatalLine::default();
        f.see(r#"{"level":"fatal","msg":"first"}"#);
        f.see(r#"{"level":"info","msg":"noise"}"#);
        f.see(r#"{"level":"panic","msg":"second"}"#);
        assert_eq!(f.take().as_deref(), Some("second"));
        assert_eq!(f.take(), None);
    }

    #[test]
    fn reads_only_what_the_run_wrote_to_its_log_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("etcd.log");
        std::fs::write(&path, "{\"level\":\"fatal\",\"msg\":\"an earlier run\"}\n").unwrap();
        let from = std::fs::metadata(&path).unwrap().len();
        assert_eq!(fatal_in_file(&path, from), None, "nothing new");
        use std::io::Write;
        let mut f = std::fs::OpenOptions::new()
            .append(true)
            .open(&path)
            .unwrap();
        writeln!(f, "{{\"level\":\"info\",\"msg\":\"starting\"}}").unwrap();
        writeln!(f, "{{\"level\":\"fatal\",\"msg\":\"this run\"}}").unwrap();
        assert_eq!(fatal_in_file(&path, from).as_deref(), Some("this run"));
        assert_eq!(fatal_in_file(&dir.path().join("missing"), 0), None);
    }
}
