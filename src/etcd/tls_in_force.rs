//! `[etcd.tls]` as it is in force now, for `/status` and the pass: the
//! certificates each file holds ([`CertificatesInForce`], read again only
//! when a file changed) and whether the files can still be used
//! ([`MaterialWatch`], [`super::tls_check::check_files`] again when a file
//! changed and at least every 30 s).
//!
//! What it does not do: act on a problem (the pass reports it) or reload
//! anything (etcd reads its files on every handshake).

use super::tls::{Described, describe_pem};
use super::tls_check::check_files;
use crate::base::file_stamp::FileStamp;
use crate::config::EtcdTlsConfig;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant, SystemTime};

/// The certificates of `[etcd.tls]` (the leaf of each certificate file,
/// not the CAs) as their files say, for `/status`: each file is read and
/// parsed again only when its [`FileStamp`] changed (a renewal), not at
/// every pass.
#[derive(Debug, Default)]
pub struct CertificatesInForce {
    read: Vec<(PathBuf, FileStamp, Result<Described, String>)>,
    /// The whole check of the files (chains, keys, validity, names).
    material: MaterialWatch,
}

impl CertificatesInForce {
    /// Why the files of `tls`, as they are on disk, cannot be used by this
    /// instance (advertised as `host`), or `None`
    /// ([`MaterialWatch`]).
    pub fn problem(&mut self, tls: &EtcdTlsConfig, host: &str) -> Option<String> {
        self.material.problem(tls, host)
    }

    /// `(key, described)` of each certificate file, or the reason it cannot
    /// be read.
    pub fn now(&mut self, tls: &EtcdTlsConfig) -> Vec<(&'static str, Result<Described, String>)> {
        let files = [
            (
                "etcd.tls.client.cert_file",
                tls.client.as_ref().map(|c| &c.cert_file),
            ),
            (
                "etcd.tls.peer.cert_file",
                tls.peer.as_ref().map(|p| &p.cert_file),
            ),
            (
                "etcd.tls.eco.cert_file",
                tls.eco.as_ref().map(|e| &e.cert_file),
            ),
        ];
        let mut read = Vec::new();
        let mut out = Vec::new();
        for (key, path) in files {
            let Some(path) = path else { continue };
            let stamp = FileStamp::of(path);
            let described = match self.read.iter().find(|(p, s, _)| p == path && *s == stamp) {
                Some((_, _, known)) => known.clone(),
                None => std::fs::read_to_string(path)
                    .map_err(|e| format!("{}: {e}", path.display()))
                    .and_then(|pem| describe_pem(&pem)),
            };
            out.push((key, described.clone()));
            read.push((path.clone(), stamp, described));
        }
        self.read = read;
        out
    }
}

/// How often files that did not change are checked again anyway (a
/// certificate expires without its file changing).
const RECHECK: Duration = Duration::from_secs(30);

/// `[etcd.tls]`'s files as they are on disk, checked again for `/status`
/// with [`check_files`] (names included): when one of them changed, and
/// at least every [`RECHECK`]. A problem is reported once two checks in a
/// row found one: a renewal in place renames the certificate and its key
/// one after the other, and a check between the two is not a problem.
#[derive(Debug, Default)]
pub struct MaterialWatch {
    stamps: Vec<FileStamp>,
    checked_at: Option<Instant>,
    failed_before: bool,
    problem: Option<String>,
}

impl MaterialWatch {
    /// Why the files of `tls` cannot be used now by this instance (its
    /// advertised host `host`), or `None`.
    pub fn problem(&mut self, tls: &EtcdTlsConfig, host: &str) -> Option<String> {
        let stamps: Vec<FileStamp> = files(tls).iter().map(|p| FileStamp::of(p)).collect();
        let due = self.failed_before
            || stamps != self.stamps
            || self.checked_at.is_none_or(|t| t.elapsed() >= RECHECK);
        if !due {
            return self.problem.clone();
        }
        self.stamps = stamps;
        self.checked_at = Some(Instant::now());
        match check_files(tls, SystemTime::now(), Some(host)) {
            Ok(_) => {
                self.failed_before = false;
                self.problem = None;
            }
            Err(e) => {
                if self.failed_before {
                    self.problem = Some(e.to_string());
                }
                self.failed_before = true;
            }
        }
        self.problem.clone()
    }
}

/// Every file `tls` names.
fn files(tls: &EtcdTlsConfig) -> Vec<&Path> {
    let mut out: Vec<&Path> = Vec::new();
    for s in [&tls.client, &tls.peer].into_iter().flatten() {
        out.extend([
            s.cert_file.as_path(),
            s.key_file.as_path(),
            s.trusted_ca_file.as_path(),
        ]);
    }
    if let Some(e) = &tls.eco {
        out.extend([e.cert_file.as_path(), e.key_file.as_path()]);
        out.extend(e.trusted_ca_file.as_deref());
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::etcd::tls_check::tests::{given, write};
    use crate::pki::ca::{ClusterCa, Purpose};

    #[test]
    fn the_watch_says_a_problem_found_twice_in_a_row_and_forgets_it_once_fixed() {
        let d = tempfile::tempdir().unwrap();
        let now = SystemTime::now();
        let ca = ClusterCa::generate("c", now).unwrap();
        let tls = given(d.path(), &ca, &["10.1.2.3"], now);
        let mut watch = MaterialWatch::default();
        assert_eq!(watch.problem(&tls, "10.1.2.3"), None);
        // Rotated in place to a certificate of another CA.
        let good = std::fs::read_to_string(d.path().join("member.crt")).unwrap();
        let good_key = std::fs::read_to_string(d.path().join("member.key")).unwrap();
        let other = ClusterCa::generate("other", now).unwrap();
        let stray = other
            .issue(
                Purpose::Member,
                "m",
                &["10.1.2.3".into()],
                Duration::from_secs(86_400),
                now,
            )
            .unwrap();
        write(d.path(), "member.crt", &stray.cert_pem, 0o644);
        write(d.path(), "member.key", &stray.key_pem, 0o600);
        assert_eq!(
            watch.problem(&tls, "10.1.2.3"),
            None,
            "once may be a renewal's middle"
        );
        let said = watch.problem(&tls, "10.1.2.3").expect("twice is a problem");
        assert!(
            said.contains("member.crt") && said.contains("UnknownIssuer"),
            "{said}"
        );
        write(d.path(), "member.crt", &good, 0o644);
        write(d.path(), "member.key", &good_key, 0o600);
        assert_eq!(watch.problem(&tls, "10.1.2.3"), None);
    }
}
