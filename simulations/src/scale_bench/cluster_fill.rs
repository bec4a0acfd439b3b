//! Filling an eco cluster of `scale-bench` to a size through all its
//! members, with the `kubernetes` mix, stopping at once if an instance
//! stops meanwhile; then everything synced to disk.

use crate::snapshot_bench::{Fill, Filled, fill_through};
use anyhow::{Context, bail};
use std::time::{Duration, Instant};
use testkit::cluster::Cluster;

pub(crate) fn fill_cluster(c: &Cluster, group: &[String], size_mib: u64) -> anyhow::Result<Filled> {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("tokio runtime")?;
    let endpoints = c.endpoints(group);
    let mut checked = Instant::now();
    let filled = rt.block_on(fill_through(
        &endpoints,
        size_mib,
        Fill::Kubernetes,
        &mut || {
            if checked.elapsed() > Duration::from_secs(5) {
                checked = Instant::now();
                let up = c.running();
                if up.len() < group.len() {
                    bail!("an instance stopped during the fill: running {up:?}");
                }
            }
            Ok(())
        },
    ))?;
    // SAFETY: sync(2) has no preconditions.
    unsafe { libc::sync() };
    Ok(filled)
}
