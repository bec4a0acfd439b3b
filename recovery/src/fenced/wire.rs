//! The protocol's envelopes on the wire, and their format.
//!
//! An envelope is postcard-encoded, then followed by a [`Tail`] naming the
//! format its fields are written in ([`crate::cluster_version`]). eco 0.1.0
//! wrote no tail (format 1), and reads an envelope with one as its own:
//! postcard ignores bytes after a value, so the tail travels to it unread.
//! A reader decodes the envelope, then the tail if there is one; anything a
//! later release appends after the tail is ignored the same way. An
//! envelope of a format this build does not read is refused
//! ([`WireError::Future`]), never misread: the caller drops and counts it.
//!
//! `#[serde(default)]` does nothing under postcard (it is not
//! self-describing): a field is only ever added after the tail, and a
//! reader of the older layout is explicit code, not a serde attribute.

use super::messages::Envelope;
use crate::cluster_version::{self, Format};
use serde::{Deserialize, Serialize};
use thiserror::Error;

/// What follows the envelope (since format 2).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Tail {
    /// The format the envelope's fields are written in.
    pub format: Format,
}

#[derive(Debug, Error, PartialEq, Eq)]
pub enum WireError {
    #[error("cannot encode a recovery message: {0}")]
    Encode(String),
    #[error("undecodable: {0}")]
    Undecodable(String),
    #[error(
        "written in format {format}, which this eco does not read (it reads {} to {})",
        cluster_version::OLDEST,
        cluster_version::NEWEST
    )]
    Future { format: Format },
}

/// `env` written in `format`, with its tail.
pub fn encode(env: &Envelope, format: Format) -> Result<Vec<u8>, WireError> {
    let mut bytes = postcard::to_stdvec(env).map_err(|e| WireError::Encode(e.to_string()))?;
    let tail =
        postcard::to_stdvec(&Tail { format }).map_err(|e| WireError::Encode(e.to_string()))?;
    bytes.extend_from_slice(&tail);
    Ok(bytes)
}

/// The envelope in `bytes` and the format it was written in.
pub fn decode(bytes: &[u8]) -> Result<(Envelope, Format), WireError> {
    let (env, rest) = postcard::take_from_bytes::<Envelope>(bytes)
        .map_err(|e| WireError::Undecodable(e.to_string()))?;
    let format = if rest.is_empty() {
        cluster_version::UNTAGGED
    } else {
        postcard::take_from_bytes::<Tail>(rest)
            .map_err(|e| WireError::Undecodable(format!("its format tail: {e}")))?
            .0
            .format
    };
    if !cluster_version::reads(format) {
        return Err(WireError::Future { format });
    }
    Ok((env, format))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fenced::ballot::Ballot;
    use crate::fenced::messages::{Message, Rejection};
    use proptest::prelude::*;

    fn envelope(from: String, boot: u64, to: String, ask: Option<u64>, round: u64) -> Envelope {
        Envelope {
            from: from.clone(),
            from_boot: boot,
            to,
            to_boot: ask,
            message: match round % 3 {
                0 => Message::Prepare {
                    target: round,
                    voters: vec![from.clone(), to_name(round)],
                    ballot: Ballot::new(round, &from),
                },
                1 => Message::Accepted {
                    target: round,
                    ballot: Ballot::new(round, &from),
                },
                _ => Message::Reject {
                    target: round,
                    ballot: Ballot::new(round, &from),
                    why: Rejection::NotLost {
                        evidence: format!("voter {round} answers"),
                    },
                },
            },
        }
    }

    fn to_name(n: u64) -> String {
        format!("i-{n:02}")
    }

    fn any_envelope() -> impl Strategy<Value = Envelope> {
        (
            "[a-z0-9-]{0,12}",
            any::<u64>(),
            "[a-z0-9-]{0,12}",
            proptest::option::of(any::<u64>()),
            any::<u64>(),
        )
            .prop_map(|(f, b, t, a, r)| envelope(f, b, t, a, r))
    }

    proptest! {
        /// What eco 0.1.0 sends (the envelope alone) reads as format 1.
        #[test]
        fn the_previous_release_s_envelopes_read_as_format_1(env in any_envelope()) {
            let old = postcard::to_stdvec(&env).unwrap();
            prop_assert_eq!(decode(&old), Ok((env, cluster_version::UNTAGGED)));
        }

        /// What this release sends reads back whole, in either format it
        /// writes, and as the plain envelope to a reader of the previous
        /// layout (postcard ignores the tail).
        #[test]
        fn this_release_s_envelopes_read_back_by_both(env in any_envelope(), newest in any::<bool>()) {
            let format = if newest { cluster_version::NEWEST } else { cluster_version::OLDEST };
            let bytes = encode(&env, format).unwrap();
            prop_assert_eq!(decode(&bytes), Ok((env.clone(), format)));
            prop_assert_eq!(postcard::from_bytes::<Envelope>(&bytes).unwrap(), env);
        }

        /// A later release's tail (more after ours) is ignored; a format
        /// beyond this build's is refused, never misread.
        #[test]
        fn later_formats_are_read_only_when_known(env in any_envelope(), format in any::<u16>(), extra in proptest::collection::vec(any::<u8>(), 0..16)) {
            let mut bytes = encode(&env, format).unwrap();
            bytes.extend_from_slice(&extra);
            match decode(&bytes) {
                Ok((e, f)) => {
                    prop_assert!(cluster_version::reads(format));
                    prop_assert_eq!(e, env);
                    prop_assert_eq!(f, format);
                }
                Err(WireError::Future { format: f }) => {
                    prop_assert!(!cluster_version::reads(format));
                    prop_assert_eq!(f, format);
                }
                Err(e) => prop_assert!(false, "{e}"),
            }
        }

        /// Arbitrary bytes never panic the decoder.
        #[test]
        fn arbitrary_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..256)) {
            let _ = decode(&bytes);
        }
    }
}
