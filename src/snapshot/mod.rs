//! Snapshots: taking them from etcd into a store, naming them, restoring
//! them.
//!
//! - [`take`] streams `Maintenance.Snapshot` from one member into the store:
//!   memory stays flat whatever the database size, the sha256 is computed on
//!   the way, and etcd's own trailing checksum (the last 32 bytes of the
//!   stream are the sha256 of everything before) is verified before the
//!   object is committed — a truncated or corrupted stream never becomes a
//!   snapshot. The checksum is kept in the object, so `etcdutl snapshot
//!   restore` verifies it again.
//! - [`name`] gives objects names that carry cluster, incarnation, revision
//!   and token, and parses them defensively: what does not parse is not a
//!   snapshot (and is never deleted by retention).
//! - [`listing`] lists a cluster's snapshots: only snapshot names are
//!   read, and one whose metadata names another cluster is reported, not
//!   listed.
//! - [`restore`] verifies the sha256 first, then restores into a fresh data
//!   directory with `etcdutl` (or `etcdctl` on etcd 3.4).
//! - [`codec_choice`] says which layers (`crate::codec`: zstd, age) a
//!   snapshot or segment is written with, from the config and the
//!   cluster's format; [`restore::fetch_verified`] undoes them.
//! - [`to_file`] streams a member's snapshot into a local file, checked
//!   and renamed into place (the seeding's WAL replay, the archive's
//!   replay).
//! - [`import`] puts a snapshot file made by any tool into the store as
//!   this cluster's, checked first by a restore into a throwaway member.

pub mod codec_choice;
pub mod import;
pub mod listing;
pub mod name;
pub mod recorded;
pub mod restore;
pub mod take;
pub mod to_file;
pub mod trailing_hash;
pub mod verify;
pub mod writer;
