//! Watching the cluster while a scenario runs, every 250 ms: how many
//! voters are healthy (answer Status with a leader), under how many
//! cluster ids, and whether any eco instance has stopped saying "keep etcd
//! running" (it noticed something: the detection time).

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use testkit::etcd::Timeouts;

/// One observation.
#[derive(Clone, Debug)]
pub struct Seen {
    pub at: Duration,
    pub healthy_voters: u32,
    pub cluster_ids: usize,
    /// Some instance that answers is not ready or plans something else
    /// than "keep etcd running".
    pub reacting: bool,
}

/// The instances to watch: (etcd client URL, eco API address).
pub type Targets = Arc<Mutex<Vec<(String, String)>>>;

pub struct Observer {
    stop: Arc<AtomicBool>,
    handle: Option<std::thread::JoinHandle<()>>,
    pub seen: Arc<Mutex<Vec<Seen>>>,
    pub targets: Targets,
}

impl Observer {
    pub fn start(targets: Vec<(String, String)>, started: Instant) -> Self {
        let stop = Arc::new(AtomicBool::new(false));
        let seen = Arc::new(Mutex::new(Vec::new()));
        let targets: Targets = Arc::new(Mutex::new(targets));
        let (flag, out, watch) = (stop.clone(), seen.clone(), targets.clone());
        let handle = std::thread::spawn(move || {
            let Ok(rt) = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
            else {
                return;
            };
            rt.block_on(async move {
                while !flag.load(Ordering::Relaxed) {
                    let now = watch.lock().map(|t| t.clone()).unwrap_or_default();
                    let s = observe(&now, started).await;
                    if let Ok(mut v) = out.lock() {
                        v.push(s);
                    }
                    tokio::time::sleep(Duration::from_millis(250)).await;
                }
            });
        });
        Self {
            stop,
            handle: Some(handle),
            seen,
            targets,
        }
    }

    pub fn set_targets(&self, targets: Vec<(String, String)>) {
        if let Ok(mut t) = self.targets.lock() {
            *t = targets;
        }
    }

    pub fn finish(mut self) -> Vec<Seen> {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(h) = self.handle.take() {
            let _ = h.join();
        }
        self.seen.lock().map(|v| v.clone()).unwrap_or_default()
    }
}

impl Drop for Observer {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(h) = self.handle.take() {
            let _ = h.join();
        }
    }
}

async fn observe(targets: &[(String, String)], started: Instant) -> Seen {
    let mut healthy = 0;
    let mut ids = std::collections::BTreeSet::new();
    let mut reacting = false;
    for (endpoint, api) in targets {
        if let Some((cluster, leader, learner)) = status(endpoint).await {
            ids.insert(cluster);
            if leader && !learner {
                healthy += 1;
            }
        }
        // A dead instance (no answer) is the fault, not eco noticing it.
        if let Some(v) = eco_status(api) {
            let action = v["next"]["action"].as_str().unwrap_or_default();
            let ready = v["ready"].as_bool().unwrap_or(false);
            if !ready || action != "keep etcd running" {
                reacting = true;
            }
        }
    }
    Seen {
        at: started.elapsed(),
        healthy_voters: healthy,
        cluster_ids: ids.len(),
        reacting,
    }
}

/// (cluster id, knows a leader, is a learner) of one member.
pub async fn status(endpoint: &str) -> Option<(u64, bool, bool)> {
    let t = Timeouts {
        connect: Duration::from_millis(300),
        call: Duration::from_millis(500),
        attempt: Duration::from_millis(500),
    };
    let mut c = testkit::etcd::connect(endpoint, t).await?;
    let s = tokio::time::timeout(Duration::from_millis(500), c.status())
        .await
        .ok()?
        .ok()?;
    let cluster = s.header()?.cluster_id();
    Some((cluster, s.leader() != 0, s.is_learner()))
}

/// eco's `/status` JSON (a plain HTTP/1.0 GET with timeouts).
pub fn eco_status(api: &str) -> Option<serde_json::Value> {
    let addr: SocketAddr = api.parse().ok()?;
    let mut s = TcpStream::connect_timeout(&addr, Duration::from_millis(300)).ok()?;
    s.set_read_timeout(Some(Duration::from_millis(500))).ok()?;
    s.set_write_timeout(Some(Duration::from_millis(500))).ok()?;
    s.write_all(format!("GET /status HTTP/1.0\r\nHost: {api}\r\n\r\n").as_bytes())
        .ok()?;
    let mut text = String::new();
    s.read_to_string(&mut text).ok()?;
    let body = text.split_once("\r\n\r\n")?.1;
    serde_json::from_str(body).ok()
}
