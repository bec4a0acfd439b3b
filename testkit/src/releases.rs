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
        let [version, commit] = fields[..] else {
            anyhow::bail!(
                "scripts/releases line {}: expected `version commit`: {line:?}",
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
        });
    }
    Ok(releases)
}

/// The previous release: the last one `scripts/releases` lists.
pub fn previous() -> anyhow::Result<Release> {
    let path = crate::workspace_root().join("scripts/releases");
    let text = std::fs::read_to_string(&path)
        .map_err(|e| anyhow::anyhow!("cannot read {}: {e}", path.display()))?;
    parse(&text)?
        .pop()
        .ok_or_else(|| anyhow::anyhow!("{} lists no release", path.display()))
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
    fn the_file_lists_releases_oldest_first_and_refuses_a_short_commit() {
        let text = "# c\n0.1.0  0123456789abcdef0123456789abcdef01234567\n\n0.2.0 fedcba9876543210fedcba9876543210fedcba98 # x\n";
        let r = parse(text).unwrap();
        assert_eq!(r.len(), 2);
        assert_eq!(r[1].version, "0.2.0");
        assert!(
            parse("0.1.0 abc\n")
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
