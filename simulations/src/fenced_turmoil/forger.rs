//! The hostile keyholder: a host outside the group that holds the gossip
//! key and sends sealed, well-formed recovery messages — `Decided` for
//! records the store does not hold, prepares and accepts — under group
//! members' ids (spoofed senders) and under its own id. Nothing it sends
//! may cause a stop, a join or a seeding the store does not confirm; the
//! world's invariants check every join and seeding against the store.

use super::host::PORT;
use gossip::Keyring;
use gossip::wire::Frame;
use recovery::fenced::harness::rng::Rng;
use recovery::fenced::{Ballot, Envelope, Message, SeedRecord, SeedSource, SeedValue};
use std::net::{Ipv4Addr, SocketAddr};
use std::time::Duration;

/// The forger's id: never an instance of the group.
pub const FORGER: &str = "mallory";

/// Sends forged datagrams to `hosts` (the group's instances) until the
/// simulation ends.
pub async fn run(seed: u64, hosts: Vec<String>, key: [u8; 32]) -> turmoil::Result {
    let socket = turmoil::net::UdpSocket::bind((Ipv4Addr::UNSPECIFIED, PORT)).await?;
    let keys = Keyring::new(&[key], "fenced")?;
    let mut rng = Rng::new(seed);
    loop {
        tokio::time::sleep(Duration::from_millis(rng.range(500, 5_000))).await;
        let to = &hosts[rng.below(hosts.len() as u64) as usize];
        let claimed = if rng.chance(500) {
            hosts[rng.below(hosts.len() as u64) as usize].clone()
        } else {
            FORGER.to_string()
        };
        let target = 2 + rng.below(4);
        let message = match rng.below(3) {
            0 => Message::Decided {
                record: SeedRecord {
                    incarnation: target,
                    value: SeedValue {
                        source: SeedSource::Empty,
                        seeder: claimed.clone(),
                    },
                    ballot: Ballot::new(rng.below(1_000), FORGER),
                    voters: vec![claimed.clone()],
                    token_suffix: rng.next_u64(),
                    data_loss: false,
                },
            },
            1 => Message::Prepare {
                target,
                voters: vec![claimed.clone()],
                ballot: Ballot::new(1_000_000 + rng.below(1_000), &claimed),
            },
            _ => Message::Accept {
                target,
                ballot: Ballot::new(1_000_000 + rng.below(1_000), &claimed),
                value: SeedValue {
                    source: SeedSource::Empty,
                    seeder: claimed.clone(),
                },
            },
        };
        let envelope = Envelope {
            from: claimed.clone(),
            from_boot: rng.next_u64(),
            to: to.clone(),
            to_boot: None,
            message,
        };
        let frame = Frame::Message {
            from: claimed,
            to: to.clone(),
            bytes: postcard::to_allocvec(&envelope)?,
        };
        let sealed = keys.seal(&frame.encode()?)?;
        let addr = SocketAddr::new(turmoil::lookup(to.as_str()), PORT);
        let _ = socket.send_to(&sealed, addr).await;
    }
}
