//! `eco config check --probe-store`: the one check of `eco config check`
//! that contacts something. It runs the start check `eco run` runs on the
//! configured store (reachable, writable, a second create of one name
//! refused, leftovers swept) and, for an S3, GCS or Azure store, [`S3_BURSTS`] bursts of
//! concurrent conditional creates of one probe key, of which exactly one
//! must win: an S3-compatible endpoint that checks `If-None-Match` and
//! then writes without atomicity lets several win, and two instances could
//! then both win one record of truth. AWS S3 documents its conditional
//! writes as atomic, so `eco run` does not spend these writes at every
//! start; a store on other software is worth probing once, before it
//! holds a cluster's records. The probe writes and deletes keys under the
//! cluster's prefix only (`.probe/`).

use crate::config::{Config, SnapshotStoreKind};
use crate::store::{ConditionalCreate, ObjectStore};

/// Bursts of 8 concurrent creators. A store measured letting several
/// win in 4 bursts of 5 is caught by 10 bursts with odds 1 − 0.2¹⁰.
pub const S3_BURSTS: usize = 10;

/// What the probe found, for `eco config check`'s output; `Err` is a
/// reason the store cannot hold the record of truth, or why it could not
/// be probed.
pub async fn probe(config: &Config) -> Result<String, String> {
    let verdict = match config.snapshot.store {
        SnapshotStoreKind::None => {
            return Err("--probe-store: no snapshot store is configured (snapshot.store)".into());
        }
        SnapshotStoreKind::Dir => {
            let store = crate::store::from_config(config)
                .await
                .map_err(|e| format!("snapshot.dir: {e}"))?
                .ok_or("snapshot.dir: no store was built")?;
            store
                .check_at_start()
                .await
                .map_err(|e| format!("snapshot.dir: {e}"))?
        }
        SnapshotStoreKind::S3 => {
            let s3 = config
                .snapshot
                .s3
                .as_ref()
                .ok_or("snapshot.s3: the table is required for snapshot.store = \"s3\"")?;
            crate::store::s3::S3Store::connect(s3, &config.cluster.name)
                .await
                .map_err(|e| format!("snapshot.s3: {e}"))?
                .with_concurrent_probes(S3_BURSTS)
                .check_at_start()
                .await
                .map_err(|e| format!("snapshot.s3: {e}"))?
        }
        SnapshotStoreKind::Gcs => {
            let gcs = config
                .snapshot
                .gcs
                .as_ref()
                .ok_or("snapshot.gcs: the table is required for snapshot.store = \"gcs\"")?;
            crate::store::cloud::gcs::connect(gcs, &config.cluster.name)
                .map_err(|e| format!("snapshot.gcs: {e}"))?
                .with_concurrent_probes(S3_BURSTS)
                .check_at_start()
                .await
                .map_err(|e| format!("snapshot.gcs: {e}"))?
        }
        SnapshotStoreKind::Azure => {
            let azure =
                config.snapshot.azure.as_ref().ok_or(
                    "snapshot.azure: the table is required for snapshot.store = \"azure\"",
                )?;
            crate::store::cloud::azure::connect(azure, &config.cluster.name)
                .map_err(|e| format!("snapshot.azure: {e}"))?
                .with_concurrent_probes(S3_BURSTS)
                .check_at_start()
                .await
                .map_err(|e| format!("snapshot.azure: {e}"))?
        }
    };
    match verdict {
        ConditionalCreate::Honoured => Ok(match config.snapshot.store {
            SnapshotStoreKind::S3 | SnapshotStoreKind::Gcs | SnapshotStoreKind::Azure => format!(
                "the store is reachable and writable, and its conditional create held: a second create refused, one winner in each of {S3_BURSTS} bursts of 8 concurrent creators"
            ),
            _ => "the store is reachable and writable, and a second create of one name is refused".into(),
        }),
        ConditionalCreate::Ignored => Err(
            "the store's conditional create does not hold (a second create, or several concurrent creators, of one name succeeded): eco keeps snapshots there but runs no quorum-loss recovery on it; use a store whose conditional writes are atomic (AWS S3, or a directory)".into(),
        ),
    }
}
