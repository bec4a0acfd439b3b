//! `eco pause` and `eco resume`: the cluster-wide maintenance switch in
//! the configured store (`crate::store::pause`). Every instance sees it within
//! `pause::PAUSE_FRESH` plus one pass. A pause object that cannot be read
//! (corrupt, too large, or not committed by the store) is replaced by
//! `eco pause` and removed by `eco resume`, each saying so.

use crate::base::printable::printable;
use crate::config::Config;
use crate::store::pause::{self, Cleared, Pause, PauseError};

/// Pauses the cluster of `config`; what `eco pause` prints.
pub async fn pause(config: &Config, by: &str, reason: &str) -> anyhow::Result<String> {
    pause::check_input(by, reason).map_err(anyhow::Error::msg)?;
    let store = super::store(config).await?;
    let cluster = &config.cluster.name;
    let before = match pause::read(&*store, cluster).await {
        Ok(p) => p.map(|p| p.describe()),
        // Replaced below: say what is replaced.
        Err(e @ (PauseError::Unreadable { .. } | PauseError::Uncommitted { .. })) => {
            Some(printable(&e.to_string()).into_owned())
        }
        Err(e @ PauseError::Store(_)) => return Err(e.into()),
    };
    let p = Pause {
        by: by.to_string(),
        at_unix_ms: crate::base::wall_clock::unix_ms(),
        reason: reason.to_string(),
        // The cluster's format, as the store records it.
        format: crate::store::cluster_version::format_of(
            crate::store::cluster_version::finalized(&*store, cluster)
                .await?
                .as_ref(),
        ),
    };
    pause::write(&*store, cluster, &p).await?;
    let mut out = format!(
        "cluster {cluster}: {}\nevery instance sees it within {} s (eco status says so).",
        p.describe(),
        pause::PAUSE_FRESH.as_secs() + 1
    );
    if let Some(old) = before {
        out.push_str(&format!("\nit replaces: {old}"));
    }
    Ok(out)
}

/// Lifts the pause of `config`'s cluster; what `eco resume` prints.
pub async fn resume(config: &Config) -> anyhow::Result<String> {
    let store = super::store(config).await?;
    let cluster = &config.cluster.name;
    let again = pause::PAUSE_FRESH.as_secs() + 1;
    Ok(match pause::clear(&*store, cluster).await? {
        Cleared::Lifted(p) => format!(
            "cluster {cluster}: resumed (it was {}); eco acts again within {again} s",
            p.describe(),
        ),
        Cleared::Removed(why) => format!(
            "cluster {cluster}: resumed: removed {} ({}); eco acts again within {again} s",
            pause::object_name(cluster),
            printable(&why)
        ),
        Cleared::NotPaused => format!("cluster {cluster} was not paused; nothing to do"),
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
