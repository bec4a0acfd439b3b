//! The CLI's commands, whole: `eco run` ([`run`]), `eco status`
//! ([`status`], what `--config` needs: [`api_target`]; `--cluster`:
//! [`cluster_status`]), `eco snapshot`, `eco restore`, `eco config check`,
//! `eco pause`/`resume`, `eco certs`; what they share ([`one_shot`]).
//! `main.rs` only parses arguments and calls these. They reach the provider and
//! the store through the same factories as the daemon.

pub mod certs;
pub mod cluster_status;
pub mod config_check;
pub mod one_shot;
pub mod pause;
pub mod restore;
pub mod run;
pub mod snapshot;
pub mod status;
pub mod store_probe;
pub mod upgrade;

use crate::config::Config;
use crate::provider::Identity;
use crate::store::ObjectStore;
use std::sync::Arc;

/// The store the config names, or an error saying how to configure one.
pub async fn store(config: &Config) -> anyhow::Result<Arc<dyn ObjectStore>> {
    crate::store::from_config(config).await?.ok_or_else(|| {
        anyhow::anyhow!(
            "no snapshot store is configured: set snapshot.store = \"dir\" with [snapshot.dir] path, \"s3\" with [snapshot.s3] bucket, \"gcs\" with [snapshot.gcs] bucket, or \"azure\" with [snapshot.azure] account and container"
        )
    })
}

/// Where the instance of this config serves `/status`, and how to verify
/// it over TLS: `api.status_bind`, else `api.bind`, else its address from
/// the provider, else — an instance the provider no longer names (it left
/// its group) — the address its daemon recorded. With `[api.tls]`, the
/// certificate is verified against the API's trusted CA as the instance's
/// address or DNS name (from the provider, else as its daemon recorded it,
/// else the address connected to).
pub async fn api_target(
    config: &Config,
    instance_id: Option<&str>,
) -> anyhow::Result<crate::api::status_client::ApiTarget> {
    let data_dir = &config.etcd.data_dir;
    let tls_files = config.api.tls.files(&config.etcd);
    let fixed = config.api.status_bind.or(config.api.bind);
    let me = match (fixed, &tls_files) {
        (Some(_), None) => None,
        _ => Some(identity(config, instance_id).await),
    };
    let addr = match (fixed, me.as_ref()) {
        (Some(addr), _) => addr,
        (None, Some(Ok(me))) => std::net::SocketAddr::new(me.bind, config.api.port as u16),
        (None, Some(Err(e))) => crate::api::address::recorded(data_dir).ok_or_else(|| {
            anyhow::anyhow!(
                "{e:#}, and no daemon recorded its API address in {}",
                crate::api::address::file(data_dir).display()
            )
        })?,
        (None, None) => anyhow::bail!("no API address"),
    };
    let tls = match tls_files {
        None => None,
        Some(files) => {
            let server_name = match me {
                Some(Ok(me)) => me.host.to_string(),
                _ => match crate::api::address::recorded_tls_name(data_dir) {
                    Some(name) => name,
                    None if !addr.ip().is_unspecified() => addr.ip().to_string(),
                    None => anyhow::bail!(
                        "cannot tell the name the API's certificate carries: the provider does not name this instance and no daemon recorded it in {}; give --instance-id",
                        crate::api::address::file(data_dir).display()
                    ),
                },
            };
            Some(crate::api::tls::ApiClientTls {
                trusted_ca: files.trusted_ca,
                server_name,
            })
        }
    };
    Ok(crate::api::status_client::ApiTarget { addr, tls })
}

/// This instance as the config's provider knows it (`instance_id`: from
/// the command line or `ECO_INSTANCE_ID`, if given).
pub async fn identity(config: &Config, instance_id: Option<&str>) -> anyhow::Result<Identity> {
    let provider = crate::provider::from_config(config, instance_id).await?;
    Ok(provider.identity().clone())
}
