//! Names and keys of the cloud stores: pure functions, no I/O.
//!
//! - The object `n` (always `<cluster>/…`) is the key `<prefix>/<n>`; a
//!   name outside the store's cluster is refused, so eco never reads,
//!   writes, lists or deletes outside `<prefix>/<cluster>/`.
//! - eco's own keys live under hidden segments, which
//!   [`check_name`](crate::store::check_name) refuses (no name reaches them,
//!   listings skip them): the info objects that commit objects
//!   (`<prefix>/<cluster>/.info/<rest of the name>`) and the start check's
//!   probes (`…/.probe/…`).

use crate::store::{StoreError, check_name};
use object_store::path::Path;

/// The hidden folder of the info objects.
pub(super) const INFOS: &str = ".info";
/// The hidden folder of the conditional-create probes.
pub(super) const PROBES: &str = ".probe";

/// An object's key and the key of its info object.
#[derive(Clone, Debug)]
pub(super) struct Located {
    pub(super) name: String,
    pub(super) key: Path,
    pub(super) info: Path,
}

/// Where a cluster's objects are in the bucket or container.
#[derive(Clone, Debug)]
pub(super) struct Layout {
    /// `<prefix>/` (the configured prefix and its slash).
    root: String,
    /// `<cluster>/`.
    cluster: String,
}

impl Layout {
    pub(super) fn new(prefix: &str, cluster: &str) -> Self {
        Self {
            root: format!("{}/", prefix.trim_matches('/')),
            cluster: format!("{cluster}/"),
        }
    }

    /// `<prefix>/<cluster>`, for logs and errors.
    pub(super) fn cluster_root(&self) -> String {
        format!("{}{}", self.root, self.cluster.trim_end_matches('/'))
    }

    /// The keys of a (checked) object name of this cluster.
    pub(super) fn locate(&self, name: &str) -> Result<Located, StoreError> {
        check_name(name)?;
        let Some(rest) = name.strip_prefix(&self.cluster) else {
            return Err(StoreError::BadName(
                name.to_string(),
                "it is outside this store's cluster (names start with <cluster>/)",
            ));
        };
        Ok(Located {
            name: name.to_string(),
            key: key(format!("{}{name}", self.root))?,
            info: key(format!("{}{}{INFOS}/{rest}", self.root, self.cluster))?,
        })
    }

    /// A listing of the names starting with `prefix` (within the
    /// cluster): the folder to list (listings go by whole segments) and
    /// the key prefix to keep.
    pub(super) fn listing(&self, prefix: &str) -> Result<(Path, String), StoreError> {
        if !prefix.starts_with(&self.cluster) {
            return Err(StoreError::BadName(
                prefix.to_string(),
                "a listing must stay within this store's cluster (<cluster>/…)",
            ));
        }
        let keep = format!("{}{prefix}", self.root);
        let folder = match keep.rfind('/') {
            Some(at) => &keep[..at],
            None => keep.as_str(),
        };
        Ok((key(folder.to_string())?, keep))
    }

    /// The key of a listing cursor.
    pub(super) fn cursor_key(&self, after: &str) -> String {
        format!("{}{after}", self.root)
    }

    /// The name of a listed key (`None` outside the root).
    pub(super) fn name_of<'a>(&self, key: &'a str) -> Option<&'a str> {
        key.strip_prefix(&self.root)
    }

    /// The folder of the cluster's keys.
    pub(super) fn cluster_folder(&self) -> Result<Path, StoreError> {
        key(self.cluster_root())
    }

    /// The folder of the probes.
    pub(super) fn probes(&self) -> Result<Path, StoreError> {
        key(format!("{}{}{PROBES}", self.root, self.cluster))
    }

    /// A fresh probe key.
    pub(super) fn probe_key(&self) -> Result<Path, StoreError> {
        key(format!(
            "{}{}{PROBES}/{:016x}",
            self.root,
            self.cluster,
            rand::random::<u64>()
        ))
    }

    /// The object name an info key commits (`None` for another key).
    pub(super) fn name_of_info(&self, key: &str) -> Option<String> {
        let rest = key.strip_prefix(&format!("{}{}{INFOS}/", self.root, self.cluster))?;
        Some(format!("{}{rest}", self.cluster))
    }
}

/// A key as `object_store` holds it (names are checked before, so only
/// a bad configured prefix can fail here).
fn key(text: String) -> Result<Path, StoreError> {
    Path::parse(&text).map_err(|_| StoreError::BadName(text, "it is not a key the store can hold"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_map_to_keys_within_the_cluster() {
        let l = Layout::new("eco", "c");
        let o = l.locate("c/snapshots/a.db").unwrap();
        assert_eq!(o.key.as_ref(), "eco/c/snapshots/a.db");
        assert_eq!(o.info.as_ref(), "eco/c/.info/snapshots/a.db");
        assert_eq!(
            l.name_of_info("eco/c/.info/snapshots/a.db").as_deref(),
            Some("c/snapshots/a.db")
        );
        assert!(matches!(l.locate("d/x"), Err(StoreError::BadName(..))));
        assert!(matches!(
            l.locate("c/.info/x"),
            Err(StoreError::BadName(..))
        ));
        let (folder, keep) = l.listing("c/incarnations/2").unwrap();
        assert_eq!(folder.as_ref(), "eco/c/incarnations");
        assert_eq!(keep, "eco/c/incarnations/2");
        let (folder, keep) = l.listing("c/").unwrap();
        assert_eq!((folder.as_ref(), keep.as_str()), ("eco/c", "eco/c/"));
        assert!(l.listing("cx/").is_err());
        assert_eq!(l.cluster_root(), "eco/c");
    }
}
