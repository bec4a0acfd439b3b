//! The process cluster on the AWS provider: the group is an auto-scaling
//! group of the local AWS emulator ([`crate::aws`]), instances are its EC2
//! instances (id = instance id, address = the private address the group
//! gave it in `127.<100+net>.<zone>.0/24`, zone = its availability zone),
//! and snapshots and records go to a bucket of the emulator's S3. eco finds
//! its peers only through the Auto Scaling and EC2 APIs; the test kit reads
//! the same group to know which eco processes to start (what an instance's
//! boot would do on AWS).

use crate::aws::{Emulator, GroupHandle, GroupInstance};
use anyhow::Context;
use std::path::Path;
use std::time::Duration;

/// How the AWS group is made.
#[derive(Clone, Debug)]
pub struct AwsOptions {
    /// The termination lifecycle hook's heartbeat timeout; `None`: no
    /// hook.
    pub hook: Option<Duration>,
    /// How often eco reads the group (`provider.refresh_interval`).
    pub refresh: Duration,
}

impl Default for AwsOptions {
    fn default() -> Self {
        Self {
            hook: Some(Duration::from_secs(60)),
            refresh: Duration::from_secs(1),
        }
    }
}

/// The emulator, the group and the bucket of one cluster.
pub struct AwsSide {
    pub emulator: Emulator,
    pub options: AwsOptions,
    group: String,
    hook: Option<String>,
    pub bucket: String,
    net: u8,
    created: bool,
}

/// Bound of every wait for the group to reach a shape.
const GROUP_WITHIN: Duration = Duration::from_secs(60);

impl AwsSide {
    /// Starts the emulator (its files in `<root>/aws`) and creates the
    /// bucket; the group is created by [`AwsSide::create`].
    pub fn start(root: &Path, cluster: &str, net: u8, options: AwsOptions) -> anyhow::Result<Self> {
        let dir = root.join("aws");
        std::fs::create_dir_all(&dir).context("emulator dir")?;
        let emulator = Emulator::start(&dir);
        let bucket = format!("eco-{cluster}");
        emulator.create_bucket(&bucket);
        Ok(Self {
            emulator,
            options,
            group: format!("{cluster}-group"),
            hook: None,
            bucket,
            net,
            created: false,
        })
    }

    fn zones(&self) -> Vec<(String, String)> {
        ["a", "b", "c"]
            .iter()
            .enumerate()
            .map(|(i, z)| {
                (
                    format!("us-east-1{z}"),
                    format!("127.{}.{}.0/24", 100 + u32::from(self.net), i + 1),
                )
            })
            .collect()
    }

    pub fn group(&self) -> GroupHandle<'_> {
        self.emulator.group(&self.group, self.hook.as_deref())
    }

    /// Creates the group with `n` instances and waits until they run.
    pub fn create(&mut self, n: u32) -> anyhow::Result<Vec<GroupInstance>> {
        anyhow::ensure!(!self.created, "the group exists already");
        let zones = self.zones();
        let z: Vec<(&str, &str)> = zones
            .iter()
            .map(|(a, b)| (a.as_str(), b.as_str()))
            .collect();
        let g = self
            .emulator
            .create_group(&self.group, &z, n, self.options.hook);
        self.hook = g.hook_name().map(str::to_string);
        self.created = true;
        Ok(self.in_service(n as usize, &[]))
    }

    /// Waits until the group has `n` instances in service and running,
    /// none of them in `not`; returns them.
    pub fn in_service(&self, n: usize, not: &[String]) -> Vec<GroupInstance> {
        let serving = |all: &[GroupInstance]| -> Vec<GroupInstance> {
            all.iter()
                .filter(|i| {
                    i.lifecycle_state == "InService"
                        && i.ec2_state == "running"
                        && !not.contains(&i.id)
                })
                .cloned()
                .collect()
        };
        let all = self
            .group()
            .wait_for(GROUP_WITHIN, |all| serving(all).len() == n);
        serving(&all)
    }

    /// Waits (bounded) until the metadata server of the instance at `ip`
    /// listens: the kit starts it when it sees the instance, as EC2's is
    /// there when an instance boots.
    pub fn wait_imds(&self, ip: &str) -> anyhow::Result<()> {
        let addr: std::net::SocketAddr = format!("{ip}:{}", self.emulator.imds_port())
            .parse()
            .context("metadata address")?;
        crate::wait_until(Duration::from_secs(10), || {
            std::net::TcpStream::connect_timeout(&addr, Duration::from_millis(200))
                .ok()
                .map(|_| ())
        })
        .with_context(|| format!("the metadata server of {ip} does not listen"))
    }

    /// The keys under `<prefix>/<cluster>/<under>` in the bucket, names
    /// relative to `<prefix>/<cluster>/<under>`.
    pub fn keys(&self, cluster: &str, under: &str) -> Vec<String> {
        let prefix = format!("eco/{cluster}/{under}");
        let s3 = self.emulator.s3().clone();
        let bucket = self.bucket.clone();
        self.emulator.block_on(async move {
            let mut out = Vec::new();
            let mut pages = s3
                .list_objects_v2()
                .bucket(bucket)
                .prefix(&prefix)
                .into_paginator()
                .send();
            while let Some(Ok(page)) = pages.next().await {
                for o in page.contents() {
                    if let Some(k) = o.key().and_then(|k| k.strip_prefix(&prefix)) {
                        out.push(k.to_string());
                    }
                }
            }
            out
        })
    }
}
