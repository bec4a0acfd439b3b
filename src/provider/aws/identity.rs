//! This instance, from the EC2 instance metadata service, **IMDSv2** only
//! (a session token first, then every read with it): instance id, private
//! IPv4 address, availability zone, region — and, on each refresh, the
//! auto-scaling target lifecycle state (`Terminated` once a scale-in chose
//! this instance).
//!
//! The client is aws-config's: its endpoint is overridable the way every
//! AWS SDK does it (`AWS_EC2_METADATA_SERVICE_ENDPOINT`), so tests point it
//! at the test kit's per-instance metadata server. Every read has a
//! connect and read timeout and is retried.

use super::super::ProviderError;
use aws_config::imds::Client;
use aws_config::imds::client::error::ImdsError;
use std::net::IpAddr;
use std::time::Duration;

/// What the metadata service says about this instance.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Metadata {
    pub instance_id: String,
    pub private_ip: IpAddr,
    pub zone: String,
    pub region: String,
}

/// The metadata service of this instance.
#[derive(Clone, Debug)]
pub struct Imds {
    client: Client,
}

impl Imds {
    /// A client with `timeout` per attempt and `attempts` attempts.
    pub fn new(timeout: Duration, attempts: u32) -> Self {
        let client = Client::builder()
            .connect_timeout(timeout)
            .read_timeout(timeout)
            .max_attempts(attempts.max(1))
            .token_ttl(Duration::from_secs(6 * 3600))
            .build();
        Self { client }
    }

    async fn get(&self, path: &str) -> Result<String, ProviderError> {
        self.client
            .get(path)
            .await
            .map(|v| v.as_ref().trim().to_string())
            .map_err(|e| ProviderError::Metadata(format!("GET {path}: {}", describe(&e))))
    }

    /// The identity: instance id, private IPv4, zone, region.
    pub async fn metadata(&self) -> Result<Metadata, ProviderError> {
        let instance_id = self.get("/latest/meta-data/instance-id").await?;
        let ip_text = self.get("/latest/meta-data/local-ipv4").await?;
        let private_ip: IpAddr = ip_text.parse().map_err(|_| {
            ProviderError::Metadata(format!("local-ipv4 {ip_text:?} is not an IP address"))
        })?;
        let zone = self
            .get("/latest/meta-data/placement/availability-zone")
            .await?;
        let region = self.get("/latest/meta-data/placement/region").await?;
        if !recovery::asg::is_instance_id(&instance_id) {
            return Err(ProviderError::Metadata(format!(
                "instance-id {instance_id:?} is not an EC2 instance id"
            )));
        }
        Ok(Metadata {
            instance_id,
            private_ip: private_ip.to_canonical(),
            zone,
            region,
        })
    }

    /// The auto-scaling target lifecycle state (`InService`, `Terminated`,
    /// …); `None` when the service has none (not in a group, or an
    /// instance older than the feature) or does not answer.
    pub async fn target_lifecycle_state(&self) -> Option<String> {
        self.get("/latest/meta-data/autoscaling/target-lifecycle-state")
            .await
            .ok()
    }
}

fn describe(e: &ImdsError) -> String {
    match e {
        ImdsError::ErrorResponse(r) => format!("HTTP {}", r.response().status().as_u16()),
        other => format!("{}", aws_sdk_autoscaling::error::DisplayErrorContext(other)),
    }
}
