//! How the objects eco stores are compressed and encrypted: snapshots
//! (streamed, any size) and the change archive's segments (bytes, bounded).
//!
//! Two layers, each optional, each recorded in the object's metadata so a
//! reader undoes exactly what the writer did:
//!
//! - **compression** (`compression = "zstd"`): zstd at the configured
//!   level, applied first (encrypted bytes do not compress);
//! - **encryption** (`encryption = "age"`): the [age] format
//!   (age-encryption.org/v1) to X25519 recipients, applied last. Any of
//!   the recipients' identities opens the object; the writing instances
//!   hold only the recipients (public keys), so an instance that takes
//!   snapshots cannot read them back unless it is also given an identity
//!   (`snapshot.encryption.identity_file`), as instances that verify and
//!   restore are.
//!
//! The store's sha256 covers the stored (encoded) bytes, so a damaged
//! object is found before anything is decoded; etcd's own trailing
//! checksum covers the decoded snapshot, and age authenticates every
//! 64 KiB chunk (a truncated or altered ciphertext fails to open).
//!
//! Streams are encoded and decoded on a blocking thread between two
//! bounded channels (or straight into a file), so memory stays flat
//! whatever the snapshot's size: a few buffers of [`CHUNK`] bytes, zstd's
//! window, age's 64 KiB chunk.
//!
//! What this module does not do: choose the layers (the caller builds an
//! [`Encoding`] from the config and the cluster's format: compression and
//! encryption of snapshots are format 3, see `recovery::cluster_version`),
//! read the config, or hide names, sizes and eco's bookkeeping metadata
//! (revisions, times, the etcd version, the key space's hash) from a
//! reader of the store: those stay readable so every instance can plan
//! without the identity.
//!
//! [age]: https://age-encryption.org/v1

mod keys;
mod layers;
mod stream;

pub use keys::{Identities, KeyError, Recipients};
pub use layers::{CodecError, Encoding, Layers, meta};
pub use stream::{decode_bytes, decode_to_file, encode_bytes, encode_stream};

/// The size of the buffers a stream moves through.
pub const CHUNK: usize = 256 * 1024;
