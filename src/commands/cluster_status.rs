//! `eco status --cluster`: the whole group, from one instance. This
//! instance's `/status` names the group (every instance's id, address and
//! zone); each other instance's `/status` is then asked at its address on
//! the config's API port (`api.port`), with the same TLS verification (as its address or DNS
//! name), all at once, each bounded in time. An instance that does not
//! answer — down, unreachable, or serving `/status` only on its
//! `api.status_bind` — gets a row from what this instance knows of it
//! (gossip, the member list), marked as such.
//!
//! Output only: nothing here decides anything, and nothing reads it back.

use std::time::Duration;

use serde::Serialize;

use crate::api::status::InstanceStatus;
use crate::api::status_client::ApiTarget;

/// How long each instance gets to answer.
pub const PER_INSTANCE_TIMEOUT: Duration = Duration::from_secs(5);

/// One instance of the group.
#[derive(Debug, Serialize)]
pub struct ClusterRow {
    pub instance_id: String,
    pub address: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub zone: Option<String>,
    /// Its own `/status`, when it answered.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub status: Option<InstanceStatus>,
    /// Why its own status is not here.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub unreachable: Option<String>,
}

/// Asks every instance of `own`'s group for its status on `port`, verified
/// as `own_target` is (TLS or not, the same CA); `own` (already fetched
/// from `own_target`) stands for itself.
pub async fn gather(own: InstanceStatus, own_target: &ApiTarget, port: u16) -> Vec<ClusterRow> {
    let Some(group) = own.group.clone() else {
        return vec![ClusterRow {
            instance_id: own.instance_id.clone(),
            address: own_target.addr.ip().to_string(),
            zone: None,
            status: Some(own),
            unreachable: None,
        }];
    };
    let mut asks = tokio::task::JoinSet::new();
    let mut rows: Vec<ClusterRow> = Vec::new();
    for (index, i) in group.instances.iter().enumerate() {
        let address = i.host.to_string();
        rows.push(ClusterRow {
            instance_id: i.id.clone(),
            address: address.clone(),
            zone: i.zone.clone(),
            status: (i.id == own.instance_id).then(|| own.clone()),
            unreachable: None,
        });
        if i.id != own.instance_id {
            let target = own_target.clone();
            asks.spawn(async move { (index, ask(&address, port, &target).await) });
        }
    }
    while let Some(done) = asks.join_next().await {
        match done {
            Ok((index, Ok(s))) => rows[index].status = Some(s),
            Ok((index, Err(why))) => rows[index].unreachable = Some(why),
            // (a task cannot panic short of a bug; its row says "no status")
            Err(_) => {}
        }
    }
    // An instance the member list or gossip knows that the group no longer
    // names (it left, or is leaving) is shown too.
    let mut extra: Vec<String> = own
        .members
        .iter()
        .map(|m| m.name.clone())
        .chain(own.gossip.iter().map(|g| g.instance_id.clone()))
        .filter(|id| !id.is_empty() && group.get(id).is_none())
        .collect();
    extra.sort();
    extra.dedup();
    rows.extend(extra.into_iter().map(|id| ClusterRow {
        instance_id: id,
        address: String::new(),
        zone: None,
        status: None,
        unreachable: Some("not in the group any more".into()),
    }));
    rows
}

/// The `/status` of the instance at `host:port`, verified as `host` when
/// the API serves TLS.
async fn ask(host: &str, port: u16, own: &ApiTarget) -> Result<InstanceStatus, String> {
    let addr = tokio::time::timeout(PER_INSTANCE_TIMEOUT, tokio::net::lookup_host((host, port)))
        .await
        .map_err(|_| format!("{host} did not resolve within {PER_INSTANCE_TIMEOUT:?}"))?
        .map_err(|e| format!("{host} does not resolve: {e}"))?
        .next()
        .ok_or_else(|| format!("{host} has no address"))?;
    let target = ApiTarget {
        addr,
        tls: own.tls.as_ref().map(|t| crate::api::tls::ApiClientTls {
            trusted_ca: t.trusted_ca.clone(),
            server_name: host.to_string(),
        }),
    };
    let (code, body) =
        crate::api::status_client::get_from(&target, "/status", PER_INSTANCE_TIMEOUT)
            .await
            .map_err(|e| crate::base::error_report::one_line(&e))?;
    match code {
        200 => serde_json::from_slice(&body)
            .map_err(|e| format!("{} sent a status this eco cannot read: {e}", target.url())),
        404 => Err(format!(
            "{} serves /status only on its api.status_bind",
            target.url()
        )),
        other => Err(format!("{} answered {other}", target.url())),
    }
}

/// The rows for humans: one line per instance, then why for each that did
/// not answer.
pub fn render(own: &InstanceStatus, rows: &[ClusterRow]) -> String {
    let mut out = format!(
        "cluster {} as {} sees it ({} instance(s))\n",
        own.cluster,
        own.instance_id,
        rows.len()
    );
    let header = [
        "INSTANCE",
        "ZONE",
        "ECO",
        "PHASE",
        "READY",
        "MEMBER",
        "SNAPSHOT",
        "NEXT ACTION — WHY",
    ];
    let mut table: Vec<[String; 8]> = vec![header.map(String::from)];
    for r in rows {
        let member = own
            .members
            .iter()
            .find(|m| m.name == r.instance_id)
            .map(|m| {
                let role = match (m.learner, m.leader) {
                    (true, _) => "learner",
                    (false, true) => "leader",
                    (false, false) => "voter",
                };
                if m.healthy {
                    role.to_string()
                } else {
                    format!("{role} (unhealthy)")
                }
            })
            .unwrap_or_else(|| "-".into());
        let zone = r.zone.clone().unwrap_or_else(|| "-".into());
        let row = match &r.status {
            Some(s) => [
                r.instance_id.clone(),
                zone,
                s.eco_version.clone(),
                s.phase.as_str().to_string(),
                if s.ready { "yes" } else { "no" }.to_string(),
                member,
                s.snapshots
                    .as_ref()
                    .and_then(|sn| sn.newest_revision)
                    .map_or_else(|| "-".into(), |rev| format!("rev {rev}")),
                format!("{} — {}", s.next.action, s.next.reason),
            ],
            None => {
                let heard = own.gossip.iter().find(|g| g.instance_id == r.instance_id);
                let phase = match heard {
                    Some(g) if g.up => format!("{} (gossip)", g.phase),
                    Some(_) => "down (gossip)".into(),
                    None => "?".into(),
                };
                [
                    r.instance_id.clone(),
                    zone,
                    "?".into(),
                    phase,
                    "?".into(),
                    member,
                    "?".into(),
                    format!("? — {}", r.unreachable.as_deref().unwrap_or("no status")),
                ]
            }
        };
        table.push(row);
    }
    let widths: Vec<usize> = (0..7)
        .map(|c| {
            table
                .iter()
                .map(|r| r[c].chars().count())
                .max()
                .unwrap_or(0)
        })
        .collect();
    for r in &table {
        for (c, w) in widths.iter().enumerate() {
            out.push_str(&format!("{:<w$}  ", r[c], w = *w));
        }
        out.push_str(&r[7]);
        out.push('\n');
    }
    if let Some(c) = &own.cluster_version {
        out.push_str(&format!(
            "eco formats: writing {}, finalized {}: {} — {}\n",
            c.writing, c.finalized, c.next, c.reason
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::status::{GossipPeer, MemberRow};

    #[test]
    fn rows_for_answering_and_silent_instances() {
        let mut own = crate::api::status::example("eco-1", "c");
        own.next.action = "keep etcd running".into();
        own.next.reason = "all is well".into();
        own.members = vec![
            MemberRow {
                id: "1".into(),
                name: "eco-1".into(),
                learner: false,
                leader: true,
                healthy: true,
                revision: Some(7),
            },
            MemberRow {
                id: "2".into(),
                name: "eco-2".into(),
                learner: false,
                leader: false,
                healthy: false,
                revision: None,
            },
        ];
        own.gossip = vec![GossipPeer {
            instance_id: "eco-2".into(),
            up: false,
            phase: "running".into(),
            heard_ms_ago: 9000,
            has_state: true,
            data_present: true,
            times_down: 1,
        }];
        let rows = vec![
            ClusterRow {
                instance_id: "eco-1".into(),
                address: "10.0.0.1".into(),
                zone: Some("a".into()),
                status: Some(own.clone()),
                unreachable: None,
            },
            ClusterRow {
                instance_id: "eco-2".into(),
                address: "10.0.0.2".into(),
                zone: Some("b".into()),
                status: None,
                unreachable: Some("cannot connect to 10.0.0.2:2390".into()),
            },
        ];
        let text = render(&own, &rows);
        assert!(
            text.starts_with("cluster c as eco-1 sees it (2 instance(s))\n"),
            "{text}"
        );
        let lines: Vec<&str> = text.lines().collect();
        assert!(lines[1].starts_with("INSTANCE"), "{text}");
        assert!(
            lines[2].contains("eco-1")
                && lines[2].contains("leader")
                && lines[2].contains("keep etcd running — all is well"),
            "{text}"
        );
        assert!(
            lines[3].contains("down (gossip)")
                && lines[3].contains("voter (unhealthy)")
                && lines[3].contains("? — cannot connect to 10.0.0.2:2390"),
            "{text}"
        );
        let json = serde_json::to_value(&rows).expect("json");
        assert_eq!(json[1]["unreachable"], "cannot connect to 10.0.0.2:2390");
        assert!(json[1].get("status").is_none());
    }
}
