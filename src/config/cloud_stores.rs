//! `[snapshot.gcs]` and `[snapshot.azure]`: the Google Cloud Storage and
//! Azure Blob stores (built on the `object_store` crate, `src/store/cloud/`).
//! Sizes and bounds default as `[snapshot.s3]`'s do.

use super::ConfigDuration;
use super::defaults;
use serde::{Deserialize, Serialize};
use std::path::PathBuf;

/// `[snapshot.gcs]`
#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct GcsStoreConfig {
    pub bucket: String,
    /// Every object eco lists, writes or deletes is under
    /// `<prefix>/<cluster name>/`; clusters may share a bucket.
    #[serde(default = "defaults::s3_prefix")]
    pub prefix: String,
    /// Another endpoint than Google's (`http://127.0.0.1:4443`: an
    /// emulator).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub endpoint: Option<String>,
    /// A service-account key file (JSON); when absent, the environment's
    /// application default credentials (`GOOGLE_APPLICATION_CREDENTIALS`,
    /// then the metadata server: workload identity on GKE).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub credentials_file: Option<PathBuf>,
    /// Send requests without credentials (an emulator only: needs
    /// `endpoint`).
    #[serde(default)]
    pub unsigned: bool,
    /// Bytes per part of a multipart upload (and per buffer); an object
    /// smaller than this is one request. Memory used by an upload is about
    /// `part_size` × (`parts_in_flight` + 1).
    #[serde(default = "defaults::s3_part_size")]
    pub part_size: u64,
    #[serde(default = "defaults::s3_parts_in_flight")]
    pub parts_in_flight: u32,
    /// The bound of each part upload and of a download's first byte.
    #[serde(default = "defaults::s3_transfer_timeout")]
    pub transfer_timeout: ConfigDuration,
    /// Attempts per call, the first included (transient errors are
    /// retried with back-off).
    #[serde(default = "defaults::aws_max_attempts")]
    pub max_attempts: u32,
}

/// `[snapshot.azure]`
#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct AzureStoreConfig {
    /// The storage account.
    pub account: String,
    pub container: String,
    /// Every object eco lists, writes or deletes is under
    /// `<prefix>/<cluster name>/`; clusters may share a container.
    #[serde(default = "defaults::s3_prefix")]
    pub prefix: String,
    /// The account's blob endpoint when not
    /// `https://<account>.blob.core.windows.net` (azurite:
    /// `http://127.0.0.1:10000/devstoreaccount1`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub endpoint: Option<String>,
    /// A file holding the account's access key (base64, as the portal
    /// shows it); when absent, the environment's identity: workload
    /// identity (`AZURE_FEDERATED_TOKEN_FILE`, `AZURE_CLIENT_ID`,
    /// `AZURE_TENANT_ID`, as AKS sets them), else the managed identity.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub access_key_file: Option<PathBuf>,
    /// Bytes per part of a multipart upload (and per buffer); an object
    /// smaller than this is one request. Memory used by an upload is about
    /// `part_size` × (`parts_in_flight` + 1).
    #[serde(default = "defaults::s3_part_size")]
    pub part_size: u64,
    #[serde(default = "defaults::s3_parts_in_flight")]
    pub parts_in_flight: u32,
    /// The bound of each part upload and of a download's first byte.
    #[serde(default = "defaults::s3_transfer_timeout")]
    pub transfer_timeout: ConfigDuration,
    /// Attempts per call, the first included (transient errors are
    /// retried with back-off).
    #[serde(default = "defaults::aws_max_attempts")]
    pub max_attempts: u32,
}

/// Sizes and bounds of a cloud store's transfers, as configured.
#[derive(Clone, Debug)]
pub struct CloudTransfers {
    pub part_size: u64,
    pub parts_in_flight: u32,
    pub transfer_timeout: ConfigDuration,
    pub max_attempts: u32,
}

macro_rules! transfers_of {
    ($t:ty) => {
        impl $t {
            /// The sizes and bounds of its transfers.
            pub fn transfers(&self) -> CloudTransfers {
                CloudTransfers {
                    part_size: self.part_size,
                    parts_in_flight: self.parts_in_flight,
                    transfer_timeout: self.transfer_timeout,
                    max_attempts: self.max_attempts,
                }
            }
        }
    };
}
transfers_of!(GcsStoreConfig);
transfers_of!(AzureStoreConfig);
