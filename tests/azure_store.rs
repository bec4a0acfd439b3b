//! The Azure Blob store (`snapshot.store = "azure"`, `src/store/cloud/`)
//! against azurite on loopback (testkit::azurite_server): the store
//! contract (concurrent creates included), foreign blobs skipped and kept,
//! the start check's proof of conditional create, what is not committed
//! (a content without its info, a content replaced behind its info) said
//! and swept as it should be, clear and bounded errors, and eco end to
//! end: `eco snapshot now` into azurite, `eco snapshot list`, `eco
//! restore` from it.

use eco::config::AzureStoreConfig;
use eco::store::cloud::{CloudStore, azure};
use eco::store::contract::{self, CLUSTER, Foreign, TEST_PART_SIZE};
use eco::store::{ConditionalCreate, ObjectStore, StoreError, list_all};
use object_store::azure::MicrosoftAzureBuilder;
use object_store::path::Path;
use object_store::{ObjectStoreExt, PutPayload};
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};
use testkit::azurite_server::{ACCOUNT, AzuriteServer, KEY};

const CONTAINER: &str = "eco-test";

/// The access key file a store reads, and the directory holding it.
struct KeyFile(tempfile::TempDir);

impl KeyFile {
    fn new(key: &str) -> Self {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("key"), format!("{key}\n")).unwrap();
        Self(dir)
    }
    fn path(&self) -> std::path::PathBuf {
        self.0.path().join("key")
    }
}

fn config(endpoint: &str, container: &str, prefix: &str, key: &KeyFile) -> AzureStoreConfig {
    toml::from_str(&format!(
        "account = {ACCOUNT:?}\ncontainer = {container:?}\nprefix = {prefix:?}\nendpoint = {endpoint:?}\n\
         access_key_file = {:?}\npart_size = {TEST_PART_SIZE}\ntransfer_timeout = \"60s\"\nmax_attempts = 2\n",
        key.path()
    ))
    .unwrap()
}

fn store_on(server: &AzuriteServer, prefix: &str, key: &KeyFile) -> CloudStore {
    azure::connect(&config(&server.endpoint(), CONTAINER, prefix, key), CLUSTER).unwrap()
}

/// A raw client of the container, for what the store must not do itself
/// (plant foreign blobs, look behind its back).
fn raw(server: &AzuriteServer) -> Arc<dyn object_store::ObjectStore> {
    Arc::new(
        MicrosoftAzureBuilder::new()
            .with_account(ACCOUNT)
            .with_container_name(CONTAINER)
            .with_endpoint(server.endpoint())
            .with_access_key(KEY)
            .with_allow_http(true)
            .build()
            .unwrap(),
    )
}

/// Every key under `prefix`, straight from azurite.
async fn raw_keys(server: &AzuriteServer, prefix: &str) -> Vec<String> {
    use futures_util::TryStreamExt;
    let mut keys: Vec<String> = raw(server)
        .list(Some(&Path::from(prefix)))
        .map_ok(|m| m.location.to_string())
        .try_collect()
        .await
        .unwrap();
    keys.sort();
    keys
}

/// Blobs planted behind the store's back.
struct AzureForeign(Arc<dyn object_store::ObjectStore>);

const PLANTED: [&str; 3] = [
    "eco/c/foreign/no-info.db",
    "eco/c/foreign/sp ace.db",
    "eco/c/foreign/.hidden/x.db",
];

#[async_trait::async_trait]
impl Foreign for AzureForeign {
    async fn plant(&self) -> Vec<String> {
        for key in PLANTED {
            self.0
                .put(&Path::from(key), PutPayload::from_static(b"not eco's"))
                .await
                .unwrap();
        }
        vec!["c/foreign/no-info.db".to_string()]
    }
    async fn still_there(&self) -> usize {
        let mut n = 0;
        for key in PLANTED {
            if self.0.head(&Path::from(key)).await.is_ok() {
                n += 1;
            }
        }
        n
    }
    fn planted(&self) -> usize {
        PLANTED.len()
    }
}

/// The whole contract, concurrent creates included; foreign blobs; no
/// key but committed objects, their infos and records left behind; names
/// outside the cluster refused.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_contract_holds_on_azurite() {
    let server = AzuriteServer::start();
    server.create_container(CONTAINER);
    let key = KeyFile::new(KEY);
    let store = Arc::new(store_on(&server, "eco", &key));
    let paged = Arc::new(store_on(&server, "paged", &key).with_tuning(|t| t.page_size = 3));
    assert_eq!(
        store.describe(),
        format!("azure://{ACCOUNT}/{CONTAINER}/eco/c")
    );
    let started = Instant::now();
    contract::check(store.clone(), paged.clone()).await;
    eprintln!("azurite: the contract took {:?}", started.elapsed());
    contract::check_foreign(&*store, &AzureForeign(raw(&server))).await;
    for key in raw_keys(&server, "eco/c").await {
        if key.starts_with("eco/c/foreign/") {
            continue;
        }
        let name = key.strip_prefix("eco/").unwrap();
        let object = match name.strip_prefix("c/.info/") {
            Some(rest) => format!("c/{rest}"),
            None => name.to_string(),
        };
        assert!(
            store.head(&object).await.unwrap().is_some(),
            "{key} is left behind: {object} is not an object of the store"
        );
    }
    for bad in ["other/snapshots/x.db", "x"] {
        assert!(matches!(
            store.put(bad, &mut &b"x"[..], BTreeMap::new()).await,
            Err(StoreError::BadName(..))
        ));
        assert!(matches!(
            store.create_if_absent(bad, b"x").await,
            Err(StoreError::BadName(..))
        ));
    }
    assert!(matches!(
        store.list("cx/", None).await,
        Err(StoreError::BadName(..))
    ));
}

/// azurite refuses a second `If-None-Match: *` create and lets exactly one
/// of each burst of concurrent creators win: the start check says
/// `Honoured` with ten bursts, and deletes its probes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_start_check_proves_azurites_conditional_create() {
    let server = AzuriteServer::start();
    server.create_container(CONTAINER);
    let key = KeyFile::new(KEY);
    let store = store_on(&server, "eco", &key).with_concurrent_probes(10);
    assert_eq!(
        store.check_at_start().await.unwrap(),
        ConditionalCreate::Honoured,
        "{}",
        server.log()
    );
    assert_eq!(raw_keys(&server, "eco").await, Vec::<String>::new());
}

/// A content whose info is missing, or that was replaced behind its info,
/// is not an object: not listed, headed or read, and `uncommitted` says
/// why. The sweep removes an info whose content is gone and probes, and
/// never a content.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn what_is_not_committed_is_said_and_only_infos_are_swept() {
    let server = AzuriteServer::start();
    server.create_container(CONTAINER);
    let key = KeyFile::new(KEY);
    let store = store_on(&server, "eco", &key);
    let client = raw(&server);
    let name = "c/snapshots/a.db";
    let invisible = |why: &'static str| {
        let store = &store;
        async move {
            assert_eq!(store.head(name).await.unwrap(), None, "{why}");
            assert!(
                list_all(store, "c/snapshots/").await.unwrap().is_empty(),
                "{why}"
            );
            assert!(
                matches!(store.get(name).await, Err(StoreError::NotFound(_))),
                "{why}"
            );
            let said = store.uncommitted(name).await.unwrap();
            assert!(said.is_some(), "{why}");
            said.unwrap()
        }
    };

    store
        .put(name, &mut &b"hello"[..], BTreeMap::new())
        .await
        .unwrap();
    assert_eq!(store.uncommitted(name).await.unwrap(), None);
    // Replaced behind its info (same size, another content: the ETag
    // differs).
    client
        .put(
            &Path::from("eco/c/snapshots/a.db"),
            PutPayload::from_static(b"HELLO"),
        )
        .await
        .unwrap();
    let why = invisible("replaced").await;
    assert!(why.contains("ETag"), "{why}");

    // Without its info.
    client
        .delete(&Path::from("eco/c/.info/snapshots/a.db"))
        .await
        .unwrap();
    let why = invisible("no info").await;
    assert!(why.contains("has no info object"), "{why}");

    // An info whose content is gone, and a probe: swept (at age 0); the
    // content without its info stays.
    store
        .put("c/snapshots/b.db", &mut &b"b"[..], BTreeMap::new())
        .await
        .unwrap();
    client
        .delete(&Path::from("eco/c/snapshots/b.db"))
        .await
        .unwrap();
    client
        .put(
            &Path::from("eco/c/.probe/0123"),
            PutPayload::from_static(b"p"),
        )
        .await
        .unwrap();
    assert_eq!(store.sweep_leftovers(Duration::ZERO).await.unwrap(), 2);
    assert_eq!(
        raw_keys(&server, "eco").await,
        vec!["eco/c/snapshots/a.db".to_string()],
        "only the content without its info is left"
    );
    // Nothing is a day old: the sweep at start's age removes nothing.
    client
        .put(
            &Path::from("eco/c/.probe/4567"),
            PutPayload::from_static(b"p"),
        )
        .await
        .unwrap();
    assert_eq!(
        store
            .sweep_leftovers(Duration::from_secs(24 * 3600))
            .await
            .unwrap(),
        0
    );
}

/// The start check's error when the store cannot be used: it names the
/// cause, within its bound.
async fn start_error(store: CloudStore) -> (String, Duration) {
    let started = Instant::now();
    let e = store.check_at_start().await.unwrap_err();
    (e.to_string(), started.elapsed())
}

#[tokio::test]
async fn a_missing_container_a_wrong_key_and_no_server_are_clear_errors() {
    let server = AzuriteServer::start();
    server.create_container(CONTAINER);
    let good = KeyFile::new(KEY);
    let (e, _) = start_error(
        azure::connect(
            &config(&server.endpoint(), "missing", "eco", &good),
            CLUSTER,
        )
        .unwrap(),
    )
    .await;
    assert!(
        e.contains("azure://devstoreaccount1/missing") && e.contains("ContainerNotFound"),
        "{e}"
    );
    let wrong = KeyFile::new("d3Jvbmcga2V5");
    let (e, _) = start_error(
        azure::connect(
            &config(&server.endpoint(), CONTAINER, "eco", &wrong),
            CLUSTER,
        )
        .unwrap(),
    )
    .await;
    assert!(
        e.contains("403") || e.contains("AuthorizationFailure"),
        "{e}"
    );
    let port = testkit::s3_server::free_port();
    let (e, took) = start_error(
        azure::connect(
            &config(
                &format!("http://127.0.0.1:{port}/{ACCOUNT}"),
                CONTAINER,
                "eco",
                &good,
            ),
            CLUSTER,
        )
        .unwrap(),
    )
    .await;
    assert!(e.contains("listing"), "{e}");
    assert!(took < Duration::from_secs(60), "{took:?}");
    // A key file that is not there is an error naming it, before any call.
    let gone = tempfile::tempdir().unwrap().path().join("key");
    let mut c = config(&server.endpoint(), CONTAINER, "eco", &good);
    c.access_key_file = Some(gone.clone());
    let e = azure::connect(&c, CLUSTER).err().unwrap().to_string();
    assert!(
        e.contains("snapshot.azure.access_key_file") && e.contains(&gone.display().to_string()),
        "{e}"
    );
}

/// eco end to end on azurite: the daemon runs with the Azure store (its
/// start check passes), `eco snapshot now` stores a snapshot there, `eco
/// snapshot list` lists it and `eco restore` restores it into an etcd
/// that serves the same keys.
#[test]
fn eco_snapshots_into_azurite_and_restores_from_it() {
    let server = AzuriteServer::start();
    server.create_container(CONTAINER);
    let key = KeyFile::new(KEY);
    let mut i = testkit::instance::Instance::new(testkit::eco_bin!(), "127.0.41.1");
    let endpoint = server.endpoint();
    let key_path = key.path();
    i.configure(|c| c.azure_store(&endpoint, CONTAINER, &key_path));
    testkit::store_round_trip::snapshot_list_restore(&mut i, "127.0.41.2", "azurite");
}

/// Memory stays flat: a 128 MiB put in 5 MiB parts, 2 in flight, grows
/// the process's peak resident memory by far less than the object
/// (measured in a child process running only this test, so no other
/// test's memory counts).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_128_mib_put_keeps_memory_flat() {
    const CHILD: &str = "ECO_TEST_AZURE_MEMORY_CHILD";
    if std::env::var_os(CHILD).is_none() {
        let exe = std::env::current_exe().unwrap();
        let status = tokio::process::Command::new(exe)
            .args([
                "--exact",
                "a_128_mib_put_keeps_memory_flat",
                "--nocapture",
                "--test-threads=1",
            ])
            .env(CHILD, "1")
            .kill_on_drop(true)
            .status();
        let status = tokio::time::timeout(Duration::from_secs(300), status)
            .await
            .expect("the memory test's child ends within 300 s")
            .unwrap();
        assert!(status.success(), "the memory test's child failed: {status}");
        return;
    }
    let server = AzuriteServer::start();
    server.create_container(CONTAINER);
    let key = KeyFile::new(KEY);
    let store = store_on(&server, "eco", &key);
    const SIZE: u64 = 128 * 1024 * 1024;
    let before = peak_rss_kib();
    let started = Instant::now();
    let mut content = contract::Generated::new(SIZE);
    let info = store
        .put("c/snapshots/big.db", &mut content, BTreeMap::new())
        .await
        .unwrap();
    let grown_mib = (peak_rss_kib() - before) / 1024;
    eprintln!(
        "128 MiB put to azurite in {:?}: peak RSS grew by {grown_mib} MiB",
        started.elapsed()
    );
    assert_eq!(info.size, SIZE);
    assert_eq!(info.sha256, content.sha256());
    assert_eq!(store.head("c/snapshots/big.db").await.unwrap(), Some(info));
    assert!(
        grown_mib < 48,
        "peak RSS grew by {grown_mib} MiB for a 128 MiB put"
    );
}

fn peak_rss_kib() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .unwrap()
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap()
}

/// `eco config check` names an access key file it cannot read (eco run
/// would stop at start on it).
#[test]
fn config_check_names_an_unreadable_access_key_file() {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("eco.toml");
    let missing = dir.path().join("azure-key");
    testkit::config::ConfigBuilder::new("c", "group.toml")
        .azure_store(
            "http://127.0.0.1:10000/devstoreaccount1",
            CONTAINER,
            &missing,
        )
        .write(&config)
        .unwrap();
    let (code, _, err) = testkit::process::run_eco(
        &testkit::eco_bin!(),
        &["config", "check", config.to_str().unwrap()],
    );
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("snapshot.azure.access_key_file") && err.contains("azure-key"),
        "{err}"
    );
}

/// An endpoint that accepts connections and never answers: the start
/// check fails within its bound (one attempt: the 10 s call timeout),
/// naming the call.
#[tokio::test]
async fn an_endpoint_that_never_answers_fails_within_the_timeout() {
    let silent = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = silent.local_addr().unwrap().port();
    let key = KeyFile::new(KEY);
    let mut c = config(
        &format!("http://127.0.0.1:{port}/{ACCOUNT}"),
        CONTAINER,
        "eco",
        &key,
    );
    c.max_attempts = 1;
    let (e, took) = start_error(azure::connect(&c, CLUSTER).unwrap()).await;
    assert!(e.contains("listing eco/c"), "{e}");
    assert!(took < Duration::from_secs(30), "{took:?}: {e}");
    eprintln!("{took:?}: {e}");
    drop(silent);
}

/// `eco config check --probe-store` on azurite: the start check and ten
/// bursts of concurrent creates hold (exit 0, said in the output); the
/// probe keys are gone afterwards.
#[test]
fn the_store_probe_passes_azurite() {
    let server = AzuriteServer::start();
    server.create_container(CONTAINER);
    let key = KeyFile::new(KEY);
    let mut eco = testkit::instance::Instance::new(testkit::eco_bin!(), "127.0.41.3");
    let (endpoint, key_path) = (server.endpoint(), key.path());
    eco.configure(|c| c.azure_store(&endpoint, CONTAINER, &key_path));
    let (code, out, err) = eco.eco(&[
        "config",
        "check",
        "--probe-store",
        eco.config.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{err}");
    assert!(
        out.contains(
            "# store probed: the store is reachable and writable, and its conditional create held"
        ),
        "{out}"
    );
    assert_eq!(
        testkit::etcd::rt().block_on(raw_keys(&server, "eco")),
        Vec::<String>::new()
    );
}
