//! Names, keys and metadata of the S3 store: pure functions, no I/O.
//!
//! - The object `n` (always `<cluster>/…`) is the key `<prefix>/<n>`; a
//!   name outside the store's cluster is refused, so eco never reads,
//!   writes, lists or deletes outside `<prefix>/<cluster>/`.
//! - eco's own scratch objects live under hidden segments
//!   (`<prefix>/<cluster>/.upload/…`, `…/.probe/…`): [`check_name`] refuses
//!   a segment starting with `.`, so listings skip them.
//! - User metadata: S3 sends it as `x-amz-meta-<key>: <value>` headers, so
//!   keys are case-insensitive header tokens and values must be visible
//!   ASCII (leading and trailing blanks are lost on the way). The content's
//!   sha256 is `x-amz-meta-sha256`; each caller entry is
//!   `x-amz-meta-m-<key>`, the key with `[a-z0-9]` kept, `_` written `-`
//!   and every other byte `.xx` (its hex), and the value with every byte
//!   outside `!`..`~` and `%` itself written `%XX`. Both encodings are
//!   bijective, so metadata round-trips exactly; headers eco did not write
//!   (`x-amz-meta-mtime` from another tool) are ignored. S3 caps user
//!   metadata at 2 KiB (keys and values, encoded): a larger map is refused
//!   before anything is uploaded.

use crate::store::{StoreError, check_name};
use std::collections::{BTreeMap, HashMap};

/// The metadata key of the content's hex sha256.
pub(super) const SHA256: &str = "sha256";
/// The prefix of the caller's metadata keys.
const USER: &str = "m-";
/// S3's limit on user metadata: the sum of the encoded keys and values.
pub(super) const MAX_METADATA: usize = 2048;
/// The hidden folder of temporary uploads.
pub(super) const UPLOADS: &str = ".upload";
/// The hidden folder of the conditional-create probe.
pub(super) const PROBES: &str = ".probe";

/// Where a cluster's objects are in the bucket.
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

    /// `s3://bucket/<prefix>/<cluster>`, for logs and errors.
    pub(super) fn describe(&self, bucket: &str) -> String {
        format!(
            "s3://{bucket}/{}{}",
            self.root,
            self.cluster.trim_end_matches('/')
        )
    }

    /// The key of a (checked) object name of this cluster.
    pub(super) fn key(&self, name: &str) -> Result<String, StoreError> {
        check_name(name)?;
        if !name.starts_with(&self.cluster) {
            return Err(StoreError::BadName(
                name.to_string(),
                "it is outside this store's cluster (names start with <cluster>/)",
            ));
        }
        Ok(format!("{}{name}", self.root))
    }

    /// The key prefix of a listing of names starting with `prefix`, which
    /// must be within the cluster.
    pub(super) fn list_prefix(&self, prefix: &str) -> Result<String, StoreError> {
        if !prefix.starts_with(&self.cluster) {
            return Err(StoreError::BadName(
                prefix.to_string(),
                "a listing must stay within this store's cluster (<cluster>/…)",
            ));
        }
        Ok(format!("{}{prefix}", self.root))
    }

    /// The key of a listing cursor (any string; it need not name an object).
    pub(super) fn cursor_key(&self, after: &str) -> String {
        format!("{}{after}", self.root)
    }

    /// The name of a listed key: `None` when it is not under the prefix.
    pub(super) fn name_of<'k>(&self, key: &'k str) -> Option<&'k str> {
        key.strip_prefix(&self.root)
    }

    /// A fresh key in a hidden folder of the cluster (`.upload`, `.probe`).
    pub(super) fn scratch_key(&self, folder: &str) -> String {
        format!(
            "{}{}{folder}/{:032x}",
            self.root,
            self.cluster,
            rand::random::<u128>()
        )
    }

    /// The key prefix of everything of the cluster (`<prefix>/<cluster>/`).
    pub(super) fn cluster_prefix(&self) -> String {
        format!("{}{}", self.root, self.cluster)
    }

    /// The key prefix of a hidden folder of the cluster.
    pub(super) fn scratch_prefix(&self, folder: &str) -> String {
        format!("{}{}{folder}/", self.root, self.cluster)
    }
}

/// Records (the objects `create_if_absent` makes) live in an
/// `incarnations/` folder; like the directory store, the S3 store never
/// skips one in a listing.
pub(super) fn is_record_name(name: &str) -> bool {
    name.split('/').rev().nth(1) == Some("incarnations")
}

fn encode_key(key: &str) -> String {
    let mut out = String::with_capacity(USER.len() + key.len());
    out.push_str(USER);
    for b in key.bytes() {
        match b {
            b'a'..=b'z' | b'0'..=b'9' => out.push(b as char),
            b'_' => out.push('-'),
            _ => out.push_str(&format!(".{b:02x}")),
        }
    }
    out
}

fn decode_key(encoded: &str) -> Result<String, String> {
    let mut out = Vec::with_capacity(encoded.len());
    let mut bytes = encoded.bytes();
    while let Some(b) = bytes.next() {
        match b {
            b'a'..=b'z' | b'0'..=b'9' => out.push(b),
            b'-' => out.push(b'_'),
            b'.' => out.push(hex_byte(bytes.next(), bytes.next())?),
            _ => {
                return Err(format!(
                    "metadata key {encoded:?} has a byte eco never writes"
                ));
            }
        }
    }
    String::from_utf8(out).map_err(|_| format!("metadata key {encoded:?} is not UTF-8"))
}

fn encode_value(value: &str) -> String {
    let mut out = String::with_capacity(value.len());
    for b in value.bytes() {
        match b {
            b'%' => out.push_str("%25"),
            b'!'..=b'~' => out.push(b as char),
            _ => out.push_str(&format!("%{b:02X}")),
        }
    }
    out
}

fn decode_value(encoded: &str) -> Result<String, String> {
    let mut out = Vec::with_capacity(encoded.len());
    let mut bytes = encoded.bytes();
    while let Some(b) = bytes.next() {
        match b {
            b'%' => out.push(hex_byte(bytes.next(), bytes.next())?),
            b'!'..=b'~' => out.push(b),
            _ => {
                return Err(format!(
                    "metadata value {encoded:?} has a byte eco never writes"
                ));
            }
        }
    }
    String::from_utf8(out).map_err(|_| format!("metadata value {encoded:?} is not UTF-8"))
}

fn hex_byte(hi: Option<u8>, lo: Option<u8>) -> Result<u8, String> {
    let digit = |d: Option<u8>| {
        d.and_then(|d| (d as char).to_digit(16))
            .ok_or_else(|| "a truncated or invalid escape".to_string())
    };
    Ok((digit(hi)? * 16 + digit(lo)?) as u8)
}

/// The headers of `metadata` plus the content's `sha256`; an error when S3
/// would refuse them (more than [`MAX_METADATA`] bytes).
pub(super) fn encode_metadata(
    metadata: &BTreeMap<String, String>,
    sha256: &str,
) -> Result<HashMap<String, String>, String> {
    let mut out = HashMap::with_capacity(metadata.len() + 1);
    out.insert(SHA256.to_string(), sha256.to_string());
    for (k, v) in metadata {
        out.insert(encode_key(k), encode_value(v));
    }
    let size: usize = out.iter().map(|(k, v)| k.len() + v.len()).sum();
    if size > MAX_METADATA {
        return Err(format!(
            "the metadata is {size} bytes once encoded for S3, which allows {MAX_METADATA}"
        ));
    }
    Ok(out)
}

/// The sha256 and the caller's metadata of an object's headers. The
/// sha256 is `None` when the object has none (eco did not write it); an
/// error when eco's headers are there but do not decode.
pub(super) fn decode_metadata(
    headers: Option<&HashMap<String, String>>,
) -> Result<(Option<String>, BTreeMap<String, String>), String> {
    let mut sha256 = None;
    let mut metadata = BTreeMap::new();
    for (k, v) in headers.into_iter().flatten() {
        let k = k.to_ascii_lowercase();
        if k == SHA256 {
            if v.len() != 64 || !v.bytes().all(|b| b.is_ascii_hexdigit()) {
                return Err(format!("its sha256 metadata {v:?} is not a hex sha256"));
            }
            sha256 = Some(v.to_ascii_lowercase());
        } else if let Some(user) = k.strip_prefix(USER) {
            metadata.insert(decode_key(user)?, decode_value(v)?);
        }
    }
    Ok((sha256, metadata))
}

/// `CopySource` of a key: `bucket/key`, URL-encoded (a `+` would be read
/// as a space).
pub(super) fn copy_source(bucket: &str, key: &str) -> String {
    let mut out = format!("{bucket}/");
    for b in key.bytes() {
        match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' | b'/' => {
                out.push(b as char)
            }
            _ => out.push_str(&format!("%{b:02X}")),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_map_to_keys_under_the_prefix_and_the_cluster_only() {
        let l = Layout::new("eco", "main");
        assert_eq!(
            l.key("main/snapshots/a.db").unwrap(),
            "eco/main/snapshots/a.db"
        );
        assert!(matches!(
            l.key("other/snapshots/a.db"),
            Err(StoreError::BadName(..))
        ));
        assert!(
            l.key("main/.upload/x").is_err(),
            "hidden segments are refused"
        );
        assert!(l.key("mainx/a").is_err());
        assert!(l.list_prefix("main/").is_ok());
        assert!(l.list_prefix("").is_err());
        assert!(l.list_prefix("other/").is_err());
        assert_eq!(l.name_of("eco/main/a"), Some("main/a"));
        assert_eq!(l.name_of("ecox/main/a"), None);
        assert_eq!(l.describe("b"), "s3://b/eco/main");
        let scratch = l.scratch_key(UPLOADS);
        assert!(scratch.starts_with("eco/main/.upload/"));
        assert!(check_name(l.name_of(&scratch).unwrap()).is_err());
    }

    #[test]
    fn metadata_round_trips_exactly() {
        let m = BTreeMap::from([
            ("raft_index".to_string(), "42".to_string()),
            ("Mixed.Case-key".to_string(), " spaced  value ".to_string()),
            ("ünï".to_string(), "100% ü\n\"x\"".to_string()),
            ("empty".to_string(), String::new()),
        ]);
        let sha = "ab".repeat(32);
        let headers = encode_metadata(&m, &sha).unwrap();
        assert_eq!(headers["m-raft-index"], "42", "common keys stay readable");
        for (k, v) in &headers {
            assert!(
                k.bytes().all(|b| b.is_ascii_lowercase()
                    || b.is_ascii_digit()
                    || b == b'-'
                    || b == b'.'),
                "{k:?} is not a safe lowercase header token"
            );
            assert!(v.bytes().all(|b| (b'!'..=b'~').contains(&b)), "{v:?}");
        }
        // Servers may change the case of header names.
        let shouted: HashMap<String, String> = headers
            .into_iter()
            .map(|(k, v)| (k.to_ascii_uppercase(), v))
            .collect();
        assert_eq!(decode_metadata(Some(&shouted)).unwrap(), (Some(sha), m));
    }

    #[test]
    fn foreign_and_broken_metadata() {
        let foreign = HashMap::from([("mtime".to_string(), "1".to_string())]);
        assert_eq!(
            decode_metadata(Some(&foreign)).unwrap(),
            (None, BTreeMap::new())
        );
        assert_eq!(decode_metadata(None).unwrap(), (None, BTreeMap::new()));
        for (k, v) in [
            ("sha256", "xyz"),
            ("m-a.g1", "v"),
            ("m-a", "%4"),
            ("m-a", "é"),
        ] {
            let h = HashMap::from([(k.to_string(), v.to_string())]);
            assert!(decode_metadata(Some(&h)).is_err(), "{k}: {v}");
        }
    }

    #[test]
    fn oversized_metadata_is_refused() {
        let m = BTreeMap::from([("k".to_string(), "v".repeat(MAX_METADATA))]);
        let err = encode_metadata(&m, &"0".repeat(64)).unwrap_err();
        assert!(err.contains("2048"), "{err}");
    }

    #[test]
    fn copy_sources_are_url_encoded() {
        assert_eq!(copy_source("b", "eco/c/a+b=c.db"), "b/eco/c/a%2Bb%3Dc.db");
    }

    #[test]
    fn records_are_recognised() {
        assert!(is_record_name("c/incarnations/0000000001"));
        assert!(is_record_name("c/incarnations/0000000001.voters"));
        assert!(!is_record_name("c/snapshots/x.db"));
    }
}
