//! Where eco reaches its own etcd's client surface.
//!
//! Its scheme follows the listener: while TLS is being turned on for a
//! running cluster, a member whose peer URL is still `http` serves its
//! client port over `http` too (`etcd::flags`), and its switch's restart
//! makes it `https`. So the URL is shared by everything that talks to the
//! local etcd (the pass, the snapshot writer, the ACL reconciler) and read
//! at each connection rather than copied once at start.

use std::sync::{Arc, RwLock};

/// The local etcd's client URL, shared and updated at each etcd start.
#[derive(Clone, Debug)]
pub struct LocalEndpoint(Arc<RwLock<String>>);

impl LocalEndpoint {
    pub fn new(url: String) -> Self {
        Self(Arc::new(RwLock::new(url)))
    }

    /// The URL now.
    pub fn get(&self) -> String {
        match self.0.read() {
            Ok(url) => url.clone(),
            Err(poisoned) => poisoned.into_inner().clone(),
        }
    }

    /// The URL from now on.
    pub fn set(&self, url: String) {
        match self.0.write() {
            Ok(mut u) => *u = url,
            Err(poisoned) => *poisoned.into_inner() = url,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_clone_sees_the_new_url() {
        let a = LocalEndpoint::new("http://127.0.0.1:2379".into());
        let b = a.clone();
        a.set("https://127.0.0.1:2379".into());
        assert_eq!(b.get(), "https://127.0.0.1:2379");
    }
}
