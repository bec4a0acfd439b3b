//! Which layers (`crate::codec`) the objects eco stores carry, from the
//! config and the format the cluster writes.
//!
//! - Compression (on by default) starts at format 3: while the cluster may
//!   still go back to a release that reads only formats 1 and 2 (it would
//!   take a compressed snapshot for a damaged one), snapshots are written
//!   as before.
//! - Encryption, once configured, applies to every snapshot and segment
//!   whatever the format, tagged format 3 at least: no snapshot is ever
//!   written in the clear because of an upgrade in progress, and seeding
//!   after a quorum loss never waits for one. (A release without
//!   encryption refuses a config that has `[snapshot.encryption]`, so it
//!   cannot be in such a group; were it to meet such a snapshot, it
//!   refuses it by its format, by name.)
//! - Segments compress their own content; only releases that read format
//!   3 read segments at all.

use crate::codec::{Encoding, Identities, KeyError, Recipients};
use crate::config::{SnapshotCompression, SnapshotConfig};
use recovery::cluster_version::Format;
use std::path::PathBuf;

/// The first format whose snapshots are compressed and encrypted.
pub const ENCODED_FROM: Format = 3;

/// What the config says, resolved once (recipients parsed).
#[derive(Clone, Debug, Default)]
pub struct SnapshotCodec {
    /// zstd's level; `None`: `snapshot.compression = "none"`.
    pub level: Option<i32>,
    pub recipients: Option<Recipients>,
    /// `snapshot.encryption.identity_file`, read at each use (so a
    /// replaced file is picked up).
    pub identity_file: Option<PathBuf>,
}

impl SnapshotCodec {
    pub fn from_config(c: &SnapshotConfig) -> Result<Self, KeyError> {
        let enc = c.encryption.as_ref();
        Ok(Self {
            level: (c.compression == SnapshotCompression::Zstd).then_some(c.compression_level),
            recipients: match enc {
                Some(e) => Recipients::parse(&e.recipients)?,
                None => None,
            },
            identity_file: enc.and_then(|e| e.identity_file.clone()),
        })
    }

    /// How a snapshot is encoded while the cluster writes `format`, and
    /// the format it is tagged with.
    pub fn for_snapshot(&self, format: Format) -> (Encoding, Format) {
        match (&self.recipients, format >= ENCODED_FROM) {
            (_, true) => (
                Encoding {
                    compression: self.level,
                    encryption: self.recipients.clone(),
                },
                format,
            ),
            (Some(r), false) => (
                Encoding {
                    compression: None,
                    encryption: Some(r.clone()),
                },
                ENCODED_FROM,
            ),
            (None, false) => (Encoding::plain(), format),
        }
    }

    /// How a segment is encoded (its content is compressed already).
    pub fn for_segment(&self) -> Encoding {
        Encoding {
            compression: None,
            encryption: self.recipients.clone(),
        }
    }

    /// The identities that open encrypted objects, when an identity file
    /// is configured.
    pub fn identities(&self) -> Result<Option<Identities>, KeyError> {
        self.identity_file
            .as_deref()
            .map(Identities::read)
            .transpose()
    }
}

/// The identities of `[snapshot.encryption]`'s identity file (none
/// configured: `None`), for a reader of the store.
pub fn configured_identities(c: &SnapshotConfig) -> Result<Option<Identities>, KeyError> {
    SnapshotCodec::from_config(c).and_then(|codec| codec.identities())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn codec(level: Option<i32>, encrypted: bool) -> SnapshotCodec {
        let key = age::x25519::Identity::generate();
        SnapshotCodec {
            level,
            recipients: encrypted.then(|| {
                Recipients::parse(&[key.to_public().to_string()])
                    .unwrap()
                    .unwrap()
            }),
            identity_file: None,
        }
    }

    #[test]
    fn snapshots_are_compressed_from_format_3_and_never_written_in_the_clear_when_encryption_is_set()
     {
        let c = codec(Some(3), false);
        let (enc, tag) = c.for_snapshot(2);
        assert_eq!((enc.layers(), tag), (Default::default(), 2));
        assert_eq!(c.for_snapshot(1).0.compression, None);
        assert_eq!(c.for_snapshot(3).0.compression, Some(3));
        let e = codec(Some(3), true);
        for format in [1, 2] {
            let (enc, tag) = e.for_snapshot(format);
            assert!(enc.layers().age && !enc.layers().zstd, "{format}");
            assert_eq!(tag, ENCODED_FROM);
        }
        let (enc, tag) = e.for_snapshot(3);
        assert!(enc.layers().zstd && enc.layers().age && tag == 3);
        assert!(!codec(None, true).for_snapshot(3).0.layers().zstd);
        // Segments: encrypted whatever the format, never compressed twice.
        let s = e.for_segment().layers();
        assert!(s.age && !s.zstd);
        assert_eq!(c.for_segment().layers(), Default::default());
    }
}
