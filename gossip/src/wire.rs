//! What goes inside a sealed datagram: a tag, then either a foca packet or
//! an addressed message.

use serde::{Deserialize, Serialize};

#[derive(Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Frame {
    /// A SWIM packet for foca.
    Swim(Vec<u8>),
    /// An addressed message from one instance to another.
    Message {
        from: String,
        to: String,
        bytes: Vec<u8>,
    },
}

impl Frame {
    pub fn encode(&self) -> Result<Vec<u8>, postcard::Error> {
        postcard::to_allocvec(self)
    }

    pub fn decode(bytes: &[u8]) -> Option<Self> {
        postcard::from_bytes(bytes).ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip() {
        let f = Frame::Message {
            from: "a".into(),
            to: "b".into(),
            bytes: vec![1, 2, 3],
        };
        assert_eq!(Frame::decode(&f.encode().unwrap()), Some(f));
    }

    /// What a holder of the key could send: arbitrary or cut plaintext never
    /// panics the decoder (nor foca's, which gets only well-framed packets).
    #[test]
    fn random_and_truncated_frames_never_panic() {
        let good = Frame::Swim(vec![7; 300]).encode().unwrap();
        for cut in 0..good.len() {
            let _ = Frame::decode(&good[..cut]);
        }
        let mut x: u64 = 0xdead_beef_cafe_f00d;
        for len in 0..2000usize {
            let d: Vec<u8> = (0..len % 700)
                .map(|_| {
                    x ^= x << 13;
                    x ^= x >> 7;
                    x ^= x << 17;
                    x as u8
                })
                .collect();
            if let Some(Frame::Swim(bytes)) = Frame::decode(&d) {
                // Feed it to a real foca too: it must answer with an error,
                // not a panic.
                let id = crate::identity::NodeId {
                    instance: "me".into(),
                    addr: "127.0.0.1:1".parse().unwrap(),
                    boot: 0,
                    bump: 0,
                };
                let mut foca = foca::Foca::new(
                    id,
                    foca::Config::new_lan(std::num::NonZeroU32::MIN),
                    <rand::rngs::SmallRng as rand::SeedableRng>::seed_from_u64(1),
                    foca::PostcardCodec,
                );
                let mut rt = foca::AccumulatingRuntime::new();
                let _ = foca.handle_data(&bytes, &mut rt);
            }
        }
    }
}
