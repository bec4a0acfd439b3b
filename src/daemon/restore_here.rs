//! Restoring a stored snapshot into this instance's (empty) data
//! directory under a given cluster token: fetched beside the data
//! directory with its sha256 verified, restored (`etcdutl`, else
//! `etcdctl`), the fetched file removed. Used to seed incarnation 1 from a
//! snapshot and to seed a new incarnation after a quorum loss.

use super::Daemon;
use crate::snapshot::restore::{self, RestoreRequest};
use crate::store::dir::DirStore;
use std::time::Duration;

impl Daemon {
    pub(super) async fn restore_here(
        &self,
        store: &DirStore,
        name: &str,
        token: &str,
        fetched: &str,
    ) -> anyhow::Result<()> {
        let file = self.data_dir.with_file_name(fetched);
        restore::fetch_verified(store, name, &file).await?;
        let done = restore::restore_file(
            &file,
            &RestoreRequest {
                data_dir: self.data_dir.clone(),
                name: self.id.clone(),
                peer_url: self.peer_url.clone(),
                token: token.to_string(),
                etcdutl: self.binaries.etcdutl.clone(),
                etcdctl: self.binaries.etcdctl.clone(),
                timeout: Duration::from_secs(300),
            },
        )
        .await;
        let _ = tokio::fs::remove_file(&file).await;
        Ok(done?)
    }
}
