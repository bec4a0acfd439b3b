//! `eco certs client`: a client certificate from the cluster's generated CA
//! (`[etcd.tls.generated]`), so an operator can use `etcdctl` against the
//! cluster. Needs what an instance has: the config, the gossip keys (they
//! open the CA's sealed key) and the store. The validity must be positive
//! and within what the CA has left (`recovery::certificates::
//! client_validity`): refused otherwise, with the longest one possible.

use crate::config::Config;
use std::path::Path;
use std::time::Duration;

/// Issues the certificate of `user` into `out`; returns what to tell the
/// operator.
pub async fn client(
    config: &Config,
    user: &str,
    validity: Duration,
    out: &Path,
) -> anyhow::Result<String> {
    let store = super::store(config).await?;
    let files = crate::pki::provision::issue_client(config, &*store, user, validity, out).await?;
    let [ca, key, cert] = files.as_slice() else {
        anyhow::bail!("issued {} files, expected 3", files.len());
    };
    Ok(format!(
        "issued a client certificate for {user:?}, valid {}:\n  {}\n  {}\n  {} (private key, 0600)\n\
         use it with etcdctl:\n  etcdctl --endpoints https://HOST:{} --cacert {} --cert {} --key {} member list\n",
        humantime::format_duration(validity),
        ca.display(),
        cert.display(),
        key.display(),
        config.etcd.client_port,
        ca.display(),
        cert.display(),
        key.display()
    ))
}
