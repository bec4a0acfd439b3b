//! Keys eco no longer reads, each with what replaces it. A config that
//! still has one is refused with that answer instead of toml's generic
//! "unknown field" (which would not say where the setting went), and
//! nothing else in the file is lost: the file is not changed.

use super::Problem;

/// A key eco no longer reads: its dotted name and what to do instead.
#[derive(Debug)]
pub struct RemovedKey {
    pub key: &'static str,
    pub instead: &'static str,
}

/// Every removed key. A row stays as long as an older config may carry
/// the key.
pub const REMOVED_KEYS: &[RemovedKey] = &[
    RemovedKey {
        key: "etcd.client_scheme",
        instead: "the client surface's scheme follows [etcd.tls]: https with TLS files or [etcd.tls.generated], http without; to keep a cluster that has a snapshot store in the clear, set [etcd.tls] plaintext = true",
    },
    RemovedKey {
        key: "etcd.peer_scheme",
        instead: "the peer surface's scheme follows [etcd.tls]: https with TLS files or [etcd.tls.generated], http without; to keep a cluster that has a snapshot store in the clear, set [etcd.tls] plaintext = true",
    },
    RemovedKey {
        key: "provider.static.refresh_interval",
        instead: "set provider.refresh_interval (one key for every provider kind)",
    },
    RemovedKey {
        key: "provider.statefulset.refresh_interval",
        instead: "set provider.refresh_interval (one key for every provider kind)",
    },
    RemovedKey {
        key: "provider.aws.refresh_interval",
        instead: "set provider.refresh_interval (one key for every provider kind)",
    },
    RemovedKey {
        key: "provider.aws.call_timeout",
        instead: "every Auto Scaling, EC2 and instance metadata call is bounded at 10 s per attempt; provider.aws.max_attempts still sets the attempts",
    },
    RemovedKey {
        key: "snapshot.s3.call_timeout",
        instead: "every S3 call that is not a transfer is bounded at 10 s per attempt; snapshot.s3.transfer_timeout bounds a transfer's parts and snapshot.s3.max_attempts the attempts",
    },
    RemovedKey {
        key: "snapshot.s3.concurrent_create_probes",
        instead: "run `eco config check --probe-store` to test whether an S3-compatible endpoint's conditional create holds under concurrent writers",
    },
];

/// The removed keys `document` (the config file, parsed as plain TOML)
/// still has, each as a problem naming what replaces it.
pub fn removed_keys(document: &toml::Table) -> Vec<Problem> {
    REMOVED_KEYS
        .iter()
        .filter(|removed| has_key(document, removed.key))
        .map(|removed| Problem {
            key: removed.key.to_string(),
            message: format!("is no longer a key: {}", removed.instead),
        })
        .collect()
}

fn has_key(document: &toml::Table, dotted: &str) -> bool {
    let mut table = document;
    let mut parts = dotted.split('.').peekable();
    while let Some(part) = parts.next() {
        match (table.get(part), parts.peek()) {
            (Some(_), None) => return true,
            (Some(toml::Value::Table(inner)), Some(_)) => table = inner,
            _ => return false,
        }
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    fn problems(text: &str) -> Vec<String> {
        removed_keys(&text.parse::<toml::Table>().unwrap())
            .into_iter()
            .map(|p| p.to_string())
            .collect()
    }

    #[test]
    fn each_removed_key_is_named_with_what_replaces_it() {
        let cases = [
            (
                "[etcd]\nclient_scheme = \"http\"\n",
                "`etcd.client_scheme`",
                "plaintext = true",
            ),
            (
                "[etcd]\npeer_scheme = \"https\"\n",
                "`etcd.peer_scheme`",
                "[etcd.tls]",
            ),
            (
                "[provider.static]\nrefresh_interval = \"1s\"\n",
                "`provider.static.refresh_interval`",
                "provider.refresh_interval",
            ),
            (
                "[provider.statefulset]\nrefresh_interval = \"1s\"\n",
                "`provider.statefulset.refresh_interval`",
                "provider.refresh_interval",
            ),
            (
                "[provider.aws]\nrefresh_interval = \"10s\"\n",
                "`provider.aws.refresh_interval`",
                "provider.refresh_interval",
            ),
            (
                "[provider.aws]\ncall_timeout = \"2s\"\n",
                "`provider.aws.call_timeout`",
                "10 s",
            ),
            (
                "[snapshot.s3]\ncall_timeout = \"2s\"\n",
                "`snapshot.s3.call_timeout`",
                "transfer_timeout",
            ),
            (
                "[snapshot.s3]\nconcurrent_create_probes = 3\n",
                "`snapshot.s3.concurrent_create_probes`",
                "--probe-store",
            ),
        ];
        for (text, key, instead) in cases {
            let got = problems(text);
            assert_eq!(got.len(), 1, "{text}: {got:?}");
            assert!(
                got[0].starts_with(key) && got[0].contains(instead),
                "{got:?}"
            );
        }
    }

    #[test]
    fn keys_in_use_and_namesakes_elsewhere_are_not_removed_keys() {
        assert!(
            problems("[provider]\nrefresh_interval = \"5s\"\n[etcd]\ncall_timeout = \"2s\"\n")
                .is_empty()
        );
        assert!(problems("[etcd.tls]\nclient_scheme = 1\n").is_empty());
        assert!(problems("etcd = 3\n").is_empty());
    }

    #[test]
    fn every_row_is_found_where_a_config_would_write_it() {
        for removed in REMOVED_KEYS {
            let (section, key) = removed.key.rsplit_once('.').unwrap();
            let got = problems(&format!("[{section}]\n{key} = 1\n"));
            assert_eq!(got.len(), 1, "{}", removed.key);
        }
    }
}
