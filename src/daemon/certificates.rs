//! Generated TLS in the daemon: before etcd starts, this instance's files
//! are issued from the cluster's CA (made here if the store has none and
//! the cluster never had one); then a task looks at them every
//! `recovery::certificates::check_period_s` and issues again what
//! `recovery::certificates::decide` says (near expiry, names changed,
//! another CA), with the gossip keys read again each time (a rotation
//! re-seals the CA). etcd reads its files on every handshake and eco on
//! every connection, so a renewal needs no restart.
//!
//! When the CA cannot be obtained (its object gone from the store, sealed
//! under keys this instance does not hold, the store unreachable), the
//! instance goes on with the certificates it holds while they are valid
//! (`recovery::certificates::without_ca`), saying why at every check; it
//! stops at start only when it holds nothing usable.

use crate::config::Config;
use crate::pki::provision::{self, CertificateOutcome};
use crate::provider::Identity;
use crate::store::ObjectStore;
use anyhow::Context;
use recovery::certificates::{Renewal, WithoutCa, check_period_s, without_ca};
use std::sync::Arc;
use std::time::Duration;
use tracing::Instrument;

/// The renewal task; stopped when dropped.
pub(super) struct RenewalTask(tokio::task::JoinHandle<()>);

impl Drop for RenewalTask {
    fn drop(&mut self) {
        self.0.abort();
    }
}

fn log(outcomes: &[CertificateOutcome]) {
    for o in outcomes {
        if let Renewal::Keep { renew_in_s } = o.renewal {
            tracing::debug!(certificate = o.file, renew_in_s, "certificate kept");
        }
    }
}

/// After `error` (this instance's files could not be issued from the CA):
/// whether it goes on with the files it holds, said in the log, or
/// (`Err`) cannot.
fn go_on_without_ca(config: &Config, error: anyhow::Error) -> anyhow::Result<()> {
    let now_unix = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs() as i64)
        .unwrap_or(0);
    match without_ca(now_unix, &provision::held_files(config)) {
        WithoutCa::KeepHeld { expires_in_s } => {
            tracing::error!(
                error = format!("{error:#}"),
                expires_in_s,
                "cannot issue this instance's TLS certificates from the cluster's CA: it goes on with the certificates it holds (no renewal until this is fixed; retried at every check)"
            );
            Ok(())
        }
        WithoutCa::Stop { reason } => Err(error.context(format!(
            "cannot issue this instance's TLS certificates from the cluster's CA, and it cannot go on without: {reason}"
        ))),
    }
}

/// Issues this instance's generated files now (an error stops eco before
/// etcd starts) and starts their renewal; `None` without generated TLS.
pub(super) async fn provision(
    config: &Config,
    me: &Identity,
    store: Option<&Arc<dyn ObjectStore>>,
    store_refusal: Option<&str>,
) -> anyhow::Result<Option<RenewalTask>> {
    let Some(generated) = &config.etcd.tls.generated else {
        return Ok(None);
    };
    let store = store
        .context("generated TLS keeps the cluster's CA in the snapshot store: set snapshot.store")?
        .clone();
    if let Some(why) = store_refusal {
        anyhow::bail!(
            "generated TLS makes the cluster's one CA by a conditional create in the store, which this store cannot hold ({why}): two instances could each make a CA and never trust each other"
        );
    }
    let keys = provision::gossip_keys(config)?;
    match provision::ensure_files(config, me, &*store, &keys).await {
        Ok(outcomes) => log(&outcomes),
        Err(e) => go_on_without_ca(config, e)?,
    }
    let period = Duration::from_secs(check_period_s(
        generated.validity().as_secs(),
        generated.renew_before().as_secs(),
    ));
    let (config, me) = (config.clone(), me.clone());
    let task = tokio::spawn(
        async move {
            let mut tick = tokio::time::interval(period);
            tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            tick.tick().await;
            loop {
                tick.tick().await;
                // Read again: a rotation of the gossip keys re-seals the CA
                // for the new key (and drops the retired one's seal).
                let keys = match provision::gossip_keys(&config) {
                    Ok(keys) => keys,
                    Err(e) => {
                        tracing::error!(error = format!("{e:#}"), "cannot read the gossip keys for the certificate check; retried at the next one");
                        continue;
                    }
                };
                match provision::ensure_files(&config, &me, &*store, &keys).await {
                    Ok(outcomes) => log(&outcomes),
                    Err(e) => {
                        if let Err(e) = go_on_without_ca(&config, e) {
                            tracing::error!(
                                error = format!("{e:#}"),
                                "this instance's TLS certificates cannot be renewed and those it holds are not usable; retried at the next check"
                            );
                        }
                    }
                }
            }
        }
        .in_current_span(),
    );
    Ok(Some(RenewalTask(task)))
}
