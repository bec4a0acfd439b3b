//! `eco snapshot now` and `eco snapshot list`.

use crate::base::printable::printable;
use crate::config::Config;
use crate::etcd::access::EtcdAccess;
use crate::local::state_file::StateFile;
use crate::snapshot::listing::{self, Listing};
use crate::snapshot::take::{self, SnapshotRequest, meta};
use anyhow::Context;

/// Takes a snapshot of this instance's etcd into the configured store.
pub async fn now(config: &Config, instance_id: Option<&str>) -> anyhow::Result<String> {
    let store = super::store(config).await?;
    let me = super::identity(config, instance_id).await?;
    let instance_id = me.id.as_str();
    let client_url = crate::etcd::flags::client_url(&config.etcd, &me.host);
    let state = StateFile::beside(&config.etcd.data_dir)
        .load_for(&config.cluster.name, instance_id)?
        .context("this instance has no state file: it is not part of a cluster yet")?;
    // The cluster's format, as the store records it (no record: format 1).
    let format = crate::store::cluster_version::format_of(
        crate::store::cluster_version::finalized(&*store, &config.cluster.name)
            .await
            .context("reading the cluster version")?
            .as_ref(),
    );
    let started = std::time::Instant::now();
    let taken = take::take(
        &*store,
        &EtcdAccess::for_eco(config),
        &SnapshotRequest {
            endpoint: client_url,
            cluster: config.cluster.name.clone(),
            incarnation: state.incarnation,
            token: state.cluster_token,
            instance: instance_id.to_string(),
            format,
        },
    )
    .await?;
    Ok(format!(
        "stored {} ({} bytes, sha256 {}, revision {}, in {:.2}s)",
        taken.name,
        taken.object.size,
        taken.object.sha256,
        taken.name.revision,
        started.elapsed().as_secs_f64()
    ))
}

/// The cluster's snapshots, oldest first (every page of the listing), and
/// the snapshot-named objects that are not this cluster's.
pub async fn list(config: &Config) -> anyhow::Result<Listing> {
    let store = super::store(config).await?;
    Ok(listing::list(&*store, &config.cluster.name).await?)
}

/// A table for humans; then the objects that are not this cluster's.
pub fn render(listing: &Listing) -> String {
    let objects = &listing.snapshots;
    let mut out = format!(
        "{:<80} {:>12} {:>12} {:>10}\n",
        "NAME", "REVISION", "SIZE", "INSTANCE"
    );
    for o in objects {
        let get = |k: &str| o.metadata.get(k).cloned().unwrap_or_else(|| "-".into());
        out.push_str(&format!(
            "{:<80} {:>12} {:>12} {:>10}\n",
            o.name,
            get(meta::REVISION),
            o.size,
            get(meta::INSTANCE)
        ));
    }
    out.push_str(&format!("{} snapshot(s)\n", objects.len()));
    out.push_str(&foreign(listing));
    out
}

/// The snapshot-named objects that are not this cluster's, one line each
/// (empty when none).
pub fn foreign(listing: &Listing) -> String {
    listing
        .foreign
        .iter()
        .map(|f| {
            format!(
                "not this cluster's, not listed or used: {} ({})\n",
                printable(&f.name),
                printable(&f.why)
            )
        })
        .collect()
}

/// `eco snapshot list`: the table, or with `json` the snapshots as JSON
/// (and the objects that are not this cluster's on stderr).
pub async fn list_text(config: &Config, json: bool) -> anyhow::Result<String> {
    let list = list(config).await?;
    if json {
        eprint!("{}", foreign(&list));
        Ok(serde_json::to_string_pretty(&list.snapshots)?)
    } else {
        Ok(render(&list))
    }
}
