//! Everything about etcd: how eco reaches members ([`access`], the one way
//! to build a client), finding its binaries, deriving every command line
//! ([`flags`]), supervising the local process, probing health, membership
//! calls, and reading a stopped member's write-ahead log.

pub mod access;
pub mod acl;
pub mod binaries;
pub mod call;
pub mod cluster_view;
pub mod credentials;
pub mod exit_reason;
pub mod flags;
pub mod launched;
pub mod local_endpoint;
pub mod maintenance;
pub mod member_clocks;
pub mod members;
pub mod metrics_text;
pub mod output;
pub mod probe;
pub mod probe_error;
pub mod supervisor;
pub mod tls;
pub mod tls_check;
pub mod tls_in_force;
pub mod v2store_check;
pub mod wal;
