//! eco's recorded releases (`scripts/releases`: the version and the commit
//! each was cut from) and where `scripts/build-release.sh` puts a release's
//! binary (`.tools/releases/eco-<version>`): the previous release, run
//! beside this build by the mixed-version tests.

use std::path::PathBuf;

/// A recorded release.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Release {
    pub version: String,
    /// The full commit id it was cut from.
    pub commit: String,
    /// The newest format it reads (`recovery::cluster_version::NEWEST` of
    /// that release).
    pub format: u16,
}

impl Release {
    /// Where `scripts/build-release.sh` puts its eco binary.
    pub fn binary(&self) -> PathBuf {
        crate::workspace_root()
            .join(".tools/releases")
            .join(format!("eco-{}", self.version))
    }
}

/// The releases `text` (the format of `scripts/releases`) lists, oldest
/// first.
pub fn parse(text: &str) -> anyhow::Result<Vec<Release>> {
    let mut releases = Vec::new();
    for (n, line) in text.lines().enumerate() {
        let line = line.split('#').next().unwrap_or_default().trim();
        if line.is_empty() {
            continue;
        }
        let fields: Vec<&str> = line.split_whitespace().collect();
        let [version, commit, format] = fields[..] else {
            anyhow::bail!(
                "scripts/releases line {}: expected `version commit format`: {line:?}",
                n + 1
            );
        };
        let Ok(format) = format.parse::<u16>() else {
            anyhow::bail!(
                "scripts/releases line {}: format {format:?} is not a number",
                n + 1
            );
        };
        if commit.len() != 40 || !commit.bytes().all(|b| b.is_ascii_hexdigit()) {
            anyhow::bail!(
                "scripts/releases line {}: {commit:?} is not a full commit id",
                n + 1
            );
        }
        releases.push(Release {
            version: version.to_string(),
            commit: commit.to_string(),
            format,
        });
    }
    Ok(releases)
}

/// A version's numbers, for ordering (`0.10.0` after `0.9.0`).
pub fn version_key(v: &str) -> Vec<u64> {
    v.split('.').map(|p| p.parse().unwrap_or(0)).collect()
}

/// The release before `current` in `releases`: the newest one older than
/// it (once a release is cut, its own line is in the list while the
/// workspace still carries its version).
pub fn previous_of(releases: &[Release], current: &str) -> Option<Release> {
    releases
        .iter()
        .filter(|r| version_key(&r.version) < version_key(current))
        .max_by_key(|r| version_key(&r.version))
        .cloned()
}

/// The previous release: the newest one `scripts/releases` lists that is
/// older than this build's version.
pub fn previous() -> anyhow::Result<Release> {
    let path = crate::workspace_root().join("scripts/releases");
    let text = std::fs::read_to_string(&path)
        .map_err(|e| anyhow::anyhow!("cannot read {}: {e}", path.display()))?;
    let current = env!("CARGO_PKG_VERSION");
    previous_of(&parse(&text)?, current)
        .ok_or_else(|| anyhow::anyhow!("{} lists no release older than {current}", path.display()))
}

/// The previous release's binary, built: panics with what to run when it
/// is missing (`make test` and `make compat` build it first).
pub fn previous_binary() -> (Release, PathBuf) {
    let release = previous().expect("the previous release");
    let binary = release.binary();
    assert!(
        binary.is_file(),
        "{} is missing: run scripts/build-release.sh (make test and make compat do)",
        binary.display()
    );
    (release, binary)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_previous_release_is_the_newest_older_than_this_build() {
        let r = |v: &str| Release {
            version: v.into(),
            commit: "0".repeat(40),
            format: 1,
        };
        let all = [r("0.1.0"), r("0.2.0"), r("0.9.0"), r("0.10.0")];
        assert_eq!(previous_of(&all, "0.2.0"), Some(r("0.1.0")));
        assert_eq!(previous_of(&all, "0.3.0"), Some(r("0.2.0")));
        assert_eq!(previous_of(&all, "0.11.0"), Some(r("0.10.0")));
        assert_eq!(previous_of(&all, "0.1.0"), None);
    }

    #[test]
    fn the_file_lists_releases_oldest_first_and_refuses_a_short_commit() {
        let text = "# c\n0.1.0  0123456789abcdef0123456789abcdef01234567 1\n\n0.2.0 fedcba9876543210fedcba9876543210fedcba98 2 # x\n";
        let r = parse(text).unwrap();
        assert_eq!(r.len(), 2);
        assert_eq!(r[1].version, "0.2.0");
        assert_eq!(r[1].format, 2);
        assert!(parse("0.1.0 0123456789abcdef0123456789abcdef01234567 x\n").is_err());
        assert!(
            parse("0.1.0 abc 1\n")
                .unwrap_err()
                .to_string()
                .contains("full commit")
        );
        assert!(parse("0.1.0\n").is_err());
    }

    #[test]
    fn the_repository_names_a_previous_release_in_its_history() {
        let release = previous().unwrap();
        let known = std::process::Command::new("git")
            .args(["cat-file", "-e", &format!("{}^{{commit}}", release.commit)])
            .current_dir(crate::workspace_root())
            .status()
            .unwrap();
        assert!(
            known.success(),
            "{release:?} is not in this clone's history"
        );
    }
}
