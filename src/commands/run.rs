//! `eco run`: the config, the logging, the runtime, the provider (which
//! instance this is), then the daemon until a signal ends it.

use super::one_shot::load_or_exit;
use crate::{daemon, local::logging};
use std::path::PathBuf;
use std::process::ExitCode;

/// Runs the daemon of the config at `path`.
pub fn run(path: PathBuf, instance_id: Option<String>) -> ExitCode {
    let config = match load_or_exit(&path) {
        Ok(c) => c,
        Err(code) => return code,
    };
    logging::init(&config.log);
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(r) => r,
        Err(e) => {
            eprintln!("eco: error: cannot start the async runtime: {e}");
            return ExitCode::from(1);
        }
    };
    // Which instance this is comes from the provider; not knowing is a
    // configuration error (exit 2), like the config itself.
    let provider = match runtime.block_on(crate::provider::from_config(
        &config,
        instance_id.as_deref(),
    )) {
        Ok(p) => p,
        Err(e) => {
            tracing::error!("{e}");
            eprintln!("eco: error: {e}");
            let config_error = matches!(e, crate::provider::ProviderError::NoInstanceId);
            return ExitCode::from(if config_error { 2 } else { 1 });
        }
    };
    let result = runtime.block_on(daemon::run(config, Some(path), provider));
    match result {
        Ok(daemon::Exit::Signalled) => ExitCode::SUCCESS,
        Err(e) => {
            tracing::error!("{}", crate::base::error_report::one_line(&e));
            eprintln!("eco: error: {}", crate::base::error_report::one_line(&e));
            ExitCode::from(1)
        }
    }
}
