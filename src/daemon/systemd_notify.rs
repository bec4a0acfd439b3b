//! systemd's readiness protocol (`Type=notify`): with `NOTIFY_SOCKET` set
//! (systemd sets it for such a unit), eco tells systemd `READY=1` the first
//! time its instance is ready — its member started and healthy, what
//! `/readyz` answers — and keeps a `STATUS=` line with its phase and next
//! action and why (`systemctl status eco` shows it); `STOPPING=1` when it
//! shuts down. Without `NOTIFY_SOCKET` nothing is sent.
//!
//! What it does not do: decide readiness (the status does; this only
//! reports it), use the watchdog, or tell systemd a readiness lost later
//! (systemd has no such state: `/readyz` does).

use crate::api::status::{InstanceStatus, NextAction, Phase};
use sd_notify::NotifyState;
use tokio::sync::watch;

/// The longest `STATUS=` line sent (longer reasons are cut at a character
/// boundary).
const STATUS_MAX: usize = 400;

/// The `STATUS=` line: the phase, the next action and why.
pub fn status_line(phase: Phase, next: &NextAction) -> String {
    let mut line = format!("{}: {} — {}", phase.as_str(), next.action, next.reason);
    if line.len() > STATUS_MAX {
        let mut cut = STATUS_MAX;
        while !line.is_char_boundary(cut) {
            cut -= 1;
        }
        line.truncate(cut);
        line.push('…');
    }
    line.replace('\n', " ")
}

/// Follows `status` and tells systemd, until the status channel closes;
/// returns at once without `NOTIFY_SOCKET`.
pub fn spawn(mut status: watch::Receiver<InstanceStatus>) {
    if std::env::var_os("NOTIFY_SOCKET").is_none() {
        return;
    }
    tokio::spawn(async move {
        let mut told_ready = false;
        let mut told_stopping = false;
        let mut last_line = String::new();
        loop {
            let (ready, stopping, line) = {
                let s = status.borrow_and_update();
                (
                    s.ready,
                    s.phase == Phase::Stopping,
                    status_line(s.phase, &s.next),
                )
            };
            let mut states = Vec::new();
            if line != last_line {
                states.push(NotifyState::Status(&line));
            }
            if ready && !told_ready {
                states.push(NotifyState::Ready);
            }
            if stopping && !told_stopping {
                states.push(NotifyState::Stopping);
            }
            if !states.is_empty() {
                match sd_notify::notify(false, &states) {
                    Ok(()) => {
                        told_ready |= ready;
                        told_stopping |= stopping;
                        last_line = line.clone();
                    }
                    Err(e) => tracing::debug!(error = %e, "cannot notify systemd"),
                }
            }
            if status.changed().await.is_err() {
                return;
            }
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_status_line_is_one_bounded_line() {
        let mut next = NextAction {
            action: "nothing".into(),
            reason: "all members healthy".into(),
        };
        assert_eq!(
            status_line(Phase::Running, &next),
            "running: nothing — all members healthy"
        );
        next.reason = format!("é{}\nsecond line", "x".repeat(600));
        let line = status_line(Phase::Starting, &next);
        assert!(line.len() <= STATUS_MAX + '…'.len_utf8(), "{}", line.len());
        assert!(!line.contains('\n'));
        assert!(line.starts_with("starting: nothing — é"));
    }
}
