//! The ground floor: what every other part of eco uses and that uses
//! nothing of eco's — writing a file atomically, noticing that a file
//! changed, reading a secret file, the wall clock (for records, never for
//! decisions), text from outside made printable, an error chain for a
//! person, the stable names of the structured events, the names eco
//! accepts (hosts, instance ids, object names) and the build's version.
//!
//! Nothing here knows the config, the store, etcd or the daemon
//! (`scripts/check-floors.py` holds it so).

pub mod atomic_file;
pub mod error_report;
pub mod events;
pub mod file_stamp;
pub mod names;
pub mod printable;
pub mod secret_file;
pub mod version;
pub mod wall_clock;
