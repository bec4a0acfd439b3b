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
//! A file that cannot be read, does not parse, or lists no instance at all
//! (emptied, truncated, only `desired_size`) is an error: never a group in
//! which every instance departed. A file that reads and parses is what
//! this read says: an instance it does not list is not in the group — this
//! instance included — and is certified gone. What eco acts on is
//! `confirmed.rs`'s view of these reads: the last good group is kept over a
//! bad read (logged once per distinct error, shown in `/status`), and a
//! departure counts only once consecutive reads confirm it.
//! Only at start must this instance be listed: its address comes from the
//! file.

use super::{Group, Identity, Instance, Provider, ProviderError, check_instance_id};
use serde::Deserialize;
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
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
    if file.instance.is_empty() {
        return Err(malformed(
            "it lists no instance (no [[instance]] table): a group file that lists nobody is refused, never read as every instance having left"
                .into(),
        ));
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
        departing: Default::default(),
    })
}

/// The static provider.
pub struct StaticProvider {
    path: PathBuf,
    identity: Identity,
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
        let group = self.read()?;
        Ok(ids
            .iter()
            .filter(|id| group.get(id).is_none())
            .cloned()
            .collect())
    }

    async fn discover(&self) -> Result<Group, ProviderError> {
        // A small local file: read inline. (No block_in_place: it would turn
        // a runtime thread into a retiring one.)
        self.read()
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
            ("", "lists no instance"),
            ("desired_size = 3\n", "lists no instance"),
            ("# emptied by hand\n", "lists no instance"),
        ] {
            let err = parse_group_file(text, Path::new("g.toml"), "a")
                .unwrap_err()
                .to_string();
            assert!(err.contains(needle), "{needle:?} not in {err}");
        }
    }

    #[tokio::test]
    async fn a_bad_read_is_an_error_and_resize_is_an_edit() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("group.toml");
        std::fs::write(&path, GOOD).unwrap();
        let p = StaticProvider::open(path.clone(), "a".into(), Duration::from_secs(1)).unwrap();
        assert_eq!(p.identity().host.to_string(), "127.0.0.11");
        assert_eq!(p.discover().await.unwrap().instances.len(), 2);

        // Never a group without its instances: an error, which the
        // confirmed view answers with the last good group.
        let ask: BTreeSet<String> = ["a", "b"].iter().map(|s| s.to_string()).collect();
        for (bad, says) in [
            ("[[instance]\nbroken", "group file"),
            ("", "lists no instance"),
            ("desired_size = 2\n", "lists no instance"),
        ] {
            std::fs::write(&path, bad).unwrap();
            let e = p.discover().await.unwrap_err().to_string();
            assert!(e.contains(says) && e.contains("group.toml"), "{bad:?}: {e}");
            assert!(p.departed(&ask).await.is_err(), "{bad:?} certifies nobody");
        }
        std::fs::remove_file(&path).unwrap();
        let e = p.discover().await.unwrap_err().to_string();
        assert!(e.contains("cannot read group file"), "{e}");

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
        // A file that cannot be read, or lists nobody, is not evidence.
        std::fs::write(&path, "[[instance]\nbroken").unwrap();
        assert!(p.departed(&ask).await.is_err());
        std::fs::write(&path, "").unwrap();
        assert!(p.departed(&ask).await.is_err());
    }
}
