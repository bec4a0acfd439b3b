//! Implementations of the one-shot CLI commands (`eco snapshot`, `eco
//! restore`). `main.rs` parses arguments and calls these.

pub mod restore;
pub mod snapshot;

use crate::config::{Config, SnapshotStoreKind};
use crate::store::dir::DirStore;

/// The store the config names, or an error saying how to configure one.
pub fn store_from_config(config: &Config) -> anyhow::Result<DirStore> {
    match (config.snapshot.store, &config.snapshot.dir) {
        (SnapshotStoreKind::Dir, Some(d)) => Ok(DirStore::new(d.path.clone())),
        _ => anyhow::bail!(
            "no snapshot store is configured: set snapshot.store = \"dir\" and [snapshot.dir] path"
        ),
    }
}

/// This instance's entry in the static group file named by the config.
pub fn this_instance(config: &Config, id: &str) -> anyhow::Result<crate::provider::Instance> {
    let group_file = config
        .provider
        .static_group
        .as_ref()
        .map(|s| s.group_file.clone())
        .ok_or_else(|| anyhow::anyhow!("the config has no [provider.static] group file"))?;
    let text = std::fs::read_to_string(&group_file)
        .map_err(|e| anyhow::anyhow!("cannot read group file {}: {e}", group_file.display()))?;
    let group = crate::provider::parse_group_file(&text, &group_file, id)?;
    group
        .me()
        .cloned()
        .ok_or_else(|| anyhow::anyhow!("instance {id} is not in its group"))
}
