//! Reading a config file: parse strictly, resolve relative paths, validate.

use super::{Config, Problem, validate};
use std::path::{Path, PathBuf};

/// Why a config file was refused.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("cannot read config file {path}: {source}")]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// Syntax errors, unknown keys, wrong types: toml's message names the key
    /// and shows the line.
    #[error("config file {path}: {message}")]
    Parse { path: PathBuf, message: String },
    #[error("config file {path} has {} problem(s):\n{}", problems.len(), render(problems))]
    Invalid {
        path: PathBuf,
        problems: Vec<Problem>,
    },
}

fn render(problems: &[Problem]) -> String {
    problems
        .iter()
        .map(|p| format!("  - {p}"))
        .collect::<Vec<_>>()
        .join("\n")
}

/// Reads, parses and validates the config file at `path`.
pub fn load_file(path: &Path) -> Result<Config, ConfigError> {
    let text = std::fs::read_to_string(path).map_err(|source| ConfigError::Read {
        path: path.to_path_buf(),
        source,
    })?;
    let base = path
        .parent()
        .map(Path::to_path_buf)
        .unwrap_or_else(|| PathBuf::from("."));
    parse_str(&text, path, &base)
}

/// Parses `text` (named `path` in messages) and resolves relative paths
/// against `base`.
pub fn parse_str(text: &str, path: &Path, base: &Path) -> Result<Config, ConfigError> {
    if let Ok(document) = text.parse::<toml::Table>() {
        let removed = super::removed_keys::removed_keys(&document);
        if !removed.is_empty() {
            return Err(ConfigError::Invalid {
                path: path.to_path_buf(),
                problems: removed,
            });
        }
    }
    let mut config: Config = toml::from_str(text).map_err(|e| ConfigError::Parse {
        path: path.to_path_buf(),
        message: e.to_string().trim_end().to_string(),
    })?;
    resolve_paths(&mut config, base);
    let has_store = config.snapshot.store != super::SnapshotStoreKind::None;
    super::tls::apply_default(&mut config.etcd, has_store);
    let problems = validate(&config);
    if problems.is_empty() {
        Ok(config)
    } else {
        Err(ConfigError::Invalid {
            path: path.to_path_buf(),
            problems,
        })
    }
}

fn resolve_paths(config: &mut Config, base: &Path) {
    let resolve = |p: &mut PathBuf| {
        if p.is_relative() && !p.as_os_str().is_empty() {
            *p = base.join(&*p);
        }
    };
    if let Some(s) = config.provider.static_group.as_mut() {
        resolve(&mut s.group_file);
    }
    if let Some(p) = config
        .provider
        .statefulset
        .as_mut()
        .and_then(|s| s.replicas_file.as_mut())
    {
        resolve(p);
    }
    let etcd = &mut config.etcd;
    resolve(&mut etcd.data_dir);
    for p in [
        etcd.etcd_bin.as_mut(),
        etcd.etcdctl_bin.as_mut(),
        etcd.etcdutl_bin.as_mut(),
        etcd.log_file.as_mut(),
    ]
    .into_iter()
    .flatten()
    {
        // A bare binary name (`etcd`) means "look it up on PATH".
        if p.components().count() > 1 || p.starts_with(".") {
            resolve(p);
        }
    }
    if let Some(p) = config.gossip.key_file.as_mut() {
        resolve(p);
    }
    for p in config.etcd.tls.paths_mut() {
        resolve(p);
    }
    for p in config.auth.paths_mut() {
        resolve(p);
    }
    for p in config.api.tls.paths_mut() {
        resolve(p);
    }
    if let Some(p) = config
        .snapshot
        .gcs
        .as_mut()
        .and_then(|g| g.credentials_file.as_mut())
    {
        resolve(p);
    }
    if let Some(p) = config
        .snapshot
        .azure
        .as_mut()
        .and_then(|a| a.access_key_file.as_mut())
    {
        resolve(p);
    }
    if let Some(d) = config.snapshot.dir.as_mut() {
        resolve(&mut d.path);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MINIMAL: &str = r#"
[cluster]
name = "c1"
[provider]
kind = "static"
[provider.static]
group_file = "group.toml"
"#;

    fn parse(text: &str) -> Result<Config, ConfigError> {
        parse_str(text, Path::new("/etc/eco/eco.toml"), Path::new("/etc/eco"))
    }

    #[test]
    fn minimal_config_gets_defaults_and_resolved_paths() {
        let c = parse(MINIMAL).unwrap();
        assert_eq!(c.etcd.client_port, 2379);
        assert_eq!(
            c.provider.static_group.unwrap().group_file,
            PathBuf::from("/etc/eco/group.toml")
        );
        assert_eq!(c.etcd.data_dir, PathBuf::from("/var/lib/eco/etcd"));
    }

    #[test]
    fn unknown_key_is_named_with_the_file() {
        for (section, key) in [
            ("[etcd]", "client_prot = 1"),
            ("[cluster]", "nmae = \"x\""),
            ("[log]", "colour = true"),
            ("[provider.static]", "refresh = \"1s\""),
            ("[snapshot]", "intervall = \"1m\""),
        ] {
            let text = format!("{MINIMAL}\n{section}\n{key}\n");
            // Re-opening a table is a TOML error of its own, so splice the key
            // into a fresh document where needed.
            let text = if section == "[cluster]" || section == "[provider.static]" {
                MINIMAL.replace(section, &format!("{section}\n{key}"))
            } else {
                text
            };
            let err = parse(&text).unwrap_err().to_string();
            let name = key.split(' ').next().unwrap();
            assert!(err.contains(name), "{err}");
            assert!(err.contains("/etc/eco/eco.toml"), "{err}");
            assert!(err.contains("unknown field"), "{err}");
        }
    }

    #[test]
    fn unknown_section_is_rejected() {
        let err = parse(&format!("{MINIMAL}\n[tls]\nenabled = true\n"))
            .unwrap_err()
            .to_string();
        assert!(err.contains("tls"), "{err}");
    }

    #[test]
    fn bad_duration_names_the_key() {
        let err = parse(&format!(
            "{MINIMAL}\n[recovery]\nquorum_loss_timeout = \"soon\"\n"
        ))
        .unwrap_err()
        .to_string();
        assert!(err.contains("quorum_loss_timeout"), "{err}");
        assert!(err.contains("write it like"), "{err}");
    }

    #[test]
    fn bare_binary_names_stay_for_path_lookup() {
        let c = parse(&format!(
            "{MINIMAL}\n[etcd]\netcd_bin = \"etcd\"\netcdctl_bin = \"bin/etcdctl\"\n"
        ))
        .unwrap();
        assert_eq!(c.etcd.etcd_bin, Some(PathBuf::from("etcd")));
        assert_eq!(
            c.etcd.etcdctl_bin,
            Some(PathBuf::from("/etc/eco/bin/etcdctl"))
        );
    }
}
