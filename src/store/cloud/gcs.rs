//! The Google Cloud Storage store's builder (`[snapshot.gcs]`): a
//! [`CloudStore`] over `object_store`'s GCS client. Credentials: the
//! service-account key file `credentials_file`; else the environment's
//! application default credentials (`GOOGLE_APPLICATION_CREDENTIALS`,
//! gcloud's file, then the metadata server — workload identity on GKE);
//! `unsigned` sends none (an emulator).

use super::CloudStore;
use super::errors::chain;
use crate::config::GcsStoreConfig;
use crate::store::StoreError;
use object_store::StaticCredentialProvider;
use object_store::gcp::{GcpCredential, GoogleCloudStorageBuilder};
use std::sync::Arc;

/// The store of `cluster` in the configured bucket. Contacts nothing
/// (credentials are fetched on the first call); a key file that cannot be
/// read is an error naming it.
pub fn connect(config: &GcsStoreConfig, cluster: &str) -> Result<CloudStore, StoreError> {
    let location = format!("gs://{}", config.bucket);
    if let Some(file) = &config.credentials_file
        && let Err(e) = std::fs::metadata(file)
    {
        return Err(StoreError::Unavailable(format!(
            "{location}: snapshot.gcs.credentials_file {}: {e}",
            file.display()
        )));
    }
    let endpoint = config
        .endpoint
        .as_deref()
        .map(|e| e.trim_end_matches('/').to_string());
    let allow_http = endpoint
        .as_deref()
        .is_some_and(|e| e.starts_with("http://"));
    CloudStore::connect(
        location.clone(),
        &config.prefix,
        cluster,
        &config.transfers(),
        allow_http,
        &|options, retry| {
            let mut builder = if config.unsigned {
                // `skip_signature` alone leaves object_store's writes
                // fetching a token (from the metadata server): an empty
                // static bearer is what "no credentials" is for them.
                GoogleCloudStorageBuilder::new()
                    .with_skip_signature(true)
                    .with_credentials(Arc::new(StaticCredentialProvider::new(GcpCredential {
                        bearer: String::new(),
                    })))
            } else {
                GoogleCloudStorageBuilder::from_env()
            };
            builder = builder
                .with_bucket_name(&config.bucket)
                .with_client_options(options)
                .with_retry(retry);
            if let Some(endpoint) = &endpoint {
                builder = builder.with_base_url(endpoint);
            }
            if let Some(file) = &config.credentials_file {
                builder = builder.with_service_account_path(file.to_string_lossy());
            }
            let built = builder.build().map_err(|e| {
                StoreError::Unavailable(format!(
                    "{location}: cannot build the client: {}",
                    chain(&e)
                ))
            })?;
            Ok(Arc::new(built))
        },
    )
}
