//! The Azure Blob store's builder (`[snapshot.azure]`): a [`CloudStore`]
//! over `object_store`'s Azure client. Credentials: the account's access
//! key from `access_key_file`; else the environment's identity (workload
//! identity as AKS sets it — `AZURE_FEDERATED_TOKEN_FILE`,
//! `AZURE_CLIENT_ID`, `AZURE_TENANT_ID` — else the managed identity).
//!
//! An emulator (azurite) is an `endpoint` with the account in its path
//! (`http://127.0.0.1:10000/devstoreaccount1`) and azurite's well-known
//! key in `access_key_file`: `object_store`'s own emulator switch takes
//! azurite's address from the process environment only
//! (`AZURITE_BLOB_STORAGE_URL`), which a config cannot set per store.

use super::CloudStore;
use super::errors::chain;
use crate::config::AzureStoreConfig;
use crate::store::StoreError;
use object_store::azure::MicrosoftAzureBuilder;
use std::sync::Arc;

/// The store of `cluster` in the configured container. Contacts nothing
/// (tokens are fetched on the first call); reads the access key file, an
/// error naming it when it cannot be read or is empty.
pub fn connect(config: &AzureStoreConfig, cluster: &str) -> Result<CloudStore, StoreError> {
    let location = format!("azure://{}/{}", config.account, config.container);
    let access_key = match &config.access_key_file {
        None => None,
        Some(file) => {
            let text = std::fs::read_to_string(file).map_err(|e| {
                StoreError::Unavailable(format!(
                    "{location}: snapshot.azure.access_key_file {}: {e}",
                    file.display()
                ))
            })?;
            let key = text.trim().to_string();
            if key.is_empty() {
                return Err(StoreError::Unavailable(format!(
                    "{location}: snapshot.azure.access_key_file {} is empty",
                    file.display()
                )));
            }
            Some(key)
        }
    };
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
            let mut builder = MicrosoftAzureBuilder::from_env()
                .with_account(&config.account)
                .with_container_name(&config.container)
                .with_client_options(options)
                .with_retry(retry);
            if let Some(endpoint) = &endpoint {
                builder = builder.with_endpoint(endpoint.clone());
            }
            if let Some(key) = &access_key {
                builder = builder.with_access_key(key);
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
