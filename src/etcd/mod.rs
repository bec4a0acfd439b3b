//! Everything about the local etcd: finding its binaries, deriving its
//! flags, supervising its process, and probing its health.

pub mod binaries;
pub mod flags;
pub mod members;
pub mod output;
pub mod probe;
pub mod supervisor;
