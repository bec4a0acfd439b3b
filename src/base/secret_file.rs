//! Reading a file that holds a secret (the gossip keys, TLS private keys,
//! `[auth]` passwords):
//! the file must not be open to every user of the machine.
//!
//! The rule, as for SSH private keys but allowing a group: **refused** when
//! others may read or write it or the group may write it (`o+rwx`, `g+w`);
//! **accepted with a warning** when the group may read it (a Kubernetes
//! secret volume with `fsGroup` is group-readable); accepted silently at
//! `0600`/`0400`. Symlinks are followed (Kubernetes projects secrets
//! through them): the mode checked is the target's.

use std::os::unix::fs::PermissionsExt;
use std::path::Path;

#[derive(Debug, thiserror::Error)]
pub enum SecretFileError {
    #[error("cannot read {what} {path}: {source}")]
    Read {
        what: &'static str,
        path: std::path::PathBuf,
        source: std::io::Error,
    },
    #[error(
        "{what} {path} is open to other users (mode {mode:04o}); it holds a secret: chmod 600 it (allowed: no access for others, read-only for the group)"
    )]
    TooOpen {
        what: &'static str,
        path: std::path::PathBuf,
        mode: u32,
    },
    #[error("{what} {path} holds no password (the file is empty)")]
    Empty {
        what: &'static str,
        path: std::path::PathBuf,
    },
}

/// What a file's mode means for the secret it holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ModeVerdict {
    /// Only its owner may read it.
    Private,
    /// Its group may read it too (worth a warning).
    GroupReadable,
    /// Others may read or write it, or its group may write it.
    TooOpen,
}

/// Whether `mode` keeps a secret: nothing for others, no group write.
pub fn check_mode(mode: u32) -> ModeVerdict {
    let mode = mode & 0o777;
    if mode & 0o007 != 0 || mode & 0o020 != 0 {
        ModeVerdict::TooOpen
    } else if mode & 0o040 != 0 {
        ModeVerdict::GroupReadable
    } else {
        ModeVerdict::Private
    }
}

/// A secret file its group may read: accepted, and said in the same words
/// by `eco run` (a warning in its log) and `eco config check` (a warning
/// in its output).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{what} {path} is readable by its group; 0600 keeps it to eco's user")]
pub struct GroupReadable {
    pub what: &'static str,
    pub path: std::path::PathBuf,
}

impl GroupReadable {
    /// The warning `verdict` calls for, if any.
    pub fn of(verdict: ModeVerdict, what: &'static str, path: &Path) -> Option<Self> {
        (verdict == ModeVerdict::GroupReadable).then(|| Self {
            what,
            path: path.to_path_buf(),
        })
    }
}

/// Reads `path` (named `what` in errors, e.g. "gossip.key_file") after
/// checking its mode; a group-readable file is read with a warning logged.
pub fn read(path: &Path, what: &'static str) -> Result<String, SecretFileError> {
    let (text, warning) = read_warning(path, what)?;
    if let Some(w) = warning {
        tracing::warn!("{w}");
    }
    Ok(text)
}

/// [`read`], returning the warning a group-readable file calls for instead
/// of logging it (`eco config check` prints it).
pub fn read_warning(
    path: &Path,
    what: &'static str,
) -> Result<(String, Option<GroupReadable>), SecretFileError> {
    let (text, verdict) = read_checked(path, what)?;
    Ok((text, GroupReadable::of(verdict, what, path)))
}

/// [`read`] without the warning, and the verdict on its mode (for files
/// read again and again, whose mode was reported once at start).
pub fn read_checked(
    path: &Path,
    what: &'static str,
) -> Result<(String, ModeVerdict), SecretFileError> {
    let read_err = |source| SecretFileError::Read {
        what,
        path: path.to_path_buf(),
        source,
    };
    let mode = std::fs::metadata(path)
        .map_err(read_err)?
        .permissions()
        .mode()
        & 0o777;
    let verdict = check_mode(mode);
    if verdict == ModeVerdict::TooOpen {
        return Err(SecretFileError::TooOpen {
            what,
            path: path.to_path_buf(),
            mode,
        });
    }
    Ok((std::fs::read_to_string(path).map_err(read_err)?, verdict))
}

/// The password in a password file (`[auth]`): the whole file, one
/// trailing newline (`\n` or `\r\n`) removed, checked like any secret
/// ([`read_checked`]: refused when open to others); an empty password is
/// refused. Never logged, never in an error.
pub fn read_password(
    path: &Path,
    what: &'static str,
) -> Result<(String, ModeVerdict), SecretFileError> {
    let (mut text, verdict) = read_checked(path, what)?;
    if text.ends_with('\n') {
        text.pop();
        if text.ends_with('\r') {
            text.pop();
        }
    }
    if text.is_empty() {
        return Err(SecretFileError::Empty {
            what,
            path: path.to_path_buf(),
        });
    }
    Ok((text, verdict))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn modes() {
        for (mode, want) in [
            (0o600, ModeVerdict::Private),
            (0o400, ModeVerdict::Private),
            (0o640, ModeVerdict::GroupReadable),
            (0o440, ModeVerdict::GroupReadable),
            (0o644, ModeVerdict::TooOpen),
            (0o604, ModeVerdict::TooOpen),
            (0o660, ModeVerdict::TooOpen),
            (0o601, ModeVerdict::TooOpen),
            (0o777, ModeVerdict::TooOpen),
        ] {
            assert_eq!(check_mode(mode), want, "{mode:o}");
        }
    }

    #[test]
    fn a_world_readable_key_file_is_refused_naming_it() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("keys");
        std::fs::write(&path, "00").unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).unwrap();
        let err = read(&path, "gossip.key_file").unwrap_err().to_string();
        assert!(
            err.contains("gossip.key_file") && err.contains("keys") && err.contains("0644"),
            "{err}"
        );
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).unwrap();
        assert_eq!(read(&path, "gossip.key_file").unwrap(), "00");
        assert_eq!(read_warning(&path, "gossip.key_file").unwrap().1, None);
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o640)).unwrap();
        let (_, warning) = read_warning(&path, "gossip.key_file").unwrap();
        let warning = warning.expect("a group-readable key is said").to_string();
        assert!(
            warning.contains("gossip.key_file") && warning.contains("readable by its group"),
            "{warning}"
        );
    }

    #[test]
    fn a_password_is_the_file_without_its_trailing_newline_and_never_in_an_error() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("pw");
        for (text, want) in [
            ("s3cret\n", Some("s3cret")),
            ("s3cret\r\n", Some("s3cret")),
            ("two words \n\n", Some("two words \n")),
            ("s3cret", Some("s3cret")),
            ("\n", None),
            ("", None),
        ] {
            std::fs::write(&path, text).unwrap();
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).unwrap();
            let got = read_password(&path, "auth.root_password_file");
            assert_eq!(got.as_ref().ok().map(|(p, _)| p.as_str()), want, "{text:?}");
        }
        std::fs::write(&path, "s3cret").unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).unwrap();
        let err = read_password(&path, "auth.root_password_file")
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("auth.root_password_file") && err.contains("0644"),
            "{err}"
        );
        assert!(!err.contains("s3cret"), "{err}");
    }
}
