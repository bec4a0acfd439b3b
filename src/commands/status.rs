//! `eco status`: one instance's `/status` (`--api`, or the instance of
//! `--config`), as text or JSON, or every instance of the group
//! (`--cluster`, [`super::cluster_status`]).

use super::one_shot::one_shot;
use crate::api::status_client::ApiTarget;
use crate::config;
use std::path::PathBuf;
use std::process::ExitCode;

/// Shows the status of the instance at `api`, or of the instance of
/// `config` (its id `id` when the config does not say it).
pub fn status(
    api: Option<ApiTarget>,
    config: Option<PathBuf>,
    id: Option<String>,
    json: bool,
    cluster: bool,
) -> ExitCode {
    // (`--cluster` asks the other instances on the API port of the config,
    // never on this instance's api.status_bind; with --api, on its port)
    let (target, others_port) = match (api, config) {
        (Some(a), _) => {
            let port = a.addr.port();
            (a, port)
        }
        (None, Some(path)) => {
            let found = super::one_shot::small_runtime()
                .map_err(anyhow::Error::from)
                .and_then(|rt| rt.block_on(api_target(&path, id.as_deref())));
            match found {
                Ok(a) => a,
                Err(e) => {
                    eprintln!("eco: error: {}", crate::base::error_report::one_line(&e));
                    return ExitCode::from(2);
                }
            }
        }
        (None, None) => {
            eprintln!("eco: error: give --api ADDR:PORT or --config FILE");
            return ExitCode::from(2);
        }
    };
    one_shot(async move {
        let (code, body) = crate::api::status_client::get_from(
            &target,
            "/status",
            std::time::Duration::from_secs(5),
        )
        .await?;
        let url = target.url();
        if code != 200 {
            anyhow::bail!("{url} answered {code}: {}", String::from_utf8_lossy(&body));
        }
        if json && !cluster {
            return Ok(String::from_utf8_lossy(&body).to_string());
        }
        let status: crate::api::status::InstanceStatus =
            serde_json::from_slice(&body).map_err(|e| {
                anyhow::anyhow!("{url} sent a status this eco cannot read ({e}); try --json")
            })?;
        if cluster {
            use crate::commands::cluster_status;
            let rows = cluster_status::gather(status.clone(), &target, others_port).await;
            if json {
                return Ok(serde_json::to_string_pretty(&rows)?);
            }
            return Ok(cluster_status::render(&status, &rows));
        }
        Ok(crate::api::status_client::render(&status))
    })
}

/// Where and how to reach the API of the instance of a config, and the
/// API port of the config (where the other instances serve theirs).
async fn api_target(path: &std::path::Path, id: Option<&str>) -> anyhow::Result<(ApiTarget, u16)> {
    let config = config::load_file(path)?;
    let target = super::api_target(&config, id).await?;
    Ok((target, config.api.port as u16))
}
