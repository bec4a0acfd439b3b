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
