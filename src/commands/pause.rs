//! `eco pause` and `eco resume`: the cluster-wide maintenance switch in
//! the configured store (`crate::pause`). Every instance sees it within
//! `pause::PAUSE_FRESH` plus one pass.

use crate::config::Config;
use crate::pause::{self, Pause};

/// Pauses the cluster of `config`; what `eco pause` prints.
pub async fn pause(config: &Config, by: &str, reason: &str) -> anyhow::Result<String> {
    anyhow::ensure!(
        !reason.trim().is_empty(),
        "say why (--reason): the other operators read it in eco status"
    );
    let store = super::store(config).await?;
    let cluster = &config.cluster.name;
    let before = pause::read(&*store, cluster).await?;
    let p = Pause {
        by: by.to_string(),
        at_unix_ms: crate::wall_clock::unix_ms(),
        reason: reason.to_string(),
    };
    pause::write(&*store, cluster, &p).await?;
    let mut out = format!(
        "cluster {cluster}: {}\nevery instance sees it within {} s (eco status says so).",
        p.describe(),
        pause::PAUSE_FRESH.as_secs() + 1
    );
    if let Some(old) = before {
        out.push_str(&format!("\nit replaces: {}", old.describe()));
    }
    Ok(out)
}

/// Lifts the pause of `config`'s cluster; what `eco resume` prints.
pub async fn resume(config: &Config) -> anyhow::Result<String> {
    let store = super::store(config).await?;
    let cluster = &config.cluster.name;
    Ok(match pause::clear(&*store, cluster).await? {
        Some(p) => format!(
            "cluster {cluster}: resumed (it was {}); eco acts again within {} s",
            p.describe(),
            pause::PAUSE_FRESH.as_secs() + 1
        ),
        None => format!("cluster {cluster} was not paused; nothing to do"),
    })
}

/// Who pauses, by default: `$USER@<host name>`.
pub fn default_by() -> String {
    let user = std::env::var("USER").unwrap_or_else(|_| "someone".into());
    let host = nix::unistd::gethostname()
        .ok()
        .and_then(|h| h.into_string().ok())
        .unwrap_or_else(|| "unknown host".into());
    format!("{user}@{host}")
}
