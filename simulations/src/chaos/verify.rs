//! What must hold after a scenario: members = the group, all voters, all
//! healthy, one cluster id; every acknowledged write present with its
//! value (lossy scenarios: only writes after the newest usable snapshot may
//! be missing); `HashKV` equal across members at a common revision.

use super::load::{Acked, PREFIX};
use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;
use testkit::etcd::Timeouts;

const CALL: Duration = Duration::from_secs(2);

async fn connect(endpoint: &str) -> Option<etcd_client::Client> {
    let t = Timeouts {
        connect: CALL,
        call: CALL,
        attempt: CALL,
    };
    testkit::etcd::connect(endpoint, t).await
}

/// The member list (name, learner) sorted, as the first answering member
/// sees it.
pub async fn members(endpoints: &[String]) -> Option<Vec<(String, bool)>> {
    for e in endpoints {
        let Some(mut c) = connect(e).await else {
            continue;
        };
        if let Ok(Ok(r)) = tokio::time::timeout(CALL, c.member_list()).await {
            return Some(testkit::etcd::names_and_roles(&r));
        }
    }
    None
}

/// Members are exactly `want`, all voters, each answers with a leader, and
/// all under one cluster id. `Err` says what is not yet so.
pub async fn full_membership(want: &[String], endpoints: &[String]) -> Result<u64, String> {
    let wanted: Vec<(String, bool)> = {
        let mut v: Vec<(String, bool)> = want.iter().map(|w| (w.clone(), false)).collect();
        v.sort();
        v
    };
    let got = members(endpoints)
        .await
        .ok_or_else(|| "no member answers the member list".to_string())?;
    if got != wanted {
        return Err(format!("members {got:?}, want {wanted:?}"));
    }
    let mut ids = BTreeSet::new();
    for e in endpoints {
        match super::observe::status(e).await {
            Some((cluster, true, false)) => {
                ids.insert(cluster);
            }
            Some(_) => return Err(format!("{e} is a learner or knows no leader")),
            None => return Err(format!("{e} does not answer Status")),
        }
    }
    match ids.len() {
        1 => ids.into_iter().next().ok_or_else(|| "no cluster id".into()),
        n => Err(format!("{n} cluster ids among the members")),
    }
}

/// Acknowledged writes missing or with another value at `endpoint`
/// (a linearizable range read of the load's prefix).
/// Keys per page of the ledger's read-back.
const PAGE: i64 = 10_000;

pub async fn lost_writes<'a>(endpoint: &str, acked: &'a [Acked]) -> Result<Vec<&'a Acked>, String> {
    let mut c = connect(endpoint)
        .await
        .ok_or_else(|| format!("cannot connect to {endpoint}"))?;
    // Paged: a long soak's ledger is larger than one gRPC answer may be.
    let mut end = PREFIX.as_bytes().to_vec();
    if let Some(last) = end.last_mut() {
        *last += 1;
    }
    let mut present: BTreeMap<Vec<u8>, Vec<u8>> = BTreeMap::new();
    let mut from = PREFIX.as_bytes().to_vec();
    for _ in 0..10_000 {
        let r = tokio::time::timeout(
            Duration::from_secs(10),
            c.get(
                from.clone(),
                Some(
                    etcd_client::GetOptions::new()
                        .with_range(end.clone())
                        .with_limit(PAGE),
                ),
            ),
        )
        .await
        .map_err(|_| "the range read timed out".to_string())?
        .map_err(|e| e.to_string())?;
        for kv in r.kvs() {
            present.insert(kv.key().to_vec(), kv.value().to_vec());
        }
        match r.kvs().last() {
            Some(last) if r.more() => {
                from = last.key().to_vec();
                from.push(0);
            }
            _ => break,
        }
    }
    Ok(acked
        .iter()
        .filter(|a| present.get(a.key.as_bytes()).map(Vec::as_slice) != Some(a.value.as_bytes()))
        .collect())
}

/// `HashKV` at the lowest current revision is the same on every member.
pub async fn hash_kv_equal(endpoints: &[String]) -> Result<(), String> {
    let mut clients = Vec::new();
    let mut revision = i64::MAX;
    for e in endpoints {
        let mut c = connect(e)
            .await
            .ok_or_else(|| format!("cannot connect to {e}"))?;
        let s = tokio::time::timeout(CALL, c.status())
            .await
            .map_err(|_| format!("{e}: Status timed out"))?
            .map_err(|err| format!("{e}: {err}"))?;
        revision = revision.min(s.header().map(|h| h.revision()).unwrap_or(0));
        clients.push((e.clone(), c));
    }
    let mut hashes = BTreeMap::new();
    for (e, mut c) in clients {
        let h = tokio::time::timeout(Duration::from_secs(10), c.hash_kv(revision))
            .await
            .map_err(|_| format!("{e}: HashKV timed out"))?
            .map_err(|err| format!("{e}: HashKV: {err}"))?;
        hashes.insert(e, h.hash());
    }
    let distinct: BTreeSet<u32> = hashes.values().copied().collect();
    if distinct.len() == 1 {
        Ok(())
    } else {
        Err(format!("HashKV differs at revision {revision}: {hashes:?}"))
    }
}

/// The moved-aside copies beside each of `ids`' data directories.
pub fn moved_aside(
    c: &testkit::cluster::Cluster,
    ids: &[String],
) -> std::collections::BTreeMap<String, std::collections::BTreeSet<String>> {
    ids.iter()
        .map(|id| {
            let names = c
                .nodes
                .get(id)
                .and_then(|n| n.data_dir().parent().map(std::path::Path::to_path_buf))
                .and_then(|p| std::fs::read_dir(p).ok())
                .into_iter()
                .flatten()
                .flatten()
                .map(|e| e.file_name().to_string_lossy().to_string())
                .filter(|name| name.contains(".moved-"))
                .collect();
            (id.clone(), names)
        })
        .collect()
}

/// Instance `id` was removed from the group while its eco ran: it left —
/// its etcd stopped (within 20 s), its data in place, nothing moved aside
/// since `before` (the copies of earlier faults, taken before the removal),
/// and its eco says `leaving`.
pub fn left(
    c: &testkit::cluster::Cluster,
    id: &str,
    before: &std::collections::BTreeMap<String, std::collections::BTreeSet<String>>,
) -> Result<(), String> {
    let n = c
        .nodes
        .get(id)
        .ok_or_else(|| format!("{id} is not an instance of the cluster"))?;
    let stopped = testkit::wait_until(Duration::from_secs(20), || {
        c.etcd_pids(id).is_empty().then_some(())
    });
    if stopped.is_none() {
        return Err(format!("{id} left the group but its etcd still runs"));
    }
    if !n.data_dir().join("member/wal").exists() {
        return Err(format!("{id}'s data is not in place after it left"));
    }
    let now = moved_aside(c, &[id.to_string()]);
    let empty = std::collections::BTreeSet::new();
    let earlier = before.get(id).unwrap_or(&empty);
    let moved: Vec<&String> = now
        .get(id)
        .into_iter()
        .flatten()
        .filter(|name| !earlier.contains(*name))
        .collect();
    if !moved.is_empty() {
        return Err(format!(
            "{id} moved {} data director(ies) aside after it left: {moved:?}",
            moved.len()
        ));
    }
    let phase = testkit::wait_until(Duration::from_secs(10), || {
        let status = super::observe::eco_status(&n.api())?;
        let phase = status["phase"].as_str()?.to_string();
        (phase == "leaving").then_some(phase)
    });
    if phase.is_none() {
        return Err(format!("{id} does not say it is leaving"));
    }
    Ok(())
}

/// The member list does not change for `span` (a removed instance that
/// fought would add itself back, again and again).
pub async fn membership_stays(endpoints: &[String], span: Duration) -> Result<(), String> {
    let first = members(endpoints).await;
    let until = tokio::time::Instant::now() + span;
    while tokio::time::Instant::now() < until {
        tokio::time::sleep(Duration::from_millis(200)).await;
        let now = members(endpoints).await;
        if now.is_some() && now != first {
            return Err(format!(
                "the member list changed after the cluster was whole: {first:?} -> {now:?}"
            ));
        }
    }
    Ok(())
}
