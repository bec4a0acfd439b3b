//! A segment's content: the changes of whole revisions, as etcd's watch
//! delivered them, encoded with `postcard`, compressed with zstd and
//! closed by a sha256 of everything before it:
//!
//! ```text
//! "ECOSEG1\n"  zstd(postcard(SegmentBody))  sha256(all of the above)
//! ```
//!
//! The magic names the layout (a later one is refused by name, never
//! misread); the trailing sha256 makes a truncated or corrupted segment an
//! error whatever the store checks. Decoding is bounded: a segment that
//! inflates past [`MAX_DECODED`] is refused (segments are cut at
//! `archive.max_segment_bytes`, far below).
//!
//! What a segment does not carry: a key's lease (the watch gives its id,
//! the grant is not in the stream; replay drops it and counts the keys),
//! auth and membership changes (not key-value revisions).

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use std::io::Read;

/// The first bytes of every segment.
pub const MAGIC: &[u8; 8] = b"ECOSEG1\n";
/// The most a segment's body may inflate to.
pub const MAX_DECODED: u64 = 512 << 20;
/// The most one watch response adds to what the writer holds (the gRPC
/// client's default message limit).
pub const WATCH_RESPONSE_AT_MOST: u64 = 4 << 20;
/// The most the writer ever holds for one segment: while the store refuses
/// segments it holds up to `HELD_SEGMENTS_AT_MOST` cuts, plus the response
/// that crossed the bound.
pub const HELD_AT_MOST: u64 = recovery::archive::HELD_SEGMENTS_AT_MOST
    * recovery::archive::LARGEST_CUT
    + WATCH_RESPONSE_AT_MOST;
/// The most a segment object may weigh to be read: what the writer can
/// hold, encoded (postcard's framing is below the weight the writer
/// counts; zstd grows incompressible input by well under 1 %, age by 16
/// bytes a 64 KiB chunk), with room to spare. Anything larger is not a
/// segment eco wrote.
pub const MAX_SEGMENT_OBJECT: u64 = 320 << 20;
const _: () = assert!(MAX_SEGMENT_OBJECT >= HELD_AT_MOST + HELD_AT_MOST / 50);
const _: () = assert!(MAX_DECODED >= HELD_AT_MOST + HELD_AT_MOST / 50);

/// One key's change at a revision.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Change {
    Put {
        key: Vec<u8>,
        value: Vec<u8>,
        /// The key's lease id at the source (0: none).
        lease: i64,
    },
    Delete {
        key: Vec<u8>,
    },
}

impl Change {
    /// Bytes it holds (for cutting segments by size).
    pub fn weight(&self) -> u64 {
        match self {
            Change::Put { key, value, .. } => (key.len() + value.len() + 16) as u64,
            Change::Delete { key } => (key.len() + 8) as u64,
        }
    }
}

/// Every change of one revision.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct RevisionChanges {
    pub revision: i64,
    /// When the writer received it (its clock).
    pub seen_unix_ms: u64,
    pub changes: Vec<Change>,
}

/// What a segment holds.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SegmentBody {
    pub cluster: String,
    pub incarnation: u64,
    pub token: String,
    pub first: i64,
    pub last: i64,
    /// In revision order, each revision whole.
    pub revisions: Vec<RevisionChanges>,
}

#[derive(Debug, thiserror::Error)]
pub enum SegmentError {
    #[error(
        "not a segment of this eco (it does not start with {MAGIC:?}; a later eco's layout, or not a segment)"
    )]
    Magic,
    #[error("its sha256 does not match its content (truncated or corrupted)")]
    Checksum,
    #[error("it inflates past {MAX_DECODED} bytes")]
    TooLarge,
    #[error("it does not decompress: {0}")]
    Compression(String),
    #[error("it does not decode: {0}")]
    Decode(String),
    #[error("it names revisions {first}..={last} but holds {held}")]
    Range { first: i64, last: i64, held: String },
}

/// Encodes `body` at zstd `level`.
pub fn encode(body: &SegmentBody, level: i32) -> Result<Vec<u8>, SegmentError> {
    let plain = postcard::to_stdvec(body).map_err(|e| SegmentError::Decode(e.to_string()))?;
    let packed = zstd::bulk::compress(&plain, level)
        .map_err(|e| SegmentError::Compression(e.to_string()))?;
    let mut out = Vec::with_capacity(MAGIC.len() + packed.len() + 32);
    out.extend_from_slice(MAGIC);
    out.extend_from_slice(&packed);
    let sum = Sha256::digest(&out);
    out.extend_from_slice(&sum);
    Ok(out)
}

/// Decodes a segment, checking its sha256 and that it holds exactly the
/// whole revisions it names, in order.
pub fn decode(bytes: &[u8]) -> Result<SegmentBody, SegmentError> {
    if bytes.len() < MAGIC.len() + 32 || !bytes.starts_with(MAGIC) {
        return Err(SegmentError::Magic);
    }
    let (content, sum) = bytes.split_at(bytes.len() - 32);
    if Sha256::digest(content).as_slice() != sum {
        return Err(SegmentError::Checksum);
    }
    let mut plain = Vec::new();
    zstd::stream::read::Decoder::new(&content[MAGIC.len()..])
        .map_err(|e| SegmentError::Compression(e.to_string()))?
        .take(MAX_DECODED + 1)
        .read_to_end(&mut plain)
        .map_err(|e| SegmentError::Compression(e.to_string()))?;
    if plain.len() as u64 > MAX_DECODED {
        return Err(SegmentError::TooLarge);
    }
    let body: SegmentBody =
        postcard::from_bytes(&plain).map_err(|e| SegmentError::Decode(e.to_string()))?;
    let ordered = body
        .revisions
        .windows(2)
        .all(|w| w[0].revision < w[1].revision);
    let bounds = body.revisions.first().map(|r| r.revision) == Some(body.first)
        && body.revisions.last().map(|r| r.revision) == Some(body.last);
    if !ordered || !bounds {
        return Err(SegmentError::Range {
            first: body.first,
            last: body.last,
            held: match (body.revisions.first(), body.revisions.last()) {
                (Some(a), Some(b)) => format!(
                    "{}..={} ({} revisions)",
                    a.revision,
                    b.revision,
                    body.revisions.len()
                ),
                _ => "none".into(),
            },
        });
    }
    Ok(body)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn body() -> SegmentBody {
        SegmentBody {
            cluster: "main".into(),
            incarnation: 2,
            token: "main-2-00000001".into(),
            first: 10,
            last: 11,
            revisions: vec![
                RevisionChanges {
                    revision: 10,
                    seen_unix_ms: 1000,
                    changes: vec![
                        Change::Put {
                            key: b"a".to_vec(),
                            value: vec![7; 5000],
                            lease: 0,
                        },
                        Change::Delete { key: b"b".to_vec() },
                    ],
                },
                RevisionChanges {
                    revision: 11,
                    seen_unix_ms: 1001,
                    changes: vec![Change::Put {
                        key: b"c".to_vec(),
                        value: b"v".to_vec(),
                        lease: 42,
                    }],
                },
            ],
        }
    }

    #[test]
    fn a_segment_reads_back_and_is_compressed() {
        let bytes = encode(&body(), 3).unwrap();
        assert!(bytes.len() < 1000, "{} bytes", bytes.len());
        assert_eq!(decode(&bytes).unwrap(), body());
    }

    #[test]
    fn a_damaged_truncated_or_foreign_segment_is_refused() {
        let bytes = encode(&body(), 3).unwrap();
        let mut flipped = bytes.clone();
        flipped[12] ^= 1;
        assert!(matches!(decode(&flipped), Err(SegmentError::Checksum)));
        assert!(matches!(
            decode(&bytes[..bytes.len() - 1]),
            Err(SegmentError::Checksum)
        ));
        let mut later = bytes.clone();
        later[6] = b'2';
        assert!(matches!(decode(&later), Err(SegmentError::Magic)));
        assert!(matches!(decode(b"short"), Err(SegmentError::Magic)));
    }

    #[test]
    fn a_segment_whose_revisions_do_not_match_its_range_is_refused() {
        let mut b = body();
        b.last = 12;
        let bytes = encode(&b, 3).unwrap();
        assert!(matches!(decode(&bytes), Err(SegmentError::Range { .. })));
    }
}
