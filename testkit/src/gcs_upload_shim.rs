//! **A test-only translation shim** in front of fake-gcs-server
//! ([`crate::gcs_server`]): an HTTP/1.1 server on a free port of 127.0.0.1
//! that turns the Google Cloud Storage *XML API* uploads `object_store`'s
//! GCS client sends into fake-gcs-server *JSON API* uploads, and forwards
//! every other request to fake-gcs-server unchanged.
//!
//! Why it exists: fake-gcs-server, the real emulator eco's GCS tests run
//! against, does not implement the XML API uploads `object_store` writes
//! with (a `PUT /<bucket>/<key>` and the XML multipart upload are refused
//! with 400 "invalid uploadType"). Its JSON API uploads work, and its
//! `uploadType=multipart` upload enforces the generation precondition
//! (`ifGenerationMatch=0`: 412 when the object exists, checked under the
//! backend's lock). (Its `uploadType=media` upload ignores preconditions,
//! so the shim does not use it.) With the shim, what the GCS store's tests
//! exercise is eco's store against fake-gcs-server's storage and its
//! precondition logic, through `object_store`'s real GCS client; the shim
//! decides no precondition itself. Nothing here talks to Google: every
//! connection is to 127.0.0.1.
//!
//! What it translates (the request shapes of `object_store` 0.14.2,
//! `src/gcp/client.rs`):
//! - `PUT /<bucket>/<key>` (an object; `x-goog-if-generation-match: N` for
//!   a conditional create or update) → `POST
//!   /upload/storage/v1/b/<bucket>/o?uploadType=multipart&name=<key>[&ifGenerationMatch=N]`,
//!   the body streamed through; answered with the `ETag` (quoted, as
//!   fake-gcs-server's reads send it) and `x-goog-generation` headers
//!   `object_store` reads, and a 412 passed back as a 412 (which it turns
//!   into `AlreadyExists` for `PutMode::Create`);
//! - the XML multipart upload: `POST …?uploads` answers an
//!   `InitiateMultipartUploadResult` with a fresh `UploadId`; `PUT
//!   …?partNumber=N&uploadId=U` streams the part into a file of a
//!   temporary directory (never whole in memory) and answers its `ETag`;
//!   `POST …?uploadId=U` with a `CompleteMultipartUpload` body checks the
//!   listed parts (numbers and ETags), uploads their concatenation as one
//!   upload (streamed from the files), answers a
//!   `CompleteMultipartUploadResult` with the object's ETag and its
//!   generation, and removes the parts; `DELETE …?uploadId=U` removes them.
//!
//! Everything else (reads, heads, listings, deletes, the JSON API) is
//! forwarded as it came, bodies streamed both ways.
//!
//! Lifetime: it runs on its own thread with its own Tokio runtime (so it
//! serves sync and async tests alike); dropping it stops accepting, drops
//! every task of that runtime (bounded by [`SHUTDOWN_LIMIT`]), joins the
//! thread and removes the parts directory. Each call to fake-gcs-server
//! waits at most [`UPSTREAM_LIMIT`] for its answer's head.

use bytes::Bytes;
use futures_util::StreamExt;
use http_body_util::combinators::UnsyncBoxBody;
use http_body_util::{BodyExt, Full, StreamBody};
use hyper::body::{Frame, Incoming};
use hyper::header::{self, HeaderMap, HeaderValue};
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use sha2::{Digest, Sha256};
use std::collections::{BTreeMap, HashMap};
use std::convert::Infallible;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// How long stopping the shim's runtime may take.
pub const SHUTDOWN_LIMIT: Duration = Duration::from_secs(5);
/// How long a call to fake-gcs-server may take to connect and answer its
/// head (a streamed body then takes as long as it takes).
pub const UPSTREAM_LIMIT: Duration = Duration::from_secs(60);
/// The largest `CompleteMultipartUpload` body read.
const MAX_COMPLETE_BODY: usize = 1 << 20;

type Body = UnsyncBoxBody<Bytes, BoxError>;
type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// The shim, running until dropped.
pub struct GcsUploadShim {
    addr: SocketAddr,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
    state: Arc<State>,
}

/// One multipart upload in progress.
struct Upload {
    bucket: String,
    key: String,
    content_type: Option<String>,
    dir: PathBuf,
    /// Part number → its ETag (the part is `dir/<number>`).
    parts: BTreeMap<u32, String>,
}

struct State {
    /// `127.0.0.1:<port>` of fake-gcs-server.
    upstream: SocketAddr,
    /// Where the parts are kept.
    parts: tempfile::TempDir,
    uploads: Mutex<HashMap<String, Upload>>,
    counter: AtomicU64,
}

impl GcsUploadShim {
    /// Starts the shim in front of fake-gcs-server at `upstream`
    /// (`http://127.0.0.1:<port>`); panics when it cannot listen.
    pub fn start(upstream: &str) -> Self {
        let upstream: SocketAddr = upstream
            .strip_prefix("http://")
            .and_then(|a| a.trim_end_matches('/').parse().ok())
            .unwrap_or_else(|| panic!("the shim's upstream is http://<ip>:<port>, not {upstream}"));
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("a loopback port");
        listener
            .set_nonblocking(true)
            .expect("a non-blocking listener");
        let addr = listener.local_addr().expect("the shim's address");
        let state = Arc::new(State {
            upstream,
            parts: tempfile::tempdir().expect("a directory for the parts"),
            uploads: Mutex::new(HashMap::new()),
            counter: AtomicU64::new(0),
        });
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let served = state.clone();
        let thread = std::thread::Builder::new()
            .name("gcs-upload-shim".into())
            .spawn(move || {
                let runtime = tokio::runtime::Builder::new_multi_thread()
                    .worker_threads(2)
                    .enable_all()
                    .build()
                    .expect("the shim's runtime");
                runtime.block_on(serve(listener, served, stopped));
                runtime.shutdown_timeout(SHUTDOWN_LIMIT);
            })
            .expect("the shim's thread");
        Self {
            addr,
            stop: Some(stop),
            thread: Some(thread),
            state,
        }
    }

    /// `http://127.0.0.1:<port>`: the endpoint to give the store.
    pub fn endpoint(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// Multipart uploads started and neither completed nor aborted.
    pub fn uploads_in_progress(&self) -> usize {
        lock(&self.state.uploads).len()
    }

    /// Part files on disk (of uploads in progress).
    pub fn part_files(&self) -> usize {
        crate::files_under(self.state.parts.path()).len()
    }
}

impl Drop for GcsUploadShim {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

async fn serve(
    listener: std::net::TcpListener,
    state: Arc<State>,
    mut stopped: tokio::sync::oneshot::Receiver<()>,
) {
    let listener = match tokio::net::TcpListener::from_std(listener) {
        Ok(l) => l,
        Err(e) => {
            eprintln!("gcs upload shim: cannot listen: {e}");
            return;
        }
    };
    loop {
        let stream = tokio::select! {
            _ = &mut stopped => return,
            accepted = listener.accept() => match accepted {
                Ok((stream, _)) => stream,
                Err(_) => continue,
            },
        };
        let state = state.clone();
        tokio::spawn(async move {
            let service = hyper::service::service_fn(move |req| {
                let state = state.clone();
                async move { Ok::<_, Infallible>(handle(&state, req).await) }
            });
            let _ = hyper::server::conn::http1::Builder::new()
                .serve_connection(TokioIo::new(stream), service)
                .await;
        });
    }
}

/// The request, split as the XML API names it.
struct Target {
    bucket: String,
    key: String,
    query: HashMap<String, String>,
}

/// First path segments that are fake-gcs-server's own APIs, never a bucket.
const NOT_BUCKETS: [&str; 5] = ["storage", "upload", "download", "batch", "_internal"];

fn target_of(req: &Request<Incoming>) -> Option<Target> {
    let path = req.uri().path().strip_prefix('/')?;
    let (bucket, key) = path.split_once('/')?;
    if bucket.is_empty() || key.is_empty() || NOT_BUCKETS.contains(&bucket) {
        return None;
    }
    let query = req
        .uri()
        .query()
        .unwrap_or("")
        .split('&')
        .filter(|p| !p.is_empty())
        .map(|p| {
            let (k, v) = p.split_once('=').unwrap_or((p, ""));
            (decode(k), decode(v))
        })
        .collect();
    Some(Target {
        bucket: decode(bucket),
        key: decode(key),
        query,
    })
}

async fn handle(state: &State, req: Request<Incoming>) -> Response<Body> {
    let target = target_of(&req).filter(|_| !req.headers().contains_key("x-goog-copy-source"));
    let Some(t) = target else {
        return forward(state, req).await;
    };
    let q = |k: &str| t.query.get(k).cloned();
    let signed = t.query.contains_key("X-Goog-Algorithm");
    match (req.method().clone(), q("uploadId"), q("partNumber")) {
        (Method::PUT, Some(id), Some(n)) => put_part(state, &t, &id, &n, req).await,
        (Method::PUT, None, None) if !signed => put_object(state, &t, req).await,
        (Method::POST, None, None) if t.query.contains_key("uploads") => {
            initiate(state, &t, req).await
        }
        (Method::POST, Some(id), None) => complete(state, &t, &id, req).await,
        (Method::DELETE, Some(id), None) => abort(state, &t, &id),
        _ => forward(state, req).await,
    }
}

// ---- the single-object upload ----

async fn put_object(state: &State, t: &Target, req: Request<Incoming>) -> Response<Body> {
    let condition = match req.headers().get("x-goog-if-generation-match") {
        Some(v) => match v.to_str().ok().filter(|v| v.parse::<i64>().is_ok()) {
            Some(v) => Some(v.to_string()),
            None => {
                return xml_error(
                    StatusCode::BAD_REQUEST,
                    "InvalidArgument",
                    "bad x-goog-if-generation-match",
                );
            }
        },
        None => None,
    };
    let content_type = content_type_of(req.headers());
    let content = req
        .into_body()
        .into_data_stream()
        .map(|r| r.map_err(BoxError::from))
        .boxed();
    match json_upload(state, t, content_type, condition.as_deref(), content).await {
        Ok(Uploaded::Done { etag, generation }) => {
            let mut r = empty(StatusCode::OK);
            set(r.headers_mut(), "etag", &format!("\"{etag}\""));
            set(r.headers_mut(), "x-goog-generation", &generation);
            r
        }
        Ok(Uploaded::Refused(r)) => r,
        Err(e) => upstream_error(&e),
    }
}

// ---- the multipart upload ----

async fn initiate(state: &State, t: &Target, req: Request<Incoming>) -> Response<Body> {
    // As GCS does: no upload into a bucket that is not there.
    match bucket_exists(state, &t.bucket).await {
        Ok(true) => {}
        Ok(false) => return xml_error(StatusCode::NOT_FOUND, "NoSuchBucket", &t.bucket),
        Err(e) => return upstream_error(&e),
    }
    let n = state.counter.fetch_add(1, Ordering::Relaxed);
    let seed = format!("{n} {} {:?}", t.key, std::time::SystemTime::now());
    let id = format!("{n}-{}", &hex(&Sha256::digest(seed.as_bytes()))[..24]);
    let dir = state.parts.path().join(&id);
    if let Err(e) = tokio::fs::create_dir_all(&dir).await {
        return xml_error(
            StatusCode::INTERNAL_SERVER_ERROR,
            "InternalError",
            &e.to_string(),
        );
    }
    lock(&state.uploads).insert(
        id.clone(),
        Upload {
            bucket: t.bucket.clone(),
            key: t.key.clone(),
            content_type: content_type_of(req.headers()),
            dir,
            parts: BTreeMap::new(),
        },
    );
    xml(
        StatusCode::OK,
        format!(
            "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<InitiateMultipartUploadResult><Bucket>{}</Bucket><Key>{}</Key><UploadId>{id}</UploadId></InitiateMultipartUploadResult>",
            escape(&t.bucket),
            escape(&t.key)
        ),
    )
}

/// The directory of upload `id` of `t`, if it is one.
fn upload_dir(state: &State, t: &Target, id: &str) -> Option<PathBuf> {
    let uploads = lock(&state.uploads);
    let u = uploads.get(id)?;
    (u.bucket == t.bucket && u.key == t.key).then(|| u.dir.clone())
}

async fn put_part(
    state: &State,
    t: &Target,
    id: &str,
    number: &str,
    req: Request<Incoming>,
) -> Response<Body> {
    let Some(number) = number
        .parse::<u32>()
        .ok()
        .filter(|n| (1..=10_000).contains(n))
    else {
        return xml_error(StatusCode::BAD_REQUEST, "InvalidArgument", "partNumber");
    };
    let Some(dir) = upload_dir(state, t, id) else {
        return xml_error(StatusCode::NOT_FOUND, "NoSuchUpload", id);
    };
    // Streamed into a temporary file, renamed into place when whole (a
    // retried part replaces the earlier one).
    let partial = dir.join(format!("{number}.partial"));
    let written: Result<String, String> = async {
        let mut file = tokio::fs::File::create(&partial)
            .await
            .map_err(|e| e.to_string())?;
        let mut hasher = Sha256::new();
        let mut body = req.into_body();
        while let Some(frame) = body.frame().await {
            let frame = frame.map_err(|e| e.to_string())?;
            if let Ok(data) = frame.into_data() {
                hasher.update(&data);
                file.write_all(&data).await.map_err(|e| e.to_string())?;
            }
        }
        file.flush().await.map_err(|e| e.to_string())?;
        drop(file);
        tokio::fs::rename(&partial, dir.join(number.to_string()))
            .await
            .map_err(|e| e.to_string())?;
        Ok(hex(&hasher.finalize()))
    }
    .await;
    let etag = match written {
        Ok(etag) => etag,
        Err(e) => {
            let _ = tokio::fs::remove_file(&partial).await;
            return xml_error(StatusCode::INTERNAL_SERVER_ERROR, "InternalError", &e);
        }
    };
    match lock(&state.uploads).get_mut(id) {
        Some(u) => u.parts.insert(number, etag.clone()),
        // Aborted meanwhile (its directory is gone with it).
        None => return xml_error(StatusCode::NOT_FOUND, "NoSuchUpload", id),
    };
    let mut r = empty(StatusCode::OK);
    set(r.headers_mut(), "etag", &format!("\"{etag}\""));
    r
}

async fn complete(state: &State, t: &Target, id: &str, req: Request<Incoming>) -> Response<Body> {
    let body = match http_body_util::Limited::new(req.into_body(), MAX_COMPLETE_BODY)
        .collect()
        .await
    {
        Ok(b) => b.to_bytes(),
        Err(e) => return xml_error(StatusCode::BAD_REQUEST, "InvalidArgument", &e.to_string()),
    };
    let listed = match parse_complete(&String::from_utf8_lossy(&body)) {
        Ok(l) => l,
        Err(e) => return xml_error(StatusCode::BAD_REQUEST, "MalformedXML", &e),
    };
    let (dir, content_type, files) = {
        let uploads = lock(&state.uploads);
        let Some(u) = uploads
            .get(id)
            .filter(|u| u.bucket == t.bucket && u.key == t.key)
        else {
            return xml_error(StatusCode::NOT_FOUND, "NoSuchUpload", id);
        };
        let mut files = Vec::new();
        let mut previous = 0;
        for (number, etag) in &listed {
            let bare = etag.trim_matches('"');
            if *number <= previous {
                return xml_error(
                    StatusCode::BAD_REQUEST,
                    "InvalidPartOrder",
                    &number.to_string(),
                );
            }
            previous = *number;
            match u.parts.get(number) {
                Some(have) if have == bare => files.push(u.dir.join(number.to_string())),
                _ => return xml_error(StatusCode::BAD_REQUEST, "InvalidPart", &number.to_string()),
            }
        }
        if files.is_empty() {
            return xml_error(StatusCode::BAD_REQUEST, "MalformedXML", "no parts");
        }
        (u.dir.clone(), u.content_type.clone(), files)
    };
    let content = concatenation(files);
    match json_upload(state, t, content_type, None, content).await {
        Ok(Uploaded::Done { etag, generation }) => {
            lock(&state.uploads).remove(id);
            let _ = tokio::fs::remove_dir_all(&dir).await;
            let mut r = xml(
                StatusCode::OK,
                format!(
                    "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<CompleteMultipartUploadResult><Location>http://{}/{}/{}</Location><Bucket>{}</Bucket><Key>{}</Key><ETag>\"{}\"</ETag></CompleteMultipartUploadResult>",
                    state.upstream,
                    escape(&t.bucket),
                    escape(&t.key),
                    escape(&t.bucket),
                    escape(&t.key),
                    escape(&etag)
                ),
            );
            set(r.headers_mut(), "x-goog-generation", &generation);
            r
        }
        // The parts stay: the upload may be completed again or aborted.
        Ok(Uploaded::Refused(r)) => r,
        Err(e) => upstream_error(&e),
    }
}

fn abort(state: &State, t: &Target, id: &str) -> Response<Body> {
    let removed = {
        let mut uploads = lock(&state.uploads);
        match uploads.get(id) {
            Some(u) if u.bucket == t.bucket && u.key == t.key => uploads.remove(id),
            _ => None,
        }
    };
    match removed {
        Some(u) => {
            let _ = std::fs::remove_dir_all(&u.dir);
            empty(StatusCode::NO_CONTENT)
        }
        None => xml_error(StatusCode::NOT_FOUND, "NoSuchUpload", id),
    }
}

/// `(part number, ETag)` of each `<Part>` of a `CompleteMultipartUpload`.
fn parse_complete(xml: &str) -> Result<Vec<(u32, String)>, String> {
    let field = |part: &str, name: &str| -> Option<String> {
        let open = format!("<{name}>");
        let start = part.find(&open)? + open.len();
        let end = part[start..].find(&format!("</{name}>"))? + start;
        Some(unescape(part[start..end].trim()))
    };
    let mut parts = Vec::new();
    let mut rest = xml;
    while let Some(start) = rest.find("<Part>") {
        let end = rest[start..]
            .find("</Part>")
            .ok_or("a <Part> is not closed")?
            + start;
        let part = &rest[start..end];
        let number = field(part, "PartNumber")
            .and_then(|n| n.parse().ok())
            .ok_or("a <Part> without a <PartNumber>")?;
        let etag = field(part, "ETag").ok_or("a <Part> without an <ETag>")?;
        parts.push((number, etag));
        rest = &rest[end..];
    }
    Ok(parts)
}

/// The part files, read one after the other in 64 KiB chunks.
fn concatenation(
    files: Vec<PathBuf>,
) -> futures_util::stream::BoxStream<'static, Result<Bytes, BoxError>> {
    futures_util::stream::iter(files)
        .then(|path| async move {
            match tokio::fs::File::open(&path).await {
                Ok(file) => futures_util::stream::unfold(Some(file), |file| async move {
                    let mut file = file?;
                    let mut buf = vec![0u8; 64 * 1024];
                    match file.read(&mut buf).await {
                        Ok(0) => None,
                        Ok(n) => {
                            buf.truncate(n);
                            Some((Ok(Bytes::from(buf)), Some(file)))
                        }
                        Err(e) => Some((Err(BoxError::from(e)), None)),
                    }
                })
                .boxed(),
                Err(e) => futures_util::stream::once(async move { Err(BoxError::from(e)) }).boxed(),
            }
        })
        .flatten()
        .boxed()
}

// ---- calls to fake-gcs-server ----

enum Uploaded {
    Done {
        etag: String,
        generation: String,
    },
    /// fake-gcs-server's refusal (a 412 among them), to pass back.
    Refused(Response<Body>),
}

/// One JSON API `uploadType=multipart` upload of `content` as `t.key`
/// (the upload type of fake-gcs-server that checks `ifGenerationMatch`).
async fn json_upload(
    state: &State,
    t: &Target,
    content_type: Option<String>,
    if_generation_match: Option<&str>,
    content: futures_util::stream::BoxStream<'static, Result<Bytes, BoxError>>,
) -> Result<Uploaded, String> {
    let n = state.counter.fetch_add(1, Ordering::Relaxed);
    let boundary = format!(
        "shim-{}",
        hex(&Sha256::digest(
            format!("{n} {:?} {}", std::time::SystemTime::now(), t.key).as_bytes()
        ))
    );
    let metadata = serde_json::json!({
        "name": t.key,
        "contentType": content_type.as_deref().unwrap_or("application/octet-stream"),
    });
    let head = format!(
        "--{boundary}\r\nContent-Type: application/json; charset=UTF-8\r\n\r\n{metadata}\r\n--{boundary}\r\nContent-Type: {}\r\n\r\n",
        content_type
            .as_deref()
            .unwrap_or("application/octet-stream")
    );
    let tail = format!("\r\n--{boundary}--\r\n");
    let body = futures_util::stream::once(async move { Ok(Bytes::from(head)) })
        .chain(content)
        .chain(futures_util::stream::once(
            async move { Ok(Bytes::from(tail)) },
        ))
        .map(|r| r.map(Frame::data));
    let mut uri = format!(
        "/upload/storage/v1/b/{}/o?uploadType=multipart&name={}",
        encode(&t.bucket),
        encode(&t.key)
    );
    if let Some(g) = if_generation_match {
        uri.push_str(&format!("&ifGenerationMatch={g}"));
    }
    let req = Request::post(uri)
        .header(header::HOST, state.upstream.to_string())
        .header(
            header::CONTENT_TYPE,
            format!("multipart/related; boundary={boundary}"),
        )
        .body(UnsyncBoxBody::new(StreamBody::new(body)))
        .map_err(|e| e.to_string())?;
    let response = call(state.upstream, req).await?;
    let status = response.status();
    if !status.is_success() {
        let text = read_text(response).await;
        let (code, status) = match status {
            StatusCode::PRECONDITION_FAILED => ("PreconditionFailed", status),
            StatusCode::NOT_FOUND => ("NoSuchBucket", status),
            _ => ("InternalError", status),
        };
        return Ok(Uploaded::Refused(xml_error(
            status,
            code,
            &format!("fake-gcs-server: {text}"),
        )));
    }
    let text = read_text(response).await;
    let object: serde_json::Value = serde_json::from_str(&text)
        .map_err(|e| format!("fake-gcs-server's upload answer does not parse ({e}): {text}"))?;
    let field = |name: &str| {
        object
            .get(name)
            .and_then(|v| v.as_str())
            .map(str::to_string)
    };
    match (field("etag"), field("generation")) {
        (Some(etag), Some(generation)) => Ok(Uploaded::Done { etag, generation }),
        _ => Err(format!(
            "fake-gcs-server's upload answer lacks etag or generation: {text}"
        )),
    }
}

async fn bucket_exists(state: &State, bucket: &str) -> Result<bool, String> {
    let req = Request::get(format!("/storage/v1/b/{}", encode(bucket)))
        .header(header::HOST, state.upstream.to_string())
        .body(empty_body())
        .map_err(|e| e.to_string())?;
    let response = call(state.upstream, req).await?;
    let status = response.status();
    let _ = read_text(response).await;
    match status {
        StatusCode::OK => Ok(true),
        StatusCode::NOT_FOUND => Ok(false),
        other => Err(format!(
            "fake-gcs-server answers {other} on the bucket {bucket}"
        )),
    }
}

/// Forwards `req` as it came; streams the answer back.
async fn forward(state: &State, req: Request<Incoming>) -> Response<Body> {
    let (mut parts, body) = req.into_parts();
    strip_hop_by_hop(&mut parts.headers);
    parts.uri = match parts.uri.path_and_query() {
        Some(pq) => pq.as_str().parse().unwrap_or_default(),
        None => "/".parse().unwrap_or_default(),
    };
    if let Ok(host) = HeaderValue::from_str(&state.upstream.to_string()) {
        parts.headers.insert(header::HOST, host);
    }
    let req = Request::from_parts(parts, body.map_err(BoxError::from).boxed_unsync());
    match call(state.upstream, req).await {
        Ok(response) => {
            let (mut parts, body) = response.into_parts();
            strip_hop_by_hop(&mut parts.headers);
            Response::from_parts(parts, body.map_err(BoxError::from).boxed_unsync())
        }
        Err(e) => upstream_error(&e),
    }
}

/// One request on a new connection to fake-gcs-server; its head within
/// [`UPSTREAM_LIMIT`]. The connection's task ends with the answer's body.
async fn call(upstream: SocketAddr, req: Request<Body>) -> Result<Response<Incoming>, String> {
    let exchange = async {
        let stream = tokio::net::TcpStream::connect(upstream)
            .await
            .map_err(|e| format!("connecting to fake-gcs-server at {upstream}: {e}"))?;
        let (mut sender, connection) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
            .await
            .map_err(|e| format!("fake-gcs-server at {upstream}: {e}"))?;
        tokio::spawn(connection);
        sender
            .send_request(req)
            .await
            .map_err(|e| format!("fake-gcs-server at {upstream}: {e}"))
    };
    tokio::time::timeout(UPSTREAM_LIMIT, exchange)
        .await
        .map_err(|_| {
            format!("fake-gcs-server at {upstream}: no answer within {UPSTREAM_LIMIT:?}")
        })?
}

async fn read_text(response: Response<Incoming>) -> String {
    match tokio::time::timeout(UPSTREAM_LIMIT, response.into_body().collect()).await {
        Ok(Ok(b)) => String::from_utf8_lossy(&b.to_bytes()).into_owned(),
        Ok(Err(e)) => format!("(its body failed: {e})"),
        Err(_) => format!("(no body within {UPSTREAM_LIMIT:?})"),
    }
}

// ---- small helpers ----

fn strip_hop_by_hop(headers: &mut HeaderMap) {
    for h in [
        "connection",
        "keep-alive",
        "proxy-connection",
        "te",
        "trailer",
        "upgrade",
    ] {
        headers.remove(h);
    }
}

fn content_type_of(headers: &HeaderMap) -> Option<String> {
    headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .map(str::to_string)
}

fn set(headers: &mut HeaderMap, name: &'static str, value: &str) {
    if let Ok(v) = HeaderValue::from_str(value) {
        headers.insert(name, v);
    }
}

fn empty_body() -> Body {
    Full::new(Bytes::new())
        .map_err(|never| match never {})
        .boxed_unsync()
}

fn empty(status: StatusCode) -> Response<Body> {
    let mut r = Response::new(empty_body());
    *r.status_mut() = status;
    r
}

fn xml(status: StatusCode, text: String) -> Response<Body> {
    let mut r = Response::new(
        Full::new(Bytes::from(text))
            .map_err(|never| match never {})
            .boxed_unsync(),
    );
    *r.status_mut() = status;
    set(
        r.headers_mut(),
        "content-type",
        "application/xml; charset=UTF-8",
    );
    r
}

fn xml_error(status: StatusCode, code: &str, message: &str) -> Response<Body> {
    xml(
        status,
        format!(
            "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<Error><Code>{code}</Code><Message>gcs upload shim: {}</Message></Error>",
            escape(message)
        ),
    )
}

fn upstream_error(e: &str) -> Response<Body> {
    xml_error(StatusCode::BAD_GATEWAY, "ShimUpstream", e)
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

fn unescape(text: &str) -> String {
    text.replace("&quot;", "\"")
        .replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&apos;", "'")
        .replace("&amp;", "&")
}

/// Percent-decodes a path segment or query value (`+` stays `+`: the XML
/// API's keys are percent-encoded).
fn decode(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = |b: u8| (b as char).to_digit(16);
        if bytes[i] == b'%'
            && i + 2 < bytes.len()
            && let (Some(h), Some(l)) = (hex(bytes[i + 1]), hex(bytes[i + 2]))
        {
            out.push((h * 16 + l) as u8);
            i += 3;
            continue;
        }
        out.push(bytes[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// Percent-encodes a query value or path segment.
fn encode(text: &str) -> String {
    text.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                (b as char).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn complete_bodies_parse_as_object_store_writes_them() {
        // quick_xml's output with `&quot;` turned back into `"`
        // (object_store's gcp/client.rs multipart_complete).
        let body = "<CompleteMultipartUpload><Part><PartNumber>1</PartNumber><ETag>\"ab\"</ETag></Part><Part><PartNumber>2</PartNumber><ETag>\"cd\"</ETag></Part></CompleteMultipartUpload>";
        assert_eq!(
            parse_complete(body).unwrap(),
            vec![(1, "\"ab\"".to_string()), (2, "\"cd\"".to_string())]
        );
        assert!(parse_complete("<Part><ETag>x</ETag></Part>").is_err());
    }

    #[test]
    fn keys_decode_and_encode() {
        assert_eq!(decode("eco%2Fc%2Fsp%20ace.db"), "eco/c/sp ace.db");
        assert_eq!(decode("100%"), "100%");
        assert_eq!(encode("eco/c/sp ace"), "eco%2Fc%2Fsp%20ace");
    }
}
