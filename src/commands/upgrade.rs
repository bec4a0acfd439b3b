//! `eco upgrade finalize`: asks the group to switch to this release's
//! formats for good (`recovery::cluster_version`). It writes the request
//! to the store (`store::cluster_version`) and waits, bounded, for an
//! instance to record the finalization — which the instances do only once
//! every instance of the group reads the new format. After it, the
//! previous release of eco can no longer run against the cluster.

use crate::config::Config;
use crate::store::cluster_version::{self as stored, Request};
use recovery::cluster_version::{self as cv, Format};
use std::time::{Duration, Instant};

/// How often the store is asked while waiting.
const ASK_EVERY: Duration = Duration::from_secs(1);

/// Requests the finalization of this build's newest format and waits up to
/// `wait` for it; what `eco upgrade finalize` prints, or why it did not
/// happen in time.
pub async fn finalize(config: &Config, by: &str, wait: Duration) -> anyhow::Result<String> {
    let store = super::store(config).await?;
    let cluster = &config.cluster.name;
    let to: Format = cv::NEWEST;
    let holds = |f: Option<&stored::Finalized>| stored::format_of(f) >= to;
    let now = stored::finalized(&*store, cluster).await?;
    if let Some(f) = now.as_ref().filter(|f| holds(Some(f))) {
        return Ok(format!(
            "cluster {cluster} is already finalized at format {} (by {}: {})",
            f.format, f.by, f.reason
        ));
    }
    stored::request(
        &*store,
        cluster,
        &Request {
            to,
            by: by.to_string(),
            at_unix_ms: crate::base::wall_clock::unix_ms(),
        },
    )
    .await?;
    let started = Instant::now();
    loop {
        let now = stored::finalized(&*store, cluster).await?;
        if let Some(f) = now.filter(|f| holds(Some(f))) {
            return Ok(format!(
                "cluster {cluster}: finalized at format {} by {} after {} s; every instance writes it from now on, and eco releases before this one can no longer run against this cluster",
                f.format,
                f.by,
                started.elapsed().as_secs()
            ));
        }
        if started.elapsed() >= wait {
            anyhow::bail!(
                "cluster {cluster}: finalizing to format {to} was requested ({}) but is not recorded after {} s: the instances finalize only once every instance of the group runs a release that reads it; `eco status --cluster` shows which instance is behind (the request stays; they finalize when it is)",
                stored::request_name(cluster),
                wait.as_secs()
            );
        }
        tokio::time::sleep(ASK_EVERY).await;
    }
}
