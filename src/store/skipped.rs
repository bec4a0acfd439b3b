//! The objects a store's listings skip for unreadable info, remembered so
//! that each is logged once per process, not on every listing.

use std::collections::HashSet;
use std::sync::Mutex;

#[derive(Debug, Default)]
pub struct Skipped {
    seen: Mutex<HashSet<String>>,
}

impl Skipped {
    /// True the first time `name` is skipped.
    pub fn first_time(&self, name: &str) -> bool {
        self.seen
            .lock()
            .map(|mut s| s.insert(name.to_string()))
            .unwrap_or(false)
    }
}
