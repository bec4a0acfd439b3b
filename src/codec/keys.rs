//! age X25519 keys: the recipients objects are encrypted to (from the
//! config, public) and the identities that open them (from a file only
//! the instances that verify and restore hold).

use std::path::{Path, PathBuf};
use std::str::FromStr;
use std::sync::Arc;

#[derive(Debug, thiserror::Error)]
pub enum KeyError {
    #[error(
        "snapshot.encryption.recipients[{index}] {value:?} is not an age X25519 recipient (age1…): {why}"
    )]
    Recipient {
        index: usize,
        value: String,
        why: String,
    },
    #[error("the identity file {path}: {why}")]
    IdentityFile { path: PathBuf, why: String },
}

/// The recipients objects are encrypted to (any one's identity opens them).
#[derive(Clone)]
pub struct Recipients(Arc<Vec<age::x25519::Recipient>>);

impl Recipients {
    /// Parses `age1…` recipients; an empty list is `None` (no encryption).
    pub fn parse(values: &[String]) -> Result<Option<Self>, KeyError> {
        if values.is_empty() {
            return Ok(None);
        }
        let parsed = values
            .iter()
            .enumerate()
            .map(|(index, value)| {
                age::x25519::Recipient::from_str(value.trim()).map_err(|why| KeyError::Recipient {
                    index,
                    value: value.clone(),
                    why: why.to_string(),
                })
            })
            .collect::<Result<Vec<_>, _>>()?;
        Ok(Some(Self(Arc::new(parsed))))
    }

    pub(super) fn iter(&self) -> impl Iterator<Item = &dyn age::Recipient> {
        self.0.iter().map(|r| r as &dyn age::Recipient)
    }

    pub fn len(&self) -> usize {
        self.0.len()
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

impl std::fmt::Debug for Recipients {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list()
            .entries(self.0.iter().map(|r| r.to_string()))
            .finish()
    }
}

/// The identities (private keys) that open encrypted objects, read from an
/// identity file: `AGE-SECRET-KEY-1…` lines, `#` comments and blank lines
/// (the file `age-keygen` writes).
#[derive(Clone)]
pub struct Identities {
    keys: Arc<Vec<age::x25519::Identity>>,
    /// Where they were read from, for errors.
    pub source: PathBuf,
}

impl Identities {
    /// Reads an identity file; every non-comment line must be an identity
    /// and there must be at least one.
    pub fn read(path: &Path) -> Result<Self, KeyError> {
        let fail = |why: String| KeyError::IdentityFile {
            path: path.to_path_buf(),
            why,
        };
        // A secret: refused when others may read it (the gossip key's rule).
        let text = crate::base::secret_file::read(path, "snapshot.encryption.identity_file")
            .map_err(|e| fail(e.to_string()))?;
        let mut keys = Vec::new();
        for (n, line) in text.lines().enumerate() {
            let line = line.trim();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            // The parser's message never quotes the key.
            let key = age::x25519::Identity::from_str(line).map_err(|_| {
                fail(format!(
                    "line {} is not an age X25519 identity (AGE-SECRET-KEY-1…)",
                    n + 1
                ))
            })?;
            keys.push(key);
        }
        if keys.is_empty() {
            return Err(fail("it holds no identity".into()));
        }
        Ok(Self {
            keys: Arc::new(keys),
            source: path.to_path_buf(),
        })
    }

    /// Identities built in memory (tests, and a key just generated).
    pub fn from_keys(keys: Vec<age::x25519::Identity>, source: PathBuf) -> Self {
        Self {
            keys: Arc::new(keys),
            source,
        }
    }

    pub(super) fn iter(&self) -> impl Iterator<Item = &dyn age::Identity> {
        self.keys.iter().map(|k| k as &dyn age::Identity)
    }
}

impl std::fmt::Debug for Identities {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "Identities({} from {})",
            self.keys.len(),
            self.source.display()
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use age::secrecy::ExposeSecret;

    #[test]
    fn recipients_are_parsed_and_a_bad_one_is_named_by_index() {
        assert!(Recipients::parse(&[]).unwrap().is_none());
        let key = age::x25519::Identity::generate();
        let good = key.to_public().to_string();
        let r = Recipients::parse(std::slice::from_ref(&good))
            .unwrap()
            .unwrap();
        assert_eq!(r.len(), 1);
        let e = Recipients::parse(&[good, "age1nope".into()])
            .err()
            .unwrap()
            .to_string();
        assert!(e.contains("recipients[1]") && e.contains("age1nope"), "{e}");
    }

    #[test]
    fn an_identity_file_is_read_and_a_bad_line_is_named_without_quoting_it() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("id");
        std::fs::File::create(&path).unwrap();
        std::fs::set_permissions(&path, std::os::unix::fs::PermissionsExt::from_mode(0o600))
            .unwrap();
        let key = age::x25519::Identity::generate();
        let secret = key.to_string().expose_secret().to_string();
        std::fs::write(
            &path,
            format!("# created: now\n# public key: x\n{secret}\n\n"),
        )
        .unwrap();
        assert!(Identities::read(&path).is_ok());
        std::fs::write(&path, "# nothing\n").unwrap();
        let e = Identities::read(&path).unwrap_err().to_string();
        assert!(e.contains("holds no identity"), "{e}");
        std::fs::write(&path, format!("{secret}\nAGE-SECRET-KEY-1SECRETBITS\n")).unwrap();
        let e = Identities::read(&path).unwrap_err().to_string();
        assert!(e.contains("line 2") && !e.contains("SECRETBITS"), "{e}");
        let e = Identities::read(&dir.path().join("absent"))
            .unwrap_err()
            .to_string();
        assert!(e.contains("absent"), "{e}");
        std::fs::set_permissions(&path, std::os::unix::fs::PermissionsExt::from_mode(0o644))
            .unwrap();
        let e = Identities::read(&path).unwrap_err().to_string();
        assert!(e.contains("identity_file"), "open to others: {e}");
    }
}
