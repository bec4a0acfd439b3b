//! The HTTP API's connection budget (one per listener): at most `max`
//! connections at once, at most `per_peer` from one source address.
//!
//! A connection that is not serving a request (its TLS handshake, its
//! request's headers not all in yet, or idle between requests) holds its
//! slot for little: when the budget is full, a new connection takes the
//! slot of the one that has been idle the longest, which is closed; when
//! its source holds its share, of that source's connection idle the
//! longest (a load balancer's health check shares its address with the
//! traffic it forwards). So
//! idle connections from a handful of addresses cannot keep a health
//! check (`/readyz` from a probe or a load balancer) out: a client that
//! sends its request at once is served, and only a flood of new
//! connections faster than requests are answered can still crowd it out.
//! A connection serving a request is never closed for another.

use std::collections::{BTreeMap, HashMap};
use std::net::IpAddr;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Instant;
use tokio::task::AbortHandle;

/// Why a connection was not given a slot.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Refused {
    /// Its source address holds its share already, each serving a
    /// request.
    PeerShare,
    /// Every slot serves a request.
    Busy,
}

/// The budget of one listener.
#[derive(Clone, Debug)]
pub struct Budget {
    max: usize,
    per_peer: usize,
    table: Arc<Mutex<Table>>,
}

#[derive(Debug, Default)]
struct Table {
    next: u64,
    open: BTreeMap<u64, Open>,
    per_peer: HashMap<IpAddr, usize>,
}

#[derive(Debug)]
struct Open {
    peer: IpAddr,
    /// Since when it serves no request (`None`: it serves one).
    idle_since: Option<Instant>,
    /// Its task, closed when another connection takes its slot.
    task: Option<AbortHandle>,
}

impl Table {
    /// Closes the connection idle the longest (of `peer`, when given);
    /// `false` when every one serves a request.
    fn evict_longest_idle(&mut self, peer: Option<IpAddr>) -> bool {
        let longest_idle = self
            .open
            .iter()
            .filter(|(_, o)| peer.is_none_or(|p| o.peer == p))
            .filter_map(|(id, o)| o.idle_since.map(|since| (since, *id)))
            .min()
            .map(|(_, id)| id);
        match longest_idle.and_then(|id| self.remove(id)) {
            Some(victim) => {
                if let Some(task) = victim.task {
                    task.abort();
                }
                true
            }
            None => false,
        }
    }

    fn remove(&mut self, id: u64) -> Option<Open> {
        let open = self.open.remove(&id)?;
        if let Some(n) = self.per_peer.get_mut(&open.peer) {
            *n -= 1;
            if *n == 0 {
                self.per_peer.remove(&open.peer);
            }
        }
        Some(open)
    }
}

/// One connection's slot: returned when dropped.
#[derive(Debug)]
pub struct Slot {
    id: u64,
    table: Arc<Mutex<Table>>,
}

/// A request in progress on a connection: the connection is not idle
/// while it lives.
#[derive(Debug)]
pub struct Serving {
    id: u64,
    table: Arc<Mutex<Table>>,
}

fn lock(table: &Mutex<Table>) -> MutexGuard<'_, Table> {
    match table.lock() {
        Ok(t) => t,
        Err(poisoned) => poisoned.into_inner(),
    }
}

impl Budget {
    pub fn new(max: usize, per_peer: usize) -> Self {
        Self {
            max,
            per_peer,
            table: Arc::default(),
        }
    }

    /// A slot for a new connection from `peer`; when the budget is full,
    /// the connection idle the longest is closed for it (and `true` says
    /// so).
    pub fn admit(&self, peer: IpAddr) -> Result<(Slot, bool), Refused> {
        let mut t = lock(&self.table);
        let mut evicted = false;
        if t.per_peer.get(&peer).copied().unwrap_or(0) >= self.per_peer {
            if !t.evict_longest_idle(Some(peer)) {
                return Err(Refused::PeerShare);
            }
            evicted = true;
        }
        if t.open.len() >= self.max {
            if !t.evict_longest_idle(None) {
                return Err(Refused::Busy);
            }
            evicted = true;
        }
        let id = t.next;
        t.next += 1;
        t.open.insert(
            id,
            Open {
                peer,
                idle_since: Some(Instant::now()),
                task: None,
            },
        );
        *t.per_peer.entry(peer).or_insert(0) += 1;
        Ok((
            Slot {
                id,
                table: self.table.clone(),
            },
            evicted,
        ))
    }

    /// Connections open now.
    pub fn open(&self) -> usize {
        lock(&self.table).open.len()
    }
}

impl Slot {
    /// The task serving the connection, closed if another connection
    /// takes this slot while it is idle.
    pub fn served_by(&self, task: AbortHandle) {
        if let Some(open) = lock(&self.table).open.get_mut(&self.id) {
            open.task = Some(task);
        }
    }

    /// A request starts on this connection.
    pub fn serving(&self) -> Serving {
        if let Some(open) = lock(&self.table).open.get_mut(&self.id) {
            open.idle_since = None;
        }
        Serving {
            id: self.id,
            table: self.table.clone(),
        }
    }
}

impl Drop for Slot {
    fn drop(&mut self) {
        lock(&self.table).remove(self.id);
    }
}

impl Drop for Serving {
    fn drop(&mut self) {
        if let Some(open) = lock(&self.table).open.get_mut(&self.id) {
            open.idle_since = Some(Instant::now());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ip(last: u8) -> IpAddr {
        IpAddr::from([10, 0, 0, last])
    }

    #[test]
    fn a_full_budget_closes_the_longest_idle_connection_never_one_serving() {
        let budget = Budget::new(3, 2);
        let (a, _) = budget.admit(ip(1)).unwrap();
        let (b, _) = budget.admit(ip(1)).unwrap();
        let (c, _) = budget.admit(ip(2)).unwrap();
        let a_serves = a.serving();
        // Full: b has been idle the longest (a serves a request).
        let (d, evicted) = budget.admit(ip(3)).unwrap();
        assert!(evicted);
        assert_eq!(budget.open(), 3);
        // b's slot is gone: dropping it later changes nothing.
        drop(b);
        assert_eq!(budget.open(), 3);
        // c and d idle, a serving: c goes next.
        let (e, evicted) = budget.admit(ip(4)).unwrap();
        assert!(evicted);
        drop(c);
        assert_eq!(budget.open(), 3);
        // Every slot serving: refused.
        let _d_serves = d.serving();
        let _e_serves = e.serving();
        assert_eq!(budget.admit(ip(5)).unwrap_err(), Refused::Busy);
        // A request done: its connection is idle again, and may go.
        drop(a_serves);
        assert!(budget.admit(ip(5)).is_ok());
    }

    #[test]
    fn a_source_at_its_share_closes_its_own_idle_connection_never_anothers() {
        let budget = Budget::new(10, 2);
        let (other, _) = budget.admit(ip(2)).unwrap();
        let (a, _) = budget.admit(ip(1)).unwrap();
        let (b, _) = budget.admit(ip(1)).unwrap();
        // ip(1) holds its share: its own a (idle the longest) goes, not
        // ip(2)'s older connection.
        let (c, evicted) = budget.admit(ip(1)).unwrap();
        assert!(evicted);
        drop(a);
        assert_eq!(budget.open(), 3);
        let _b_serves = b.serving();
        let _c_serves = c.serving();
        assert_eq!(budget.admit(ip(1)).unwrap_err(), Refused::PeerShare);
        drop(other);
        assert_eq!(budget.open(), 2);
        drop((b, c));
        assert_eq!(budget.open(), 0, "{budget:?}");
        assert!(budget.admit(ip(1)).is_ok());
    }
}
