//! Finding `etcd`, `etcdctl` and `etcdutl`, and checking etcd's version.

use crate::config::EtcdConfig;
use serde::Serialize;
use std::path::{Path, PathBuf};
use std::sync::{Arc, RwLock};
use std::time::Duration;

/// etcd's version: the type `recovery::upgrade` compares.
pub use recovery::upgrade::Version as EtcdVersion;

/// The oldest etcd this eco manages.
pub const MIN_VERSION: EtcdVersion = EtcdVersion::new(3, 4, 0);
/// The etcd minor versions this eco is tested with.
pub const SUPPORTED_VERSIONS: &str = "3.4, 3.5";

/// Parses the output of `etcd --version` (`etcd Version: 3.5.1`).
pub fn version_from_output(text: &str) -> Option<EtcdVersion> {
    let line = text
        .lines()
        .find_map(|l| l.trim().strip_prefix("etcd Version:"))?;
    EtcdVersion::parse(line)
}

/// etcd ≥ 3.5 ships `etcdutl` and supports `--bump-revision` on restore.
pub fn has_etcdutl(v: EtcdVersion) -> bool {
    (v.major, v.minor) >= (3, 5)
}

#[derive(Debug, thiserror::Error)]
pub enum BinaryError {
    #[error("{what} not found: {detail}")]
    NotFound { what: &'static str, detail: String },
    #[error("cannot run {path} --version: {detail}")]
    VersionUnknown { path: PathBuf, detail: String },
    #[error(
        "{path} is etcd {version}; eco needs etcd {MIN_VERSION} or newer (tested: {SUPPORTED_VERSIONS})"
    )]
    TooOld { path: PathBuf, version: EtcdVersion },
}

/// The etcd binaries eco uses, with etcd's version.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct EtcdBinaries {
    /// The file itself (symbolic links resolved when it was found): a
    /// link or package that later points at another version does not
    /// change what a restart of the running member launches; only an
    /// upgrade step does.
    pub etcd: PathBuf,
    pub etcdctl: Option<PathBuf>,
    pub etcdutl: Option<PathBuf>,
    pub version: EtcdVersion,
}

fn is_executable(p: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(p)
        .map(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
        .unwrap_or(false)
}

/// Looks `name` up on `PATH`.
fn on_path(name: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|d| d.join(name))
        .find(|p| is_executable(p))
}

/// Resolves a configured binary: a bare name is looked up on `PATH`, a path
/// must exist; an unset one is looked for in the `beside` directories,
/// then on `PATH`.
fn resolve(
    configured: Option<&Path>,
    default_name: &str,
    beside: &[&Path],
) -> Result<Option<PathBuf>, String> {
    match configured {
        Some(p) if p.components().count() == 1 && !p.is_absolute() => {
            let name = p.to_string_lossy();
            on_path(&name)
                .map(Some)
                .ok_or_else(|| format!("{name:?} is not on PATH"))
        }
        Some(p) => {
            if is_executable(p) {
                Ok(Some(p.to_path_buf()))
            } else {
                Err(format!(
                    "{} does not exist or is not executable",
                    p.display()
                ))
            }
        }
        None => {
            let next_to = beside
                .iter()
                .map(|d| d.join(default_name))
                .find(|p| is_executable(p));
            Ok(next_to.or_else(|| on_path(default_name)))
        }
    }
}

/// Finds the binaries per config and checks etcd's version.
pub async fn find(config: &EtcdConfig) -> Result<EtcdBinaries, BinaryError> {
    let etcd = resolve(config.etcd_bin.as_deref(), "etcd", &[])
        .map_err(|detail| BinaryError::NotFound { what: "etcd", detail: format!("etcd.etcd_bin: {detail}") })?
        .ok_or_else(|| BinaryError::NotFound {
            what: "etcd",
            detail: "it is not on PATH and etcd.etcd_bin is not set; install etcd 3.4 or newer (scripts/install-deps.sh does)".into(),
        })?;
    // The tools of the same release: beside the configured path, then
    // beside the file it resolves to.
    let file = std::fs::canonicalize(&etcd).unwrap_or_else(|_| etcd.clone());
    let dirs: Vec<&Path> = [etcd.parent(), file.parent()]
        .into_iter()
        .flatten()
        .collect();
    let etcdctl = resolve(config.etcdctl_bin.as_deref(), "etcdctl", &dirs).map_err(|detail| {
        BinaryError::NotFound {
            what: "etcdctl",
            detail: format!("etcd.etcdctl_bin: {detail}"),
        }
    })?;
    let etcdutl = resolve(config.etcdutl_bin.as_deref(), "etcdutl", &dirs).map_err(|detail| {
        BinaryError::NotFound {
            what: "etcdutl",
            detail: format!("etcd.etcdutl_bin: {detail}"),
        }
    })?;
    let version = version_of(&file).await?;
    if version < MIN_VERSION {
        return Err(BinaryError::TooOld {
            path: etcd,
            version,
        });
    }
    Ok(EtcdBinaries {
        etcd: file,
        etcdctl,
        etcdutl,
        version,
    })
}

/// The binaries of the etcd at `etcd` (a member's last launched binary):
/// its version, and the tools beside it; `None` when it is gone or cannot
/// tell its version.
pub async fn at(etcd: &Path) -> Option<EtcdBinaries> {
    if !is_executable(etcd) {
        return None;
    }
    let version = version_of(etcd).await.ok()?;
    let dirs: Vec<&Path> = etcd.parent().into_iter().collect();
    Some(EtcdBinaries {
        etcd: etcd.to_path_buf(),
        etcdctl: resolve(None, "etcdctl", &dirs).ok().flatten(),
        etcdutl: resolve(None, "etcdutl", &dirs).ok().flatten(),
        version,
    })
}

/// The binaries the local member runs on, shared by everything that
/// launches etcd or uses its tools: the config's at start, the config's
/// newer ones once an upgrade step restarted the member on them.
#[derive(Clone, Debug)]
pub struct RunningBinaries(Arc<RwLock<EtcdBinaries>>);

impl RunningBinaries {
    pub fn new(b: EtcdBinaries) -> Self {
        Self(Arc::new(RwLock::new(b)))
    }

    pub fn get(&self) -> EtcdBinaries {
        match self.0.read() {
            Ok(b) => b.clone(),
            Err(poisoned) => poisoned.into_inner().clone(),
        }
    }

    pub fn set(&self, b: EtcdBinaries) {
        match self.0.write() {
            Ok(mut w) => *w = b,
            Err(poisoned) => *poisoned.into_inner() = b,
        }
    }
}

async fn version_of(etcd: &Path) -> Result<EtcdVersion, BinaryError> {
    let unknown = |detail: String| BinaryError::VersionUnknown {
        path: etcd.to_path_buf(),
        detail,
    };
    let run = tokio::process::Command::new(etcd)
        .arg("--version")
        .kill_on_drop(true)
        .output();
    let out = tokio::time::timeout(Duration::from_secs(10), run)
        .await
        .map_err(|_| unknown("no answer within 10s".into()))?
        .map_err(|e| unknown(e.to_string()))?;
    let text = String::from_utf8_lossy(&out.stdout);
    version_from_output(&text)
        .ok_or_else(|| unknown(format!("unexpected output {:?}", text.trim())))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_versions() {
        let v =
            version_from_output("etcd Version: 3.5.1\nGit SHA: e8732fb5f\nGo Version: go1.16.3\n")
                .unwrap();
        assert_eq!(
            v,
            EtcdVersion {
                major: 3,
                minor: 5,
                patch: 1
            }
        );
        assert!(has_etcdutl(v));
        let old = version_from_output("etcd Version: 3.3.27").unwrap();
        assert!(old < MIN_VERSION);
        assert!(version_from_output("etcd Version: 3.4.23+git").unwrap() >= MIN_VERSION);
        assert_eq!(version_from_output("hello"), None);
    }

    #[tokio::test]
    async fn missing_binary_is_a_clear_error() {
        let config = EtcdConfig {
            etcd_bin: Some("/nonexistent/etcd".into()),
            ..Default::default()
        };
        let e = find(&config).await.unwrap_err().to_string();
        assert!(
            e.contains("etcd.etcd_bin") && e.contains("/nonexistent/etcd"),
            "{e}"
        );
    }

    #[tokio::test]
    async fn too_old_etcd_is_refused() {
        let d = tempfile::tempdir().unwrap();
        let fake = d.path().join("etcd");
        std::fs::write(&fake, "#!/bin/sh\necho 'etcd Version: 3.3.27'\n").unwrap();
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&fake, std::fs::Permissions::from_mode(0o755)).unwrap();
        let config = EtcdConfig {
            etcd_bin: Some(fake),
            ..Default::default()
        };
        let e = find(&config).await.unwrap_err().to_string();
        assert!(e.contains("3.3.27") && e.contains("3.4.0 or newer"), "{e}");
    }
}
