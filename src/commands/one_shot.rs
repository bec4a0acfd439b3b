//! What every one-shot command shares: a small runtime for its async
//! work, its text on stdout (a closed pipe is not an error), its error in
//! one line on stderr, and the exit codes (0 done, 1 failed, 2 the config
//! or the arguments are wrong, 130 / 143 stopped by SIGINT / SIGTERM).
//!
//! A SIGINT or SIGTERM stops the work by dropping it, so what it holds is
//! undone as on any early return: a throwaway etcd (spawned with
//! `kill_on_drop`) is killed and its temporary directory removed, instead
//! of outliving the command on its loopback ports. What the work had
//! already made durable stays (every such step is written to survive a
//! crash anyway).

use crate::config::{self, Config};
use std::process::ExitCode;

/// The small runtime a one-shot command's async work runs on (one
/// thread: a command waits on one thing at a time).
pub fn small_runtime() -> std::io::Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
}

/// Runs `work` on a small runtime; prints its text or its error.
pub fn one_shot(work: impl std::future::Future<Output = anyhow::Result<String>>) -> ExitCode {
    let runtime = match small_runtime() {
        Ok(r) => r,
        Err(e) => {
            eprintln!("eco: error: cannot start the async runtime: {e}");
            return ExitCode::from(1);
        }
    };
    let ended = runtime.block_on(async {
        let mut stop = match Stop::listen() {
            Ok(stop) => stop,
            Err(e) => return Ended::Done(Err(e)),
        };
        tokio::select! {
            done = work => Ended::Done(done),
            signal = stop.recv() => Ended::Stopped(signal),
        }
    });
    // The work's future is dropped by now (its children killed, its
    // temporary directories removed).
    let done = match ended {
        Ended::Done(done) => done,
        Ended::Stopped(signal) => {
            eprintln!(
                "eco: stopped by {}: what was under way is undone (a throwaway etcd killed, its temporary files removed)",
                signal.name()
            );
            return ExitCode::from(signal.exit_code());
        }
    };
    match done {
        Ok(text) => {
            print_out(&text);
            // (Empty: the command wrote its own output, an archive.)
            if !text.is_empty() && !text.ends_with('\n') {
                print_out("\n");
            }
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("eco: error: {}", crate::base::error_report::one_line(&e));
            ExitCode::from(1)
        }
    }
}

/// How a one-shot command's work ended.
enum Ended {
    Done(anyhow::Result<String>),
    Stopped(StopSignal),
}

/// The signals that stop a one-shot command.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum StopSignal {
    Interrupt,
    Terminate,
}

impl StopSignal {
    fn name(self) -> &'static str {
        match self {
            StopSignal::Interrupt => "SIGINT",
            StopSignal::Terminate => "SIGTERM",
        }
    }

    /// 128 + the signal's number, as a shell reports a process it killed.
    fn exit_code(self) -> u8 {
        match self {
            StopSignal::Interrupt => 130,
            StopSignal::Terminate => 143,
        }
    }
}

/// SIGINT and SIGTERM, handled (no longer fatal) while a command runs.
struct Stop {
    int: tokio::signal::unix::Signal,
    term: tokio::signal::unix::Signal,
}

impl Stop {
    fn listen() -> anyhow::Result<Stop> {
        use anyhow::Context;
        use tokio::signal::unix::{SignalKind, signal};
        Ok(Stop {
            int: signal(SignalKind::interrupt()).context("cannot handle SIGINT")?,
            term: signal(SignalKind::terminate()).context("cannot handle SIGTERM")?,
        })
    }

    async fn recv(&mut self) -> StopSignal {
        tokio::select! {
            _ = self.int.recv() => StopSignal::Interrupt,
            _ = self.term.recv() => StopSignal::Terminate,
        }
    }
}

/// The config at `path`, or exit code 2 with the problem said.
pub fn load_or_exit(path: &std::path::Path) -> Result<Config, ExitCode> {
    config::load_file(path).map_err(|e| {
        eprintln!("eco: {e}");
        ExitCode::from(2)
    })
}

/// Prints to stdout; a closed pipe (`eco version | head -1`) is not an error.
pub fn print_out(text: &str) {
    use std::io::Write;
    let _ = std::io::stdout().write_all(text.as_bytes());
}
