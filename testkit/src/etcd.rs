//! Real etcd: where its binaries are, raw etcd processes (not managed by
//! eco), client calls with timeouts, and the pids of the etcd processes
//! on a data directory.
//!
//! Clients of `https` endpoints use the TLS a test registered for the
//! endpoint's `host:port` ([`trust`]): every helper of the kit (the
//! ledger, membership reads, waits) then works on a TLS cluster unchanged.
//! Test addresses are distinct per test, so the registry, shared by the
//! tests of one process, never mixes two clusters up.
//!
//! Likewise for etcd's authentication: test clients of an endpoint whose
//! `host:port` has credentials ([`authenticate`]) authenticate with them,
//! and go without when etcd answers that its authentication is not
//! enabled (yet) — so the same helpers work before and after eco enables
//! it.

use std::collections::BTreeMap;
use std::future::Future;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Mutex;
use std::time::Duration;

/// The etcd version used when `ECO_TEST_ETCD_VERSION` is not set.
pub const DEFAULT_VERSION: &str = "3.5";

/// `.tools/etcd-<version>/bin` of the workspace, as
/// scripts/install-deps.sh installs it (not checked).
pub fn bin_dir_of(version: &str) -> PathBuf {
    crate::workspace_root().join(format!(".tools/etcd-{version}/bin"))
}

/// The etcd version of this test run: `$ECO_TEST_ETCD_VERSION`, default
/// [`DEFAULT_VERSION`].
pub fn version() -> String {
    std::env::var("ECO_TEST_ETCD_VERSION").unwrap_or_else(|_| DEFAULT_VERSION.into())
}

/// The etcd binaries for this test run:
/// `.tools/etcd-$ECO_TEST_ETCD_VERSION/bin` (default 3.5).
///
/// # Panics
/// When `etcd` is not there (a test cannot run without it).
pub fn bin_dir() -> PathBuf {
    let dir = bin_dir_of(&version());
    assert!(
        dir.join("etcd").exists(),
        "{} is missing: run scripts/install-deps.sh (make test does)",
        dir.display()
    );
    dir
}

/// Pids of processes whose command line has `--data-dir=<dir>`.
pub fn pids_on(data_dir: &Path) -> Vec<i32> {
    crate::process::pids_with_arg(format!("--data-dir={}", data_dir.display()).as_bytes())
}

/// A raw etcd (not managed by eco); killed on drop.
pub struct RawEtcd(pub Child);

impl RawEtcd {
    /// `etcd` from `bin_dir` as member `name` on `data_dir`, serving
    /// clients on `<address>:2379` and peers on `<address>:2380`; the
    /// caller adds the rest and spawns it.
    pub fn command(bin_dir: &Path, data_dir: &Path, name: &str, address: &str) -> Command {
        let mut c = Command::new(bin_dir.join("etcd"));
        c.arg(format!("--name={name}"))
            .arg(format!("--data-dir={}", data_dir.display()))
            .arg(format!("--listen-client-urls=http://{address}:2379"))
            .arg(format!("--advertise-client-urls=http://{address}:2379"))
            .arg(format!("--listen-peer-urls=http://{address}:2380"))
            .arg(format!(
                "--initial-advertise-peer-urls=http://{address}:2380"
            ));
        c
    }

    /// A new one-member cluster (see [`Self::start_with`]).
    pub fn start_new(data_dir: &Path, name: &str, address: &str) -> Self {
        Self::start_with(
            data_dir,
            name,
            address,
            &[
                format!("--initial-cluster={name}=http://{address}:2380"),
                "--initial-cluster-token=raw-test".into(),
            ],
        )
    }

    /// etcd on an existing data dir (see [`Self::start_with`]).
    pub fn start(data_dir: &Path, name: &str, address: &str) -> Self {
        Self::start_with(data_dir, name, address, &[])
    }

    /// etcd of this test run with the tests' timings (heartbeat 50 ms,
    /// election 250 ms), metrics on a free port, output discarded, and
    /// `extra` flags.
    ///
    /// # Panics
    /// When etcd cannot be started (the test's failure report).
    pub fn start_with(data_dir: &Path, name: &str, address: &str, extra: &[String]) -> Self {
        let child = Self::command(&bin_dir(), data_dir, name, address)
            .arg("--listen-metrics-urls=http://127.0.0.1:0")
            .args(["--heartbeat-interval=50", "--election-timeout=250"])
            .args(extra)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("start etcd");
        Self(child)
    }
}

impl Drop for RawEtcd {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// A tokio runtime for the async etcd client.
///
/// # Panics
/// When the runtime cannot be built (the test's failure report).
pub fn rt() -> tokio::runtime::Runtime {
    runtime().expect("runtime")
}

fn runtime() -> Option<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .ok()
}

/// Runs `f` to its end on a runtime of its own; `None` when no runtime
/// can be built.
pub fn block_on<T>(f: impl Future<Output = Option<T>>) -> Option<T> {
    runtime()?.block_on(f)
}

/// The timeouts of an etcd client.
#[derive(Clone, Copy, Debug)]
pub struct Timeouts {
    /// To open the connection.
    pub connect: Duration,
    /// Of every call made through the client.
    pub call: Duration,
    /// Of the whole connection attempt.
    pub attempt: Duration,
}

/// How a test client talks TLS to an endpoint: the CA it trusts and the
/// certificate it presents (if any).
#[derive(Clone, Debug)]
pub struct ClientTlsFiles {
    pub ca: PathBuf,
    pub identity: Option<crate::pki::CertFiles>,
}

static TRUSTED: Mutex<BTreeMap<String, ClientTlsFiles>> = Mutex::new(BTreeMap::new());

/// Test clients of `https://<authority>` use `tls`.
pub fn trust(authority: &str, tls: ClientTlsFiles) {
    if let Ok(mut t) = TRUSTED.lock() {
        t.insert(authority.to_string(), tls);
    }
}

/// The files [`trust`] recorded for `authority` (`host:port`).
pub fn trusted_files(authority: &str) -> Option<ClientTlsFiles> {
    TRUSTED.lock().ok()?.get(authority).cloned()
}

/// The TLS of a test client of `endpoint` (the first of a list): `None`
/// for `http`, or for `https` without [`trust`] (the connection then
/// fails, as an untrusting client's would).
pub fn tls_of(endpoint: &str) -> Option<etcd_client::TlsOptions> {
    let authority = endpoint.strip_prefix("https://")?.trim_end_matches('/');
    let files = TRUSTED.lock().ok()?.get(authority)?.clone();
    let ca = std::fs::read_to_string(&files.ca).ok()?;
    let mut tls =
        etcd_client::TlsOptions::new().ca_certificate(etcd_client::Certificate::from_pem(ca));
    if let Some(id) = &files.identity {
        let cert = std::fs::read_to_string(&id.cert).ok()?;
        let key = std::fs::read_to_string(&id.key).ok()?;
        tls = tls.identity(etcd_client::Identity::from_pem(cert, key));
    }
    Some(tls)
}

/// A user and password of etcd's authentication.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Credentials {
    pub user: String,
    pub password: String,
}

static CREDENTIALS: Mutex<BTreeMap<String, Credentials>> = Mutex::new(BTreeMap::new());

/// Test clients of `<authority>` (`host:port`, any scheme) authenticate
/// as `user` with `password` (see the module docs).
pub fn authenticate(authority: &str, user: &str, password: &str) {
    if let Ok(mut c) = CREDENTIALS.lock() {
        c.insert(
            authority.to_string(),
            Credentials {
                user: user.into(),
                password: password.into(),
            },
        );
    }
}

/// The credentials registered for `endpoint`'s `host:port`.
pub fn credentials_of(endpoint: &str) -> Option<Credentials> {
    let authority = endpoint
        .split_once("://")
        .map_or(endpoint, |(_, rest)| rest)
        .trim_end_matches('/');
    CREDENTIALS.lock().ok()?.get(authority).cloned()
}

/// Connect options with these timeouts, and the registered TLS of the
/// first endpoint (without credentials).
pub fn plain_options(
    endpoints: &[String],
    connect: Duration,
    call: Duration,
) -> etcd_client::ConnectOptions {
    let opts = etcd_client::ConnectOptions::new()
        .with_connect_timeout(connect)
        .with_timeout(call);
    match endpoints.first().and_then(|e| tls_of(e)) {
        Some(tls) => opts.with_tls(tls),
        None => opts,
    }
}

/// [`plain_options`] and the registered credentials of the first
/// endpoint (with them, connecting authenticates).
pub fn options(
    endpoints: &[String],
    connect: Duration,
    call: Duration,
) -> etcd_client::ConnectOptions {
    let opts = plain_options(endpoints, connect, call);
    match endpoints.first().and_then(|e| credentials_of(e)) {
        Some(c) => opts.with_user(c.user, c.password),
        None => opts,
    }
}

/// A client of `endpoints` with [`options`]; when etcd answers that its
/// authentication is not enabled, one without credentials.
pub async fn connect_all(
    endpoints: &[String],
    connect: Duration,
    call: Duration,
) -> Result<etcd_client::Client, etcd_client::Error> {
    let opts = options(endpoints, connect, call);
    match etcd_client::Client::connect(endpoints, Some(opts)).await {
        Err(e) if e.to_string().contains("authentication is not enabled") => {
            let plain = plain_options(endpoints, connect, call);
            etcd_client::Client::connect(endpoints, Some(plain)).await
        }
        other => other,
    }
}

/// A client of `endpoint`, `None` when it cannot connect in time.
pub async fn connect(endpoint: &str, t: Timeouts) -> Option<etcd_client::Client> {
    connect_or_why(endpoint, t).await.ok()
}

/// A client of `endpoint`, or why it could not connect in time.
pub async fn connect_or_why(endpoint: &str, t: Timeouts) -> Result<etcd_client::Client, String> {
    tokio::time::timeout(
        t.attempt,
        connect_all(&[endpoint.to_string()], t.connect, t.call),
    )
    .await
    .map_err(|_| format!("connecting did not finish in {:?}", t.attempt))?
    .map_err(|e| format!("connecting: {e}"))
}

/// A client of `endpoint`: connects within 500 ms, every call times out
/// after 1 s, and the whole connection attempt after 2 s.
pub async fn client(endpoint: &str) -> Option<etcd_client::Client> {
    let t = Timeouts {
        connect: Duration::from_millis(500),
        call: Duration::from_millis(1000),
        attempt: Duration::from_secs(2),
    };
    connect(endpoint, t).await
}

/// `(cluster id, value of key)` when etcd answers a linearizable read.
pub fn read(endpoint: &str, key: &str) -> Option<(u64, Option<String>)> {
    block_on(async {
        let mut c = client(endpoint).await?;
        read_with(&mut c, key, Duration::from_secs(2)).await.ok()
    })
}

/// `(cluster id, value of key)` through `c`, read within `within`.
async fn read_with(
    c: &mut etcd_client::Client,
    key: &str,
    within: Duration,
) -> Result<(u64, Option<String>), String> {
    let r = tokio::time::timeout(within, c.get(key, None))
        .await
        .map_err(|_| format!("the read did not finish in {within:?}"))?
        .map_err(|e| format!("the read: {e}"))?;
    let cluster = r
        .header()
        .ok_or("a response without a header")?
        .cluster_id();
    let value = r
        .kvs()
        .first()
        .map(|kv| String::from_utf8_lossy(kv.value()).to_string());
    Ok((cluster, value))
}

/// A patient connection: with authentication on, connecting runs bcrypt
/// and a raft round, which a loaded machine may take seconds for (CI runs
/// six tests at once on two cores).
pub const PATIENT: Timeouts = Timeouts {
    connect: Duration::from_secs(2),
    call: Duration::from_secs(5),
    attempt: Duration::from_secs(10),
};

/// [`read`] through a [`PATIENT`] connection, and when it fails, why.
pub fn read_patiently(endpoint: &str, key: &str) -> Result<(u64, Option<String>), String> {
    let runtime = runtime().ok_or("no tokio runtime for the test client")?;
    runtime.block_on(async {
        let mut c = connect_or_why(endpoint, PATIENT).await?;
        read_with(&mut c, key, Duration::from_secs(5)).await
    })
}

/// Whether etcd acknowledged the write within 2 s.
pub fn write(endpoint: &str, key: &str, value: &str) -> bool {
    block_on(async {
        let mut c = client(endpoint).await?;
        let put = tokio::time::timeout(Duration::from_secs(2), c.put(key, value, None)).await;
        Some(matches!(put, Ok(Ok(_))))
    })
    .unwrap_or(false)
}

/// The members of a member list as `(name, is_learner)`, sorted.
pub fn names_and_roles(r: &etcd_client::MemberListResponse) -> Vec<(String, bool)> {
    let mut v: Vec<(String, bool)> = r
        .members()
        .iter()
        .map(|m| (m.name().to_string(), m.is_learner()))
        .collect();
    v.sort();
    v
}

/// Waits until etcd serves reads; returns the cluster id.
pub fn wait_serving(endpoint: &str, limit: Duration) -> Option<u64> {
    crate::wait_until(limit, || read(endpoint, "health-probe").map(|(c, _)| c))
}

/// Every key and value under "" with the revision, via a linearizable read.
pub fn dump(endpoint: &str) -> Option<(i64, Vec<(String, String)>)> {
    block_on(async {
        let mut c = client(endpoint).await?;
        dump_with(&mut c).await.ok()
    })
}

/// [`dump`] for a verification at the end of a test: a [`PATIENT`]
/// connection and, when it fails, why.
pub fn dump_patiently(endpoint: &str) -> Result<(i64, Vec<(String, String)>), String> {
    let runtime = runtime().ok_or("no tokio runtime for the test client")?;
    runtime.block_on(async {
        let mut c = connect_or_why(endpoint, PATIENT).await?;
        dump_with(&mut c).await
    })
}

/// Every key and value through `c`, read within 5 s.
async fn dump_with(c: &mut etcd_client::Client) -> Result<(i64, Vec<(String, String)>), String> {
    let opts = etcd_client::GetOptions::new().with_all_keys();
    let r = tokio::time::timeout(Duration::from_secs(5), c.get("", Some(opts)))
        .await
        .map_err(|_| "the read did not finish in 5 s".to_string())?
        .map_err(|e| format!("the read: {e}"))?;
    let rev = r.header().ok_or("a response without a header")?.revision();
    let kvs = r
        .kvs()
        .iter()
        .map(|kv| {
            (
                String::from_utf8_lossy(kv.key()).into(),
                String::from_utf8_lossy(kv.value()).into(),
            )
        })
        .collect();
    Ok((rev, kvs))
}
