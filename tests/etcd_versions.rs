//! The etcd releases eco is tested with (scripts/etcd-versions, installed
//! by scripts/install-etcd.sh into `.tools/etcd-<version>`), as binaries:
//!
//! - the version-keyed flag table (`recovery::etcd_flags`) against the
//!   flags each release's `etcd --help` lists: every flag eco passes is
//!   there, and every flag of the table is there exactly when the table
//!   says the release accepts it;
//! - `etcdutl check v2store` (`eco::etcd::v2store_check`, the check
//!   before a step onto 3.6) on real data directories of 3.5.30: one
//!   written only through the v3 API is clean, one written through the v2
//!   API (`--enable-v2`, a `PUT /v2/keys/...`) is not; 3.5.16's etcdutl
//!   has no such check, and eco says so;
//! - `/readyz` on the metrics listener exactly where
//!   `recovery::etcd_readiness` says the release has it;
//! - the advisories of each release (`recovery::etcd_advisories`) as
//!   `eco config check` prints them.
//!
//! 127.0.113.x.

use std::collections::BTreeSet;
use std::io::{Read, Write};
use std::path::Path;
use std::process::Command;
use std::time::Duration;

use recovery::etcd_flags::{Acceptance, ECO_FLAGS, TABLE, acceptance};
use recovery::upgrade::Version;
use testkit::etcd::{RawEtcd, bin_dir_of, rt};

/// The releases of scripts/etcd-versions.
fn releases() -> Vec<String> {
    let text = std::fs::read_to_string(testkit::workspace_root().join("scripts/etcd-versions"))
        .expect("scripts/etcd-versions");
    text.lines()
        .filter(|l| !l.trim_start().starts_with('#') && !l.trim().is_empty())
        .filter_map(|l| l.split_whitespace().next().map(str::to_string))
        .collect()
}

fn help_flags(bin: &Path) -> BTreeSet<String> {
    let out = Command::new(bin.join("etcd"))
        .arg("--help")
        .output()
        .expect("etcd --help");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    text.split(|c: char| c.is_whitespace() || c == ',' || c == '\'' || c == '"' || c == '=')
        .filter_map(|w| w.strip_prefix("--"))
        .map(|w| {
            w.trim_end_matches(|c: char| !c.is_ascii_alphanumeric())
                .to_string()
        })
        .filter(|w| !w.is_empty())
        .collect()
}

#[test]
fn the_flag_table_matches_every_installed_release() {
    let releases = releases();
    assert!(releases.len() >= 3, "{releases:?}");
    for release in releases {
        let bin = bin_dir_of(&release);
        assert!(
            bin.join("etcd").exists(),
            "{} missing: run scripts/install-deps.sh",
            bin.display()
        );
        let version = Version::parse(&release).expect("a version");
        let listed = help_flags(&bin);
        for flag in ECO_FLAGS {
            assert!(
                listed.contains(*flag),
                "etcd {release} does not list --{flag}, which eco passes"
            );
        }
        for row in TABLE {
            let accepted = !matches!(acceptance(row.name, version), Acceptance::Refused { .. });
            assert_eq!(
                listed.contains(row.name),
                accepted,
                "etcd {release}: --{} is {} by `etcd --help`, the table says {:?}",
                row.name,
                if listed.contains(row.name) {
                    "listed"
                } else {
                    "not listed"
                },
                acceptance(row.name, version)
            );
        }
        eprintln!(
            "etcd versions: {release}: {} flags listed; eco's {} and the table's {} as the table says",
            listed.len(),
            ECO_FLAGS.len(),
            TABLE.len()
        );
    }
}

/// A one-member etcd of `release` on `address`, `extra` flags, until
/// dropped.
fn raw(release: &str, dir: &Path, address: &str, extra: &[&str]) -> RawEtcd {
    let child = RawEtcd::command(&bin_dir_of(release), dir, "m1", address)
        .arg(format!("--initial-cluster=m1=http://{address}:2380"))
        .arg("--initial-cluster-token=versions-test")
        .args(extra)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("start etcd");
    let etcd = RawEtcd(child);
    testkit::etcd::wait_serving(&format!("http://{address}:2379"), Duration::from_secs(20))
        .unwrap_or_else(|| panic!("etcd {release} on {address} did not serve"));
    etcd
}

/// `PUT /v2/keys/<key>` with `value=<value>`: the v2 API over plain HTTP.
fn v2_put(address: &str, key: &str, value: &str) -> String {
    let mut s = std::net::TcpStream::connect((address, 2379)).expect("connect");
    s.set_read_timeout(Some(Duration::from_secs(5)))
        .expect("timeout");
    let body = format!("value={value}");
    write!(
        s,
        "PUT /v2/keys/{key} HTTP/1.1\r\nHost: {address}\r\nContent-Type: application/x-www-form-urlencoded\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )
    .expect("write");
    let mut answer = String::new();
    let _ = s.read_to_string(&mut answer);
    answer
}

fn check(release: &str, dir: &Path) -> Result<(), String> {
    let etcdutl = bin_dir_of(release).join("etcdutl");
    rt().block_on(eco::etcd::v2store_check::check(Some(&etcdutl), dir))
}

#[test]
fn the_v2store_check_before_3_6_tells_clean_data_from_v2_content() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let clean = tmp.path().join("clean");
    let v2 = tmp.path().join("v2");
    {
        let _etcd = raw("3.5.30", &clean, "127.0.113.1", &[]);
        assert!(testkit::etcd::write(
            "http://127.0.113.1:2379",
            "/v3-only",
            "x"
        ));
    }
    {
        // A v2 snapshot after every entry: etcdutl 3.5.30 looks at the
        // newest v2 snapshot (the WAL after it only from 3.5.32).
        let _etcd = raw(
            "3.5.30",
            &v2,
            "127.0.113.2",
            &["--enable-v2=true", "--snapshot-count=1"],
        );
        for i in 0..5 {
            let answer = v2_put("127.0.113.2", &format!("custom{i}"), "v2-content");
            assert!(answer.starts_with("HTTP/1.1 201"), "{answer}");
        }
        // The snapshots are saved after the answers: give them a moment
        // before the kill.
        std::thread::sleep(Duration::from_secs(1));
    }
    assert_eq!(check("3.5.30", &clean), Ok(()));
    let found = check("3.5.30", &v2).expect_err("v2 content must be found");
    assert!(found.contains("custom content"), "{found}");
    eprintln!("etcd versions: 3.5.30 etcdutl check v2store on v2 content: {found}");
    let old = check("3.5.16", &clean).expect_err("3.5.16 has no check v2store");
    assert!(old.contains("3.5.18 or newer"), "{old}");
}

#[test]
fn config_check_names_the_advisories_of_the_release_it_finds() {
    let tmp = tempfile::tempdir().expect("tempdir");
    for (release, says) in [
        ("3.4.23", "end-of-life"),
        ("3.5.16", "3.5.23 or later"),
        ("3.5.30", "3.5.32 or later"),
    ] {
        let config = tmp.path().join(format!("eco-{release}.toml"));
        let group = tmp.path().join("group.toml");
        std::fs::write(
            &group,
            "[[instance]]\nid = \"eco-1\"\naddress = \"127.0.113.9\"\n",
        )
        .expect("group");
        std::fs::write(
            &config,
            format!(
                "[cluster]\nname = \"versions\"\n[provider]\nkind = \"static\"\n[provider.static]\ngroup_file = \"{}\"\n[etcd]\ndata_dir = \"{}\"\netcd_bin = \"{}\"\n",
                group.display(),
                tmp.path().join("data").display(),
                bin_dir_of(release).join("etcd").display()
            ),
        )
        .expect("config");
        let out = Command::new(testkit::eco_bin!())
            .args(["config", "check"])
            .arg(&config)
            .output()
            .expect("eco config check");
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(out.status.success(), "{release}: {out:?}");
        assert!(
            text.contains(&format!("# warning: etcd {release}: ")) && text.contains(says),
            "{release}:\n{text}"
        );
        eprintln!(
            "etcd versions: eco config check on {release}: {}",
            text.lines()
                .filter(|l| l.starts_with("# warning: etcd"))
                .collect::<Vec<_>>()
                .join(" | ")
        );
    }
}

#[test]
fn readyz_is_served_exactly_where_the_table_says() {
    let tmp = tempfile::tempdir().expect("tempdir");
    for (i, release) in releases().iter().enumerate() {
        let address = format!("127.0.113.{}", 20 + i);
        let metrics = format!("--listen-metrics-urls=http://{address}:2381");
        let _etcd = raw(release, &tmp.path().join(release), &address, &[&metrics]);
        let version = Version::parse(release).expect("a version");
        let answer = rt().block_on(eco::etcd::metrics_text::fetch(
            &format!("http://{address}:2381/readyz"),
            Duration::from_secs(5),
        ));
        assert_eq!(
            answer.is_ok(),
            recovery::etcd_readiness::has_readyz(version),
            "etcd {release}: /readyz answered {answer:?}"
        );
        eprintln!("etcd versions: {release}: /readyz {answer:?}");
    }
}
