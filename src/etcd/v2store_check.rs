//! `etcdutl check v2store`: whether a member's data holds v2-store content
//! etcd 3.6 refuses to start on (custom v2 keys in the v2 snapshot, and
//! since etcdutl 3.5.32 v2 requests in the WAL). Run on the member's own
//! data directory before its step onto 3.6 (`recovery::upgrade`), with
//! the etcdutl of the 3.5 release it runs (3.5.18 or newer has the
//! command). Read-only: the check opens the snapshot and WAL for reading.

use std::path::Path;
use std::time::Duration;

/// How long the check may take (it reads the newest v2 snapshot and the
/// WAL after it).
pub const CHECK_TIMEOUT: Duration = Duration::from_secs(60);

/// `Ok` when the data holds only membership and version keys; `Err` with
/// etcdutl's words (or why it could not run) otherwise.
pub async fn check(etcdutl: Option<&Path>, data_dir: &Path) -> Result<(), String> {
    let Some(etcdutl) = etcdutl else {
        return Err("no etcdutl beside the etcd the member runs: the v2-store check cannot run (etcdutl 3.5.18 or newer has it)".into());
    };
    let run = tokio::process::Command::new(etcdutl)
        .args(["check", "v2store", "--data-dir"])
        .arg(data_dir)
        .kill_on_drop(true)
        .output();
    let out = match tokio::time::timeout(CHECK_TIMEOUT, run).await {
        Err(_) => {
            return Err(format!(
                "{} check v2store did not finish within {} s",
                etcdutl.display(),
                CHECK_TIMEOUT.as_secs()
            ));
        }
        Ok(Err(e)) => return Err(format!("cannot run {}: {e}", etcdutl.display())),
        Ok(Ok(out)) => out,
    };
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let said = text.split_whitespace().collect::<Vec<_>>().join(" ");
    if out.status.success() {
        return Ok(());
    }
    if said.contains("unknown command") || said.contains("unknown flag") {
        return Err(format!(
            "{} has no `check v2store` (etcdutl 3.5.18 or newer has it): {said}",
            etcdutl.display()
        ));
    }
    Err(format!("etcdutl check v2store: {said}"))
}
