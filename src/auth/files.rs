//! The files `[auth]` names, checked the way eco will read them — by
//! `eco config check` and by `eco run` before anything starts: every
//! password file readable, not open to other users, not empty; the JWT
//! keys of `[auth.token]` (see `jwt_keys.rs`); and, for a certificate
//! identity, eco's client certificate with a subject CN (the user etcd
//! maps it to). Problems name the key and the file, never a password.

use super::desired::certificate_cn;
use crate::base::secret_file::{GroupReadable, read_password};
use crate::config::Config;

/// Every problem with the files of `config.auth` (empty when each one can
/// be used), and the warnings: password files their group may read.
pub fn check_files(config: &Config) -> (Vec<String>, Vec<String>) {
    let auth = &config.auth;
    let mut problems = Vec::new();
    let mut warnings = Vec::new();
    for (key, path) in auth.password_files() {
        match read_password(path, "password file") {
            Ok((_, verdict)) => warnings.extend(
                GroupReadable::of(verdict, "password file", path).map(|w| format!("{key}: {w}")),
            ),
            Err(e) => problems.push(format!("{key}: {e}")),
        }
    }
    problems.extend(super::jwt_keys::check(&auth.token));
    if auth.enabled && auth.root_password_file.is_none() {
        let tls = config.etcd.tls_files();
        // Generated certificates do not exist before eco's first start.
        let generated = config.etcd.tls.generated.is_some();
        if let Some(eco) = &tls.eco
            && (!generated || eco.cert_file.exists())
            && let Err(e) = certificate_cn(&eco.cert_file)
        {
            problems.push(format!(
                "auth: eco's identity is its client certificate's CN (etcd.tls.eco.cert_file): {e}"
            ));
        }
    }
    (problems, warnings)
}

/// eco's identity as a line for humans: `root (auth.root_password_file)`
/// or `<CN> (the CN of etcd.tls.eco.cert_file)`; `None` when `[auth]`
/// gives eco none.
pub fn describe_identity(config: &Config) -> Option<String> {
    let auth = &config.auth;
    if let Some(file) = &auth.root_password_file {
        return Some(format!(
            "root, with the password in {} (auth.root_password_file)",
            file.display()
        ));
    }
    if !auth.enabled {
        return None;
    }
    let tls = config.etcd.tls_files();
    let eco = tls.eco.as_ref()?;
    Some(match certificate_cn(&eco.cert_file) {
        Ok(cn) => format!(
            "{cn}, the CN of eco's client certificate {} (etcd maps it to the user {cn}; eco gives it the root role)",
            eco.cert_file.display()
        ),
        Err(e) => format!("the CN of eco's client certificate, unreadable now: {e}"),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn password_files_are_checked_without_showing_them() {
        let dir = tempfile::tempdir().unwrap();
        let good = dir.path().join("root.pw");
        std::fs::write(&good, "hunter2\n").unwrap();
        std::fs::set_permissions(&good, std::fs::Permissions::from_mode(0o600)).unwrap();
        let open = dir.path().join("app.pw");
        std::fs::write(&open, "hunter3\n").unwrap();
        std::fs::set_permissions(&open, std::fs::Permissions::from_mode(0o644)).unwrap();
        let text = format!(
            "[cluster]\nname = \"c1\"\n[provider]\nkind = \"static\"\n[provider.static]\ngroup_file = \"g.toml\"\n\
             [auth]\nenabled = true\nroot_password_file = \"{}\"\n\
             [[auth.users]]\nname = \"app\"\npassword_file = \"{}\"\n\
             [[auth.users]]\nname = \"gone\"\npassword_file = \"missing.pw\"\n",
            good.display(),
            open.display()
        );
        let config =
            crate::config::parse_str(&text, &dir.path().join("eco.toml"), dir.path()).unwrap();
        let (problems, warnings) = check_files(&config);
        assert!(warnings.is_empty(), "{warnings:?}");
        assert_eq!(problems.len(), 2, "{problems:?}");
        assert!(
            problems[0].starts_with("auth.users[app].password_file")
                && problems[0].contains("0644"),
            "{problems:?}"
        );
        assert!(
            problems[1].starts_with("auth.users[gone].password_file")
                && problems[1].contains("missing.pw"),
            "{problems:?}"
        );
        assert!(!problems.concat().contains("hunter"), "{problems:?}");
        let who = describe_identity(&config).unwrap();
        assert!(who.starts_with("root") && !who.contains("hunter2"), "{who}");
    }
}
