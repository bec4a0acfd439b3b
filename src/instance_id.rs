//! Which instance this is: `--instance-id`, else `ECO_INSTANCE_ID` (both
//! through clap), else the provider's own notion (for the static provider,
//! `provider.static.instance_id`).

use crate::config::Config;

pub fn resolve(from_cli_or_env: Option<&str>, config: &Config) -> anyhow::Result<String> {
    if let Some(id) = from_cli_or_env.map(str::trim).filter(|s| !s.is_empty()) {
        return Ok(id.to_string());
    }
    if let Some(id) = config
        .provider
        .static_group
        .as_ref()
        .and_then(|s| s.instance_id.clone())
    {
        return Ok(id);
    }
    anyhow::bail!(
        "no instance id: pass --instance-id, set ECO_INSTANCE_ID, or set provider.static.instance_id in the config"
    )
}
