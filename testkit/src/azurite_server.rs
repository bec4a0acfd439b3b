//! azurite, the Azure Storage emulator (its blob service), on loopback for
//! the Azure store's tests: npm's `azurite` (`.tools/azurite`, by
//! `scripts/install-store-emulators.sh`) on a free port of 127.0.0.1 with
//! its data in a temporary directory, killed by its pid when dropped.
//! Its one account is azurite's well-known development account
//! ([`ACCOUNT`], [`KEY`]), addressed path-style
//! (`http://127.0.0.1:<port>/devstoreaccount1`). Containers are the
//! test's to create ([`AzuriteServer::create_container`], a Shared Key
//! signed request).

use crate::emulator::{Emulator, tool};
use base64::Engine;
use hmac::{Hmac, Mac};
use sha2::Sha256;
use std::process::Command;

/// azurite's development account.
pub const ACCOUNT: &str = "devstoreaccount1";
/// Its well-known key (published in azurite's documentation).
pub const KEY: &str =
    "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw==";

/// One running azurite blob service.
pub struct AzuriteServer {
    emulator: Emulator,
}

impl AzuriteServer {
    /// Starts azurite's blob service; panics (saying why, with its log)
    /// when it is not installed or does not listen in time.
    pub fn start() -> Self {
        let bin = tool("azurite/node_modules/.bin/azurite-blob");
        let emulator = Emulator::start("azurite", |data, port| {
            let mut c = Command::new(&bin);
            c.args(["--blobHost", "127.0.0.1", "--blobPort", &port.to_string()])
                .arg("--location")
                .arg(data)
                .args(["--skipApiVersionCheck", "--disableTelemetry"]);
            c
        });
        Self { emulator }
    }

    /// The account's blob endpoint,
    /// `http://127.0.0.1:<port>/devstoreaccount1`.
    pub fn endpoint(&self) -> String {
        format!("{}/{ACCOUNT}", self.emulator.endpoint())
    }

    /// The server's output so far.
    pub fn log(&self) -> String {
        self.emulator.log()
    }

    /// Creates a container (Shared Key signed); panics when refused.
    pub fn create_container(&self, container: &str) {
        let date = httpdate::fmt_http_date(std::time::SystemTime::now());
        let version = "2021-08-06";
        let to_sign = format!(
            "PUT\n\n\n\n\n\n\n\n\n\n\n\nx-ms-date:{date}\nx-ms-version:{version}\n/{ACCOUNT}/{ACCOUNT}/{container}\nrestype:container"
        );
        let key = base64::engine::general_purpose::STANDARD
            .decode(KEY)
            .expect("azurite's key is base64");
        let mut mac = Hmac::<Sha256>::new_from_slice(&key).expect("any key length");
        mac.update(to_sign.as_bytes());
        let signature =
            base64::engine::general_purpose::STANDARD.encode(mac.finalize().into_bytes());
        let (status, response) = self.emulator.request(
            &format!(
                "PUT /{ACCOUNT}/{container}?restype=container HTTP/1.1\r\nx-ms-date: {date}\r\nx-ms-version: {version}\r\nAuthorization: SharedKey {ACCOUNT}:{signature}"
            ),
            b"",
        );
        assert_eq!(
            status,
            201,
            "creating the container {container}: {response}\n{}",
            self.log()
        );
    }
}
