//! etcd's snapshot checksum: a snapshot stream (and a saved snapshot file)
//! ends with 32 bytes that are the sha256 of everything before them.
//! [`TrailingHash`] checks that incrementally, holding back only the last
//! 32 bytes, so any size streams through in constant memory.

use sha2::{Digest, Sha256};

pub const HASH_LEN: usize = 32;

#[derive(Default)]
pub struct TrailingHash {
    body: Sha256,
    tail: Vec<u8>,
    total: u64,
}

impl TrailingHash {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn update(&mut self, chunk: &[u8]) {
        self.total += chunk.len() as u64;
        self.tail.extend_from_slice(chunk);
        if self.tail.len() > HASH_LEN {
            let cut = self.tail.len() - HASH_LEN;
            self.body.update(&self.tail[..cut]);
            self.tail.drain(..cut);
        }
    }

    /// True when the stream ended with the sha256 of what came before.
    pub fn verify(self) -> bool {
        self.tail.len() == HASH_LEN
            && self.total > HASH_LEN as u64
            && self.body.finalize().as_slice() == self.tail.as_slice()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn with_hash(body: &[u8]) -> Vec<u8> {
        let mut v = body.to_vec();
        v.extend_from_slice(&Sha256::digest(body));
        v
    }

    #[test]
    fn accepts_any_chunking_and_rejects_damage() {
        let body: Vec<u8> = (0..10_000u32).map(|i| (i * 7 % 251) as u8).collect();
        let good = with_hash(&body);
        for chunk in [1, 3, 31, 32, 33, 4096, good.len()] {
            let mut t = TrailingHash::new();
            good.chunks(chunk).for_each(|c| t.update(c));
            assert!(t.verify(), "chunk {chunk}");
        }
        let mut flipped = good.clone();
        flipped[5000] ^= 1;
        let mut t = TrailingHash::new();
        t.update(&flipped);
        assert!(!t.verify());
        let mut t = TrailingHash::new();
        t.update(&good[..good.len() - 1]);
        assert!(!t.verify(), "truncated");
        assert!(!TrailingHash::new().verify(), "empty");
    }
}
