//! Which etcd releases answer `/livez` and `/readyz` (etcd's own liveness
//! and readiness checks, the way etcd 3.6 and Kubernetes probe it), on the
//! metrics listener whatever TLS the client port speaks: 3.5.11 and later
//! (etcd#17039), 3.4.29 and later (etcd#17128), every 3.6. `/readyz`
//! fails on a data-corruption alarm or when serializable or linearizable
//! reads are not served, and from 3.5.19 on a learner. eco asks it where
//! the release has it: a member etcd calls not ready makes the instance
//! not ready (`pass::decide`), with etcd's reason in `/status`. Releases
//! without it keep the rule that served them: the member answers its
//! Status and knows a leader.
//!
//! Pure. What it does not do: probe anything.

use crate::etcd_version::Version;

/// The release answers `/livez` and `/readyz`.
pub fn has_readyz(release: Version) -> bool {
    match (release.major, release.minor) {
        (3, 4) => release.patch >= 29,
        (3, 5) => release.patch >= 11,
        (3, m) => m >= 6,
        (major, _) => major > 3,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn table() {
        for (release, want) in [
            ("3.4.23", false),
            ("3.4.28", false),
            ("3.4.29", true),
            ("3.5.1", false),
            ("3.5.10", false),
            ("3.5.11", true),
            ("3.5.16", true),
            ("3.5.30", true),
            ("3.6.0", true),
            ("3.3.27", false),
        ] {
            let v = Version::parse(release).expect("a version");
            assert_eq!(has_readyz(v), want, "{release}");
        }
    }
}
