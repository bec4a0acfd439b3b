//! This instance's gossip node: its keys (`gossip.key_file`, re-read while
//! eco runs by `key_file.rs`; else `ECO_GOSSIP_KEYS`, read once: the
//! environment of a running process cannot change), its addresses, its
//! seeds (the group's instances, re-resolved on every group refresh: a DNS
//! host's address may change), and the last PeerState it published
//! (published again only when it changed).

mod key_file;

use super::context::Ctx;
use crate::base::wall_clock::unix_ms;
use crate::provider::{Group, Host};
use anyhow::Context;
use gossip::{Event, Gossip, GossipConfig, Keyring, PeerState};
use key_file::{KeyFile, KeyFileWatch};
use std::collections::{HashMap, HashSet};
use std::net::{IpAddr, SocketAddr};
use tokio::sync::mpsc::UnboundedReceiver;

pub(super) struct GossipLink {
    pub node: Gossip,
    events: Option<UnboundedReceiver<Event>>,
    published: Option<PeerState>,
    port: u16,
    /// Re-reads `gossip.key_file` into the node while eco runs (absent
    /// with `ECO_GOSSIP_KEYS`); ends when the link is dropped.
    _key_file_watch: Option<KeyFileWatch>,
}

/// Gossip keys from `gossip.key_file` (with the file, to watch), else
/// `ECO_GOSSIP_KEYS` (hex keys separated by commas or newlines); `None`
/// when neither is set.
fn keys(ctx: &Ctx) -> anyhow::Result<Option<(Keyring, Option<KeyFile>)>> {
    if let Some(path) = &ctx.config.gossip.key_file {
        let (file, keys) = KeyFile::load(path, ctx.cluster())?;
        return Ok(Some((keys, Some(file))));
    }
    match std::env::var("ECO_GOSSIP_KEYS") {
        Ok(v) => {
            let keys = Keyring::parse(&v.replace(',', "\n"), ctx.cluster())
                .context("the gossip keys in ECO_GOSSIP_KEYS")?;
            Ok(Some((keys, None)))
        }
        Err(_) => Ok(None),
    }
}

/// The socket addresses of `hosts` on `port`; a name that does not resolve
/// now is left out (it is unknown, and tried again next refresh).
async fn addresses<'a>(hosts: impl Iterator<Item = &'a Host>, port: u16) -> Vec<SocketAddr> {
    let mut out = Vec::new();
    for host in hosts {
        match host {
            Host::Ip(ip) => out.push(SocketAddr::new(*ip, port)),
            Host::Name(name) => match tokio::net::lookup_host((name.as_str(), port)).await {
                Ok(found) => out.extend(found),
                Err(e) => tracing::debug!(%name, error = %e, "a gossip seed does not resolve now"),
            },
        }
    }
    out
}

/// How long a pod waits for its own DNS name to resolve at start (a new
/// pod's record appears moments after its IP is assigned).
const OWN_NAME_WAIT: std::time::Duration = std::time::Duration::from_secs(120);

/// The address gossip advertises: the host's IP, or what its name resolves
/// to — waited for, since advertising the bound `0.0.0.0` would give peers
/// an address they cannot reach; `None` (the bound address) only for an
/// IP host's own choice.
async fn advertised(host: &Host, port: u16) -> anyhow::Result<Option<SocketAddr>> {
    if let Host::Ip(ip) = host {
        return Ok(Some(SocketAddr::new(*ip, port)));
    }
    let started = tokio::time::Instant::now();
    let mut logged = false;
    loop {
        if let Some(a) = addresses(std::iter::once(host), port)
            .await
            .into_iter()
            .next()
        {
            return Ok(Some(a));
        }
        anyhow::ensure!(
            started.elapsed() < OWN_NAME_WAIT,
            "this instance's own name {host} did not resolve within {}s: gossip cannot advertise an address (is the headless service's publishNotReadyAddresses on?)",
            OWN_NAME_WAIT.as_secs()
        );
        if !logged {
            tracing::info!(%host, "waiting for this instance's own name to resolve");
            logged = true;
        }
        tokio::time::sleep(std::time::Duration::from_secs(1)).await;
    }
}

/// Each instance of `group` with the addresses it sends from (a name that
/// does not resolve now has none until the next refresh).
async fn peers(group: &Group, port: u16) -> HashMap<String, HashSet<IpAddr>> {
    let mut out = HashMap::new();
    for i in &group.instances {
        let ips = addresses(std::iter::once(&i.host), port)
            .await
            .into_iter()
            .map(|a| a.ip().to_canonical())
            .collect();
        out.insert(i.id.clone(), ips);
    }
    out
}

impl GossipLink {
    /// Starts the node, or `None` without gossip keys.
    pub async fn start(ctx: &Ctx, group: &Group) -> anyhow::Result<Option<Self>> {
        let Some((keys, key_file)) = keys(ctx)? else {
            if group.instances.len() > 1 {
                tracing::warn!(
                    "no gossip keys (gossip.key_file or ECO_GOSSIP_KEYS): this instance cannot take part in forming a cluster"
                );
            }
            return Ok(None);
        };
        let port = ctx.config.gossip.port as u16;
        let bind = ctx
            .config
            .gossip
            .bind
            .unwrap_or_else(|| SocketAddr::new(ctx.me.bind, port));
        let seeds = addresses(group.instances.iter().map(|i| &i.host), port).await;
        let mut config = GossipConfig::lan(ctx.cluster(), ctx.id(), keys, seeds, unix_ms());
        config.advertise = advertised(&ctx.me.host, port).await?;
        // Items of formats this build does not read are dropped from the
        // start (the node reads the newest format from its first state).
        let first = PeerState {
            formats: gossip::Formats {
                written: recovery::cluster_version::UNTAGGED,
                reads: recovery::cluster_version::NEWEST,
            },
            ..PeerState::default()
        };
        let (node, events) = Gossip::bind(bind, config, first)
            .await
            .context("cannot start gossip (gossip.bind / gossip.port)")?;
        let _ = node.set_peers(peers(group, port).await);
        let key_file_watch = key_file.map(|file| file.watch(node.keys_handle()));
        tracing::info!(%bind, "gossip started");
        Ok(Some(Self {
            node,
            events: Some(events),
            published: None,
            port,
            _key_file_watch: key_file_watch,
        }))
    }

    /// The node's events, for the daemon's loop (taken once).
    pub fn take_events(&mut self) -> Option<UnboundedReceiver<Event>> {
        self.events.take()
    }

    /// The group's instances become the seeds, and the only senders of
    /// addressed messages (each from its own addresses).
    pub async fn set_seeds(&self, group: &Group) {
        let seeds = addresses(group.instances.iter().map(|i| &i.host), self.port).await;
        let _ = self.node.set_seeds(seeds);
        let _ = self.node.set_peers(peers(group, self.port).await);
    }

    /// Publishes `state` if it differs from the last one published.
    pub fn publish(&mut self, state: PeerState) {
        if self.published.as_ref() != Some(&state) {
            let _ = self.node.set_state(state.clone());
            self.published = Some(state);
        }
    }
}
