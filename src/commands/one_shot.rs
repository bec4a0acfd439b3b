//! What every one-shot command shares: a small runtime for its async
//! work, its text on stdout (a closed pipe is not an error), its error in
//! one line on stderr, and the exit codes (0 done, 1 failed, 2 the config
//! or the arguments are wrong).

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
    match runtime.block_on(work) {
        Ok(text) => {
            print_out(&text);
            if !text.ends_with('\n') {
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
