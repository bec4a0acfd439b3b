//! Which pods of a Kubernetes StatefulSet form the group, and which are
//! gone: the StatefulSet provider's answers, decided from the set's name
//! and its desired size (plain data in, plain answers out).
//!
//! A StatefulSet's pods are `<set>-0` … `<set>-(n-1)`: the ordinal is the
//! identity, stable across restarts and rescheduling (the pod's IP is not).
//! The rules:
//!
//! - **members**: every ordinal below the desired size, whether its pod
//!   exists right now or not — a pod being rescheduled is still a member
//!   (it comes back under its name, with its volume);
//! - **departed** (certified gone): a pod of this set whose ordinal is at
//!   or above the desired size — a scale-down removed it, or is removing
//!   it. Never "its name did not resolve" or "its pod is not running":
//!   that is a restart or a reschedule, and quorum-loss recovery must keep
//!   waiting for a member that may hold the only copy of acknowledged
//!   writes;
//! - **leaving**: this pod, when its own ordinal is at or above the desired
//!   size (it is not among the members; the planner's leaving rules remove
//!   its member and stop its etcd);
//! - an id that is not a pod of this set (another set's, a typo) is
//!   neither member nor departed: unknown.
//!
//! What this module does not do: read the desired size (the provider reads
//! it from its config or a file that changes with the chart's `replicas`),
//! resolve names, or talk to Kubernetes (eco needs no API access).

use std::collections::BTreeSet;

/// The largest desired size eco accepts. etcd advises clusters of at most
/// seven members: every write waits for a majority of them, and each
/// member adds replication and election traffic; nine leaves room past
/// that advice. A larger number is a typo (`30` for `3`), not a plan, and
/// the desired size names every pod of the group: a replicas file is read
/// again on every refresh in every pod, so such a typo must be refused —
/// the last good size kept — not turned into a group of pods that do not
/// exist (or, at `4294967295`, an allocation that aborts every pod at
/// once).
pub const MAX_REPLICAS: u32 = 9;

/// The ordinal of `pod` in the StatefulSet `set`: `pod` is `<set>-<n>`,
/// `n` in decimal without leading zeros (`eco-01` is not a pod of `eco`).
pub fn ordinal(set: &str, pod: &str) -> Option<u32> {
    let digits = pod.strip_prefix(set)?.strip_prefix('-')?;
    let canonical = !digits.is_empty()
        && digits.bytes().all(|b| b.is_ascii_digit())
        && (digits == "0" || !digits.starts_with('0'));
    if !canonical {
        return None;
    }
    digits.parse().ok()
}

/// The set's name and the ordinal of `pod`, from the pod's name alone
/// (`eco-etcd-2` → `("eco-etcd", 2)`).
pub fn split(pod: &str) -> Option<(&str, u32)> {
    let (set, _) = pod.rsplit_once('-')?;
    if set.is_empty() {
        return None;
    }
    Some((set, ordinal(set, pod)?))
}

/// The name of the pod at `ordinal`.
pub fn pod_name(set: &str, ordinal: u32) -> String {
    format!("{set}-{ordinal}")
}

/// The members of a set of `desired` pods: ordinals `0..desired`, in
/// order.
pub fn members(set: &str, desired: u32) -> Vec<String> {
    (0..desired).map(|i| pod_name(set, i)).collect()
}

/// Of `ids`, the pods certified gone: pods of `set` at or above `desired`.
pub fn departed<'a>(
    set: &str,
    desired: u32,
    ids: impl IntoIterator<Item = &'a String>,
) -> BTreeSet<String> {
    ids.into_iter()
        .filter(|id| ordinal(set, id).is_some_and(|n| n >= desired))
        .cloned()
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ordinals_are_canonical_decimal_suffixes_of_the_set() {
        let table: &[(&str, &str, Option<u32>)] = &[
            ("eco", "eco-0", Some(0)),
            ("eco", "eco-12", Some(12)),
            ("eco-etcd", "eco-etcd-3", Some(3)),
            ("eco", "eco-etcd-3", None),
            ("eco", "eco-01", None),
            ("eco", "eco-", None),
            ("eco", "eco", None),
            ("eco", "eco-1a", None),
            ("eco", "eco-+1", None),
            ("eco", "other-1", None),
            ("eco", "eco-99999999999", None),
        ];
        for (set, pod, want) in table {
            assert_eq!(ordinal(set, pod), *want, "{set} {pod}");
        }
        assert_eq!(split("eco-etcd-2"), Some(("eco-etcd", 2)));
        assert_eq!(split("eco-0"), Some(("eco", 0)));
        for bad in ["eco", "-1", "eco-x", "eco-007"] {
            assert_eq!(split(bad), None, "{bad}");
        }
    }

    #[test]
    fn members_are_every_ordinal_below_the_desired_size() {
        assert_eq!(members("eco", 3), ["eco-0", "eco-1", "eco-2"]);
        assert!(members("eco", 0).is_empty());
        for n in 1..8 {
            for m in members("s", n) {
                assert_eq!(split(&m).map(|(s, _)| s), Some("s"));
                assert!(ordinal("s", &m).is_some_and(|o| o < n));
            }
        }
    }

    #[test]
    fn departed_is_at_or_above_the_desired_size_of_this_set_only() {
        let ids: Vec<String> = ["eco-0", "eco-2", "eco-3", "eco-10", "other-5", "eco-03"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        let gone = departed("eco", 3, &ids);
        assert_eq!(
            gone.iter().map(String::as_str).collect::<Vec<_>>(),
            ["eco-10", "eco-3"]
        );
        // A member is never departed, whatever the size.
        for n in 0..6u32 {
            let members = members("eco", n);
            assert!(departed("eco", n, &members).is_empty());
            // Shrinking by one makes exactly the last ordinal departed.
            if n > 0 {
                let gone = departed("eco", n - 1, &members);
                assert_eq!(
                    gone.into_iter().collect::<Vec<_>>(),
                    [pod_name("eco", n - 1)]
                );
            }
        }
    }
}
