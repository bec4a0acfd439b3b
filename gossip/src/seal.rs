//! Sealing datagrams: XChaCha20-Poly1305, random 24-byte nonces, the cluster
//! name as associated data. Layout: `nonce (24) || ciphertext+tag`.

use chacha20poly1305::aead::{Aead, KeyInit, Payload};
use chacha20poly1305::{Key, XChaCha20Poly1305, XNonce};

const NONCE_LEN: usize = 24;
/// Bytes a sealed datagram adds to its payload.
pub const OVERHEAD: usize = NONCE_LEN + 16;

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum SealError {
    #[error("a gossip key must be 64 hex digits (32 bytes); line {line} is not")]
    BadKey { line: usize },
    #[error("no gossip key given")]
    NoKey,
    #[error("sealing failed")]
    Seal,
}

/// The keys of a key file's text, in order: one key per line as 64 hex
/// digits; blank lines and `#` comments are ignored. At least one.
pub fn parse_keys(text: &str) -> Result<Vec<[u8; 32]>, SealError> {
    let mut keys = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let bytes = hex::decode(line).map_err(|_| SealError::BadKey { line: i + 1 })?;
        let key: [u8; 32] = bytes
            .try_into()
            .map_err(|_| SealError::BadKey { line: i + 1 })?;
        keys.push(key);
    }
    if keys.is_empty() {
        return Err(SealError::NoKey);
    }
    Ok(keys)
}

/// Keys, first seals, all open.
#[derive(Clone)]
pub struct Keyring {
    ciphers: Vec<XChaCha20Poly1305>,
    cluster: Vec<u8>,
}

impl std::fmt::Debug for Keyring {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Keyring({} keys)", self.ciphers.len())
    }
}

impl Keyring {
    pub fn new(keys: &[[u8; 32]], cluster: &str) -> Result<Self, SealError> {
        if keys.is_empty() {
            return Err(SealError::NoKey);
        }
        Ok(Self {
            ciphers: keys
                .iter()
                .map(|k| XChaCha20Poly1305::new(Key::from_slice(k)))
                .collect(),
            cluster: cluster.as_bytes().to_vec(),
        })
    }

    /// Parses keys from text: one key per line as 64 hex digits; blank lines
    /// and `#` comments are ignored.
    pub fn parse(text: &str, cluster: &str) -> Result<Self, SealError> {
        Self::new(&parse_keys(text)?, cluster)
    }

    /// How many keys open datagrams (the first of them seals).
    pub fn key_count(&self) -> usize {
        self.ciphers.len()
    }

    pub fn seal(&self, plain: &[u8]) -> Result<Vec<u8>, SealError> {
        let nonce: [u8; NONCE_LEN] = rand::random();
        let cipher = self.ciphers.first().ok_or(SealError::NoKey)?;
        let sealed = cipher
            .encrypt(
                XNonce::from_slice(&nonce),
                Payload {
                    msg: plain,
                    aad: &self.cluster,
                },
            )
            .map_err(|_| SealError::Seal)?;
        let mut out = Vec::with_capacity(NONCE_LEN + sealed.len());
        out.extend_from_slice(&nonce);
        out.extend_from_slice(&sealed);
        Ok(out)
    }

    /// Opens a datagram with any key; `None` when none opens it.
    pub fn open(&self, datagram: &[u8]) -> Option<Vec<u8>> {
        if datagram.len() < OVERHEAD {
            return None;
        }
        let (nonce, sealed) = datagram.split_at(NONCE_LEN);
        self.ciphers.iter().find_map(|c| {
            c.decrypt(
                XNonce::from_slice(nonce),
                Payload {
                    msg: sealed,
                    aad: &self.cluster,
                },
            )
            .ok()
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seal_open_rotation_and_binding() {
        let a = [1u8; 32];
        let b = [2u8; 32];
        let old = Keyring::new(&[a], "c").unwrap();
        let rotating = Keyring::new(&[b, a], "c").unwrap();
        let new = Keyring::new(&[b], "c").unwrap();
        let msg = b"hello";
        assert_eq!(
            rotating.open(&old.seal(msg).unwrap()).as_deref(),
            Some(&msg[..])
        );
        assert_eq!(
            old.open(&rotating.seal(msg).unwrap()),
            None,
            "old keyring cannot open the new key"
        );
        assert_eq!(
            new.open(&rotating.seal(msg).unwrap()).as_deref(),
            Some(&msg[..])
        );
        let other_cluster = Keyring::new(&[a], "d").unwrap();
        assert_eq!(
            other_cluster.open(&old.seal(msg).unwrap()),
            None,
            "cluster name is bound"
        );
        let mut tampered = old.seal(msg).unwrap();
        let last = tampered.len() - 1;
        tampered[last] ^= 1;
        assert_eq!(old.open(&tampered), None);
    }

    #[test]
    fn parses_key_files() {
        let text = format!("# keys\n{}\n\n{}\n", "ab".repeat(32), "cd".repeat(32));
        assert!(Keyring::parse(&text, "c").is_ok());
        assert_eq!(
            Keyring::parse("zz", "c").unwrap_err(),
            SealError::BadKey { line: 1 }
        );
        assert_eq!(
            Keyring::parse(&"ab".repeat(31), "c").unwrap_err(),
            SealError::BadKey { line: 1 }
        );
        assert_eq!(
            Keyring::parse("# none\n", "c").unwrap_err(),
            SealError::NoKey
        );
    }

    #[test]
    fn random_and_truncated_datagrams_never_panic() {
        let k = Keyring::new(&[[7u8; 32]], "c").unwrap();
        let good = k.seal(b"payload").unwrap();
        for cut in 0..good.len() {
            assert_eq!(k.open(&good[..cut]), None);
        }
        let mut x: u64 = 0x9e3779b97f4a7c15;
        for len in 0..600usize {
            let d: Vec<u8> = (0..len)
                .map(|_| {
                    x ^= x << 13;
                    x ^= x >> 7;
                    x ^= x << 17;
                    x as u8
                })
                .collect();
            assert_eq!(k.open(&d), None);
        }
    }
}
