//! What the cloud-store emulators of [`crate::gcs_server`] and
//! [`crate::azurite_server`] share: a process on a free port of 127.0.0.1
//! with its data in a temporary directory, killed by its pid when dropped
//! (and by `PR_SET_PDEATHSIG` if the test process dies first), started
//! within [`START_LIMIT`]; and one plain HTTP/1.1 request to it.

use crate::process::{self, die_with_parent};
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

/// The longest an emulator may take to listen.
pub const START_LIMIT: Duration = Duration::from_secs(60);

/// One running emulator process.
pub struct Emulator {
    what: &'static str,
    child: Child,
    pub(crate) port: u16,
    dir: tempfile::TempDir,
}

/// A file of `.tools/`, which must be there (installed by
/// `scripts/install-store-emulators.sh`, run by `make deps`).
pub(crate) fn tool(rel: &str) -> PathBuf {
    let path = crate::workspace_root().join(".tools").join(rel);
    assert!(
        path.exists(),
        "{} is missing: run make deps (scripts/install-store-emulators.sh installs the cloud store emulators)",
        path.display()
    );
    path
}

impl Emulator {
    /// Starts `command(data dir, port)`; panics (saying why, with its
    /// log) when it exits or does not listen within [`START_LIMIT`].
    pub(crate) fn start(
        what: &'static str,
        command: impl FnOnce(&std::path::Path, u16) -> Command,
    ) -> Self {
        let dir = tempfile::tempdir().expect("a temporary directory");
        let data = dir.path().join("data");
        std::fs::create_dir_all(&data).expect("the data directory");
        let log = std::fs::File::create(dir.path().join("server.log")).expect("the server log");
        let port = crate::s3_server::free_port();
        let mut command = command(&data, port);
        command
            .current_dir(dir.path())
            .stdin(Stdio::null())
            .stdout(log.try_clone().expect("the server log"))
            .stderr(log);
        die_with_parent(&mut command);
        let child = command
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start {what}: {e}"));
        let mut emulator = Self {
            what,
            child,
            port,
            dir,
        };
        let addr = SocketAddr::from(([127, 0, 0, 1], port));
        let up = crate::wait_until(START_LIMIT, || {
            if let Ok(Some(status)) = emulator.child.try_wait() {
                return Some(Err(status));
            }
            TcpStream::connect_timeout(&addr, Duration::from_millis(200))
                .ok()
                .map(|_| Ok(()))
        });
        match up {
            Some(Ok(())) => emulator,
            Some(Err(status)) => panic!(
                "{what} exited ({status}) before listening on {addr}:\n{}",
                emulator.log()
            ),
            None => panic!(
                "{what} did not listen on {addr} within {START_LIMIT:?}:\n{}",
                emulator.log()
            ),
        }
    }

    /// `http://127.0.0.1:<port>`.
    pub fn endpoint(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// The emulator's output so far.
    pub fn log(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("server.log")).unwrap_or_default()
    }

    /// Sends one request (`head` is the request line and headers, without
    /// the blank line) with `body`; returns the status and the response.
    pub(crate) fn request(&self, head: &str, body: &[u8]) -> (u16, String) {
        let addr = SocketAddr::from(([127, 0, 0, 1], self.port));
        let mut stream = TcpStream::connect_timeout(&addr, Duration::from_secs(5))
            .unwrap_or_else(|e| panic!("connecting to {}: {e}", self.what));
        stream
            .set_read_timeout(Some(Duration::from_secs(10)))
            .expect("a read timeout");
        let text = format!(
            "{head}\r\nHost: 127.0.0.1:{}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
            self.port,
            body.len()
        );
        stream
            .write_all(text.as_bytes())
            .and_then(|_| stream.write_all(body))
            .unwrap_or_else(|e| panic!("writing to {}: {e}", self.what));
        let mut response = String::new();
        let _ = stream.read_to_string(&mut response);
        let status = response
            .split(' ')
            .nth(1)
            .and_then(|s| s.parse().ok())
            .unwrap_or(0);
        (status, response)
    }
}

impl Drop for Emulator {
    fn drop(&mut self) {
        process::kill(self.child.id() as i32, libc::SIGKILL);
        let _ = self.child.wait();
    }
}
