//! Names, keys and metadata of the S3 store: pure functions, no I/O.
//!
//! - The object `n` (always `<cluster>/…`) is the key `<prefix>/<n>`; a
//!   name outside the store's cluster is refused, so eco never reads,
//!   writes, lists or deletes outside `<prefix>/<cluster>/`.
//! - eco's own keys live under hidden segments: the commit markers of
//!   multipart objects (`<prefix>/<cluster>/.sha256/<rest of the name>`)
//!   and the start check's probes (`…/.probe/…`). [`check_name`] refuses a
//!   segment starting with `.`, so no name reaches them and listings skip
//!   them.
//! - User metadata: S3 sends it as `x-amz-meta-<key>: <value>` headers, so
//!   keys are case-insensitive header tokens and values must be visible
//!   ASCII (leading and trailing blanks are lost on the way). The content's
//!   sha256 is `x-amz-meta-sha256` on an object stored in one request; a
//!   multipart object (whose sha256 is only known once its parts are
//!   uploaded) says `x-amz-meta-sha256-in: marker` instead, and its marker
//!   holds `sha256` and `etag`, the ETag of the object it commits. Each
//!   caller entry is
//!   `x-amz-meta-m-<key>`, the key with `[a-z0-9]` kept, `_` written `-`
//!   and every other byte `.xx` (its hex), and the value with every byte
//!   outside `!`..`~` and `%` itself written `%XX`. Both encodings are
//!   bijective, so metadata round-trips exactly; headers eco did not write
//!   (`x-amz-meta-mtime` from another tool) are ignored. S3 caps user
//!   metadata at 2 KiB (keys and values, encoded): a larger map is refused
//!   before anything is uploaded.

use crate::store::{StoreError, check_name};
use std::collections::{BTreeMap, HashMap};

/// The metadata key of the content's hex sha256 (an object's or a
/// marker's).
const SHA256: &str = "sha256";
/// The metadata key of an object whose sha256 is in its marker, and its
/// value.
const SHA256_IN: (&str, &str) = ("sha256-in", "marker");
/// The metadata key of a marker: the ETag of the object it commits.
const ETAG: &str = "etag";
/// The prefix of the caller's metadata keys.
const USER: &str = "m-";
/// S3's limit on user metadata: the sum of the encoded keys and values.
pub(super) const MAX_METADATA: usize = 2048;
/// The hidden folder of the commit markers of multipart objects.
pub(super) const MARKERS: &str = ".sha256";
/// The hidden folder of the conditional-create probe.
pub(super) const PROBES: &str = ".probe";

/// Where an object's sha256 is, when it is written.
#[derive(Clone, Copy, Debug)]
pub(super) enum Sha256At<'a> {
    /// In the object's own metadata (stored in one request).
    Object(&'a str),
    /// In its marker (a multipart object).
    Marker,
}

/// Where an object's sha256 is, as its headers say.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) enum Sha256Of {
    Object(String),
    /// In its marker, which commits it (an object without a marker that
    /// names its ETag is not committed).
    Marker,
    /// Nowhere: eco did not write the object.
    Absent,
}

/// An object's key and the key of its commit marker.
#[derive(Clone, Debug)]
pub(super) struct Located {
    pub(super) name: String,
    pub(super) key: String,
    pub(super) marker: String,
}

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

    /// The keys of a (checked) object name of this cluster and of its
    /// marker.
    pub(super) fn locate(&self, name: &str) -> Result<Located, StoreError> {
        let key = self.key(name)?;
        let rest = &name[self.cluster.len()..];
        Ok(Located {
            name: name.to_string(),
            marker: format!("{}{}{MARKERS}/{rest}", self.root, self.cluster),
            key,
        })
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

    /// A fresh key in a hidden folder of the cluster (`.probe`).
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

pub(super) use crate::store::is_record_name;

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

/// The headers of `metadata` plus where the content's sha256 is; an error
/// when S3 would refuse them (more than [`MAX_METADATA`] bytes).
pub(super) fn encode_metadata(
    metadata: &BTreeMap<String, String>,
    sha256: Sha256At,
) -> Result<HashMap<String, String>, String> {
    let mut out = HashMap::with_capacity(metadata.len() + 1);
    match sha256 {
        Sha256At::Object(sha256) => out.insert(SHA256.to_string(), sha256.to_string()),
        Sha256At::Marker => out.insert(SHA256_IN.0.to_string(), SHA256_IN.1.to_string()),
    };
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

fn decode_sha256(value: &str) -> Result<String, String> {
    if value.len() != 64 || !value.bytes().all(|b| b.is_ascii_hexdigit()) {
        return Err(format!("its sha256 metadata {value:?} is not a hex sha256"));
    }
    Ok(value.to_ascii_lowercase())
}

/// Where the sha256 of an object is and the caller's metadata, from its
/// headers; an error when eco's headers are there but do not decode.
pub(super) fn decode_metadata(
    headers: Option<&HashMap<String, String>>,
) -> Result<(Sha256Of, BTreeMap<String, String>), String> {
    let mut sha256 = Sha256Of::Absent;
    let mut metadata = BTreeMap::new();
    for (k, v) in headers.into_iter().flatten() {
        let k = k.to_ascii_lowercase();
        if k == SHA256 {
            sha256 = Sha256Of::Object(decode_sha256(v)?);
        } else if k == SHA256_IN.0 {
            if v != SHA256_IN.1 {
                return Err(format!("its {k} metadata {v:?} is not {:?}", SHA256_IN.1));
            }
            if sha256 == Sha256Of::Absent {
                sha256 = Sha256Of::Marker;
            }
        } else if let Some(user) = k.strip_prefix(USER) {
            metadata.insert(decode_key(user)?, decode_value(v)?);
        }
    }
    Ok((sha256, metadata))
}

/// An ETag as S3 writes it in headers and listings, without its quotes.
pub(super) fn bare_etag(etag: &str) -> &str {
    etag.trim_matches('"')
}

/// The headers of a marker that commits the object of `etag` with
/// `sha256`.
pub(super) fn encode_marker(sha256: &str, etag: &str) -> HashMap<String, String> {
    HashMap::from([
        (SHA256.to_string(), sha256.to_string()),
        (ETAG.to_string(), encode_value(bare_etag(etag))),
    ])
}

/// The sha256 and the ETag a marker's headers name.
pub(super) fn decode_marker(
    headers: Option<&HashMap<String, String>>,
) -> Result<(String, String), String> {
    let (mut sha256, mut etag) = (None, None);
    for (k, v) in headers.into_iter().flatten() {
        match k.to_ascii_lowercase().as_str() {
            SHA256 => sha256 = Some(decode_sha256(v)?),
            ETAG => etag = Some(decode_value(v)?),
            _ => {}
        }
    }
    match (sha256, etag) {
        (Some(sha256), Some(etag)) => Ok((sha256, etag)),
        _ => Err("its commit marker lacks the sha256 or the ETag".into()),
    }
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
        let scratch = l.scratch_key(PROBES);
        assert!(scratch.starts_with("eco/main/.probe/"));
        assert!(check_name(l.name_of(&scratch).unwrap()).is_err());
        let located = l.locate("main/snapshots/a.db").unwrap();
        assert_eq!(located.key, "eco/main/snapshots/a.db");
        assert_eq!(located.marker, "eco/main/.sha256/snapshots/a.db");
        assert!(
            check_name(l.name_of(&located.marker).unwrap()).is_err(),
            "markers are hidden"
        );
        assert!(l.locate("other/a.db").is_err());
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
        let headers = encode_metadata(&m, Sha256At::Object(&sha)).unwrap();
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
        assert_eq!(
            decode_metadata(Some(&shouted)).unwrap(),
            (Sha256Of::Object(sha), m.clone())
        );
        let multipart = encode_metadata(&m, Sha256At::Marker).unwrap();
        assert_eq!(multipart["sha256-in"], "marker");
        assert!(!multipart.contains_key("sha256"));
        assert_eq!(
            decode_metadata(Some(&multipart)).unwrap(),
            (Sha256Of::Marker, m)
        );
    }

    #[test]
    fn foreign_and_broken_metadata() {
        let foreign = HashMap::from([("mtime".to_string(), "1".to_string())]);
        assert_eq!(
            decode_metadata(Some(&foreign)).unwrap(),
            (Sha256Of::Absent, BTreeMap::new())
        );
        assert_eq!(
            decode_metadata(None).unwrap(),
            (Sha256Of::Absent, BTreeMap::new())
        );
        for (k, v) in [
            ("sha256", "xyz"),
            ("sha256-in", "elsewhere"),
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
        let err = encode_metadata(&m, Sha256At::Object(&"0".repeat(64))).unwrap_err();
        assert!(err.contains("2048"), "{err}");
    }

    #[test]
    fn markers_name_their_object_by_etag() {
        let sha = "CD".repeat(32);
        let headers = encode_marker(&sha, "\"9b2cf535f27731c974343645a3985328-3\"");
        assert_eq!(headers["etag"], "9b2cf535f27731c974343645a3985328-3");
        let shouted: HashMap<String, String> = headers
            .into_iter()
            .map(|(k, v)| (k.to_ascii_uppercase(), v))
            .collect();
        assert_eq!(
            decode_marker(Some(&shouted)).unwrap(),
            (
                sha.to_ascii_lowercase(),
                "9b2cf535f27731c974343645a3985328-3".into()
            )
        );
        assert_eq!(bare_etag("\"x-2\""), "x-2");
        assert!(decode_marker(None).is_err());
        let no_etag = HashMap::from([("sha256".to_string(), "0".repeat(64))]);
        assert!(decode_marker(Some(&no_etag)).is_err());
    }

    #[test]
    fn records_are_recognised() {
        assert!(is_record_name("c/incarnations/0000000001"));
        assert!(is_record_name("c/incarnations/0000000001.voters"));
        assert!(is_record_name("c/pki/ca.json"));
        assert!(!is_record_name("c/snapshots/x.db"));
    }
}
