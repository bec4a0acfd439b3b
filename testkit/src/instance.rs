//! One eco instance alone: a temporary directory, the static provider with
//! a group of one, its own loopback address, the test timings.
//!
//! A test helper: its methods panic when the machine fails them (no
//! temporary directory, no binary), and that panic is the test's failure
//! report. The processes are killed by pid when it is dropped, and a
//! failing test gets eco's log on stderr.

use crate::cluster::write_group_file;
use crate::config::ConfigBuilder;
use crate::process::{EcoRun, kill, run_eco};
use crate::{etcd, wait_until};
use std::net::IpAddr;
use std::path::PathBuf;
use std::process::Child;
use std::time::Duration;

pub struct Instance {
    pub dir: tempfile::TempDir,
    pub address: IpAddr,
    pub id: String,
    /// The config file.
    pub config: PathBuf,
    /// What is in it.
    pub settings: ConfigBuilder,
    pub process: Option<Child>,
    /// Environment variables added to eco's (an S3 endpoint's
    /// credentials).
    pub env: Vec<(String, String)>,
    eco: PathBuf,
    /// `address`, held against other tests ([`crate::address_claim`]).
    _claim: crate::address_claim::AddressClaim,
}

impl Instance {
    /// Instance `eco-1` of cluster `it` on `address`, not started; `eco`
    /// is the binary (in integration tests: [`crate::eco_bin!`]).
    pub fn new(eco: PathBuf, address: &str) -> Self {
        let dir = tempfile::Builder::new()
            .prefix("eco-it-")
            .tempdir()
            .expect("tempdir");
        let id = "eco-1".to_string();
        let address: IpAddr = address.parse().expect("address");
        let claim = crate::address_claim::claim(&address.to_string()).expect("address claim");
        let member = (id.as_str(), address.to_string());
        write_group_file(
            &dir.path().join("group.toml"),
            &[(member.0, member.1.as_str(), None)],
        )
        .expect("group file");
        let settings = ConfigBuilder::new("it", "group.toml").etcd_bin_dir(&etcd::bin_dir());
        let config = dir.path().join("eco.toml");
        settings.write(&config).expect("config");
        Self {
            dir,
            address,
            id,
            config,
            settings,
            process: None,
            env: Vec::new(),
            eco,
            _claim: claim,
        }
    }

    /// Changes the config file (eco reads it when it starts).
    pub fn configure(&mut self, f: impl FnOnce(ConfigBuilder) -> ConfigBuilder) {
        self.settings = f(self.settings.clone());
        self.settings.write(&self.config).expect("config");
    }

    /// Adds a directory snapshot store at `<tempdir>/store` to the config.
    pub fn with_dir_store(mut self) -> Self {
        self.configure(|c| c.dir_store("store"));
        std::fs::create_dir_all(self.store_dir()).expect("store dir");
        self
    }

    pub fn store_dir(&self) -> PathBuf {
        self.dir.path().join("store")
    }

    pub fn data_dir(&self) -> PathBuf {
        self.dir.path().join("data/etcd")
    }

    pub fn state_file(&self) -> PathBuf {
        self.dir.path().join("data/eco-state.json")
    }

    pub fn endpoint(&self) -> String {
        format!("http://{}:2379", self.address)
    }

    pub fn log_path(&self) -> PathBuf {
        self.dir.path().join("eco.log")
    }

    pub fn log(&self) -> String {
        std::fs::read_to_string(self.log_path()).unwrap_or_default()
    }

    /// Starts `eco run`; output goes to `eco.log` (appended).
    pub fn start(&mut self) {
        let child = EcoRun {
            eco: &self.eco,
            config: &self.config,
            instance_id: &self.id,
            log: &self.log_path(),
            netns: None,
            die_with_parent: false,
            env: &self.env,
        }
        .spawn()
        .expect("spawn eco");
        self.process = Some(child);
    }

    pub fn pid(&self) -> i32 {
        self.process.as_ref().expect("running").id() as i32
    }

    /// Waits for eco to exit, at most `limit`; returns its exit code.
    pub fn wait_exit(&mut self, limit: Duration) -> Option<i32> {
        let child = self.process.as_mut()?;
        let code = wait_until(limit, || child.try_wait().ok().flatten())?;
        self.process = None;
        Some(code.code().unwrap_or(-1))
    }

    /// Sends `signal` to eco.
    pub fn signal(&self, signal: i32) {
        kill(self.pid(), signal);
    }

    pub fn etcd_pids(&self) -> Vec<i32> {
        etcd::pids_on(&self.data_dir())
    }

    /// Runs `eco <args>`; returns (exit code, stdout, stderr).
    pub fn eco(&self, args: &[&str]) -> (i32, String, String) {
        run_eco(&self.eco, args)
    }
}

impl Drop for Instance {
    fn drop(&mut self) {
        if let Some(mut c) = self.process.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
        for pid in self.etcd_pids() {
            kill(pid, libc::SIGKILL);
        }
        if std::thread::panicking() {
            eprintln!(
                "--- eco log ({}) ---\n{}",
                self.log_path().display(),
                self.log()
            );
        }
    }
}
