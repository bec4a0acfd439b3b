//! S3 implementations on loopback for the S3 store's tests, each a real
//! process on a free port of 127.0.0.1 with its data in a temporary
//! directory, killed by its pid when dropped (and by
//! `PR_SET_PDEATHSIG` if the test process dies first):
//!
//! - [`Kind::Moto`]: moto's server (`.tools/aws-venv`), which refuses a
//!   second `PutObject` with `If-None-Match: *` (412), keeps everything in
//!   memory and accepts any credentials;
//! - [`Kind::S3sFs`]: s3s-fs (`.tools/s3s-fs`), a second implementation
//!   that enforces conditional writes, stores on disk and checks SigV4
//!   signatures against the one key pair it is started with;
//! - [`Kind::S3rver`]: s3rver (`.tools/s3rver`), which **ignores**
//!   `If-None-Match` (the endpoint eco must refuse); its key pair is
//!   `S3RVER`/`S3RVER`.
//!
//! Installed by `scripts/install-deps.sh` (`make deps`); a missing binary
//! panics saying so, never skips. Starting waits at most
//! [`START_LIMIT`] for the port to accept connections. Buckets are the
//! test's to create (with the SDK, as eco would see them).

use crate::process::{self, die_with_parent};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

/// The longest a server may take to listen.
pub const START_LIMIT: Duration = Duration::from_secs(60);

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    Moto,
    S3sFs,
    S3rver,
}

/// One running S3 server.
pub struct S3Server {
    kind: Kind,
    child: Child,
    port: u16,
    dir: tempfile::TempDir,
}

/// A port nobody listens on now (bound, then released).
pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("no free port on 127.0.0.1")
}

fn tool(rel: &str) -> PathBuf {
    let path = crate::workspace_root().join(".tools").join(rel);
    assert!(
        path.is_file(),
        "{} is missing: run make deps (scripts/install-deps.sh installs the S3 test servers)",
        path.display()
    );
    path
}

impl S3Server {
    /// Starts a server of `kind`; panics (saying why, with its log) when
    /// it is not installed or does not listen within [`START_LIMIT`].
    pub fn start(kind: Kind) -> Self {
        let dir = tempfile::tempdir().expect("a temporary directory");
        let data = dir.path().join("data");
        std::fs::create_dir_all(&data).expect("the data directory");
        let log_path = dir.path().join("server.log");
        let log = std::fs::File::create(&log_path).expect("the server log");
        let port = free_port();
        let mut command = match kind {
            Kind::Moto => {
                let mut c = Command::new(tool("aws-venv/bin/moto_server"));
                c.args(["-H", "127.0.0.1", "-p", &port.to_string()]);
                c
            }
            Kind::S3sFs => {
                let mut c = Command::new(tool("s3s-fs/bin/s3s-fs"));
                c.args(["--host", "127.0.0.1", "--port", &port.to_string()])
                    .args(["--access-key", Self::access_key_of(kind)])
                    .args(["--secret-key", Self::secret_key_of(kind)])
                    .arg(&data);
                c
            }
            Kind::S3rver => {
                let mut c = Command::new(tool("s3rver/node_modules/.bin/s3rver"));
                c.arg("-d")
                    .arg(&data)
                    .args(["-a", "127.0.0.1", "-p", &port.to_string()]);
                c
            }
        };
        command
            .stdin(Stdio::null())
            .stdout(log.try_clone().expect("the server log"))
            .stderr(log);
        die_with_parent(&mut command);
        let child = command
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start the {kind:?} S3 server: {e}"));
        let mut server = Self {
            kind,
            child,
            port,
            dir,
        };
        let addr = SocketAddr::from(([127, 0, 0, 1], port));
        let up = crate::wait_until(START_LIMIT, || {
            if let Ok(Some(status)) = server.child.try_wait() {
                return Some(Err(status));
            }
            TcpStream::connect_timeout(&addr, Duration::from_millis(200))
                .ok()
                .map(|_| Ok(()))
        });
        match up {
            Some(Ok(())) => server,
            Some(Err(status)) => panic!(
                "the {kind:?} S3 server exited ({status}) before listening on {addr}:\n{}",
                server.log()
            ),
            None => panic!(
                "the {kind:?} S3 server did not listen on {addr} within {START_LIMIT:?}:\n{}",
                server.log()
            ),
        }
    }

    pub fn kind(&self) -> Kind {
        self.kind
    }

    /// `http://127.0.0.1:<port>`.
    pub fn endpoint(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    fn access_key_of(kind: Kind) -> &'static str {
        match kind {
            Kind::Moto => "testing",
            Kind::S3sFs => "eco-test-access",
            Kind::S3rver => "S3RVER",
        }
    }

    fn secret_key_of(kind: Kind) -> &'static str {
        match kind {
            Kind::Moto => "testing",
            Kind::S3sFs => "eco-test-secret",
            Kind::S3rver => "S3RVER",
        }
    }

    /// The access key the server accepts.
    pub fn access_key(&self) -> &'static str {
        Self::access_key_of(self.kind)
    }

    /// The secret key the server accepts.
    pub fn secret_key(&self) -> &'static str {
        Self::secret_key_of(self.kind)
    }

    /// Where the server keeps its data (s3s-fs and s3rver; moto keeps it
    /// in memory).
    pub fn data_dir(&self) -> PathBuf {
        self.dir.path().join("data")
    }

    /// The server's output so far.
    pub fn log(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("server.log")).unwrap_or_default()
    }
}

impl Drop for S3Server {
    fn drop(&mut self) {
        process::kill(self.child.id() as i32, libc::SIGKILL);
        let _ = self.child.wait();
    }
}
