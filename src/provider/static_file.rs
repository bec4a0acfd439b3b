//! The static provider: the group is a TOML file, re-read on every
//! `discover`, so a resize is an edit of that file.
//!
//! ```toml
//! # desired_size = 3        # optional; default: the number of instances
//! [[instance]]
//! id = "eco-1"
//! address = "127.0.0.11"  # an IP address or a DNS name
//! zone = "a"              # optional
//! ```
//!
//! A file that cannot be read or parsed does not erase the group: the last
//! good group is returned and the error is logged (once per distinct error).
//! A file that reads and parses is the authority: an instance it does not
//! list is not in the group — this instance included, which then leaves
//! (positive information, never an error) — and is certified gone.
//! Only at start must this instance be listed: its address comes from the
//! file.

use super::{Group, Identity, Instance, Provider, ProviderError, check_instance_id};
use serde::Deserialize;
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::Duration;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct GroupFile {
    #[serde(default)]
    desired_size: Option<usize>,
    #[serde(default)]
    instance: Vec<Instance>,
}

/// Parses the text of a group file for instance `self_id` (which may be
/// absent from it: then it is not in the group).
pub fn parse_group_file(text: &str, path: &Path, self_id: &str) -> Result<Group, ProviderError> {
    let malformed = |message: String| ProviderError::Malformed {
        path: path.to_path_buf(),
        message,
    };
    let file: GroupFile =
        toml::from_str(text).map_err(|e| malformed(e.to_string().trim_end().to_string()))?;
    let mut seen_ids = BTreeSet::new();
    let mut seen_addresses = BTreeSet::new();
    for i in &file.instance {
        check_instance_id(&i.id).map_err(malformed)?;
        if !seen_ids.insert(i.id.clone()) {
            return Err(malformed(format!("instance id {:?} is listed twice", i.id)));
        }
        if !seen_addresses.insert(i.host.clone()) {
            return Err(malformed(format!("address {} is listed twice", i.host)));
        }
    }
    if file.desired_size == Some(0) {
        return Err(malformed(
            "desired_size = 0; allowed: 1 or more, or leave it out".into(),
        ));
    }
    let mut instances = file.instance;
    instances.sort_by(|a, b| a.id.cmp(&b.id));
    Ok(Group {
        self_id: self_id.to_string(),
        desired_size: file.desired_size.unwrap_or(instances.len()),
        instances,
    })
}

/// The static provider.
pub struct StaticProvider {
    path: PathBuf,
    identity: Identity,
    last_good: Mutex<Option<Group>>,
    last_error: Mutex<Option<String>>,
    refresh: Duration,
}

impl StaticProvider {
    /// Reads the group file once (it must be readable and list
    /// `self_id`): this instance's identity comes from it.
    pub fn open(path: PathBuf, self_id: String, refresh: Duration) -> Result<Self, ProviderError> {
        let text = std::fs::read_to_string(&path).map_err(|source| ProviderError::Read {
            path: path.clone(),
            source,
        })?;
        let group = parse_group_file(&text, &path, &self_id)?;
        let me = group.me().ok_or_else(|| ProviderError::SelfNotInGroup {
            id: self_id.clone(),
            path: path.clone(),
            listed: String::new(),
        })?;
        Ok(Self {
            identity: Identity::of(me),
            path,
            last_good: Mutex::new(Some(group)),
            last_error: Mutex::new(None),
            refresh,
        })
    }

    fn read(&self) -> Result<Group, ProviderError> {
        let text = std::fs::read_to_string(&self.path).map_err(|source| ProviderError::Read {
            path: self.path.clone(),
            source,
        })?;
        parse_group_file(&text, &self.path, &self.identity.id)
    }
}

#[async_trait::async_trait]
impl Provider for StaticProvider {
    fn identity(&self) -> &Identity {
        &self.identity
    }

    fn refresh_interval(&self) -> Duration {
        self.refresh
    }

    async fn departed(&self, ids: &BTreeSet<String>) -> Result<BTreeSet<String>, ProviderError> {
        let group = self.discover().await?;
        Ok(ids
            .iter()
            .filter(|id| group.get(id).is_none())
            .cloned()
            .collect())
    }

    async fn discover(&self) -> Result<Group, ProviderError> {
        // A small local file: read inline. (No block_in_place: it would turn
        // a runtime thread into a retiring one.)
        let result = self.read();
        let mut last_good = self.last_good.lock().unwrap_or_else(|p| p.into_inner());
        let mut last_error = self.last_error.lock().unwrap_or_else(|p| p.into_inner());
        match result {
            Ok(group) => {
                if last_error.take().is_some() {
                    tracing::info!(path = %self.path.display(), "group file is readable again");
                }
                *last_good = Some(group.clone());
                Ok(group)
            }
            Err(e) => match last_good.as_ref() {
                Some(good) => {
                    let text = e.to_string();
                    if last_error.as_deref() != Some(text.as_str()) {
                        tracing::error!(error = %text, "keeping the last good group");
                        *last_error = Some(text);
                    }
                    Ok(good.clone())
                }
                None => Err(e),
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const GOOD: &str = "[[instance]]\nid = \"b\"\naddress = \"127.0.0.12\"\n[[instance]]\nid = \"a\"\naddress = \"127.0.0.11\"\nzone = \"z1\"\n";

    #[test]
    fn parses_sorted_with_default_desired_size() {
        let g = parse_group_file(GOOD, Path::new("g.toml"), "a").unwrap();
        assert_eq!(g.instances[0].id, "a");
        assert_eq!(g.instances[0].zone.as_deref(), Some("z1"));
        assert_eq!(g.desired_size, 2);
        assert_eq!(g.me().unwrap().host.to_string(), "127.0.0.11");
    }

    #[test]
    fn rejects_bad_files_with_reasons() {
        for (text, needle) in [
            (
                "[[instance]]\nid = \"a\"\naddress = \"no pe\"\n",
                "neither an IP address nor a DNS name",
            ),
            (
                "[[instance]]\nid = \"a\"\naddress = \"127.0.0.1\"\nport = 1\n",
                "unknown field `port`",
            ),
            (
                "[[instance]]\nid = \"a\"\naddress = \"127.0.0.1\"\n[[instance]]\nid = \"a\"\naddress = \"127.0.0.2\"\n",
                "listed twice",
            ),
            (
                "[[instance]]\nid = \"a\"\naddress = \"127.0.0.1\"\n[[instance]]\nid = \"b\"\naddress = \"127.0.0.1\"\n",
                "address 127.0.0.1 is listed twice",
            ),
            (
                "[[instance]]\nid = \"a\"\naddress = \"127.0.3.1\"\n[[instance]]\nid = \"b\"\naddress = \"::ffff:127.0.3.1\"\n",
                "address 127.0.3.1 is listed twice",
            ),
            (
                "[[instance]]\nid = \"e=x,y\"\naddress = \"127.0.0.1\"\n",
                "\"e=x,y\" is not an instance id",
            ),
            (
                "[[instance]]\nid = \"\"\naddress = \"127.0.0.1\"\n",
                "is not an instance id",
            ),
            (
                "desired_size = 0\n[[instance]]\nid = \"a\"\naddress = \"127.0.0.1\"\n",
                "desired_size = 0",
            ),
        ] {
            let err = parse_group_file(text, Path::new("g.toml"), "a")
                .unwrap_err()
                .to_string();
            assert!(err.contains(needle), "{needle:?} not in {err}");
        }
    }

    #[tokio::test]
    async fn malformed_file_keeps_the_last_good_group_and_resize_is_an_edit() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("group.toml");
        std::fs::write(&path, GOOD).unwrap();
        let p = StaticProvider::open(path.clone(), "a".into(), Duration::from_secs(1)).unwrap();
        assert_eq!(p.identity().host.to_string(), "127.0.0.11");
        assert_eq!(p.discover().await.unwrap().instances.len(), 2);

        std::fs::write(&path, "[[instance]\nbroken").unwrap();
        let kept = p.discover().await.unwrap();
        assert_eq!(kept.instances.len(), 2, "last good group kept");

        std::fs::write(
            &path,
            format!("{GOOD}[[instance]]\nid = \"c\"\naddress = \"127.0.0.13\"\n"),
        )
        .unwrap();
        assert_eq!(
            p.discover().await.unwrap().instances.len(),
            3,
            "resize is an edit"
        );
    }

    #[tokio::test]
    async fn an_instance_removed_from_the_file_learns_it_is_not_in_the_group() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("group.toml");
        std::fs::write(&path, GOOD).unwrap();
        let p = StaticProvider::open(path.clone(), "a".into(), Duration::from_secs(1)).unwrap();
        std::fs::write(
            &path,
            "[[instance]]\nid = \"b\"\naddress = \"127.0.0.12\"\n",
        )
        .unwrap();
        let g = p.discover().await.unwrap();
        assert!(
            g.me().is_none(),
            "a valid file without this instance is news, not an error"
        );
        assert_eq!(g.ids().collect::<Vec<_>>(), ["b"]);
        assert_eq!(p.identity().id, "a", "who this instance is does not change");
        let ask: BTreeSet<String> = ["a".to_string()].into();
        assert_eq!(
            p.departed(&ask).await.unwrap(),
            ask,
            "certified gone, itself included"
        );
        // Not listed at start: its address is unknown, so it cannot start.
        let err = StaticProvider::open(path, "a".into(), Duration::from_secs(1))
            .err()
            .expect("an error")
            .to_string();
        assert!(err.contains("is not in the group file"), "{err}");
    }

    #[test]
    fn first_read_failing_is_an_error() {
        let err = StaticProvider::open(
            PathBuf::from("/nonexistent/group.toml"),
            "a".into(),
            Duration::from_secs(1),
        )
        .err()
        .expect("an error")
        .to_string();
        assert!(err.contains("/nonexistent/group.toml"), "{err}");
    }

    #[tokio::test]
    async fn departed_means_missing_from_the_whole_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("group.toml");
        let three = format!("{GOOD}[[instance]]\nid = \"c\"\naddress = \"127.0.0.13\"\n");
        std::fs::write(&path, &three).unwrap();
        let p = StaticProvider::open(path.clone(), "a".into(), Duration::from_secs(1)).unwrap();
        let ask: BTreeSet<String> = ["a", "b", "c", "x"].iter().map(|s| s.to_string()).collect();
        let gone = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<BTreeSet<_>>();
        assert_eq!(p.departed(&ask).await.unwrap(), gone(&["x"]));
        std::fs::write(&path, GOOD).unwrap();
        assert_eq!(p.departed(&ask).await.unwrap(), gone(&["c", "x"]));
        // A file that cannot be read is not evidence: the last good read stands.
        std::fs::write(&path, "[[instance]\nbroken").unwrap();
        assert_eq!(p.departed(&ask).await.unwrap(), gone(&["c", "x"]));
    }
}
