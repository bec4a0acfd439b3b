//! eco's password identity toward etcd (`[auth] root_password_file`): the
//! user (`root`) and where its password is. The file is read on every
//! connection (like the TLS files), so a new password is used at once;
//! the password the file held before is remembered in memory, and tried
//! second, so eco still gets in while the instance beside the leader has
//! not yet set the new one in etcd (`crate::auth`). Nothing here is ever
//! logged or printed: `Debug` shows the user and the path only.

use crate::base::secret_file::{SecretFileError, read_password};
use crate::config::AuthConfig;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

/// What the setting is called in errors.
const SETTING: &str = "auth.root_password_file";

/// The passwords the file held, newest first.
#[derive(Default)]
struct Seen {
    current: Option<String>,
    previous: Option<String>,
}

/// A user and the file holding its password.
#[derive(Clone)]
pub struct Credentials {
    user: String,
    file: PathBuf,
    seen: Arc<Mutex<Seen>>,
}

impl std::fmt::Debug for Credentials {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Credentials")
            .field("user", &self.user)
            .field("file", &self.file)
            .finish_non_exhaustive()
    }
}

impl Credentials {
    /// `root` with `auth.root_password_file`, when set.
    pub fn from_config(auth: &AuthConfig) -> Option<Self> {
        auth.root_password_file.as_ref().map(|file| Self {
            user: recovery::acl::ROOT.to_string(),
            file: file.clone(),
            seen: Arc::default(),
        })
    }

    pub fn user(&self) -> &str {
        &self.user
    }

    pub fn file(&self) -> &Path {
        &self.file
    }

    /// The passwords to try, newest first: what the file holds now, then
    /// what it held before this process saw it change (if it did).
    pub fn candidates(&self) -> Result<Vec<String>, SecretFileError> {
        let (now, _) = read_password(&self.file, SETTING)?;
        let mut seen = match self.seen.lock() {
            Ok(s) => s,
            Err(poisoned) => poisoned.into_inner(),
        };
        if seen.current.as_deref() != Some(now.as_str()) {
            seen.previous = seen.current.replace(now.clone());
        }
        let mut out = vec![now];
        if let Some(p) = seen.previous.as_ref().filter(|p| **p != out[0]) {
            out.push(p.clone());
        }
        Ok(out)
    }
}

/// etcd's message when a client authenticates while authentication is
/// off (3.4 and 3.5 alike).
const NOT_ENABLED: &str = "authentication is not enabled";

/// etcd's message when a user name or password is refused.
const FAILED: &str = "authentication failed";

fn grpc_message(e: &etcd_client::Error) -> Option<&str> {
    match e {
        etcd_client::Error::GRpcStatus(status) => Some(status.message()),
        _ => None,
    }
}

/// etcd answered that its authentication is not enabled.
pub fn auth_not_enabled(e: &etcd_client::Error) -> bool {
    grpc_message(e).is_some_and(|m| m.contains(NOT_ENABLED))
}

/// etcd refused the user name or password.
pub fn auth_failed(e: &etcd_client::Error) -> bool {
    grpc_message(e).is_some_and(|m| m.contains(FAILED))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    fn write(path: &Path, text: &str) {
        std::fs::write(path, text).unwrap();
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600)).unwrap();
    }

    #[test]
    fn the_password_before_a_change_is_tried_second_and_debug_shows_no_password() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("root.pw");
        write(&file, "one\n");
        let auth = AuthConfig {
            root_password_file: Some(file.clone()),
            ..Default::default()
        };
        let c = Credentials::from_config(&auth).unwrap();
        assert_eq!(c.user(), "root");
        assert_eq!(c.candidates().unwrap(), ["one"]);
        assert_eq!(c.candidates().unwrap(), ["one"]);
        write(&file, "two\n");
        assert_eq!(c.clone().candidates().unwrap(), ["two", "one"]);
        assert_eq!(
            c.candidates().unwrap(),
            ["two", "one"],
            "kept until the next change"
        );
        write(&file, "three\n");
        assert_eq!(c.candidates().unwrap(), ["three", "two"]);
        let shown = format!("{c:?}");
        assert!(
            shown.contains("root.pw") && !shown.contains("three"),
            "{shown}"
        );
        assert!(Credentials::from_config(&AuthConfig::default()).is_none());
    }
}
