//! Everything about the local etcd: finding its binaries, deriving its
//! flags, supervising its process, probing its health, and reading its
//! write-ahead log.

pub mod binaries;
pub mod flags;
pub mod members;
pub mod output;
pub mod probe;
pub mod supervisor;
pub mod wal;
