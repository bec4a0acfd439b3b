//! `eco config check`, beyond the file itself: the files the config names
//! must open and parse the way `eco run` will read them — the group file
//! or the StatefulSet's replicas file,
//! the gossip key file (and its mode), the TLS files of `[etcd.tls]`
//! (modes of the keys, PEM, keys matching certificates, validity), the
//! `[api.tls]` files (the same checks; files of generated mode are made
//! by `eco run`, so they are not looked at here; `crate::etcd::tls_check`
//! says what is checked: chains to the configured CAs included, the names
//! only by `eco run`, which knows the instance's address), the
//! `[auth]` files (password files: readable, not open to others, not
//! empty; the JWT keys of the sign method's family; eco's certificate CN
//! for a certificate identity), the store directory, and for an S3
//! store the credential files the AWS environment variables name. Each
//! problem names the key and the file; the warnings (secret files their
//! group may read) are the ones `eco run` logs, from the same checks.
//! Nothing is contacted, unless `--probe-store` asks for the store's
//! probe (`super::store_probe`); without it, whether the bucket is
//! reachable, writable and honours conditional writes is proven by `eco
//! run` at start (the S3 store's `check_at_start`).

use crate::config::{Config, ProviderKind, SnapshotStoreKind};

/// What the check of the files a config references found.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct FilesChecked {
    /// Each one a reason `eco run` would refuse to start; empty means each
    /// file opens and parses.
    pub problems: Vec<String>,
    /// Accepted, and said (as `eco run` logs them): secret files their
    /// group may read.
    pub warnings: Vec<String>,
    /// What only `eco run` can check (it knows the instance's address).
    pub not_checked: Vec<String>,
}

/// The files `config` references, checked.
pub fn referenced_files(config: &Config) -> FilesChecked {
    let mut problems = Vec::new();
    let mut warnings = Vec::new();
    let mut not_checked = Vec::new();
    if config.provider.kind == ProviderKind::Static
        && let Some(s) = &config.provider.static_group
    {
        let path = &s.group_file;
        match std::fs::read_to_string(path) {
            // Whose file it is does not matter here: ids, addresses
            // and sizes are checked the same for every instance.
            Ok(text) => {
                if let Err(e) = crate::provider::parse_group_file(text.as_str(), path, "") {
                    problems.push(format!("provider.static.group_file: {e}"));
                }
            }
            Err(e) => problems.push(format!(
                "provider.static.group_file: cannot read {}: {e}",
                path.display()
            )),
        }
    }
    if let Some(path) = config
        .provider
        .statefulset
        .as_ref()
        .and_then(|s| s.replicas_file.as_ref())
    {
        match std::fs::read_to_string(path) {
            Ok(text) => {
                if let Err(e) = crate::provider::parse_replicas(&text, path) {
                    problems.push(format!("provider.statefulset.replicas_file: {e}"));
                }
            }
            Err(e) => problems.push(format!(
                "provider.statefulset.replicas_file: cannot read {}: {e}",
                path.display()
            )),
        }
    }
    if let Some(path) = &config.gossip.key_file {
        match crate::base::secret_file::read_warning(path, "gossip.key_file") {
            Ok((text, warning)) => {
                warnings.extend(warning.map(|w| w.to_string()));
                if let Err(e) = gossip::Keyring::parse(&text, &config.cluster.name) {
                    problems.push(format!(
                        "gossip.key_file: the keys in {}: {e}",
                        path.display()
                    ));
                }
            }
            Err(e) => problems.push(e.to_string()),
        }
    }
    // The operator's files only: generated ones are made by `eco run`.
    match crate::etcd::tls_check::check_files(&config.etcd.tls, std::time::SystemTime::now(), None)
    {
        Ok(checked) => {
            warnings.extend(checked.warnings.iter().map(|w| w.to_string()));
            not_checked.extend(checked.not_checked);
        }
        Err(e) => problems.push(e.to_string()),
    }
    let (auth_problems, auth_warnings) = crate::auth::check_files(config);
    problems.extend(auth_problems);
    warnings.extend(auth_warnings);
    if let Some(files) = config.api.tls.files(&config.etcd) {
        // Files of generated mode exist once `eco run` made them: only the
        // operator's are checked here.
        let generated = config.etcd.tls.generated.is_some()
            && [&files.cert, &files.key, &files.trusted_ca]
                .iter()
                .any(|f| !f.key.starts_with("api.tls."));
        if !generated {
            match crate::api::tls::check_files(&files, std::time::SystemTime::now(), None) {
                Ok(checked) => warnings.extend(checked.warnings),
                Err(e) => problems.push(e.to_string()),
            }
            not_checked.push(format!(
                "that {} names this instance's host (eco run warns when it does not)",
                files.cert.key
            ));
        }
    }
    if config.snapshot.store == SnapshotStoreKind::Dir
        && let Some(dir) = &config.snapshot.dir
        && !dir.path.is_dir()
    {
        problems.push(format!(
                    "snapshot.dir.path: {} is not a directory (it must exist: a missing store is an error, never an empty one)",
                    dir.path.display()
                ));
    }
    if config.snapshot.store == SnapshotStoreKind::S3 {
        problems.extend(s3_credential_files(|var| std::env::var_os(var)));
    }
    // The cloud stores' credential files (eco run reads them at start).
    let cloud_file = match config.snapshot.store {
        SnapshotStoreKind::Gcs => config.snapshot.gcs.as_ref().and_then(|g| {
            g.credentials_file
                .as_ref()
                .map(|f| ("snapshot.gcs.credentials_file", f))
        }),
        SnapshotStoreKind::Azure => config.snapshot.azure.as_ref().and_then(|a| {
            a.access_key_file
                .as_ref()
                .map(|f| ("snapshot.azure.access_key_file", f))
        }),
        _ => None,
    };
    if let Some((key, file)) = cloud_file
        && let Err(e) = std::fs::File::open(file)
    {
        problems.push(format!("{key}: {} cannot be read: {e}", file.display()));
    }
    FilesChecked {
        problems,
        warnings,
        not_checked,
    }
}

/// The etcd release the config names, found as `eco run` finds it: the
/// advisories of the etcd project for it as warnings
/// (`recovery::etcd_advisories`), `etcd.extra_flags` it refuses as
/// problems and deprecates as warnings (`recovery::etcd_flags`), or why it could not be looked at (this
/// machine may not be the one the config is for: not a problem here;
/// `eco run` refuses to start without it).
pub async fn etcd_release(config: &Config, checked: &mut FilesChecked) {
    match crate::etcd::binaries::find(&config.etcd).await {
        Ok(b) => {
            checked.warnings.extend(
                recovery::etcd_advisories::advisories(b.version)
                    .into_iter()
                    .map(|a| format!("{} [{}] ({})", a.text, a.severity.as_str(), a.source)),
            );
            for p in recovery::etcd_flags::problems(&config.etcd.extra_flags, b.version) {
                match p {
                    recovery::etcd_flags::Acceptance::Refused { reason } => checked.problems.push(
                        format!("etcd.extra_flags: {reason}: etcd would exit at start"),
                    ),
                    recovery::etcd_flags::Acceptance::Deprecated { reason } => {
                        checked.warnings.push(format!("etcd.extra_flags: {reason}"))
                    }
                    recovery::etcd_flags::Acceptance::Accepted => {}
                }
            }
        }
        Err(e) => checked
            .not_checked
            .push(format!("the etcd release (not found on this machine: {e})")),
    }
}

/// How the HTTP API serves, for the top of `eco config check`'s output:
/// the scheme, the TLS files in force (`[api.tls]` defaults to etcd's
/// client material, which the effective configuration does not spell
/// out), and where `/status` is.
pub fn describe_api(config: &Config) -> String {
    let api = &config.api;
    let main = match api.bind {
        Some(bind) => bind.to_string(),
        None => format!("<instance address>:{}", api.port),
    };
    let mut out = match api.tls.files(&config.etcd) {
        None => format!("# eco's HTTP API: http on {main}\n"),
        Some(f) => format!(
            "# eco's HTTP API: https on {main}, serving {} ({}) and {} ({}), verified against {} ({}), no client certificate asked\n",
            f.cert.key,
            f.cert.path.display(),
            f.key.key,
            f.key.path.display(),
            f.trusted_ca.key,
            f.trusted_ca.path.display()
        ),
    };
    if let Some(status) = api.status_bind {
        out.push_str(&format!(
            "# /status only on {status} (api.status_bind); the main listener answers 404\n"
        ));
    }
    if let Some(warning) = crate::config::plaintext_warning(&config.etcd) {
        out.push_str(&format!("# warning: {warning}\n"));
    } else if config.etcd.tls.generated.is_some() {
        out.push_str("# etcd's surfaces: TLS with certificates eco issues from the cluster's CA ([etcd.tls.generated], the default with a store)\n");
    }
    out
}

/// The files of the AWS SDK's default credential chain that the
/// environment names, each of which must be readable (the chain would
/// fail on it at start). `env` looks a variable up.
fn s3_credential_files(env: impl Fn(&str) -> Option<std::ffi::OsString>) -> Vec<String> {
    let mut problems = Vec::new();
    for var in [
        "AWS_SHARED_CREDENTIALS_FILE",
        "AWS_CONFIG_FILE",
        "AWS_WEB_IDENTITY_TOKEN_FILE",
    ] {
        if let Some(path) = env(var).filter(|p| !p.is_empty()) {
            let path = std::path::PathBuf::from(path);
            if let Err(e) = std::fs::File::open(&path) {
                problems.push(format!(
                    "snapshot.s3: {var} names {}, which cannot be read: {e} (the AWS SDK's credential chain reads it)",
                    path.display()
                ));
            }
        }
    }
    problems
}

/// `eco config check FILE`: exit 0 with the effective config (defaults
/// filled in, warnings and what only `eco run` checks as comments), 2 with
/// every problem, 1 when the result cannot be printed.
/// With `probe_store`, the store is probed too
/// ([`super::store_probe`]): what it found is a note, or a problem.
pub fn check(file: &std::path::Path, probe_store: bool) -> std::process::ExitCode {
    use std::process::ExitCode;
    match crate::config::load_file(file) {
        Ok(c) => {
            let mut checked = referenced_files(&c);
            let mut probed = None;
            match super::one_shot::small_runtime() {
                Ok(rt) => {
                    rt.block_on(etcd_release(&c, &mut checked));
                    if probe_store {
                        match rt.block_on(super::store_probe::probe(&c)) {
                            Ok(found) => probed = Some(found),
                            Err(problem) => checked.problems.push(problem),
                        }
                    }
                }
                Err(e) => checked.not_checked.push(format!(
                    "the etcd release (cannot start the async runtime: {e})"
                )),
            }
            if !checked.problems.is_empty() {
                for p in checked.problems {
                    eprintln!("eco: {}: {p}", file.display());
                }
                for w in checked.warnings {
                    eprintln!("eco: {}: warning: {w}", file.display());
                }
                return ExitCode::from(2);
            }
            // Defaults that depend on another key are filled in too.
            let mut effective = c.clone();
            effective.provider.refresh_interval = Some(c.provider.refresh_interval());
            match toml::to_string_pretty(&effective) {
                Ok(text) => {
                    let identity = crate::auth::describe_identity(&c)
                        .map(|who| format!("# eco's identity inside etcd: {who}\n"))
                        .unwrap_or_default();
                    let api = describe_api(&c);
                    let mut notes = String::new();
                    for w in checked.warnings {
                        notes.push_str(&format!("# warning: {w}\n"));
                    }
                    for n in checked.not_checked {
                        notes.push_str(&format!("# not checked here: {n}\n"));
                    }
                    if let Some(found) = probed {
                        notes.push_str(&format!("# store probed: {found}\n"));
                    }
                    super::one_shot::print_out(&format!(
                        "# {}: valid; effective configuration:\n{notes}{identity}{api}{text}",
                        file.display()
                    ));
                    ExitCode::SUCCESS
                }
                Err(e) => {
                    eprintln!("eco: cannot print the configuration: {e}");
                    ExitCode::from(1)
                }
            }
        }
        Err(e) => {
            eprintln!("eco: {e}");
            ExitCode::from(2)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::s3_credential_files;
    use std::ffi::OsString;

    #[test]
    fn s3_credential_files_named_by_the_environment_must_be_readable() {
        let d = tempfile::tempdir().unwrap();
        let present = d.path().join("credentials");
        std::fs::write(&present, "[default]\n").unwrap();
        let missing = d.path().join("no-such-file");
        let env = |var: &str| match var {
            "AWS_SHARED_CREDENTIALS_FILE" => Some(OsString::from(&present)),
            "AWS_WEB_IDENTITY_TOKEN_FILE" => Some(OsString::from(&missing)),
            "AWS_CONFIG_FILE" => Some(OsString::new()),
            _ => None,
        };
        let problems = s3_credential_files(env);
        assert_eq!(problems.len(), 1, "{problems:?}");
        assert!(
            problems[0].contains("AWS_WEB_IDENTITY_TOKEN_FILE"),
            "{problems:?}"
        );
        assert!(problems[0].contains("no-such-file"), "{problems:?}");
        assert!(s3_credential_files(|_| None).is_empty());
    }
}
