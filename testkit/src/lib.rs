//! eco's test kit: **dev-only**, never published (`publish = false`), never
//! a dependency of the `eco` binary or library. It holds the one copy of
//! what the integration tests (`tests/`, a dev-dependency of `eco`) and
//! the simulations (`simulations/`, the chaos harness and the snapshot
//! benchmark) need to run eco and etcd for real:
//!
//! - [`config`]: one builder of [`eco::config::Config`] values, with the
//!   fast timings the tests use, written with `toml::to_string` (a config
//!   is built by its types, never by editing text);
//! - [`etcd`]: the etcd binaries of the workspace
//!   (`.tools/etcd-$ECO_TEST_ETCD_VERSION/bin`), raw etcd processes,
//!   client helpers with timeouts, the pids of the etcd processes on a
//!   data directory;
//! - [`cluster`]: one process cluster of `eco run` instances with the
//!   static provider (a shared group file written atomically, a shared
//!   directory store, one gossip key), on loopback or in network
//!   namespaces with nftables partitions, killed by pid when dropped
//!   (every instance's log printed when a test fails, or always with
//!   `ECO_TEST_PRINT_LOGS` set: `RUST_LOG=eco=debug ECO_TEST_PRINT_LOGS=1`
//!   shows a passing run's timeline);
//! - [`instance`]: one eco instance alone in a temporary directory (a
//!   group of one);
//! - [`ledger`]: a write load that records every acknowledged write, and
//!   the check that none of them was lost;
//! - [`machine_stalls`]: the moments the machine itself stood still
//!   (a probe's overslept sleeps and slow disk syncs), taken out of the
//!   write gaps the tests bound;
//! - [`pki`]: a throwaway CA and the certificates it signs, as PEM files
//!   (TLS clusters: [`cluster::Options::tls`]); [`tls_probe`]: the
//!   certificate a TLS server presents right now;
//! - [`pods`]: StatefulSet pods run from eco's container image in
//!   namespaces, the way a runtime would (no container engine or API
//!   server runs here);
//! - [`machine`]: a booted machine (systemd as PID 1 in namespaces, on a
//!   copy-on-write overlay of the host's root) for the Debian package, the
//!   systemd unit and the Terraform module's user data;
//! - [`process`]: signals by pid, `PR_SET_PDEATHSIG`, starting `eco run`,
//!   the PID 1 of namespaces a test made and processes rooted under a
//!   directory (pods, machines), tools that are missing;
//! - [`address_claim`]: the addresses a test runs on, held across test
//!   processes so that tests run at once never share one;
//! - [`auth`]: etcd's authentication in tests (secret files, JWT keys,
//!   clients as a user); test clients authenticate through
//!   [`etcd::authenticate`];
//! - [`doc_commands`]: a document's fenced `sh` blocks, taken from its
//!   text, its example values replaced by the test's (each one asserted
//!   present), run by bash bounded in time.
//!
//! What it does not do: it installs nothing (scripts/install-deps.sh puts
//! etcd under `.tools/`), builds nothing (the caller names the `eco`
//! binary: [`eco_bin!`] in integration tests, `--eco-bin` in the chaos
//! harness), simulates nothing (every etcd and eco is a real process),
//! never retries on its own beyond the bounded waits it documents, and
//! reaches no address but loopback and the namespaces it made. It is not
//! an API for eco's users.
//!
//! Failures: the parts the chaos harness uses ([`cluster`], [`config`],
//! [`process`], [`etcd::bin_dir_of`], [`etcd::RawEtcd::command`]) return
//! errors, since the harness reports a failed scenario and goes on. The
//! helpers only tests use ([`instance::Instance`], [`etcd::bin_dir`],
//! [`etcd::rt`], [`etcd::RawEtcd::start`] and its siblings,
//! [`process::run_eco`]) panic with a
//! message instead: in a test, that panic is the failure report, and
//! every caller would unwrap anyway. Every wait is bounded in time (and so
//! in count); every process is killed by its pid, never by name.

pub mod address_claim;
pub mod auth;
pub mod aws;
pub mod azurite_server;
pub mod cluster;
pub mod config;
pub mod doc_commands;
pub mod emulator;
pub mod etcd;
pub mod gcs_server;
pub mod gcs_upload_shim;
pub mod instance;
pub mod ledger;
pub mod machine;
pub mod machine_stalls;
pub mod pki;
pub mod pods;
pub mod process;
pub mod releases;
pub mod s3_server;
pub mod store_round_trip;
pub mod timed_load;
pub mod tls_probe;

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// The `eco` binary Cargo built for the calling integration test (the
/// debug one under `cargo test`): `env!("CARGO_BIN_EXE_eco")`, expanded
/// in the caller's crate, where Cargo sets it.
#[macro_export]
macro_rules! eco_bin {
    () => {
        ::std::path::PathBuf::from(env!("CARGO_BIN_EXE_eco"))
    };
}

/// The workspace's root directory (where `.tools/` and `target/` are).
pub fn workspace_root() -> PathBuf {
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR"));
    manifest.parent().unwrap_or(manifest).to_path_buf()
}

/// Polls `f` every 50 ms until it returns `Some` or `limit` passes.
pub fn wait_until<T>(limit: Duration, mut f: impl FnMut() -> Option<T>) -> Option<T> {
    let start = Instant::now();
    loop {
        if let Some(v) = f() {
            return Some(v);
        }
        if start.elapsed() > limit {
            return None;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Every file under `dir`, recursively (an unreadable directory: none of
/// its files).
pub fn files_under(dir: &std::path::Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let path = entry.path();
        if path.is_dir() {
            out.extend(files_under(&path));
        } else {
            out.push(path);
        }
    }
    out
}
