//! The change archive (docs/concepts.md, "Change archive"): every change etcd
//! makes, in segments of about a second, beside the full snapshots, so a
//! total loss costs about a second of writes and a restore can go to any
//! revision or time the archive covers.
//!
//! - [`writer`]: on the instance that writes snapshots, one watch from the
//!   archive's newest point, cut into segments and stored; a new chain (a
//!   full snapshot at once) when the watch cannot continue.
//! - [`segment`]: a segment's content (whole revisions, zstd, sha256).
//! - [`name`]: segment names (incarnation, first and last revision, token),
//!   parsed defensively.
//! - [`listing`]: the snapshots and segments a decision reads.
//! - [`replay`]: a restore to a point — the chain's snapshot restored into
//!   a throwaway etcd, its segments replayed one transaction per revision,
//!   a snapshot of that taken, checked and restored.
//!
//! The decisions (chains, where to resume, what a restore replays, which
//! segments retention deletes) are `recovery::archive`'s.
//!
//! What it does not do: carry leases, auth or membership (a segment holds
//! key-value changes only; a replayed key loses its lease, and the restore
//! says how many did), or archive while this instance does not write
//! snapshots.

pub mod listing;
pub mod name;
pub mod replay;
pub mod segment;
pub mod writer;
