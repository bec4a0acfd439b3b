//! etcd's maintenance calls the space governor needs (`recovery::space`):
//! the alarm list, disarming `NOSPACE`, a physical compaction, and a
//! defragmentation of the member the client is connected to. Every call
//! has its timeout; a defragmentation gets a long one (it rewrites the
//! member's whole database).

use super::call::{CallError, timed};
use etcd_client::{AlarmAction, AlarmOptions, AlarmType, Client, CompactionOptions};
use std::time::Duration;

/// The members with an active `NOSPACE` alarm (the cluster's alarm list,
/// as the member `client` talks to knows it).
pub async fn nospace_alarms(client: &mut Client, timeout: Duration) -> Result<Vec<u64>, CallError> {
    let r = timed(
        "Alarm(GET)",
        timeout,
        client.alarm(AlarmAction::Get, AlarmType::None, None),
    )
    .await?;
    let mut ids: Vec<u64> = r
        .alarms()
        .iter()
        .filter(|a| a.alarm() == AlarmType::Nospace)
        .map(|a| a.member_id())
        .collect();
    ids.sort_unstable();
    ids.dedup();
    Ok(ids)
}

/// Disarms `member`'s `NOSPACE` alarm.
pub async fn disarm_nospace(
    client: &mut Client,
    member: u64,
    timeout: Duration,
) -> Result<(), CallError> {
    let mut options = AlarmOptions::new();
    options.with_member(member);
    timed(
        "Alarm(DEACTIVATE)",
        timeout,
        client.alarm(AlarmAction::Deactivate, AlarmType::Nospace, Some(options)),
    )
    .await
    .map(|_| ())
}

/// Compacts the key space to `revision` and waits until the compaction is
/// applied to the backend (physical). A revision already compacted is not
/// an error: the compaction this asked for has happened.
pub async fn compact(
    client: &mut Client,
    revision: i64,
    timeout: Duration,
) -> Result<(), CallError> {
    match timed(
        "Compact",
        timeout,
        client.compact(revision, Some(CompactionOptions::new().with_physical())),
    )
    .await
    {
        Ok(_) => Ok(()),
        Err(CallError::Etcd { source, .. })
            if source.to_string().contains("has been compacted") =>
        {
            Ok(())
        }
        Err(e) => Err(e),
    }
}

/// Defragments the member `client` is connected to.
pub async fn defragment(client: &mut Client, timeout: Duration) -> Result<(), CallError> {
    timed("Defragment", timeout, client.defragment())
        .await
        .map(|_| ())
}
