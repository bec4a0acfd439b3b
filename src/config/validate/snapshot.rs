//! `[snapshot]` on its own: the table of the chosen store and only that
//! one, S3 names and sizes S3 accepts, the schedule and retention.

use super::{Checker, Problem};
use crate::config::{S3Encryption, S3StoreConfig, SnapshotConfig, SnapshotStoreKind};
use std::time::Duration;

impl SnapshotConfig {
    /// What is wrong with `[snapshot]` on its own.
    pub fn problems(&self) -> Vec<Problem> {
        let mut ck = Checker::default();
        let s = self;
        if s.store == SnapshotStoreKind::Dir && s.dir.is_none() {
            ck.fail(
                "snapshot.dir",
                "the table is required when snapshot.store = \"dir\"; it needs `path`",
            );
        }
        if s.store != SnapshotStoreKind::Dir && s.dir.is_some() {
            ck.fail("snapshot.dir", "is set but snapshot.store is not \"dir\"; set snapshot.store = \"dir\" or remove the table");
        }
        match (s.store, &s.s3) {
            (SnapshotStoreKind::S3, None) => ck.fail(
                "snapshot.s3",
                "the table is required when snapshot.store = \"s3\"; it needs at least `bucket`",
            ),
            (SnapshotStoreKind::S3, Some(s3)) => check_s3(&mut ck, s3),
            (_, Some(_)) => ck.fail(
                "snapshot.s3",
                "is set but snapshot.store is not \"s3\"; set snapshot.store = \"s3\" or remove the table",
            ),
            (_, None) => {}
        }
        super::cloud_stores::check(&mut ck, s);
        ck.at_least("snapshot.interval", s.interval, Duration::from_secs(10));
        if s.max_age < s.interval {
            ck.fail(
                "snapshot.max_age",
                format!(
                    "{} is below snapshot.interval = {}; allowed: at least the interval",
                    s.max_age, s.interval
                ),
            );
        }
        if !(1..=19).contains(&s.compression_level) {
            ck.fail(
                "snapshot.compression_level",
                format!("{} is outside zstd's levels 1 to 19", s.compression_level),
            );
        }
        if let Some(enc) = &s.encryption {
            if enc.recipients.is_empty() {
                ck.fail(
                    "snapshot.encryption.recipients",
                    "is empty; name at least one age X25519 recipient (age1…), or remove [snapshot.encryption]",
                );
            }
            for (i, r) in enc.recipients.iter().enumerate() {
                if let Err(why) = r.trim().parse::<age::x25519::Recipient>() {
                    ck.fail(
                        "snapshot.encryption.recipients",
                        format!("[{i}] {r:?} is not an age X25519 recipient (age1…): {why}"),
                    );
                }
            }
            if enc.identity_file.as_ref().is_some_and(|p| p.is_relative()) {
                ck.fail(
                    "snapshot.encryption.identity_file",
                    "must be an absolute path",
                );
            }
        }
        if s.keep_last == 0 {
            ck.fail(
                "snapshot.keep_last",
                "0 would leave no snapshot; allowed: 1 or more",
            );
        }

        ck.problems
    }
}

/// `[snapshot.s3]`: names S3 accepts, sizes within S3's multipart limits.
fn check_s3(ck: &mut Checker, s3: &S3StoreConfig) {
    if let Err(why) = check_bucket_name(&s3.bucket) {
        ck.fail(
            "snapshot.s3.bucket",
            format!("{:?} is not an S3 bucket name: {why}; allowed: 3 to 63 lowercase letters, digits, '.' and '-', starting and ending with a letter or digit", s3.bucket),
        );
    }
    if s3.prefix.starts_with('/')
        || s3.prefix.ends_with('/')
        || crate::base::names::check_object_name(&s3.prefix).is_err()
        || s3.prefix.len() > 256
    {
        ck.fail(
            "snapshot.s3.prefix",
            format!("{:?} is not a key prefix eco can use; allowed: 1 to 256 bytes of '/'-separated segments of letters, digits and - _ . + =, no segment empty or starting with '.', no leading or trailing '/'", s3.prefix),
        );
    }
    if let Some(region) = &s3.region
        && (region.is_empty()
            || !region
                .bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-'))
    {
        ck.fail(
            "snapshot.s3.region",
            format!("{region:?} is not a region name (like \"eu-west-1\")"),
        );
    }
    if let Some(endpoint) = &s3.endpoint {
        let authority = endpoint
            .strip_prefix("https://")
            .or_else(|| endpoint.strip_prefix("http://"))
            .map(|rest| rest.split('/').next().unwrap_or(""));
        if !authority.is_some_and(|a| !a.is_empty() && !a.contains(char::is_whitespace)) {
            ck.fail(
                "snapshot.s3.endpoint",
                format!("{endpoint:?} is not an http(s) URL (like \"https://s3.example.com\" or \"http://127.0.0.1:9000\")"),
            );
        }
    }
    match (&s3.encryption, &s3.kms_key_id) {
        (S3Encryption::AwsKms, Some(key)) if key.trim().is_empty() => ck.fail(
            "snapshot.s3.kms_key_id",
            "is empty; name a KMS key (id, ARN or alias) or remove it to use the account's default key",
        ),
        (S3Encryption::AwsKms, _) | (_, None) => {}
        (_, Some(_)) => ck.fail(
            "snapshot.s3.kms_key_id",
            "is only used with encryption = \"aws:kms\"; set that or remove the key",
        ),
    }
    const MIB: u64 = 1024 * 1024;
    if !(5 * MIB..=5 * 1024 * MIB).contains(&s3.part_size) {
        ck.fail(
            "snapshot.s3.part_size",
            format!("{} bytes is outside S3's part sizes; allowed: 5 MiB (5242880) to 5 GiB (5368709120)", s3.part_size),
        );
    }
    if !(1..=16).contains(&s3.parts_in_flight) {
        ck.fail(
            "snapshot.s3.parts_in_flight",
            format!("{} is out of range; allowed: 1 to 16 (an upload holds part_size × (parts_in_flight + 1) bytes)", s3.parts_in_flight),
        );
    }
    ck.at_least(
        "snapshot.s3.transfer_timeout",
        s3.transfer_timeout,
        Duration::from_secs(1),
    );
    if !(1..=10).contains(&s3.max_attempts) {
        ck.fail(
            "snapshot.s3.max_attempts",
            format!("{} is out of range; allowed: 1 to 10", s3.max_attempts),
        );
    }
}

/// S3's bucket naming rules (general purpose buckets).
fn check_bucket_name(name: &str) -> Result<(), &'static str> {
    if !(3..=63).contains(&name.len()) {
        return Err("it must be 3 to 63 characters");
    }
    if !name
        .bytes()
        .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'.' || b == b'-')
    {
        return Err("it has a character other than lowercase letters, digits, '.' and '-'");
    }
    let alnum = |b: Option<u8>| b.is_some_and(|b| b.is_ascii_lowercase() || b.is_ascii_digit());
    if !alnum(name.bytes().next()) || !alnum(name.bytes().last()) {
        return Err("it must start and end with a letter or digit");
    }
    if name.contains("..") {
        return Err("it has two adjacent periods");
    }
    if name.parse::<std::net::Ipv4Addr>().is_ok() {
        return Err("it is formatted as an IP address");
    }
    if ["xn--", "sthree-", "amzn-s3-demo-"]
        .iter()
        .any(|p| name.starts_with(p))
        || ["-s3alias", "--ol-s3", ".mrap", "--x-s3", "--table-s3"]
            .iter()
            .any(|suffix| name.ends_with(suffix))
    {
        return Err("it has a prefix or suffix S3 reserves");
    }
    Ok(())
}
