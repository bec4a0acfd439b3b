//! The CA as it is kept in the store: its certificate in the clear, its
//! private key sealed — XChaCha20-Poly1305 under a key derived from each
//! gossip key (HKDF-SHA256, salt `eco pki ca v1`, info the cluster name),
//! with the cluster name and the CA certificate's SHA-256 as associated
//! data (a sealed key cannot be moved to another certificate or cluster).
//! One seal per gossip key that sealed it, each named by a fingerprint of
//! its derived key, so any instance holding any of those keys opens it.
//!
//! Whoever reads the store learns the CA certificate and nothing usable:
//! opening a seal needs a gossip key. Pure: values in, values out.

use super::ca::{CaError, ClusterCa};
use base64::Engine;
use chacha20poly1305::aead::{Aead, KeyInit, Payload};
use chacha20poly1305::{Key, XChaCha20Poly1305, XNonce};
use hkdf::Hkdf;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

/// The object's format version.
const VERSION: u32 = 1;
const SALT: &[u8] = b"eco pki ca v1";

#[derive(Debug, thiserror::Error)]
pub enum SealedCaError {
    #[error("the CA object does not parse: {0}")]
    Format(String),
    #[error(
        "none of this instance's gossip keys opens the CA's key: it is sealed under key id(s) {}, and this instance's keys are id(s) {} (an id is derived from a gossip key and the cluster name). The key set no longer holds the key the CA was sealed under: put that key back in the key set, after the current one (step 1 of a rotation, docs/runbook.md \"Rotating the gossip keys\"); the next certificate check then opens the CA and seals it for the current key",
        sealed.join(", "),
        own.join(", ")
    )]
    NoKey {
        /// The key ids of the object's seals.
        sealed: Vec<String>,
        /// This instance's key ids, in the key set's order.
        own: Vec<String>,
    },
    #[error("the CA's key opened but is not usable: {0}")]
    Ca(#[from] CaError),
}

/// The stored object (JSON).
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Eq)]
pub struct SealedCa {
    pub version: u32,
    pub ca_cert_pem: String,
    pub seals: Vec<Seal>,
}

/// The CA's key sealed under one derived key.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Eq)]
pub struct Seal {
    /// Hex of the first 8 bytes of the derived key's SHA-256.
    pub key_id: String,
    /// Hex, 24 bytes.
    pub nonce: String,
    /// Base64 of the sealed PEM.
    pub sealed: String,
}

fn derived(gossip_key: &[u8; 32], cluster: &str) -> [u8; 32] {
    let mut out = [0u8; 32];
    // 32 bytes is far below HKDF-SHA256's limit: expand cannot fail.
    let _ = Hkdf::<Sha256>::new(Some(SALT), gossip_key).expand(cluster.as_bytes(), &mut out);
    out
}

fn key_id(derived: &[u8; 32]) -> String {
    hex::encode(&Sha256::digest(derived)[..8])
}

/// The key id of each of `gossip_keys` for `cluster`, in their order: what
/// names their seals.
pub fn key_ids(gossip_keys: &[[u8; 32]], cluster: &str) -> Vec<String> {
    gossip_keys
        .iter()
        .map(|k| key_id(&derived(k, cluster)))
        .collect()
}

fn associated(cluster: &str, ca_cert_pem: &str) -> Vec<u8> {
    let mut aad = cluster.as_bytes().to_vec();
    aad.push(0);
    aad.extend_from_slice(&Sha256::digest(ca_cert_pem.as_bytes()));
    aad
}

fn seal_one(ca: &ClusterCa, gossip_key: &[u8; 32], cluster: &str) -> Option<Seal> {
    let key = derived(gossip_key, cluster);
    let nonce: [u8; 24] = rand::random();
    let sealed = XChaCha20Poly1305::new(Key::from_slice(&key))
        .encrypt(
            XNonce::from_slice(&nonce),
            Payload {
                msg: ca.key_pem().as_bytes(),
                aad: &associated(cluster, &ca.cert_pem),
            },
        )
        .ok()?;
    Some(Seal {
        key_id: key_id(&key),
        nonce: hex::encode(nonce),
        sealed: base64::engine::general_purpose::STANDARD.encode(sealed),
    })
}

impl SealedCa {
    /// `ca` sealed under every one of `gossip_keys`.
    pub fn seal(ca: &ClusterCa, gossip_keys: &[[u8; 32]], cluster: &str) -> Self {
        Self {
            version: VERSION,
            ca_cert_pem: ca.cert_pem.clone(),
            seals: gossip_keys
                .iter()
                .filter_map(|k| seal_one(ca, k, cluster))
                .collect(),
        }
    }

    pub fn to_json(&self) -> Vec<u8> {
        serde_json::to_vec_pretty(self).unwrap_or_default()
    }

    pub fn from_json(bytes: &[u8]) -> Result<Self, SealedCaError> {
        let s: Self =
            serde_json::from_slice(bytes).map_err(|e| SealedCaError::Format(e.to_string()))?;
        // Every version up to this eco's own is read (there is one so
        // far); a later one is a newer eco's, refused by name.
        if s.version == 0 || s.version > VERSION {
            return Err(SealedCaError::Format(format!(
                "version {} (this eco reads versions 1 to {VERSION}; a later version was written by a newer eco)",
                s.version
            )));
        }
        Ok(s)
    }

    /// The CA, opened with the first of `gossip_keys` that has a seal.
    pub fn open(
        &self,
        gossip_keys: &[[u8; 32]],
        cluster: &str,
    ) -> Result<ClusterCa, SealedCaError> {
        for gossip_key in gossip_keys {
            let key = derived(gossip_key, cluster);
            let id = key_id(&key);
            let Some(seal) = self.seals.iter().find(|s| s.key_id == id) else {
                continue;
            };
            let bad = |what: &str| SealedCaError::Format(format!("the seal of key {id}: {what}"));
            let nonce = hex::decode(&seal.nonce).map_err(|_| bad("nonce is not hex"))?;
            if nonce.len() != 24 {
                return Err(bad("nonce is not 24 bytes"));
            }
            let sealed = base64::engine::general_purpose::STANDARD
                .decode(&seal.sealed)
                .map_err(|_| bad("not base64"))?;
            let pem = XChaCha20Poly1305::new(Key::from_slice(&key))
                .decrypt(
                    XNonce::from_slice(&nonce),
                    Payload {
                        msg: &sealed,
                        aad: &associated(cluster, &self.ca_cert_pem),
                    },
                )
                .map_err(|_| {
                    bad("does not open (altered, or sealed for another certificate or cluster)")
                })?;
            let pem = String::from_utf8(pem).map_err(|_| bad("not text"))?;
            return Ok(ClusterCa::from_pem(self.ca_cert_pem.clone(), pem)?);
        }
        Err(SealedCaError::NoKey {
            sealed: self.seals.iter().map(|s| s.key_id.clone()).collect(),
            own: key_ids(gossip_keys, cluster),
        })
    }

    /// The object as a holder of `gossip_keys` leaves it after a gossip key
    /// rotation, as `recovery::certificates::reseal` decides: sealed for
    /// each of its keys that has no seal, and without the seals of retired
    /// keys once it holds a single key. `None` when nothing changes.
    pub fn resealed_for(
        &self,
        ca: &ClusterCa,
        gossip_keys: &[[u8; 32]],
        cluster: &str,
    ) -> Option<Self> {
        let own = key_ids(gossip_keys, cluster);
        let sealed: Vec<String> = self.seals.iter().map(|s| s.key_id.clone()).collect();
        let plan = recovery::certificates::reseal(&sealed, &own);
        if plan == recovery::certificates::Reseal::default() {
            return None;
        }
        let mut out = self.clone();
        out.seals.retain(|s| !plan.drop.contains(&s.key_id));
        for (k, id) in gossip_keys.iter().zip(&own) {
            if plan.add.contains(id) {
                out.seals.extend(seal_one(ca, k, cluster));
            }
        }
        Some(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::SystemTime;

    #[test]
    fn sealed_under_each_key_opened_by_any_and_nothing_else() {
        let ca = ClusterCa::generate("main", SystemTime::now()).unwrap();
        let (a, b, c) = ([1u8; 32], [2u8; 32], [3u8; 32]);
        let sealed = SealedCa::seal(&ca, &[a, b], "main");
        let json = sealed.to_json();
        let text = String::from_utf8(json.clone()).unwrap();
        assert!(!text.contains("PRIVATE KEY"), "no key in the clear");
        assert!(text.contains("BEGIN CERTIFICATE"));
        let back = SealedCa::from_json(&json).unwrap();
        for keys in [[a].as_slice(), &[b], &[c, b]] {
            assert_eq!(back.open(keys, "main").unwrap().cert_pem, ca.cert_pem);
        }
        let ids = key_ids(&[a, b, c], "main");
        match back.open(&[c], "main") {
            Err(e @ SealedCaError::NoKey { .. }) => {
                let said = e.to_string();
                assert!(
                    said.contains(&format!("sealed under key id(s) {}, {}", ids[0], ids[1]))
                        && said.contains(&format!("this instance's keys are id(s) {}", ids[2]))
                        && said.contains("put that key back in the key set"),
                    "{said}"
                );
            }
            other => panic!("{other:?}"),
        }
        // Bound to the cluster and to the certificate.
        assert!(back.open(&[a], "other").is_err());
        let other = ClusterCa::generate("main", SystemTime::now()).unwrap();
        let mut moved = back.clone();
        moved.ca_cert_pem = other.cert_pem.clone();
        assert!(
            moved.open(&[a], "main").is_err(),
            "a seal does not move to another certificate"
        );
        // A rotation adds seals for new keys, and once over drops the
        // retired ones.
        assert!(back.resealed_for(&ca, &[b, a], "main").is_none());
        let rotating = back.resealed_for(&ca, &[c, a], "main").unwrap();
        assert_eq!(rotating.seals.len(), 3);
        assert_eq!(rotating.open(&[c], "main").unwrap().cert_pem, ca.cert_pem);
        let rotated = rotating.resealed_for(&ca, &[c], "main").unwrap();
        assert_eq!(rotated.seals.len(), 1);
        assert!(
            rotated.open(&[a], "main").is_err(),
            "a retired key opens nothing"
        );
        assert!(rotated.open(&[b], "main").is_err());
        assert!(rotated.resealed_for(&ca, &[c], "main").is_none());
        assert!(SealedCa::from_json(b"{}").is_err());
    }
}
