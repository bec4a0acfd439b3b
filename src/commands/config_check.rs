//! `eco config check`, beyond the file itself: the files the config names
//! must open and parse the way `eco run` will read them — the group file,
//! the gossip key file (and its mode), the store directory. Each problem
//! names the key and the file.

use crate::config::{Config, ProviderKind, SnapshotStoreKind};

/// Every problem with the files `config` references; empty means each one
/// opens and parses.
pub fn referenced_files(config: &Config) -> Vec<String> {
    let mut problems = Vec::new();
    if config.provider.kind == ProviderKind::Static {
        if let Some(s) = &config.provider.static_group {
            let path = &s.group_file;
            match std::fs::read_to_string(path) {
                // Whose file it is does not matter here: ids, addresses
                // and sizes are checked the same for every instance.
                Ok(text) => {
                    if let Err(e) = crate::provider::parse_group_file(text.as_str(), path, "") {
                        problems.push(format!("provider.static.group_file: {e}"));
                    }
                }
                Err(e) => problems.push(format!(
                    "provider.static.group_file: cannot read {}: {e}",
                    path.display()
                )),
            }
        }
    }
    if let Some(path) = &config.gossip.key_file {
        match crate::secret_file::read(path, "gossip.key_file") {
            Ok(text) => {
                if let Err(e) = gossip::Keyring::parse(&text, &config.cluster.name) {
                    problems.push(format!(
                        "gossip.key_file: the keys in {}: {e}",
                        path.display()
                    ));
                }
            }
            Err(e) => problems.push(e.to_string()),
        }
    }
    if config.snapshot.store == SnapshotStoreKind::Dir {
        if let Some(dir) = &config.snapshot.dir {
            if !dir.path.is_dir() {
                problems.push(format!(
                    "snapshot.dir.path: {} is not a directory (it must exist: a missing store is an error, never an empty one)",
                    dir.path.display()
                ));
            }
        }
    }
    problems
}
