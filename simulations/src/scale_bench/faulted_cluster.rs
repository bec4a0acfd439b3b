//! The cluster `scale-bench`'s faults run on: three real eco and etcd 3.5
//! instances (`127.0.26.x`, a directory store, no change archive, no
//! scheduled snapshot, the quorum-loss timeout of
//! [`super::quorum_loss::QUORUM_LOSS_TIMEOUT`], the space governor, the
//! unhealthy-member TTL and the learner timeout at eco's defaults — the
//! tests' 5 s TTL removes a member of 8 GiB that etcd promoted while it
//! still restores the database it was sent, again and again) filled through all three with the `kubernetes` mix; then the
//! quorum loss ([`super::quorum_loss`]: eco-2 and eco-3 replaced empty by
//! eco-4 and eco-5) and, on the cluster that comes back — every member
//! then holds the whole database, fresh from the seeding — the
//! defragmentation ([`super::defrag`]). One fill serves both (at 8 GiB a
//! fill of three takes a quarter of an hour).

use super::defrag::{self, DefragResult};
use super::quorum_loss::{self, QUORUM_LOSS_TIMEOUT, QuorumLossResult};
use crate::bench_cluster;
use crate::snapshot_bench::Filled;
use anyhow::Context;
use std::path::Path;
use std::time::Duration;

const NET: u8 = 26;

pub struct Faulted {
    pub filled: Filled,
    pub quorum_loss: Option<QuorumLossResult>,
    pub defrag: Option<DefragResult>,
}

pub fn run(
    eco: &Path,
    etcd_bin_dir: &Path,
    size_mib: u64,
    quorum_loss: bool,
    defrag: bool,
) -> anyhow::Result<Faulted> {
    let quota = (size_mib * 3).max(2048) << 20;
    let (mut c, mut group) = bench_cluster::form(eco, etcd_bin_dir, NET, 6, false, |b| {
        b.archive(false)
            .snapshot_interval(Duration::from_secs(24 * 3600))
            .quorum_loss_timeout(QUORUM_LOSS_TIMEOUT)
            .unhealthy_member_ttl(eco::config::defaults::unhealthy_member_ttl().get())
            .learner_timeout(eco::config::defaults::learner_timeout().get())
            .edit(|cfg| cfg.etcd.quota_backend_bytes = quota)
    })?;
    let election_timeout = c.nodes[&group[0]]
        .settings
        .config()
        .etcd
        .election_timeout
        .get();
    eprintln!(
        "scale-bench: {size_mib} MiB: filling three instances (quorum loss, defragmentation)"
    );
    let filled = super::cluster_fill::fill_cluster(&c, &group, size_mib)?;
    let db_mib = filled.db_bytes as f64 / (1u64 << 20) as f64;
    let mut out = Faulted {
        filled,
        quorum_loss: None,
        defrag: None,
    };
    if quorum_loss {
        let base = format!("127.0.{NET}");
        let x = quorum_loss::run_on(&mut c, &base, size_mib, db_mib)
            .with_context(|| format!("{size_mib} MiB: the quorum loss"))?;
        eprint!("{}", quorum_loss::render(&x));
        out.quorum_loss = Some(x);
        group = vec!["eco-1".into(), "eco-4".into(), "eco-5".into()];
    }
    if defrag {
        let x = defrag::run_on(&c, &group, size_mib, election_timeout)
            .with_context(|| format!("{size_mib} MiB: the defragmentation"))?;
        eprint!("{}", defrag::render(&x));
        out.defrag = Some(x);
    }
    for id in &group {
        let _ = c.stop(id, libc::SIGTERM);
    }
    Ok(out)
}
