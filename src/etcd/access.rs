//! The one way eco builds an etcd client: [`EtcdAccess`] holds how eco
//! reaches etcd members — the timeout of every call, and the connection
//! options, which is where client TLS and credentials are added — so every
//! client (probes, membership changes, snapshots, the WAL replay's
//! temporary etcd, the CLI) connects the same way. Nothing else calls
//! `etcd_client::Client::connect`.
//!
//! One client per member: Status, Snapshot and Defragment answer for the
//! member a client is connected to.
//!
//! Credentials (`[auth] root_password_file`): [`EtcdAccess::connect`]
//! authenticates as `root` (etcd answers "not enabled" while its
//! authentication is off: then the client goes without); the file is read
//! on every connection. [`EtcdAccess::connect_for_status`] authenticates
//! too when it can, and goes without when it cannot: etcd before its RBAC
//! fixes (3.5.28, 3.4.42) answers Status and MemberList without
//! authentication, later releases refuse them without a user; etcd's
//! Authenticate needs a leader and is refused by learners, and the probes
//! must answer without a quorum and on learners wherever the release
//! allows it. With certificate authentication eco's identity is its TLS
//! client certificate and nothing changes here.

use super::credentials::{self, Credentials};
use super::members::Member;
use super::probe_error::ProbeError;
use super::tls::ClientTls;
use crate::config::{Config, EtcdConfig, Scheme};
use etcd_client::{Client, ConnectOptions};
use std::time::Duration;

/// How eco reaches etcd members.
#[derive(Clone, Debug)]
pub struct EtcdAccess {
    call_timeout: Duration,
    /// Where members are probed when they advertise other client URLs (a
    /// load balancer, `etcd.advertise_client_urls`): the host of their
    /// peer URL with the client port, and the scheme their client surface
    /// serves (`flags::client_scheme` of their recorded peer scheme: `http`
    /// while TLS is being turned on and they wait for their switch).
    /// `None`: their first advertised client URL.
    member_client: Option<(super::flags::SurfaceSchemes, u32)>,
    /// TLS toward the client surface; `None`: plain.
    tls: Option<ClientTls>,
    /// eco's password identity; `None`: none (no authentication, or the
    /// TLS client certificate's CN).
    credentials: Option<Credentials>,
}

/// How a client from [`EtcdAccess::connect`] is authenticated.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Authentication {
    /// No credentials configured (none, or the client certificate's CN).
    NoCredentials,
    /// etcd's authentication is not enabled: the client goes without.
    NotEnabled,
    /// Authenticated as this user.
    As(String),
}

/// A long call — a snapshot streamed from a member, a compaction, a
/// transfer into the store — gets this many call timeouts: one bound for
/// every such call, so that `etcd.call_timeout` scales them all.
pub const LONG_CALL_TIMEOUTS: u32 = 5;

impl EtcdAccess {
    /// Every call times out after `call_timeout`.
    pub fn new(call_timeout: Duration) -> Self {
        Self {
            call_timeout,
            member_client: None,
            tls: None,
            credentials: None,
        }
    }

    /// How eco itself reaches etcd: [`Self::from_config`] of `[etcd]`, and
    /// the credentials of `[auth] root_password_file`.
    pub fn for_eco(config: &Config) -> Self {
        Self::from_config(&config.etcd).with_credentials(Credentials::from_config(&config.auth))
    }

    /// The same access with these credentials.
    pub fn with_credentials(mut self, credentials: Option<Credentials>) -> Self {
        self.credentials = credentials;
        self
    }

    /// The access the config describes (`etcd.call_timeout`; members
    /// reached by their peer host when `etcd.advertise_client_urls` tells
    /// clients something else).
    pub fn from_config(config: &EtcdConfig) -> Self {
        let mut access = Self::new(config.call_timeout.get());
        access.tls = ClientTls::from_config(&config.tls_files());
        if !config.advertise_client_urls.is_empty() {
            access.member_client =
                Some((super::flags::SurfaceSchemes::of(config), config.client_port));
        }
        access
    }

    /// Where eco asks member `m` itself (Status answers for the member a
    /// client talks to): its first advertised client URL, or — when the
    /// cluster advertises a load balancer — its peer URL's host with the
    /// client scheme and port.
    pub fn member_endpoint(&self, m: &Member) -> Option<String> {
        match self.member_client {
            None => m.client_urls.first().cloned(),
            Some((schemes, port)) => {
                let peer = m.peer_urls.first()?;
                let scheme = schemes.client_for(Scheme::of_url(peer)?);
                let host = url_host(peer)?;
                Some(format!("{}://{host}:{port}", scheme.as_str()))
            }
        }
    }

    /// The same access with another call timeout (long transfers).
    pub fn with_call_timeout(&self, call_timeout: Duration) -> Self {
        let mut access = self.clone();
        access.call_timeout = call_timeout;
        access
    }

    pub fn call_timeout(&self) -> Duration {
        self.call_timeout
    }

    /// The same access, verifying etcd's certificate as `name`'s whatever
    /// address a member is reached at (the WAL replay's member on
    /// 127.0.0.1 serves this instance's certificate).
    pub fn verifying_as(&self, name: &str) -> Self {
        let mut access = self.clone();
        access.tls = self.tls.as_ref().map(|t| t.verifying_as(name));
        access
    }

    fn options(&self, endpoint: &str) -> Result<ConnectOptions, ProbeError> {
        let options = ConnectOptions::new()
            .with_connect_timeout(self.call_timeout)
            .with_timeout(self.call_timeout);
        match &self.tls {
            None => Ok(options),
            // A member that still serves `http` (TLS being turned on for
            // the cluster) is reached the way its URL says.
            Some(_) if endpoint.starts_with("http://") => Ok(options),
            Some(tls) => {
                let tls = tls.options().map_err(|e| ProbeError::Tls {
                    endpoint: endpoint.into(),
                    message: e.to_string(),
                })?;
                Ok(options.with_tls(tls))
            }
        }
    }

    /// A client of the member at `endpoint` for Status and MemberList.
    /// Releases before etcd's RBAC fixes (3.5.28, 3.4.42) answer them
    /// without authentication — also without a leader, and on learners;
    /// 3.5.28 and later refuse them without a user ("user name is
    /// empty") once authentication is enabled. So with credentials the
    /// client authenticates ([`Self::connect_authenticated`]), and when
    /// that cannot be done (authenticating goes through raft: no leader,
    /// a learner) it falls back to a client without, which older releases
    /// still answer. A password-less identity (a client certificate's CN)
    /// needs neither. The connection is lazy: errors show on calls.
    pub async fn connect_for_status(&self, endpoint: &str) -> Result<Client, ProbeError> {
        if self.credentials.is_some()
            && let Ok((client, _)) = self.connect_authenticated(endpoint).await
        {
            return Ok(client);
        }
        self.plain_connect(endpoint).await
    }

    /// A client without a user name.
    async fn plain_connect(&self, endpoint: &str) -> Result<Client, ProbeError> {
        self.timed_connect(endpoint, self.options(endpoint)?).await
    }

    /// A client of the member at `endpoint`, authenticated when eco has
    /// credentials and etcd's authentication is enabled (see
    /// [`Self::connect_authenticated`]).
    pub async fn connect(&self, endpoint: &str) -> Result<Client, ProbeError> {
        Ok(self.connect_authenticated(endpoint).await?.0)
    }

    /// A client of the member at `endpoint` and how it is authenticated.
    /// With credentials, connecting authenticates (one call, within the
    /// call timeout): with the file's password, then the one it held
    /// before; "authentication is not enabled" gives a client without.
    /// Refused passwords are an error naming the user and the file, never
    /// the password.
    pub async fn connect_authenticated(
        &self,
        endpoint: &str,
    ) -> Result<(Client, Authentication), ProbeError> {
        let Some(creds) = &self.credentials else {
            let client = self.plain_connect(endpoint).await?;
            return Ok((client, Authentication::NoCredentials));
        };
        let refused = |message: String| ProbeError::Auth {
            endpoint: endpoint.into(),
            user: creds.user().to_string(),
            message,
        };
        let passwords = creds.candidates().map_err(|e| refused(e.to_string()))?;
        let tried = passwords.len();
        let mut last = String::new();
        for password in passwords {
            let options = self
                .options(endpoint)?
                .with_user(creds.user(), password)
                .with_auto_token_refresh(true);
            match self.timed_connect(endpoint, options).await {
                Ok(client) => return Ok((client, Authentication::As(creds.user().into()))),
                Err(ProbeError::Etcd { source, .. }) if credentials::auth_not_enabled(&source) => {
                    let client = self.plain_connect(endpoint).await?;
                    return Ok((client, Authentication::NotEnabled));
                }
                Err(ProbeError::Etcd { source, .. }) if credentials::auth_failed(&source) => {
                    last = source.to_string();
                }
                Err(e) => return Err(e),
            }
        }
        Err(refused(format!(
            "etcd refused the password of auth.root_password_file {}{} ({last})",
            creds.file().display(),
            if tried > 1 {
                " and the one the file held before"
            } else {
                ""
            }
        )))
    }

    async fn timed_connect(
        &self,
        endpoint: &str,
        options: ConnectOptions,
    ) -> Result<Client, ProbeError> {
        let connecting = Client::connect([endpoint], Some(options));
        match tokio::time::timeout(self.call_timeout, connecting).await {
            Err(_) => Err(ProbeError::Timeout {
                endpoint: endpoint.into(),
                timeout: self.call_timeout,
            }),
            Ok(Err(source)) => Err(ProbeError::Etcd {
                endpoint: endpoint.into(),
                source,
            }),
            Ok(Ok(c)) => Ok(c),
        }
    }
}

/// The host of `scheme://host:port[/path]`, IPv6 in brackets as written.
fn url_host(url: &str) -> Option<&str> {
    let rest = url.split_once("://")?.1;
    let authority = rest.split('/').next()?;
    let host = match authority.rsplit_once(':') {
        Some((h, port)) if !port.contains(']') => h,
        _ => authority,
    };
    (!host.is_empty()).then_some(host)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn member(peer: &str, client: &str) -> Member {
        Member {
            id: 1,
            name: "a".into(),
            peer_urls: vec![peer.into()],
            client_urls: vec![client.into()],
            is_learner: false,
        }
    }

    #[test]
    fn members_behind_a_load_balancer_are_asked_at_their_own_host() {
        let m = member("http://10.0.0.5:2380", "http://etcd.example.com:2379");
        let plain = EtcdAccess::new(Duration::from_secs(1));
        assert_eq!(
            plain.member_endpoint(&m).as_deref(),
            Some("http://etcd.example.com:2379")
        );
        let mut config: EtcdConfig = toml::from_str("").unwrap();
        config.advertise_client_urls = vec!["http://etcd.example.com:2379".into()];
        config.client_port = 12379;
        let behind = EtcdAccess::from_config(&config);
        assert_eq!(
            behind.member_endpoint(&m).as_deref(),
            Some("http://10.0.0.5:12379")
        );
        let v6 = member("http://[::1]:2380", "");
        assert_eq!(
            behind.member_endpoint(&v6).as_deref(),
            Some("http://[::1]:12379")
        );
        let pod = member("http://eco-0.eco.ns.svc:2380/", "");
        assert_eq!(
            behind.member_endpoint(&pod).as_deref(),
            Some("http://eco-0.eco.ns.svc:12379")
        );
        assert_eq!(url_host("nonsense"), None);
    }

    /// Behind a load balancer, while TLS is being turned on: a member whose
    /// peer URL is still `http` serves its client port over `http` too.
    #[test]
    fn members_behind_a_load_balancer_are_asked_with_the_scheme_they_serve() {
        let mut config: EtcdConfig = toml::from_str("").unwrap();
        config.advertise_client_urls = vec!["https://etcd.example.com:2379".into()];
        config.tls.generated = Some(Default::default());
        let access = EtcdAccess::from_config(&config);
        let waiting = member("http://10.0.0.5:2380", "https://etcd.example.com:2379");
        assert_eq!(
            access.member_endpoint(&waiting).as_deref(),
            Some("http://10.0.0.5:2379")
        );
        let switched = member("https://10.0.0.5:2380", "https://etcd.example.com:2379");
        assert_eq!(
            access.member_endpoint(&switched).as_deref(),
            Some("https://10.0.0.5:2379")
        );
    }
}
