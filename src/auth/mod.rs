//! Authentication inside etcd (`[auth]`), the I/O side: the desired ACL
//! from the config and the password files ([`desired`]), what this
//! instance applied ([`applied`], `eco-acl.json`), the files' checks
//! ([`files`], [`jwt_keys`]), the config file looked at again while eco
//! runs ([`config_watch`]); the reconciler beside the daemon's loop that
//! uses them is the daemon's (`daemon/acl.rs`). What to change is decided by `recovery::acl`
//! (pure); etcd's calls are in `crate::etcd::acl`; eco's own credentials
//! in `crate::etcd::credentials` (used by `EtcdAccess`).

pub mod applied;
pub mod config_watch;
pub mod desired;
pub mod files;
pub mod jwt_keys;

pub use files::{check_files, describe_identity};
