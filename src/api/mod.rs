//! eco's HTTP API and the two sides of it: the read-only server
//! ([`server`]: `/healthz`, `/readyz`, `/metrics`, `/status`), the
//! `/status` document ([`status`], output only), where it is served
//! ([`address`]), its TLS ([`tls`]), its connection budget ([`budget`]),
//! and the client `eco status` and `eco wait` use ([`status_client`]).
//!
//! Nothing served here can steer eco, and nothing eco decides reads the
//! `/status` document back.

pub mod address;
pub mod budget;
pub mod server;
pub mod status;
pub mod status_client;
pub mod tls;
