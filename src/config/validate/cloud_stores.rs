//! `[snapshot.gcs]` and `[snapshot.azure]`: the table of the chosen cloud
//! store and only that one, names each cloud accepts, sizes and bounds.

use super::Checker;
use crate::config::{
    AzureStoreConfig, CloudTransfers, GcsStoreConfig, SnapshotConfig, SnapshotStoreKind,
};
use std::time::Duration;

/// The `[snapshot.gcs]` and `[snapshot.azure]` rules of `[snapshot]`.
pub(super) fn check(ck: &mut Checker, s: &SnapshotConfig) {
    match (s.store, &s.gcs) {
        (SnapshotStoreKind::Gcs, None) => ck.fail(
            "snapshot.gcs",
            "the table is required when snapshot.store = \"gcs\"; it needs at least `bucket`",
        ),
        (SnapshotStoreKind::Gcs, Some(gcs)) => check_gcs(ck, gcs),
        (_, Some(_)) => ck.fail(
            "snapshot.gcs",
            "is set but snapshot.store is not \"gcs\"; set snapshot.store = \"gcs\" or remove the table",
        ),
        (_, None) => {}
    }
    match (s.store, &s.azure) {
        (SnapshotStoreKind::Azure, None) => ck.fail(
            "snapshot.azure",
            "the table is required when snapshot.store = \"azure\"; it needs at least `account` and `container`",
        ),
        (SnapshotStoreKind::Azure, Some(azure)) => check_azure(ck, azure),
        (_, Some(_)) => ck.fail(
            "snapshot.azure",
            "is set but snapshot.store is not \"azure\"; set snapshot.store = \"azure\" or remove the table",
        ),
        (_, None) => {}
    }
}

fn check_gcs(ck: &mut Checker, gcs: &GcsStoreConfig) {
    if let Err(why) = gcs_bucket_name(&gcs.bucket) {
        ck.fail(
            "snapshot.gcs.bucket",
            format!("{:?} is not a Cloud Storage bucket name: {why}; allowed: 3 to 63 lowercase letters, digits, '-', '_' and '.', starting and ending with a letter or digit", gcs.bucket),
        );
    }
    prefix(ck, "snapshot.gcs.prefix", &gcs.prefix);
    if let Some(e) = &gcs.endpoint {
        endpoint(ck, "snapshot.gcs.endpoint", e);
    }
    if gcs.unsigned && gcs.endpoint.is_none() {
        ck.fail(
            "snapshot.gcs.unsigned",
            "unsigned requests are for an emulator: set snapshot.gcs.endpoint, or remove the key",
        );
    }
    if gcs.unsigned && gcs.credentials_file.is_some() {
        ck.fail(
            "snapshot.gcs.unsigned",
            "is set with snapshot.gcs.credentials_file; keep one of them",
        );
    }
    if let Some(f) = &gcs.credentials_file
        && f.as_os_str().is_empty()
    {
        ck.fail(
                "snapshot.gcs.credentials_file",
                "an empty path; allowed: the path of a service-account key file (JSON), or remove the key to use the environment's credentials",
            );
    }
    transfers(ck, "snapshot.gcs", &gcs.transfers());
}

fn check_azure(ck: &mut Checker, azure: &AzureStoreConfig) {
    if !(3..=24).contains(&azure.account.len())
        || !azure
            .account
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit())
    {
        ck.fail(
            "snapshot.azure.account",
            format!(
                "{:?} is not a storage account name; allowed: 3 to 24 lowercase letters and digits",
                azure.account
            ),
        );
    }
    let c = &azure.container;
    let alnum = |b: Option<u8>| b.is_some_and(|b| b.is_ascii_lowercase() || b.is_ascii_digit());
    if !(3..=63).contains(&c.len())
        || !c
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        || !alnum(c.bytes().next())
        || !alnum(c.bytes().last())
        || c.contains("--")
    {
        ck.fail(
            "snapshot.azure.container",
            format!("{c:?} is not a container name; allowed: 3 to 63 lowercase letters, digits and single '-', starting and ending with a letter or digit"),
        );
    }
    prefix(ck, "snapshot.azure.prefix", &azure.prefix);
    if let Some(e) = &azure.endpoint {
        endpoint(ck, "snapshot.azure.endpoint", e);
    }
    if let Some(f) = &azure.access_key_file
        && f.as_os_str().is_empty()
    {
        ck.fail(
                "snapshot.azure.access_key_file",
                "an empty path; allowed: the path of a file holding the account's access key, or remove the key to use the workload or managed identity",
            );
    }
    transfers(ck, "snapshot.azure", &azure.transfers());
}

/// Cloud Storage's bucket naming rules (names without dots; dotted names
/// are domain-verified buckets, up to 222 characters).
fn gcs_bucket_name(name: &str) -> Result<(), &'static str> {
    let limit = if name.contains('.') { 222 } else { 63 };
    if !(3..=limit).contains(&name.len()) {
        return Err("it must be 3 to 63 characters (222 with dots)");
    }
    if !name.bytes().all(|b| {
        b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-' || b == b'_' || b == b'.'
    }) {
        return Err("it has a character other than lowercase letters, digits, '-', '_' and '.'");
    }
    let alnum = |b: Option<u8>| b.is_some_and(|b| b.is_ascii_lowercase() || b.is_ascii_digit());
    if !alnum(name.bytes().next()) || !alnum(name.bytes().last()) {
        return Err("it must start and end with a letter or digit");
    }
    if name.starts_with("goog") || name.contains("google") {
        return Err("it starts with \"goog\" or contains \"google\"");
    }
    Ok(())
}

fn prefix(ck: &mut Checker, key: &str, prefix: &str) {
    if prefix.starts_with('/')
        || prefix.ends_with('/')
        || crate::base::names::check_object_name(prefix).is_err()
        || prefix.len() > 256
    {
        ck.fail(
            key,
            format!("{prefix:?} is not a key prefix eco can use; allowed: 1 to 256 bytes of '/'-separated segments of letters, digits and - _ . + =, no segment empty or starting with '.', no leading or trailing '/'"),
        );
    }
}

fn endpoint(ck: &mut Checker, key: &str, endpoint: &str) {
    let authority = endpoint
        .strip_prefix("https://")
        .or_else(|| endpoint.strip_prefix("http://"))
        .map(|rest| rest.split('/').next().unwrap_or(""));
    if !authority.is_some_and(|a| !a.is_empty() && !a.contains(char::is_whitespace)) {
        ck.fail(
            key,
            format!("{endpoint:?} is not an http(s) URL (like \"https://storage.example.com\" or \"http://127.0.0.1:10000/devstoreaccount1\")"),
        );
    }
}

fn transfers(ck: &mut Checker, table: &str, t: &CloudTransfers) {
    const MIB: u64 = 1024 * 1024;
    if !(5 * MIB..=5 * 1024 * MIB).contains(&t.part_size) {
        ck.fail(
            &format!("{table}.part_size"),
            format!(
                "{} bytes is out of range; allowed: 5 MiB (5242880) to 5 GiB (5368709120)",
                t.part_size
            ),
        );
    }
    if !(1..=16).contains(&t.parts_in_flight) {
        ck.fail(
            &format!("{table}.parts_in_flight"),
            format!("{} is out of range; allowed: 1 to 16 (an upload holds part_size × (parts_in_flight + 1) bytes)", t.parts_in_flight),
        );
    }
    ck.at_least(
        &format!("{table}.transfer_timeout"),
        t.transfer_timeout,
        Duration::from_secs(1),
    );
    if !(1..=10).contains(&t.max_attempts) {
        ck.fail(
            &format!("{table}.max_attempts"),
            format!("{} is out of range; allowed: 1 to 10", t.max_attempts),
        );
    }
}

#[cfg(test)]
mod tests {
    use crate::config::SnapshotConfig;

    /// The problems of `[snapshot]` as given (a parse error as one).
    fn problems(snapshot: &str) -> Vec<String> {
        match toml::from_str::<SnapshotConfig>(snapshot) {
            Ok(s) => s.problems().iter().map(|p| p.to_string()).collect(),
            Err(e) => vec![e.to_string()],
        }
    }

    #[test]
    fn a_good_gcs_and_azure_table_pass() {
        assert_eq!(
            problems(
                "store = \"gcs\"\n[gcs]\nbucket = \"eco-backups\"\ncredentials_file = \"sa.json\"\n"
            ),
            Vec::<String>::new()
        );
        assert_eq!(
            problems(
                "store = \"gcs\"\n[gcs]\nbucket = \"eco-test\"\nendpoint = \"http://127.0.0.1:4443\"\nunsigned = true\n"
            ),
            Vec::<String>::new()
        );
        assert_eq!(
            problems(
                "store = \"azure\"\n[azure]\naccount = \"ecoprod\"\ncontainer = \"eco-backups\"\n"
            ),
            Vec::<String>::new()
        );
    }

    #[test]
    fn each_bad_key_is_named() {
        for (snapshot, key) in [
            ("store = \"gcs\"\n", "snapshot.gcs"),
            ("store = \"azure\"\n", "snapshot.azure"),
            (
                "store = \"none\"\n[gcs]\nbucket = \"abc\"\n",
                "snapshot.gcs",
            ),
            (
                "store = \"none\"\n[azure]\naccount = \"abc\"\ncontainer = \"abc\"\n",
                "snapshot.azure",
            ),
            (
                "store = \"gcs\"\n[gcs]\nbucket = \"Bad Bucket\"\n",
                "snapshot.gcs.bucket",
            ),
            (
                "store = \"gcs\"\n[gcs]\nbucket = \"abc\"\nunsigned = true\n",
                "snapshot.gcs.unsigned",
            ),
            (
                "store = \"gcs\"\n[gcs]\nbucket = \"abc\"\nendpoint = \"localhost\"\n",
                "snapshot.gcs.endpoint",
            ),
            (
                "store = \"gcs\"\n[gcs]\nbucket = \"abc\"\npart_size = 1\n",
                "snapshot.gcs.part_size",
            ),
            (
                "store = \"gcs\"\n[gcs]\nbucket = \"abc\"\ncredentials_file = \"\"\n",
                "snapshot.gcs.credentials_file",
            ),
            (
                "store = \"azure\"\n[azure]\naccount = \"Eco_Prod\"\ncontainer = \"abc\"\n",
                "snapshot.azure.account",
            ),
            (
                "store = \"azure\"\n[azure]\naccount = \"eco\"\ncontainer = \"a--b\"\n",
                "snapshot.azure.container",
            ),
            (
                "store = \"azure\"\n[azure]\naccount = \"eco\"\ncontainer = \"abc\"\nprefix = \"/x\"\n",
                "snapshot.azure.prefix",
            ),
            (
                "store = \"azure\"\n[azure]\naccount = \"eco\"\ncontainer = \"abc\"\nmax_attempts = 0\n",
                "snapshot.azure.max_attempts",
            ),
            (
                "store = \"azure\"\n[azure]\naccount = \"eco\"\ncontainer = \"abc\"\ntransfer_timeout = \"10ms\"\n",
                "snapshot.azure.transfer_timeout",
            ),
        ] {
            let found = problems(snapshot);
            assert!(
                found.iter().any(|p| p.contains(&format!("`{key}`"))),
                "{snapshot:?}: want a problem naming {key}, got {found:?}"
            );
        }
    }

    #[test]
    fn an_unknown_key_is_refused() {
        let found = problems("store = \"gcs\"\n[gcs]\nbucket = \"abc\"\nregion = \"x\"\n");
        assert!(found.iter().any(|p| p.contains("region")), "{found:?}");
    }
}
