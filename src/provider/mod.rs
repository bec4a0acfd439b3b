//! Providers tell an instance who it is and which instances form its group.
//!
//! One trait, [`Provider::discover`], returning a [`Group`]. The static
//! provider reads a file; cloud providers (AWS auto-scaling groups,
//! Kubernetes StatefulSets) plug in behind the same trait.

mod group;
mod static_file;

pub use group::{Group, Instance};
pub use static_file::{StaticProvider, parse_group_file};

/// Why the group could not be discovered.
#[derive(Debug, thiserror::Error)]
pub enum ProviderError {
    #[error("cannot read group file {path}: {source}")]
    Read {
        path: std::path::PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("group file {path}: {message}")]
    Malformed {
        path: std::path::PathBuf,
        message: String,
    },
    #[error("instance {id:?} is not in the group file {path}; the group lists: {listed}")]
    SelfNotInGroup {
        id: String,
        path: std::path::PathBuf,
        listed: String,
    },
}

/// Source of the group of instances.
#[allow(async_fn_in_trait)]
pub trait Provider {
    /// This instance's id, as the provider knows it.
    fn self_id(&self) -> &str;
    /// The current group. Implementations keep no hidden state across
    /// calls except what they document.
    async fn discover(&self) -> Result<Group, ProviderError>;
}
