//! Generated TLS (`[etcd.tls.generated]`): the cluster's own small PKI, so
//! that a cluster gets encryption and authentication on both etcd surfaces
//! without an operator-run CA.
//!
//! - [`ca`]: the CA (ECDSA P-256, ten years) and what it issues: each
//!   member's certificate (server and client, its address or DNS name and
//!   `extra_names` as SANs), eco's client certificate, operators' client
//!   certificates (`eco certs client`). Pure.
//! - [`sealed`]: the CA as the store keeps it (`<cluster>/pki/ca.json`):
//!   the certificate in the clear, the private key sealed under keys
//!   derived from the gossip keys. Pure.
//! - [`provision`]: obtaining the CA (the first instance that needs it
//!   while the cluster is formed makes it and creates the object if
//!   absent: one CA per cluster; a cluster whose CA object is gone gets no
//!   new one, `recovery::certificates::missing_ca`) and keeping this
//!   instance's files issued and fresh; `recovery::certificates` decides
//!   when to issue again, and what an instance does without the CA.
//!
//! Where the CA key is: sealed in the store, and in the memory of an eco
//! process while it issues. Never on disk in the clear, never in `/status`,
//! logs or gossip. Who can obtain it: a holder of a gossip key and read
//! access to the store — the gossip key is the cluster's root secret.
//!
//! What it does not do: rotate the CA itself, revoke certificates (they are
//! short-lived instead: 90 days by default, renewed 30 days before
//! expiry), or turn TLS on for a running plaintext cluster.

pub mod ca;
pub mod provision;
pub mod sealed;
