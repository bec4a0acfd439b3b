//! The signals eco acts on:
//!
//! - SIGTERM and SIGINT: eco stops etcd itself, after a final snapshot;
//! - SIGHUP (`systemctl reload`, a closed terminal): never a stop. eco
//!   reads the group again and makes a pass at once (TLS files and the
//!   group file are read again then; the files eco watches while it runs
//!   are read anyway); the configuration file's other settings take
//!   effect at the next start. Ignored while eco starts (before its loop
//!   runs), and from the moment [`Hangup::ignore`] is called: before that
//!   nothing runs that a hangup could cut short.

use anyhow::Context;
use tokio::signal::unix::{Signal, SignalKind, signal};

/// SIGHUP handled (so no longer fatal), from early in the start.
pub(super) struct Hangup(Signal);

impl Hangup {
    pub fn ignore() -> anyhow::Result<Self> {
        Ok(Self(
            signal(SignalKind::hangup()).context("cannot handle SIGHUP")?,
        ))
    }
}

pub(super) struct Signals {
    term: Signal,
    int: Signal,
    hup: Signal,
}

/// What a signal asks of the running daemon.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Received {
    /// SIGTERM or SIGINT.
    Stop,
    /// SIGHUP.
    Reload,
}

impl Signals {
    pub fn new(hangup: Hangup) -> anyhow::Result<Self> {
        Ok(Self {
            term: signal(SignalKind::terminate()).context("cannot handle SIGTERM")?,
            int: signal(SignalKind::interrupt()).context("cannot handle SIGINT")?,
            hup: hangup.0,
        })
    }

    /// The next signal.
    pub async fn next(&mut self) -> Received {
        tokio::select! {
            _ = self.term.recv() => {
                tracing::info!("SIGTERM received");
                Received::Stop
            }
            _ = self.int.recv() => {
                tracing::info!("SIGINT received");
                Received::Stop
            }
            _ = self.hup.recv() => {
                tracing::info!("SIGHUP received: reading the group again and making a pass now (eco keeps running; the configuration file's other settings take effect at the next start)");
                Received::Reload
            }
        }
    }

    /// Waits for SIGTERM or SIGINT; a SIGHUP meanwhile is logged and
    /// changes nothing (eco is still starting).
    pub async fn recv(&mut self) {
        loop {
            tokio::select! {
                _ = self.term.recv() => {
                    tracing::info!("SIGTERM received");
                    return;
                }
                _ = self.int.recv() => {
                    tracing::info!("SIGINT received");
                    return;
                }
                _ = self.hup.recv() => {
                    tracing::info!("SIGHUP received while eco starts: nothing to reload yet; eco keeps going");
                }
            }
        }
    }
}
