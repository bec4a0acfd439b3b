//! etcd's authentication in tests (`[auth]`): secret files with the mode
//! eco accepts, JWT key pairs of a sign method's family (rcgen, which
//! makes RSA keys too with aws-lc-rs), and clients that authenticate as a
//! given user whatever the registry of [`crate::etcd::authenticate`]
//! says.

use anyhow::Context;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// Writes `text` to `path` readable by its owner only (eco refuses
/// secrets open to others).
pub fn write_secret(path: &Path, text: &str) -> anyhow::Result<()> {
    std::fs::write(path, text).with_context(|| format!("write {}", path.display()))?;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600))
        .with_context(|| format!("chmod {}", path.display()))
}

/// A new key pair for `alg` as `<dir>/<name>.pub` (PEM `PUBLIC KEY`) and
/// `<dir>/<name>.key` (PEM PKCS#8, mode 0600).
pub fn jwt_key_pair(
    dir: &Path,
    name: &str,
    alg: &'static rcgen::SignatureAlgorithm,
) -> anyhow::Result<(PathBuf, PathBuf)> {
    let key = rcgen::KeyPair::generate_for(alg).context("generate a key pair")?;
    let public = dir.join(format!("{name}.pub"));
    let private = dir.join(format!("{name}.key"));
    std::fs::write(&public, key.public_key_pem()).context("public key")?;
    write_secret(&private, &key.serialize_pem())?;
    Ok((public, private))
}

/// A client of `endpoint` authenticated as `user` (whatever credentials
/// are registered for it), `None` when it cannot connect or is refused.
pub async fn client_as(endpoint: &str, user: &str, password: &str) -> Option<etcd_client::Client> {
    connect(endpoint, Some((user, password))).await
}

/// A client of `endpoint` that does not authenticate.
pub async fn anonymous(endpoint: &str) -> Option<etcd_client::Client> {
    connect(endpoint, None).await
}

async fn connect(endpoint: &str, user: Option<(&str, &str)>) -> Option<etcd_client::Client> {
    let endpoints = [endpoint.to_string()];
    let mut opts = crate::etcd::plain_options(
        &endpoints,
        Duration::from_millis(500),
        Duration::from_secs(2),
    );
    if let Some((user, password)) = user {
        opts = opts.with_user(user, password);
    }
    tokio::time::timeout(
        Duration::from_secs(3),
        etcd_client::Client::connect(endpoints, Some(opts)),
    )
    .await
    .ok()?
    .ok()
}
