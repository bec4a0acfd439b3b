//! The S3 store against real S3 implementations on loopback
//! (testkit::s3_server): the store contract on moto and on s3s-fs, the
//! start-time proof of conditional create (honoured by moto and s3s-fs,
//! ignored by s3rver), flat memory for a 256 MiB put, the sweep of
//! leftovers, and clear, bounded errors for a missing bucket, wrong
//! credentials, an unreachable and an unresponsive endpoint.
//!
//! Credentials are given to the store explicitly (tests run in parallel
//! threads of one process; the environment is not theirs to change).

use aws_sdk_s3::Client;
use aws_sdk_s3::config::{BehaviorVersion, Credentials, Region};
use aws_sdk_s3::primitives::ByteStream;
use eco::config::S3StoreConfig;
use eco::store::contract::{self, CLUSTER, Foreign, TEST_PART_SIZE};
use eco::store::s3::S3Store;
use eco::store::{ConditionalCreate, CreateOutcome, ObjectStore, StoreError, list_all};
use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use std::time::{Duration, Instant};
use testkit::s3_server::{Kind, S3Server, free_port};

const BUCKET: &str = "eco-test";

fn credentials(access: &str, secret: &str) -> Credentials {
    Credentials::new(access, secret, None, None, "eco-test")
}

/// A raw client of the server, for what the store must not do itself
/// (create buckets, plant foreign objects, look behind its back).
fn raw(server: &S3Server) -> Client {
    let config = aws_sdk_s3::Config::builder()
        .behavior_version(BehaviorVersion::latest())
        .region(Region::new("us-east-1"))
        .endpoint_url(server.endpoint())
        .force_path_style(true)
        .credentials_provider(credentials(server.access_key(), server.secret_key()))
        .build();
    Client::from_conf(config)
}

async fn create_bucket(server: &S3Server, bucket: &str) {
    raw(server)
        .create_bucket()
        .bucket(bucket)
        .send()
        .await
        .unwrap_or_else(|e| {
            panic!(
                "creating {bucket}: {}\n{}",
                aws_sdk_s3::error::DisplayErrorContext(e),
                server.log()
            )
        });
}

/// A store config for `endpoint`; `extra` adds keys.
fn config(endpoint: &str, bucket: &str, prefix: &str, extra: &str) -> S3StoreConfig {
    let text = format!(
        "bucket = {bucket:?}\nprefix = {prefix:?}\nendpoint = {endpoint:?}\nregion = \"us-east-1\"\n\
         force_path_style = true\nencryption = \"none\"\npart_size = {TEST_PART_SIZE}\n\
         transfer_timeout = \"60s\"\n{extra}\n"
    );
    toml::from_str(&text).unwrap()
}

async fn store_on(server: &S3Server, prefix: &str, extra: &str) -> S3Store {
    S3Store::connect_with(
        &config(&server.endpoint(), BUCKET, prefix, extra),
        CLUSTER,
        Some(credentials(server.access_key(), server.secret_key())),
    )
    .await
    .unwrap()
}

/// Keys under `prefix`, straight from the server.
async fn raw_keys(server: &S3Server, prefix: &str) -> Vec<String> {
    let out = raw(server)
        .list_objects_v2()
        .bucket(BUCKET)
        .prefix(prefix)
        .send()
        .await
        .unwrap();
    out.contents
        .unwrap_or_default()
        .into_iter()
        .filter_map(|o| o.key)
        .collect()
}

/// Every key under `<prefix>/c/` but the planted foreign ones is a
/// committed object of `store` (or a record, or the marker of a committed
/// object): failed puts, deletes and commits left nothing behind.
async fn assert_no_leftovers(server: &S3Server, store: &S3Store, prefix: &str) {
    for key in raw_keys(server, &format!("{prefix}/c/")).await {
        let name = key.strip_prefix(&format!("{prefix}/")).unwrap();
        if name.starts_with("c/foreign/") {
            continue;
        }
        let object = match name.strip_prefix("c/.sha256/") {
            Some(rest) => format!("c/{rest}"),
            None => name.to_string(),
        };
        assert!(
            store.head(&object).await.unwrap().is_some(),
            "{key} is left behind: {object} is not an object of the store"
        );
    }
    if let Some(uploads) = raw_uploads(server, &format!("{prefix}/")).await {
        assert_eq!(uploads, Vec::<String>::new(), "aborted or completed");
    }
}

/// Multipart uploads in progress under `prefix` (`None`: the server
/// cannot list them).
async fn raw_uploads(server: &S3Server, prefix: &str) -> Option<Vec<String>> {
    let out = raw(server)
        .list_multipart_uploads()
        .bucket(BUCKET)
        .prefix(prefix)
        .send()
        .await
        .ok()?;
    Some(
        out.uploads
            .unwrap_or_default()
            .into_iter()
            .filter_map(|u| u.key)
            .collect(),
    )
}

/// Objects planted in the bucket behind the store's back.
struct S3Foreign {
    client: Client,
}

/// (key, sha256 metadata): keys that are not names, a hidden upload, an
/// object without metadata, one with broken metadata.
const PLANTED: [(&str, Option<&str>); 5] = [
    ("eco/c/foreign/no-metadata.db", None),
    ("eco/c/foreign/bad-metadata.db", Some("not-a-sha256")),
    ("eco/c/foreign/sp ace.db", Some(ZEROS)),
    ("eco/c/foreign/.upload/0123", Some(ZEROS)),
    ("eco/c/foreign//empty-segment", Some(ZEROS)),
];
const ZEROS: &str = "0000000000000000000000000000000000000000000000000000000000000000";

#[async_trait::async_trait]
impl Foreign for S3Foreign {
    async fn plant(&self) -> Vec<String> {
        for (key, sha) in PLANTED {
            self.client
                .put_object()
                .bucket(BUCKET)
                .key(key)
                .set_metadata(sha.map(|s| HashMap::from([("sha256".to_string(), s.to_string())])))
                .body(ByteStream::from_static(b"not eco's"))
                .send()
                .await
                .unwrap();
        }
        vec!["c/foreign/no-metadata.db".to_string()]
    }

    async fn still_there(&self) -> usize {
        let mut n = 0;
        for (key, _) in PLANTED {
            if self
                .client
                .head_object()
                .bucket(BUCKET)
                .key(key)
                .send()
                .await
                .is_ok()
            {
                n += 1;
            }
        }
        n
    }

    fn planted(&self) -> usize {
        PLANTED.len()
    }
}

/// The contract on one server — all of it but the check that concurrent
/// creators of one name have exactly one winner: neither moto nor s3s-fs
/// is atomic there (both check `If-None-Match`, then write; s3s-fs lets
/// several creators of a burst win most of the time, moto now and then
/// under load), so that check can only hold against AWS S3 itself, which
/// documents it, and against the directory and memory stores. The start
/// check's concurrent probe catches such an endpoint (tests below).
/// Then what is S3's own: foreign objects, no leftovers after failed puts,
/// both commit paths (one `PutObject`; a multipart upload and its marker),
/// names outside the cluster refused.
async fn contract_on(kind: Kind) {
    let server = S3Server::start(kind);
    create_bucket(&server, BUCKET).await;
    let store = Arc::new(store_on(&server, "eco", "").await);
    let paged = Arc::new(
        store_on(&server, "paged", "")
            .await
            .with_tuning(|t| t.page_size = Some(3)),
    );
    assert_eq!(store.describe(), format!("s3://{BUCKET}/eco/c"));
    let started = Instant::now();
    contract::check_all_but_concurrent_create(store.clone(), paged.clone()).await;
    eprintln!("{kind:?}: the contract took {:?}", started.elapsed());
    // Failed puts and committed ones left nothing behind.
    assert_no_leftovers(&server, &store, "eco").await;
    assert_no_leftovers(&server, &paged, "paged").await;

    contract::check_foreign(
        &*store,
        &S3Foreign {
            client: raw(&server),
        },
    )
    .await;

    // One PutObject and a multipart upload commit the same way.
    let size = TEST_PART_SIZE * 5 / 2 + 7;
    for (name, size, marker) in [
        ("c/put/single", TEST_PART_SIZE - 1, false),
        ("c/put/multipart", size, true),
    ] {
        let mut content = contract::Generated::new(size);
        let info = store
            .put(
                name,
                &mut content,
                BTreeMap::from([("k".into(), "v".into())]),
            )
            .await
            .unwrap();
        assert_eq!(info.sha256, content.sha256());
        assert_eq!(
            store.head(name).await.unwrap(),
            Some(info.clone()),
            "{name}"
        );
        let (got, mut r) = store.get(name).await.unwrap();
        let mut bytes = Vec::new();
        tokio::io::AsyncReadExt::read_to_end(&mut r, &mut bytes)
            .await
            .unwrap();
        assert_eq!(
            (got, bytes.len() as u64),
            (info.clone(), info.size),
            "{name}"
        );
        let marker_key = format!("eco/c/.sha256/{}", name.strip_prefix("c/").unwrap());
        assert_eq!(
            raw_keys(&server, &marker_key).await.len(),
            usize::from(marker),
            "{name}: a marker only for the multipart object"
        );
        if marker && matches!(kind, Kind::Moto) {
            // Its parts went with their CRC32, which moto checks and keeps
            // (s3s-fs keeps no multipart checksum).
            let head = raw(&server)
                .head_object()
                .bucket(BUCKET)
                .key(format!("eco/{name}"))
                .checksum_mode(aws_sdk_s3::types::ChecksumMode::Enabled)
                .send()
                .await
                .unwrap();
            assert!(head.checksum_crc32.is_some(), "{kind:?}: {head:?}");
        }
    }
    assert_no_leftovers(&server, &store, "eco").await;
    a_multipart_object_is_committed_only_by_its_marker(&server, &store).await;

    // Never outside <prefix>/<cluster>/.
    for bad in ["other/snapshots/x.db", "x"] {
        assert!(matches!(
            store.put(bad, &mut &b"x"[..], BTreeMap::new()).await,
            Err(StoreError::BadName(..))
        ));
        assert!(matches!(
            store.head(bad).await,
            Err(StoreError::BadName(..))
        ));
        assert!(matches!(
            store.delete(bad).await,
            Err(StoreError::BadName(..))
        ));
        assert!(matches!(
            store.create_if_absent(bad, b"x").await,
            Err(StoreError::BadName(..))
        ));
    }
    for bad in ["", "other/", "cx/"] {
        assert!(matches!(
            store.list(bad, None).await,
            Err(StoreError::BadName(..))
        ));
    }
}

/// A multipart object of eco (`sha256-in: marker`) whose marker is
/// missing, or names another content (the object was replaced behind the
/// marker's back), is not an object of the store: not listed, not headed,
/// not read. A delete removes the marker and the object.
async fn a_multipart_object_is_committed_only_by_its_marker(server: &S3Server, store: &S3Store) {
    let client = raw(server);
    let name = "c/marked/x.db";
    let mut content = contract::Generated::new(TEST_PART_SIZE * 2);
    let info = store
        .put(name, &mut content, BTreeMap::new())
        .await
        .unwrap();
    let visible = |present: bool| async move {
        assert_eq!(store.head(name).await.unwrap().is_some(), present);
        assert_eq!(
            list_all(store, "c/marked/").await.unwrap().len(),
            usize::from(present)
        );
        match store.get(name).await {
            Ok((got, _)) => assert!(present, "read {got:?}"),
            Err(StoreError::NotFound(_)) => assert!(!present),
            Err(e) => panic!("{e}"),
        }
    };
    visible(true).await;

    // Replaced behind the marker's back, with eco's headers: another
    // content, whose ETag the marker does not name.
    raw_multipart(&client, "eco/c/marked/x.db", Some(&[7u8; 1000])).await;
    visible(false).await;

    // Put again: committed again; then without its marker: invisible; put
    // again and deleted: gone, with its marker.
    for delete_marker_only in [true, false] {
        let again = store
            .put(
                name,
                &mut contract::Generated::new(TEST_PART_SIZE * 2),
                BTreeMap::new(),
            )
            .await
            .unwrap();
        assert_eq!(again, info);
        visible(true).await;
        if delete_marker_only {
            client
                .delete_object()
                .bucket(BUCKET)
                .key("eco/c/.sha256/marked/x.db")
                .send()
                .await
                .unwrap();
        } else {
            store.delete(name).await.unwrap();
        }
        visible(false).await;
    }
    assert_eq!(
        raw_keys(server, "eco/c/marked/").await.len()
            + raw_keys(server, "eco/c/.sha256/marked/").await.len(),
        0,
        "the delete removed the object and its marker"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_contract_holds_on_moto() {
    contract_on(Kind::Moto).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_contract_holds_on_s3s_fs() {
    contract_on(Kind::S3sFs).await;
}

/// `check_at_start` on a fresh bucket of `kind`, with `bursts` concurrent
/// probes after the sequential one; the probe keys are gone afterwards.
async fn verdict_on(kind: Kind, bursts: usize) -> ConditionalCreate {
    let server = S3Server::start(kind);
    create_bucket(&server, BUCKET).await;
    let store = store_on(&server, "eco", "")
        .await
        .with_tuning(|t| t.probe_bursts = bursts);
    let verdict = store.check_at_start().await.unwrap();
    assert_eq!(
        raw_keys(&server, "eco/").await,
        Vec::<String>::new(),
        "the probes are deleted"
    );
    verdict
}

/// The sequential probe (a second create of the probe key is refused)
/// passes on moto and s3s-fs. Their concurrent creates are not atomic, so
/// the concurrent probe is left out here (it would report s3s-fs, and moto
/// now and then).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_sequential_probe_passes_on_moto_and_s3s_fs() {
    assert_eq!(verdict_on(Kind::Moto, 0).await, ConditionalCreate::Honoured);
    assert_eq!(
        verdict_on(Kind::S3sFs, 0).await,
        ConditionalCreate::Honoured
    );
}

/// s3rver overwrites on a second `If-None-Match: *` create: the sequential
/// probe reports it (with five bursts of concurrent probes after it too).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_endpoint_that_ignores_if_none_match_is_reported() {
    assert_eq!(
        verdict_on(Kind::S3rver, 5).await,
        ConditionalCreate::Ignored
    );
}

/// s3s-fs refuses a second create (the sequential probe passes) but lets
/// several concurrent creators win (4 bursts in 5 when measured): the
/// concurrent probe reports it. Ten bursts: the chance that none shows it
/// is about 0.2^10.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_endpoint_whose_conditional_create_is_not_atomic_is_reported() {
    let server = S3Server::start(Kind::S3sFs);
    create_bucket(&server, BUCKET).await;
    let store = store_on(&server, "eco", "").await;
    assert_eq!(
        store
            .create_if_absent("c/incarnations/9", b"a")
            .await
            .unwrap(),
        CreateOutcome::Created
    );
    assert_eq!(
        store
            .create_if_absent("c/incarnations/9", b"b")
            .await
            .unwrap(),
        CreateOutcome::AlreadyExists(b"a".to_vec()),
        "sequential creates are refused"
    );
    let store = store.with_tuning(|t| t.probe_bursts = 10);
    assert_eq!(
        store.check_at_start().await.unwrap(),
        ConditionalCreate::Ignored
    );
    assert_eq!(
        raw_keys(&server, "eco/c/.probe/").await,
        Vec::<String>::new()
    );
}

/// Starts a multipart upload of `key` with eco's headers of a multipart
/// object; completes it with one part of `content` when given.
async fn raw_multipart(client: &Client, key: &str, content: Option<&[u8]>) {
    let upload = client
        .create_multipart_upload()
        .bucket(BUCKET)
        .key(key)
        .metadata("sha256-in", "marker")
        .send()
        .await
        .unwrap();
    let Some(content) = content else {
        return;
    };
    let id = upload.upload_id.unwrap();
    let part = client
        .upload_part()
        .bucket(BUCKET)
        .key(key)
        .upload_id(&id)
        .part_number(1)
        .body(ByteStream::from(content.to_vec()))
        .send()
        .await
        .unwrap();
    client
        .complete_multipart_upload()
        .bucket(BUCKET)
        .key(key)
        .upload_id(&id)
        .multipart_upload(
            aws_sdk_s3::types::CompletedMultipartUpload::builder()
                .parts(
                    aws_sdk_s3::types::CompletedPart::builder()
                        .part_number(1)
                        .set_e_tag(part.e_tag)
                        .build(),
                )
                .build(),
        )
        .send()
        .await
        .unwrap();
}

/// What crashed puts leave — a probe key, an unfinished upload, a complete
/// multipart object without a marker, one whose marker names another
/// content — is swept once old enough; committed objects (one request or
/// multipart with its marker), records and foreign objects, and other
/// clusters' keys, never.
#[tokio::test]
async fn the_sweep_removes_old_leftovers_and_nothing_else() {
    let server = S3Server::start(Kind::Moto);
    create_bucket(&server, BUCKET).await;
    let store = store_on(&server, "eco", "").await;
    let client = raw(&server);
    let small = store
        .put("c/snapshots/small.db", &mut &b"x"[..], BTreeMap::new())
        .await
        .unwrap();
    let mut content = contract::Generated::new(TEST_PART_SIZE + 1);
    let multipart = store
        .put("c/snapshots/multipart.db", &mut content, BTreeMap::new())
        .await
        .unwrap();
    store
        .create_if_absent("c/incarnations/0000000001", b"{}")
        .await
        .unwrap();
    for key in [
        "eco/c/.probe/leftover",
        "eco/c/foreign/x.db",
        "eco/other/.probe/x",
        // A marker whose object is gone (a delete that stopped halfway is
        // the other order, so this one is only planted): never swept, as
        // it commits nothing.
        "eco/c/.sha256/foreign/orphan.db",
    ] {
        client
            .put_object()
            .bucket(BUCKET)
            .key(key)
            .body(ByteStream::from_static(b"x"))
            .send()
            .await
            .unwrap();
    }
    let half: Option<&[u8]> = Some(b"half of a snapshot");
    raw_multipart(&client, "eco/c/snapshots/crashed.db", half).await;
    raw_multipart(&client, "eco/c/snapshots/unfinished.db", None).await;
    raw_multipart(&client, "eco/other/snapshots/unfinished.db", None).await;
    // A committed object replaced behind its marker's back.
    raw_multipart(&client, "eco/c/snapshots/replaced.db", half).await;
    client
        .put_object()
        .bucket(BUCKET)
        .key("eco/c/.sha256/snapshots/replaced.db")
        .metadata("sha256", "0".repeat(64))
        .metadata("etag", "not-its-etag")
        .body(ByteStream::from_static(b""))
        .send()
        .await
        .unwrap();

    // Young leftovers may be puts in progress. (moto dates every multipart
    // upload 2010-11-10, so only objects show it.)
    let first = store
        .sweep_leftovers(Duration::from_secs(3600))
        .await
        .unwrap();
    assert!(first <= 1, "at most the upload moto dates in 2010: {first}");
    let young = raw_keys(&server, "eco/c/").await;
    for key in [
        "eco/c/.probe/leftover",
        "eco/c/snapshots/crashed.db",
        "eco/c/snapshots/replaced.db",
    ] {
        assert!(young.contains(&key.to_string()), "{key}: {young:?}");
    }
    assert_eq!(
        first + store.sweep_leftovers(Duration::ZERO).await.unwrap(),
        4,
        "the probe, the unfinished upload, the crashed and the replaced objects"
    );
    assert_eq!(raw_uploads(&server, "eco/c/").await, Some(vec![]));
    assert_eq!(
        raw_uploads(&server, "eco/other/").await.map(|u| u.len()),
        Some(1),
        "another cluster's upload is not this store's"
    );
    assert_eq!(
        raw_keys(&server, "eco/").await,
        [
            "eco/c/.sha256/foreign/orphan.db",
            "eco/c/.sha256/snapshots/multipart.db",
            "eco/c/foreign/x.db",
            "eco/c/incarnations/0000000001",
            "eco/c/snapshots/multipart.db",
            "eco/c/snapshots/small.db",
            "eco/other/.probe/x",
        ],
        "only this cluster's leftovers are swept"
    );
    let listed = list_all(&store, "c/snapshots/").await.unwrap();
    assert_eq!(listed, vec![multipart, small]);
}

/// Memory stays flat: a 256 MiB put holds at most `parts_in_flight + 1`
/// part buffers (counted by the store) and the process's peak resident
/// memory grows by far less than the object (measured in a child process
/// running only this test, so no other test's memory counts).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_256_mib_put_keeps_memory_flat() {
    const CHILD: &str = "ECO_TEST_S3_MEMORY_CHILD";
    if std::env::var_os(CHILD).is_none() {
        let exe = std::env::current_exe().unwrap();
        let mut child = std::process::Command::new(exe)
            .args([
                "--exact",
                "a_256_mib_put_keeps_memory_flat",
                "--nocapture",
                "--test-threads=1",
            ])
            .env(CHILD, "1")
            .spawn()
            .unwrap();
        let deadline = Instant::now() + Duration::from_secs(600);
        let status = loop {
            if let Some(status) = child.try_wait().unwrap() {
                break status;
            }
            if Instant::now() > deadline {
                let _ = child.kill();
                panic!("the memory test's child ran longer than 600 s");
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        };
        assert!(status.success(), "the memory test's child failed: {status}");
        return;
    }
    let server = S3Server::start(Kind::S3sFs);
    create_bucket(&server, BUCKET).await;
    let store = store_on(&server, "eco", "parts_in_flight = 2").await;
    const SIZE: u64 = 256 * 1024 * 1024;
    let before = peak_rss_kib();
    let started = Instant::now();
    let mut content = contract::Generated::new(SIZE);
    let info = store
        .put("c/snapshots/big.db", &mut content, BTreeMap::new())
        .await
        .unwrap();
    let took = started.elapsed();
    let grown_mib = (peak_rss_kib() - before) / 1024;
    let buffers = store.part_buffers();
    eprintln!(
        "256 MiB put in {took:?}: peak part buffers {}, peak RSS grew by {grown_mib} MiB",
        buffers.peak
    );
    assert_eq!(info.size, SIZE);
    assert_eq!(info.sha256, content.sha256());
    assert_eq!(buffers.live, 0, "every buffer is released");
    assert!(buffers.peak >= 2, "the parts overlap ({buffers:?})");
    assert!(
        buffers.peak <= 3,
        "at most parts_in_flight + 1 buffers ({buffers:?})"
    );
    assert!(
        grown_mib < 64,
        "peak RSS grew by {grown_mib} MiB for a 256 MiB put"
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

/// The error of `check_at_start`, and how long it took.
async fn start_error(config: S3StoreConfig, credentials: Credentials) -> (String, Duration) {
    let store = S3Store::connect_with(&config, CLUSTER, Some(credentials))
        .await
        .unwrap();
    let started = Instant::now();
    let err = store.check_at_start().await.unwrap_err().to_string();
    eprintln!("check_at_start failed in {:?}: {err}", started.elapsed());
    (err, started.elapsed())
}

#[tokio::test]
async fn a_missing_bucket_is_a_clear_error() {
    let server = S3Server::start(Kind::Moto);
    let creds = credentials(server.access_key(), server.secret_key());
    let (err, _) = start_error(
        config(&server.endpoint(), "no-such-bucket", "eco", ""),
        creds.clone(),
    )
    .await;
    assert!(
        err.contains("s3://no-such-bucket") && err.contains("does not exist"),
        "{err}"
    );
    // Calls other than the start check say so too.
    let store = S3Store::connect_with(
        &config(&server.endpoint(), "no-such-bucket", "eco", ""),
        CLUSTER,
        Some(creds),
    )
    .await
    .unwrap();
    let err = list_all(&store, "c/").await.unwrap_err().to_string();
    assert!(
        err.contains("s3://no-such-bucket") && err.contains("does not exist"),
        "{err}"
    );
    let err = store
        .put("c/snapshots/x", &mut &b"x"[..], BTreeMap::new())
        .await
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("s3://no-such-bucket/eco/c/snapshots/x"),
        "{err}"
    );
}

#[tokio::test]
async fn wrong_credentials_are_a_clear_error() {
    let server = S3Server::start(Kind::S3sFs);
    create_bucket(&server, BUCKET).await;
    let endpoint = server.endpoint();
    let (err, _) = start_error(
        config(&endpoint, BUCKET, "eco", ""),
        credentials("eco-test-access", "a-wrong-secret"),
    )
    .await;
    assert!(err.contains(&format!("s3://{BUCKET}")), "{err}");
    assert!(err.contains("the secret key does not match"), "{err}");
    let (err, _) = start_error(
        config(&endpoint, BUCKET, "eco", ""),
        credentials("an-unknown-access-key", "eco-test-secret"),
    )
    .await;
    assert!(
        err.contains("does not know the access key") || err.contains("access denied"),
        "{err}"
    );
}

#[tokio::test]
async fn an_unreachable_endpoint_fails_within_the_timeout() {
    let closed = format!("http://127.0.0.1:{}", free_port());
    let (err, took) = start_error(
        config(&closed, BUCKET, "eco", "max_attempts = 2\n"),
        credentials("a", "b"),
    )
    .await;
    assert!(
        err.contains("unreachable") && err.contains(&format!("s3://{BUCKET}")),
        "{err}"
    );
    assert!(took < Duration::from_secs(15), "took {took:?}");
}

#[tokio::test]
async fn an_endpoint_that_never_answers_fails_within_the_timeout() {
    // Accepts connections (the kernel's backlog) and never answers.
    let silent = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let endpoint = format!("http://{}", silent.local_addr().unwrap());
    let (err, took) = start_error(
        config(&endpoint, BUCKET, "eco", "max_attempts = 1\n"),
        credentials("a", "b"),
    )
    .await;
    assert!(err.contains("timeout"), "{err}");
    assert!(took < Duration::from_secs(15), "took {took:?}");
    drop(silent);
}

#[tokio::test]
async fn the_factory_builds_the_s3_store_of_the_config() {
    let text = "[cluster]\nname = \"main\"\n[provider]\nkind = \"static\"\n[provider.static]\ngroup_file = \"g.toml\"\n\
                [snapshot]\nstore = \"s3\"\n[snapshot.s3]\nbucket = \"eco-b\"\nprefix = \"eco/prod\"\nregion = \"eu-west-3\"\n";
    let config = eco::config::parse_str(
        text,
        std::path::Path::new("/x/eco.toml"),
        std::path::Path::new("/x"),
    )
    .unwrap();
    let store = eco::store::from_config(&config).await.unwrap().unwrap();
    assert_eq!(store.describe(), "s3://eco-b/eco/prod/main");
}

/// Every write (a put, committed by one request or by a copy, and a
/// conditional create) asks for the configured server-side encryption.
#[tokio::test]
async fn every_write_asks_for_server_side_encryption() {
    use aws_sdk_s3::types::ServerSideEncryption;
    let server = S3Server::start(Kind::Moto);
    create_bucket(&server, BUCKET).await;
    let client = raw(&server);
    for (extra, want, key_id) in [
        ("encryption = \"none\"", None, None),
        (
            "encryption = \"AES256\"",
            Some(ServerSideEncryption::Aes256),
            None,
        ),
        (
            "encryption = \"aws:kms\"\nkms_key_id = \"alias/eco-test\"",
            Some(ServerSideEncryption::AwsKms),
            Some("alias/eco-test"),
        ),
    ] {
        let prefix = format!(
            "eco-{}",
            want.as_ref()
                .map_or("none", |w| w.as_str())
                .replace(':', "-")
        );
        let mut cfg = config(&server.endpoint(), BUCKET, &prefix, "");
        let parsed: S3StoreConfig = toml::from_str(&format!("bucket = \"x\"\n{extra}")).unwrap();
        cfg.encryption = parsed.encryption;
        cfg.kms_key_id = parsed.kms_key_id;
        let store = S3Store::connect_with(
            &cfg,
            CLUSTER,
            Some(credentials(server.access_key(), server.secret_key())),
        )
        .await
        .unwrap();
        store
            .put("c/sse/small", &mut &b"x"[..], BTreeMap::new())
            .await
            .unwrap();
        store
            .put(
                "c/sse/big",
                &mut contract::Generated::new(TEST_PART_SIZE + 1),
                BTreeMap::new(),
            )
            .await
            .unwrap();
        store
            .create_if_absent("c/incarnations/1", b"r")
            .await
            .unwrap();
        for key in ["c/sse/small", "c/sse/big", "c/incarnations/1"] {
            let key = format!("{prefix}/{key}");
            let head = client
                .head_object()
                .bucket(BUCKET)
                .key(&key)
                .send()
                .await
                .unwrap();
            assert_eq!(head.server_side_encryption, want, "{key}");
            assert_eq!(head.ssekms_key_id.as_deref(), key_id, "{key}");
        }
    }
}

/// A record is never skipped: one without eco's metadata (copied in by
/// hand) is read to compute its info; one too large to be a record fails
/// the listing instead of vanishing from it.
#[tokio::test]
async fn records_are_never_skipped() {
    let server = S3Server::start(Kind::Moto);
    create_bucket(&server, BUCKET).await;
    let store = store_on(&server, "eco", "").await;
    let client = raw(&server);
    store
        .create_if_absent("c/incarnations/0000000001", b"one")
        .await
        .unwrap();
    client
        .put_object()
        .bucket(BUCKET)
        .key("eco/c/incarnations/0000000002")
        .body(ByteStream::from_static(b"two"))
        .send()
        .await
        .unwrap();
    let listed = list_all(&store, "c/incarnations/").await.unwrap();
    let names: Vec<&str> = listed.iter().map(|o| o.name.as_str()).collect();
    assert_eq!(
        names,
        ["c/incarnations/0000000001", "c/incarnations/0000000002"]
    );
    assert_eq!(listed[1].size, 3);
    let (info, mut r) = store.get("c/incarnations/0000000002").await.unwrap();
    let mut content = Vec::new();
    tokio::io::AsyncReadExt::read_to_end(&mut r, &mut content)
        .await
        .unwrap();
    assert_eq!((info, content), (listed[1].clone(), b"two".to_vec()));
    assert_eq!(
        store
            .create_if_absent("c/incarnations/0000000002", b"2")
            .await
            .unwrap(),
        CreateOutcome::AlreadyExists(b"two".to_vec())
    );
    client
        .put_object()
        .bucket(BUCKET)
        .key("eco/c/incarnations/0000000003")
        .body(ByteStream::from(vec![b'x'; 2 << 20]))
        .send()
        .await
        .unwrap();
    let err = list_all(&store, "c/incarnations/")
        .await
        .unwrap_err()
        .to_string();
    assert!(err.contains("c/incarnations/0000000003"), "{err}");
}

/// The daemon on an endpoint that ignores `If-None-Match` (s3rver): etcd
/// runs and snapshots are written, but quorum-loss recovery is refused
/// with a clear error in the log and in `/status` — never a silent
/// fallback.
#[test]
fn eco_refuses_quorum_loss_recovery_on_an_endpoint_that_overwrites() {
    let server = S3Server::start(Kind::S3rver);
    testkit::etcd::rt().block_on(create_bucket(&server, BUCKET));
    let mut eco = testkit::instance::Instance::new(testkit::eco_bin!(), "127.0.31.1");
    let endpoint = server.endpoint();
    eco.configure(|c| c.s3_store(&endpoint, BUCKET));
    eco.env = vec![
        ("AWS_ACCESS_KEY_ID".into(), server.access_key().into()),
        ("AWS_SECRET_ACCESS_KEY".into(), server.secret_key().into()),
        ("AWS_REGION".into(), "us-east-1".into()),
        ("AWS_EC2_METADATA_DISABLED".into(), "true".into()),
    ];
    eco.start();
    let status = testkit::wait_until(Duration::from_secs(30), || {
        let (code, out, _) = eco.eco(&[
            "status",
            "--json",
            "--config",
            eco.config.to_str()?,
            "--instance-id",
            "eco-1",
        ]);
        let s: serde_json::Value = serde_json::from_str(&out).ok()?;
        (code == 0 && s["ready"] == true).then_some(s)
    })
    .unwrap_or_else(|| panic!("eco is ready on the store; log:\n{}", eco.log()));
    let problem = status["store_problem"].as_str().unwrap_or_default();
    assert!(
        problem.contains("conditional creates") && problem.contains("quorum-loss recovery is off"),
        "{status}"
    );
    assert!(
        eco.log().contains("quorum-loss recovery is OFF"),
        "{}",
        eco.log()
    );
}

/// `HeadObject` requests for keys under `prefix` in the server's request
/// log (moto logs each request it serves).
fn heads_logged(server: &S3Server, key_prefix: &str) -> usize {
    let path = format!("\"HEAD /{BUCKET}/{key_prefix}");
    server.log().lines().filter(|l| l.contains(&path)).count()
}

/// Junk beside the snapshots (10,000 keys made a listing take 75 s, one
/// `HeadObject` each): a snapshot listing reads the info of snapshot names
/// only, whatever else is under the prefix, and a snapshot whose metadata
/// names another cluster is reported, not listed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn junk_beside_the_snapshots_costs_no_head_requests() {
    let server = S3Server::start(Kind::Moto);
    create_bucket(&server, BUCKET).await;
    let store = store_on(&server, "eco", "").await.with_tuning(|t| {
        t.page_size = Some(100);
    });
    let client = raw(&server);
    let own = |incarnation: u64, token: &str| {
        BTreeMap::from([
            ("cluster".to_string(), CLUSTER.to_string()),
            ("incarnation".to_string(), incarnation.to_string()),
            ("token".to_string(), token.to_string()),
        ])
    };
    let snapshot = |incarnation: u64, revision: u64, token: &str| {
        format!("{CLUSTER}/snapshots/i{incarnation:010}-r{revision:020}-{token}.db")
    };
    let names = [snapshot(1, 5, "c-1-aa"), snapshot(1, 9, "c-1-aa")];
    for name in &names {
        store
            .put(name, &mut &b"db"[..], own(1, "c-1-aa"))
            .await
            .unwrap();
    }
    // Another cluster's snapshot, renamed into this one's folder.
    let foreign = snapshot(3, 1, "c-3-bb");
    store
        .put(&foreign, &mut &b"db"[..], {
            let mut m = own(7, "prod-7-ff");
            m.insert("cluster".into(), "prod".into());
            m
        })
        .await
        .unwrap();
    let junk = 500;
    let mut planted = tokio::task::JoinSet::new();
    for i in 0..junk {
        let client = client.clone();
        planted.spawn(async move {
            client
                .put_object()
                .bucket(BUCKET)
                .key(format!("eco/{CLUSTER}/snapshots/junk-{i:05}.bin"))
                .body(ByteStream::from_static(b"junk"))
                .send()
                .await
                .unwrap();
        });
        while planted.len() >= 16 {
            planted.join_next().await.unwrap().unwrap();
        }
    }
    while let Some(done) = planted.join_next().await {
        done.unwrap();
    }
    let key_prefix = format!("eco/{CLUSTER}/snapshots/");
    let before = heads_logged(&server, &key_prefix);
    let listing = eco::snapshot::listing::list(&store, CLUSTER).await.unwrap();
    let listed: Vec<&str> = listing.snapshots.iter().map(|o| o.name.as_str()).collect();
    assert_eq!(listed, names.iter().map(String::as_str).collect::<Vec<_>>());
    assert_eq!(listing.foreign.len(), 1, "{:?}", listing.foreign);
    assert_eq!(listing.foreign[0].name, foreign);
    assert!(
        listing.foreign[0].why.contains("prod"),
        "{:?}",
        listing.foreign
    );
    let heads = heads_logged(&server, &key_prefix) - before;
    assert_eq!(
        heads, 3,
        "one HeadObject per snapshot name, none for {junk} junk keys"
    );
    // Every object is still listed by a plain listing (nothing is lost).
    assert_eq!(
        list_all(&store, &format!("{CLUSTER}/snapshots/"))
            .await
            .unwrap()
            .len(),
        3,
        "junk has no eco metadata: not an object of the store"
    );
}

/// A pause object put in the bucket by another tool (no eco metadata) is
/// not an object of the store, and reading it says so instead of finding
/// nothing; `eco resume`'s clear removes it. One too large is refused
/// unread.
#[tokio::test]
async fn a_pause_object_eco_did_not_commit_is_said_and_removed() {
    let server = S3Server::start(Kind::Moto);
    create_bucket(&server, BUCKET).await;
    let store = store_on(&server, "eco", "").await;
    let name = eco::store::pause::object_name(CLUSTER);
    raw(&server)
        .put_object()
        .bucket(BUCKET)
        .key(format!("eco/{name}"))
        .body(ByteStream::from_static(
            br#"{"by":"ann","at_unix_ms":1,"reason":"aws s3 cp"}"#,
        ))
        .send()
        .await
        .unwrap();
    let e = eco::store::pause::read(&store, CLUSTER).await.unwrap_err();
    assert!(
        matches!(e, eco::store::pause::PauseError::Uncommitted { .. }),
        "{e}"
    );
    assert!(e.to_string().contains(&name), "{e}");
    assert!(matches!(
        eco::store::pause::clear(&store, CLUSTER).await.unwrap(),
        eco::store::pause::Cleared::Removed(_)
    ));
    assert!(
        raw_keys(&server, "eco/")
            .await
            .iter()
            .all(|k| !k.ends_with("pause.json"))
    );
    // Committed by eco but too large: refused unread, naming it.
    let mut big = vec![b' '; 1 << 20];
    big[..2].copy_from_slice(b"{}");
    store
        .put(&name, &mut &big[..], BTreeMap::new())
        .await
        .unwrap();
    let e = eco::store::pause::read(&store, CLUSTER)
        .await
        .unwrap_err()
        .to_string();
    assert!(e.contains(&name) && e.contains("more than"), "{e}");
}

/// `eco config check --probe-store FILE` on a store, with the server's
/// credentials: (exit code, stdout, stderr).
fn probe_store(
    server: Option<&S3Server>,
    configure: impl FnOnce(testkit::config::ConfigBuilder) -> testkit::config::ConfigBuilder,
) -> (i32, String, String) {
    let mut eco = testkit::instance::Instance::new(testkit::eco_bin!(), "127.0.31.2");
    eco.configure(configure);
    let mut command = std::process::Command::new(testkit::eco_bin!());
    command
        .args(["config", "check", "--probe-store"])
        .arg(&eco.config);
    if let Some(server) = server {
        command.envs([
            ("AWS_ACCESS_KEY_ID", server.access_key()),
            ("AWS_SECRET_ACCESS_KEY", server.secret_key()),
            ("AWS_REGION", "us-east-1"),
            ("AWS_EC2_METADATA_DISABLED", "true"),
        ]);
    }
    let out = command.output().expect("eco config check");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// The store probe a user runs before trusting an S3-compatible endpoint
/// (the config key `concurrent_create_probes` it replaces is refused with
/// a pointer to it), through the command: s3rver overwrites on a second
/// create, and the probe reports it (exit 2, the reason named; the
/// concurrent bursts' own catch of s3s-fs is
/// `an_endpoint_whose_conditional_create_is_not_atomic_is_reported`, at
/// the store's level, since whether a burst shows a race depends on the
/// machine's load); a directory store passes (exit 0, said in the
/// output); the probe keys are gone afterwards.
#[test]
fn the_store_probe_reports_an_endpoint_that_overwrites_and_passes_a_directory() {
    let server = S3Server::start(Kind::S3rver);
    testkit::etcd::rt().block_on(create_bucket(&server, BUCKET));
    let endpoint = server.endpoint();
    let (code, _, err) = probe_store(Some(&server), |c| c.s3_store(&endpoint, BUCKET));
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("conditional create does not hold") && err.contains("no quorum-loss recovery"),
        "{err}"
    );
    assert_eq!(
        testkit::etcd::rt().block_on(raw_keys(&server, "eco/")),
        Vec::<String>::new(),
        "the probe keys are deleted"
    );

    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().to_path_buf();
    let (code, out, err) = probe_store(None, |c| c.dir_store(store));
    assert_eq!(code, 0, "{err}");
    assert!(
        out.contains("# store probed: the store is reachable and writable"),
        "{out}"
    );

    let (code, _, err) = probe_store(None, |c| c);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("no snapshot store is configured"), "{err}");
}
