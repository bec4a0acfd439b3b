//! Which layers an object carries: chosen by the writer ([`Encoding`]),
//! recorded in its metadata ([`meta`]), read back by a reader
//! ([`Layers::of`]).

use super::{Identities, Recipients};
use std::collections::BTreeMap;

/// Metadata keys and values of the layers.
pub mod meta {
    /// `zstd` when compressed; absent when not.
    pub const COMPRESSION: &str = "compression";
    pub const ZSTD: &str = "zstd";
    /// `age` when encrypted; absent when not.
    pub const ENCRYPTION: &str = "encryption";
    pub const AGE: &str = "age";
}

/// How a writer encodes what it stores.
#[derive(Clone, Debug, Default)]
pub struct Encoding {
    /// zstd's level; `None`: not compressed.
    pub compression: Option<i32>,
    /// `None`: not encrypted.
    pub encryption: Option<Recipients>,
}

impl Encoding {
    /// Stored as given.
    pub fn plain() -> Self {
        Self::default()
    }

    /// The metadata entries that say what was done.
    pub fn metadata(&self) -> BTreeMap<String, String> {
        let mut m = BTreeMap::new();
        if self.compression.is_some() {
            m.insert(meta::COMPRESSION.into(), meta::ZSTD.into());
        }
        if self.encryption.is_some() {
            m.insert(meta::ENCRYPTION.into(), meta::AGE.into());
        }
        m
    }

    pub fn layers(&self) -> Layers {
        Layers {
            zstd: self.compression.is_some(),
            age: self.encryption.is_some(),
        }
    }
}

/// What a stored object carries, as its metadata says.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Layers {
    pub zstd: bool,
    pub age: bool,
}

#[derive(Debug, thiserror::Error)]
pub enum CodecError {
    #[error("{name}: its metadata says {key} = {value:?}, which this eco does not know")]
    Unknown {
        name: String,
        key: &'static str,
        value: String,
    },
    #[error(
        "{name} is encrypted (age) and this instance has no identity to open it: set snapshot.encryption.identity_file to a file holding one of the recipients' identities"
    )]
    NoIdentity { name: String },
    #[error("{name} does not open with the identities of {identities}: {why}")]
    Decrypt {
        name: String,
        identities: String,
        why: String,
    },
    #[error("{name} does not decompress: {why}")]
    Decompress { name: String, why: String },
    #[error("encoding {what}: {why}")]
    Encode { what: String, why: String },
    #[error("{what}: {source}")]
    Io {
        what: String,
        #[source]
        source: std::io::Error,
    },
}

impl Layers {
    /// The layers `metadata` records for the object `name`; a value this
    /// build does not know is an error (never read as plain).
    pub fn of(name: &str, metadata: &BTreeMap<String, String>) -> Result<Self, CodecError> {
        let check = |key: &'static str, known: &str| match metadata.get(key) {
            None => Ok(false),
            Some(v) if v == known => Ok(true),
            Some(v) => Err(CodecError::Unknown {
                name: name.to_string(),
                key,
                value: v.clone(),
            }),
        };
        Ok(Self {
            zstd: check(meta::COMPRESSION, meta::ZSTD)?,
            age: check(meta::ENCRYPTION, meta::AGE)?,
        })
    }

    /// The identities to open it with, when it needs some.
    pub fn identities<'a>(
        &self,
        name: &str,
        held: Option<&'a Identities>,
    ) -> Result<Option<&'a Identities>, CodecError> {
        match (self.age, held) {
            (false, _) => Ok(None),
            (true, Some(ids)) => Ok(Some(ids)),
            (true, None) => Err(CodecError::NoIdentity {
                name: name.to_string(),
            }),
        }
    }

    /// The outermost layer of bytes that begin with `head`, from their own
    /// magic (a copy of a stored object has no metadata): age's header
    /// line or zstd's frame magic; neither: plain.
    pub fn outermost(head: &[u8]) -> Self {
        Self {
            zstd: head.starts_with(&[0x28, 0xb5, 0x2f, 0xfd]),
            age: head.starts_with(b"age-encryption.org/v1\n"),
        }
    }

    /// `zstd+age`, `zstd`, `age` or `none`, for listings.
    pub fn describe(&self) -> &'static str {
        match (self.zstd, self.age) {
            (true, true) => "zstd+age",
            (true, false) => "zstd",
            (false, true) => "age",
            (false, false) => "none",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn md(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn the_metadata_written_reads_back_as_the_same_layers_and_unknown_values_are_refused() {
        let enc = Encoding {
            compression: Some(3),
            encryption: None,
        };
        assert_eq!(
            Layers::of("x", &enc.metadata()).unwrap(),
            Layers {
                zstd: true,
                age: false
            }
        );
        assert_eq!(Layers::of("x", &md(&[])).unwrap(), Layers::default());
        let e = Layers::of("x", &md(&[("compression", "lz4")]))
            .unwrap_err()
            .to_string();
        assert!(e.contains("compression") && e.contains("lz4"), "{e}");
        let e = Layers::of("x", &md(&[("encryption", "gpg")])).unwrap_err();
        assert!(e.to_string().contains("gpg"));
    }

    #[test]
    fn the_outermost_layer_of_a_copy_is_told_by_its_magic() {
        let (r, _) = {
            let key = age::x25519::Identity::generate();
            (
                crate::codec::Recipients::parse(&[key.to_public().to_string()])
                    .unwrap()
                    .unwrap(),
                key,
            )
        };
        let plain = b"bolt db bytes".repeat(100);
        let z = Encoding {
            compression: Some(3),
            encryption: None,
        };
        let a = Encoding {
            compression: Some(3),
            encryption: Some(r),
        };
        let zb = crate::codec::encode_bytes(&plain, &z).unwrap();
        let ab = crate::codec::encode_bytes(&plain, &a).unwrap();
        assert_eq!(Layers::outermost(&plain), Layers::default());
        assert!(Layers::outermost(&zb).zstd && !Layers::outermost(&zb).age);
        assert!(Layers::outermost(&ab).age && !Layers::outermost(&ab).zstd);
    }

    #[test]
    fn an_encrypted_object_without_an_identity_says_which_key_to_set() {
        let l = Layers {
            zstd: false,
            age: true,
        };
        let e = l
            .identities("c/snapshots/s.db", None)
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("c/snapshots/s.db") && e.contains("snapshot.encryption.identity_file"),
            "{e}"
        );
        assert!(Layers::default().identities("x", None).unwrap().is_none());
    }
}
