//! `eco snapshot now`, `eco snapshot list` and `eco snapshot import`.

use crate::base::printable::printable;
use crate::config::Config;
use crate::etcd::access::EtcdAccess;
use crate::local::state_file::StateFile;
use crate::snapshot::listing::{self, Listing};
use crate::snapshot::take::{self, SnapshotRequest, meta};
use anyhow::Context;

/// Takes a snapshot of this instance's etcd into the configured store.
pub async fn now(config: &Config, instance_id: Option<&str>) -> anyhow::Result<String> {
    let store = super::store(config).await?;
    let me = super::identity(config, instance_id).await?;
    let instance_id = me.id.as_str();
    let client_url = crate::etcd::flags::client_url(&config.etcd, &me.host);
    let state = StateFile::beside(&config.etcd.data_dir)
        .load_for(&config.cluster.name, instance_id)?
        .context("this instance has no state file: it is not part of a cluster yet")?;
    // The cluster's format, as the store records it (no record: format 1).
    let format = crate::store::cluster_version::format_of(
        crate::store::cluster_version::finalized(&*store, &config.cluster.name)
            .await
            .context("reading the cluster version")?
            .as_ref(),
    );
    let started = std::time::Instant::now();
    let taken = take::take(
        &*store,
        &EtcdAccess::for_eco(config),
        &SnapshotRequest {
            endpoint: client_url,
            cluster: config.cluster.name.clone(),
            incarnation: state.incarnation,
            token: state.cluster_token,
            instance: instance_id.to_string(),
            format,
            codec: crate::snapshot::codec_choice::SnapshotCodec::from_config(&config.snapshot)
                .context("[snapshot.encryption]")?,
        },
    )
    .await?;
    Ok(format!(
        "stored {} ({} bytes, sha256 {}, revision {}, in {:.2}s)",
        taken.name,
        taken.object.size,
        taken.object.sha256,
        taken.name.revision,
        started.elapsed().as_secs_f64()
    ))
}

/// The cluster's snapshots, oldest first (every page of the listing), and
/// the snapshot-named objects that are not this cluster's.
pub async fn list(config: &Config) -> anyhow::Result<Listing> {
    let store = super::store(config).await?;
    Ok(listing::list(&*store, &config.cluster.name).await?)
}

/// A table for humans; then the objects that are not this cluster's.
pub fn render(listing: &Listing) -> String {
    let objects = &listing.snapshots;
    let mut out = format!(
        "{:<80} {:>12} {:>12} {:>10} {:>9}\n",
        "NAME", "REVISION", "SIZE", "INSTANCE", "ENCODING"
    );
    for o in objects {
        let get = |k: &str| o.metadata.get(k).cloned().unwrap_or_else(|| "-".into());
        // What the stored bytes carry (zstd, age, both, none); a value this
        // build does not know shows as such.
        let encoding =
            crate::codec::Layers::of(&o.name, &o.metadata).map_or("unknown", |l| l.describe());
        out.push_str(&format!(
            "{:<80} {:>12} {:>12} {:>10} {:>9}\n",
            o.name,
            get(meta::REVISION),
            o.size,
            get(meta::INSTANCE),
            encoding
        ));
    }
    out.push_str(&format!("{} snapshot(s)\n", objects.len()));
    out.push_str(&foreign(listing));
    out
}

/// The snapshot-named objects that are not this cluster's, one line each
/// (empty when none).
pub fn foreign(listing: &Listing) -> String {
    listing
        .foreign
        .iter()
        .map(|f| {
            format!(
                "not this cluster's, not listed or used: {} ({})\n",
                printable(&f.name),
                printable(&f.why)
            )
        })
        .collect()
}

/// `eco snapshot list`: the table, or with `json` the snapshots as JSON
/// (and the objects that are not this cluster's on stderr).
pub async fn list_text(config: &Config, json: bool) -> anyhow::Result<String> {
    let list = list(config).await?;
    if json {
        eprint!("{}", foreign(&list));
        Ok(serde_json::to_string_pretty(&list.snapshots)?)
    } else {
        let store = super::store(config).await?;
        let archive = crate::archive::listing::list(&*store, &config.cluster.name).await?;
        Ok(format!("{}{}", render(&list), render_chains(&archive)))
    }
}

/// The change archive's chains: each snapshot and the revisions its
/// segments carry it to (what `eco restore --at-revision` can reach).
pub fn render_chains(archive: &crate::archive::listing::ArchiveListing) -> String {
    let chains = recovery::archive::chains(&archive.snapshots, &archive.segments);
    let mut out = format!(
        "\nchange archive: {} segment(s), {} bytes\n{:<14} {:>12} {:>12} {:>9} {:>12}  {}\n",
        archive.segments.len(),
        archive.segments.iter().map(|s| s.size).sum::<u64>(),
        "INCARNATION",
        "FROM",
        "TO",
        "SEGMENTS",
        "BYTES",
        "REACHED AT"
    );
    for c in &chains {
        let reached = if c.end_seen_unix_ms > 0 {
            humantime::format_rfc3339_seconds(
                std::time::UNIX_EPOCH + std::time::Duration::from_millis(c.end_seen_unix_ms),
            )
            .to_string()
        } else {
            "-".into()
        };
        out.push_str(&format!(
            "{:<14} {:>12} {:>12} {:>9} {:>12}  {}\n",
            c.snapshot.incarnation,
            c.snapshot.revision,
            c.end,
            c.segments,
            c.segment_bytes,
            reached
        ));
    }
    for (name, why) in &archive.foreign {
        out.push_str(&format!(
            "not this cluster's, not used: {} ({})\n",
            printable(name),
            printable(why)
        ));
    }
    out
}
/// How long the import's check may take: the restore and the throwaway
/// member's start (a large database takes minutes to restore).
const IMPORT_CHECK_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(600);

/// Imports `file` as a snapshot of `config`'s cluster; what `eco snapshot
/// import` prints.
pub async fn import(config: &Config, file: &std::path::Path, by: &str) -> anyhow::Result<String> {
    let store = super::store(config).await?;
    let binaries = crate::etcd::binaries::find(&config.etcd).await?;
    let format = crate::store::cluster_version::format_of(
        crate::store::cluster_version::finalized(&*store, &config.cluster.name)
            .await
            .context("reading the cluster version")?
            .as_ref(),
    );
    // The check's copy beside the data directory when there is one (the
    // same disk eco restores on), else in the temporary directory.
    let work_in = config
        .etcd
        .data_dir
        .parent()
        .filter(|p| p.is_dir())
        .map(std::path::Path::to_path_buf)
        .unwrap_or_else(std::env::temp_dir);
    let started = std::time::Instant::now();
    let imported = crate::snapshot::import::import(&crate::snapshot::import::ImportRequest {
        store: &*store,
        cluster: &config.cluster.name,
        file,
        binaries: &binaries,
        // The throwaway member is plain text on 127.0.0.1: no TLS files
        // (they may not exist yet where a new cluster is prepared), the
        // credentials of [auth] for a snapshot that holds etcd's.
        access: &EtcdAccess::new(config.etcd.call_timeout.get()).with_credentials(
            crate::etcd::credentials::Credentials::from_config(&config.auth),
        ),
        work_in: &work_in,
        timeout: IMPORT_CHECK_TIMEOUT,
        by,
        format,
        codec: &crate::snapshot::codec_choice::SnapshotCodec::from_config(&config.snapshot)
            .context("[snapshot.encryption]")?,
    })
    .await?;
    Ok(format!(
        "stored {} ({} bytes, sha256 {}, revision {}{}, checked and stored in {:.1}s)\nto start a new cluster from it, set in every instance's config before the first start:\n[recovery]\nbootstrap_from = \"{}\"",
        imported.name,
        imported.object.size,
        imported.object.sha256,
        imported.name.revision,
        imported
            .keys_hash
            .map(|h| format!(", HashKV {h}"))
            .unwrap_or_default(),
        started.elapsed().as_secs_f64(),
        imported.name
    ))
}

/// Writes a point of `config`'s change archive to `out` (refused if it
/// exists: written beside it, then linked into place); what `eco snapshot
/// export` prints.
pub async fn export(
    config: &Config,
    point: recovery::archive::Point,
    out: &std::path::Path,
) -> anyhow::Result<String> {
    if out.symlink_metadata().is_ok() {
        anyhow::bail!("{} exists; refusing to overwrite it", out.display());
    }
    let parent = match out.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => std::path::PathBuf::from("."),
    };
    let started = std::time::Instant::now();
    let replayed = super::restore::replay_point(point, config, &parent).await?;
    // A hard link does not replace an existing name: nothing is lost if
    // the file appeared meanwhile.
    // (The replay's own name goes when `replayed` is dropped.)
    std::fs::hard_link(&replayed.file, out)
        .with_context(|| format!("writing {}", out.display()))?;
    Ok(format!(
        "wrote {} in {:.1}s: revision {} of cluster {}: {}\nto clone the cluster at this point: eco snapshot import {} --config <the new cluster's config>, then its recovery.bootstrap_from",
        out.display(),
        started.elapsed().as_secs_f64(),
        replayed.revision,
        config.cluster.name,
        super::restore::replayed_summary(&replayed),
        out.display()
    ))
}

/// Writes a new age X25519 identity to `out` (mode 0600, a new file) and
/// says its recipient; what `eco snapshot keygen` prints.
pub fn keygen(out: &std::path::Path) -> anyhow::Result<String> {
    use age::secrecy::ExposeSecret;
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    let key = age::x25519::Identity::generate();
    let recipient = key.to_public().to_string();
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(out)
        .with_context(|| format!("creating the identity file {}", out.display()))?;
    let text = format!(
        "# created by eco snapshot keygen\n# public key: {recipient}\n{}\n",
        key.to_string().expose_secret()
    );
    file.write_all(text.as_bytes())
        .and_then(|()| file.sync_all())
        .with_context(|| format!("writing the identity file {}", out.display()))?;
    Ok(format!(
        "wrote the identity to {} (keep a copy away from the store: without it no encrypted snapshot can be restored)\nits recipient, for every instance's config:\n[snapshot.encryption]\nrecipients = [\"{recipient}\"]\nidentity_file = \"{}\"  # on the instances that verify and restore",
        out.display(),
        out.display()
    ))
}
