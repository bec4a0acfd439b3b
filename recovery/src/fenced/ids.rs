//! The small vocabulary every other file uses.

/// An instance id as the provider names it (EC2 instance id, pod name,
/// static id). Members of `V_n` are instance ids, never etcd member ids.
pub type InstanceId = String;

/// Milliseconds on the daemon's monotonic clock. The crate never reads a
/// clock: every time is an input.
pub type Millis = u64;

/// The counter of seeded clusters: formation seeds incarnation 1.
pub type Incarnation = u64;

/// A random value drawn per daemon start; messages are bound to it so a
/// restarted coordinator never counts answers meant for its previous life.
pub type BootId = u64;

/// Majority of `n` voters ([`crate::quorum::quorum`]).
pub use crate::quorum::quorum as majority;
