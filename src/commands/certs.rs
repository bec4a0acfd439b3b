//! `eco certs client`: a client certificate from the cluster's generated CA
//! (`[etcd.tls.generated]`), so an operator can use `etcdctl` against the
//! cluster. Needs what an instance has: the config, the gossip keys (they
//! open the CA's sealed key) and the store. The validity must be positive
//! and within what the CA has left (`recovery::certificates::
//! client_validity`): refused otherwise, with the longest one possible.
//! `--out -` writes the files as a tar archive to standard output (a
//! container image with no shell has no `cat` to copy them out with).

use crate::config::Config;
use anyhow::Context;
use std::path::Path;
use std::time::Duration;

/// Where `eco certs client` puts the files.
pub enum Output<'a> {
    /// A directory (created if missing).
    Dir(&'a Path),
    /// A tar archive on standard output (`--out -`).
    TarToStdout,
}

/// Issues the certificate of `user` into `out`; returns what to tell the
/// operator (on standard error when the archive is on standard output).
pub async fn client(
    config: &Config,
    user: &str,
    validity: Duration,
    out: Output<'_>,
) -> anyhow::Result<String> {
    let store = super::store(config).await?;
    let files = crate::pki::provision::issue_client(config, &*store, user, validity).await?;
    let valid = humantime::format_duration(validity);
    let port = config.etcd.client_port;
    let dir = match out {
        Output::Dir(dir) => dir,
        Output::TarToStdout => {
            let tar = crate::pki::provision::client_files_tar(&files)?;
            use std::io::Write;
            let mut stdout = std::io::stdout().lock();
            stdout
                .write_all(&tar)
                .and_then(|()| stdout.flush())
                .context("writing the archive to standard output")?;
            eprintln!(
                "issued a client certificate for {user:?}, valid {valid}: a tar archive of ca.crt, {user}.crt, {user}.key (private key, 0600) on standard output\n\
                 use it with etcdctl:\n  tar -xf ARCHIVE && etcdctl --endpoints https://HOST:{port} --cacert ca.crt --cert {user}.crt --key {user}.key member list"
            );
            return Ok(String::new());
        }
    };
    let paths = crate::pki::provision::write_client_files(&files, dir)?;
    let [ca, key, cert] = paths.as_slice() else {
        anyhow::bail!("wrote {} files, expected 3", paths.len());
    };
    Ok(format!(
        "issued a client certificate for {user:?}, valid {valid}:\n  {}\n  {}\n  {} (private key, 0600)\n\
         use it with etcdctl:\n  etcdctl --endpoints https://HOST:{port} --cacert {} --cert {} --key {} member list\n",
        ca.display(),
        cert.display(),
        key.display(),
        ca.display(),
        cert.display(),
        key.display()
    ))
}
