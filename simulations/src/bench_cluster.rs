//! The cluster a benchmark runs on: three (or `form_of`'s number of) real eco and etcd
//! processes on loopback (`127.0.<net>.x`), a directory store, snapshots
//! every 10 minutes (none during a run), formed and all voters before it
//! returns; and its writers.

use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};
use testkit::cluster::{Cluster, Options as ClusterOptions, Stopping};
use testkit::config::ConfigBuilder;

/// Forms the cluster: `config` changes the instances' config,
/// `generated_tls` turns on TLS from the cluster's own CA; `key` makes the
/// gossip key its own. The cluster and its group.
pub fn form(
    eco: &Path,
    etcd_bin_dir: &Path,
    net: u8,
    key: usize,
    generated_tls: bool,
    config: impl FnOnce(ConfigBuilder) -> ConfigBuilder,
) -> anyhow::Result<(Cluster, Vec<String>)> {
    form_of(3, eco, etcd_bin_dir, net, key, generated_tls, config)
}

/// [`form`] with `size` instances.
pub fn form_of(
    size: usize,
    eco: &Path,
    etcd_bin_dir: &Path,
    net: u8,
    key: usize,
    generated_tls: bool,
    config: impl FnOnce(ConfigBuilder) -> ConfigBuilder,
) -> anyhow::Result<(Cluster, Vec<String>)> {
    let mut c = Cluster::new(ClusterOptions {
        eco: eco.to_path_buf(),
        root: None,
        network: testkit::cluster::Network::Loopback,
        net,
        config: config(
            Cluster::node_config("bench", etcd_bin_dir).snapshot_interval(Duration::from_secs(600)),
        ),
        gossip_key: testkit::cluster::key_pattern(key, 3),
        die_with_harness: true,
        stopping: Stopping {
            wait: Duration::from_secs(20),
            force: true,
        },
        aws: None,
        tls: false,
        generated_tls,
        loopback_source_name: true,
    })?;
    let group = c.launch(size)?;
    for id in &group {
        c.start(id)?;
    }
    let names: Vec<&str> = group.iter().map(String::as_str).collect();
    c.wait_voters(&names, Duration::from_secs(120))
        .ok_or_else(|| anyhow::anyhow!("the cluster did not form"))?;
    Ok((c, group))
}

/// Operations acknowledged and failed by [`write_for`]'s writers.
#[derive(Clone, Debug, Default)]
pub struct Counts {
    pub ok: Arc<AtomicU64>,
    pub failed: Arc<AtomicU64>,
}

/// Spawns `clients` writers on `runtime`'s current context, spread over
/// `endpoints`, each doing `operation(client, writer, n)` for n = 1, 2, …
/// until `until`; their handles.
pub fn write_for<F, Fut>(
    endpoints: &[String],
    clients: usize,
    until: Instant,
    counts: &Counts,
    operation: F,
) -> Vec<tokio::task::JoinHandle<()>>
where
    F: Fn(etcd_client::Client, usize, u64) -> Fut + Send + Sync + Clone + 'static,
    Fut: std::future::Future<Output = (etcd_client::Client, bool)> + Send,
{
    (0..clients)
        .map(|w| {
            let endpoint = vec![endpoints[w % endpoints.len()].clone()];
            let counts = counts.clone();
            let operation = operation.clone();
            tokio::spawn(async move {
                let options = testkit::etcd::options(
                    &endpoint,
                    Duration::from_secs(2),
                    Duration::from_secs(2),
                );
                let Ok(mut client) = etcd_client::Client::connect(endpoint, Some(options)).await
                else {
                    counts.failed.fetch_add(1, Ordering::Relaxed);
                    return;
                };
                let mut n = 0u64;
                while Instant::now() < until {
                    n += 1;
                    let (back, ok) = operation(client, w, n).await;
                    client = back;
                    let counter = if ok { &counts.ok } else { &counts.failed };
                    counter.fetch_add(1, Ordering::Relaxed);
                }
            })
        })
        .collect()
}
