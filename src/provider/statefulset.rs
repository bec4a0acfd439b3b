//! The StatefulSet provider: this pod is `<set>-<ordinal>`, its peers are
//! the DNS names the set's headless service gives every ordinal below the
//! desired size, and a pod at or above it is gone (`recovery::statefulset`
//! decides both). No Kubernetes API is called: everything comes from the
//! pod's environment and the config.
//!
//! - **The pod**: its name from `--instance-id` / `ECO_INSTANCE_ID`, else
//!   `POD_NAME` (the downward API), else `HOSTNAME`, else the host name
//!   (a pod's host name is its name); its namespace from the config, else
//!   `POD_NAMESPACE`, else the service account's namespace file; its zone
//!   from `ECO_ZONE` (the chart feeds it from the pod's
//!   `topology.kubernetes.io/zone` label; empty or unset: unknown).
//! - **Hosts are names**: `<pod>.<service>.<namespace>.svc.<domain>`.
//!   etcd advertises them (a pod's IP changes on every restart, its name
//!   does not); listeners bind every address; gossip resolves them again
//!   on every refresh.
//! - **The desired size** from `replicas`, or from `replicas_file`, read
//!   again on every `discover` (a ConfigMap mounted as a directory follows
//!   `helm upgrade --set replicas=N` without a restart): a number from 1
//!   to `recovery::statefulset::MAX_REPLICAS`. A file that cannot be read
//!   or holds anything else is an error (at start, eco does not start);
//!   while eco runs, `confirmed.rs` keeps the last good group (logged once
//!   per distinct error, shown in `/status`).
//! - Only this pod's zone is known (eco has no API access to read the
//!   others'); the others' zones are unknown, never guessed.

use super::{Group, Host, Identity, Instance, Provider, ProviderError, check_instance_id};
use crate::config::StatefulSetProviderConfig;
use recovery::statefulset;
use std::collections::BTreeSet;
use std::net::{IpAddr, Ipv4Addr};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// Where the service account's namespace is mounted in a pod.
const SERVICE_ACCOUNT_NAMESPACE: &str = "/var/run/secrets/kubernetes.io/serviceaccount/namespace";

/// Where the desired size comes from.
#[derive(Clone, Debug)]
enum Replicas {
    Fixed(u32),
    File(PathBuf),
}

/// What the pod's environment says, gathered once (plain data, so the
/// identity rules are tested without touching the process environment).
#[derive(Clone, Debug, Default)]
pub struct PodEnvironment {
    /// `--instance-id` or `ECO_INSTANCE_ID`.
    pub instance_id: Option<String>,
    pub pod_name: Option<String>,
    pub hostname_env: Option<String>,
    pub hostname: Option<String>,
    pub namespace_env: Option<String>,
    pub namespace_file: Option<String>,
    pub zone: Option<String>,
}

impl PodEnvironment {
    /// This process's environment.
    pub fn read(instance_id: Option<&str>) -> Self {
        let var = |k: &str| std::env::var(k).ok();
        PodEnvironment {
            instance_id: instance_id.map(str::to_string),
            pod_name: var("POD_NAME"),
            hostname_env: var("HOSTNAME"),
            hostname: nix::unistd::gethostname()
                .ok()
                .and_then(|h| h.into_string().ok()),
            namespace_env: var("POD_NAMESPACE"),
            namespace_file: std::fs::read_to_string(SERVICE_ACCOUNT_NAMESPACE).ok(),
            zone: var("ECO_ZONE"),
        }
    }
}

fn non_empty(v: &Option<String>) -> Option<String> {
    v.as_deref()
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(str::to_string)
}

/// The pod's place in its set, as the config and environment give it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Pod {
    pub name: String,
    pub set: String,
    pub ordinal: u32,
    pub namespace: String,
    pub zone: Option<String>,
}

/// Who this pod is: every rule of the module docs, each failure naming
/// where the value came from and what to set.
pub fn pod(config: &StatefulSetProviderConfig, env: &PodEnvironment) -> Result<Pod, ProviderError> {
    let name = non_empty(&env.instance_id)
        .or_else(|| non_empty(&env.pod_name))
        .or_else(|| non_empty(&env.hostname_env))
        .or_else(|| non_empty(&env.hostname))
        .ok_or_else(|| {
            ProviderError::NotConfigured(
                "no pod name: set POD_NAME (the downward API's metadata.name), HOSTNAME, or --instance-id".into(),
            )
        })?;
    check_instance_id(&name).map_err(ProviderError::BadInstanceId)?;
    let (set, ordinal) = match &config.set {
        Some(set) => (
            set.clone(),
            statefulset::ordinal(set, &name).ok_or_else(|| {
                ProviderError::BadInstanceId(format!(
                    "{name:?} is not a pod of the StatefulSet {set:?} (provider.statefulset.set): a pod is named \"{set}-<ordinal>\""
                ))
            })?,
        ),
        None => {
            let (set, ordinal) = statefulset::split(&name).ok_or_else(|| {
                ProviderError::BadInstanceId(format!(
                    "{name:?} does not end with \"-<ordinal>\": it is not the name of a StatefulSet's pod (set POD_NAME, or provider.statefulset.set)"
                ))
            })?;
            (set.to_string(), ordinal)
        }
    };
    let namespace = config
        .namespace
        .clone()
        .or_else(|| non_empty(&env.namespace_env))
        .or_else(|| non_empty(&env.namespace_file))
        .ok_or_else(|| {
            ProviderError::NotConfigured(format!(
                "no namespace: set provider.statefulset.namespace or POD_NAMESPACE (the downward API's metadata.namespace); {SERVICE_ACCOUNT_NAMESPACE} is not mounted"
            ))
        })?;
    Ok(Pod {
        name,
        set,
        ordinal,
        namespace,
        zone: non_empty(&env.zone),
    })
}

/// The stable DNS name of the pod `pod`.
fn host_of(pod: &str, service: &str, namespace: &str, domain: &str) -> Host {
    // Every part was checked (the config, the pod name), so this parses.
    Host::parse(&format!("{pod}.{service}.{namespace}.svc.{domain}"))
        .unwrap_or_else(|_| Host::Name(pod.to_string()))
}

/// Parses the desired size in a replicas file: one decimal number from 1
/// to [`statefulset::MAX_REPLICAS`].
pub fn parse_replicas(text: &str, path: &Path) -> Result<u32, ProviderError> {
    let t = text.trim();
    match t.parse::<u32>() {
        Ok(n) if (1..=statefulset::MAX_REPLICAS).contains(&n) => Ok(n),
        _ => Err(ProviderError::MalformedReplicas {
            path: path.to_path_buf(),
            message: format!(
                "{t:?} is not a desired size; allowed: a number from 1 to {} (etcd advises at most 7 members)",
                statefulset::MAX_REPLICAS
            ),
        }),
    }
}

/// The StatefulSet provider.
pub struct StatefulSetProvider {
    identity: Identity,
    pod: Pod,
    service: String,
    domain: String,
    replicas: Replicas,
    refresh: Duration,
}

impl StatefulSetProvider {
    /// This pod's provider; the desired size must read now.
    /// `refresh` is how often the desired size is read again
    /// (`provider.refresh_interval`).
    pub fn open(
        config: &StatefulSetProviderConfig,
        env: &PodEnvironment,
        refresh: Duration,
    ) -> Result<Self, ProviderError> {
        let pod = pod(config, env)?;
        let replicas = match (config.replicas, &config.replicas_file) {
            (Some(n), None) => Replicas::Fixed(n),
            (None, Some(path)) => Replicas::File(path.clone()),
            _ => {
                return Err(ProviderError::NotConfigured(
                    "provider.statefulset needs exactly one of `replicas` and `replicas_file`"
                        .into(),
                ));
            }
        };
        let host = host_of(
            &pod.name,
            &config.service,
            &pod.namespace,
            &config.cluster_domain,
        );
        let provider = Self {
            identity: Identity {
                id: pod.name.clone(),
                host,
                bind: IpAddr::V4(Ipv4Addr::UNSPECIFIED),
                zone: pod.zone.clone(),
            },
            pod,
            service: config.service.clone(),
            domain: config.cluster_domain.clone(),
            replicas,
            refresh,
        };
        provider.desired()?;
        Ok(provider)
    }

    /// The desired size, read now.
    fn desired(&self) -> Result<u32, ProviderError> {
        match &self.replicas {
            Replicas::Fixed(n) if (1..=statefulset::MAX_REPLICAS).contains(n) => Ok(*n),
            Replicas::Fixed(n) => Err(ProviderError::NotConfigured(format!(
                "provider.statefulset.replicas = {n}; allowed: 1 to {}",
                statefulset::MAX_REPLICAS
            ))),
            Replicas::File(path) => {
                let text = std::fs::read_to_string(path).map_err(|source| {
                    ProviderError::ReadReplicas {
                        path: path.clone(),
                        source,
                    }
                })?;
                parse_replicas(&text, path)
            }
        }
    }

    /// The group of `desired` pods.
    fn group(&self, desired: u32) -> Group {
        let mut instances: Vec<Instance> = statefulset::members(&self.pod.set, desired)
            .into_iter()
            .map(|id| Instance {
                host: host_of(&id, &self.service, &self.pod.namespace, &self.domain),
                zone: (id == self.pod.name)
                    .then(|| self.pod.zone.clone())
                    .flatten(),
                id,
            })
            .collect();
        instances.sort_by(|a, b| a.id.cmp(&b.id));
        Group {
            self_id: self.pod.name.clone(),
            instances,
            desired_size: desired as usize,
            departing: Default::default(),
        }
    }
}

#[async_trait::async_trait]
impl Provider for StatefulSetProvider {
    fn identity(&self) -> &Identity {
        &self.identity
    }

    async fn discover(&self) -> Result<Group, ProviderError> {
        Ok(self.group(self.desired()?))
    }

    async fn departed(&self, ids: &BTreeSet<String>) -> Result<BTreeSet<String>, ProviderError> {
        Ok(statefulset::departed(&self.pod.set, self.desired()?, ids))
    }

    fn refresh_interval(&self) -> Duration {
        self.refresh
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(toml_text: &str) -> StatefulSetProviderConfig {
        toml::from_str(toml_text).unwrap()
    }

    fn env(pod: &str) -> PodEnvironment {
        PodEnvironment {
            pod_name: Some(pod.into()),
            namespace_env: Some("prod".into()),
            zone: Some("eu-west-1b".into()),
            ..Default::default()
        }
    }

    #[tokio::test]
    async fn peers_are_every_ordinal_below_the_desired_size_by_dns_name() {
        let c = config("service = \"eco-headless\"\nreplicas = 3\n");
        let p = StatefulSetProvider::open(&c, &env("eco-1"), Duration::from_secs(5)).unwrap();
        let me = p.identity();
        assert_eq!(me.id, "eco-1");
        assert_eq!(
            me.host,
            Host::Name("eco-1.eco-headless.prod.svc.cluster.local".into())
        );
        assert_eq!(me.bind.to_string(), "0.0.0.0");
        assert_eq!(me.zone.as_deref(), Some("eu-west-1b"));
        let g = p.discover().await.unwrap();
        assert_eq!(g.desired_size, 3);
        let hosts: Vec<String> = g.instances.iter().map(|i| i.host.to_string()).collect();
        assert_eq!(
            hosts,
            [
                "eco-0.eco-headless.prod.svc.cluster.local",
                "eco-1.eco-headless.prod.svc.cluster.local",
                "eco-2.eco-headless.prod.svc.cluster.local"
            ]
        );
        // Only this pod's zone is known.
        assert_eq!(
            g.instances
                .iter()
                .map(|i| i.zone.is_some())
                .collect::<Vec<_>>(),
            [false, true, false]
        );
        let ids = ["eco-0", "eco-2", "eco-3", "eco-7", "web-4"]
            .map(String::from)
            .into_iter()
            .collect();
        assert_eq!(
            p.departed(&ids)
                .await
                .unwrap()
                .into_iter()
                .collect::<Vec<_>>(),
            ["eco-3", "eco-7"]
        );
    }

    #[tokio::test]
    async fn a_pod_at_or_above_the_desired_size_is_not_in_its_group() {
        let c = config(
            "service = \"s\"\nreplicas = 3\nnamespace = \"ns\"\ncluster_domain = \"k8s.example\"\n",
        );
        let p = StatefulSetProvider::open(&c, &env("eco-3"), Duration::from_secs(5)).unwrap();
        let g = p.discover().await.unwrap();
        assert!(g.me().is_none(), "eco-3 of 3 is leaving");
        assert_eq!(
            p.identity().host.to_string(),
            "eco-3.s.ns.svc.k8s.example",
            "the config's namespace and domain win"
        );
    }

    #[tokio::test]
    async fn the_replicas_file_is_read_again_and_a_bad_one_is_an_error_naming_it() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("replicas");
        std::fs::write(&file, "3\n").unwrap();
        let mut c = config("service = \"s\"\n");
        c.replicas_file = Some(file.clone());
        let p = StatefulSetProvider::open(&c, &env("eco-0"), Duration::from_secs(5)).unwrap();
        assert_eq!(p.discover().await.unwrap().instances.len(), 3);
        std::fs::write(&file, "5").unwrap();
        assert_eq!(p.discover().await.unwrap().desired_size, 5);
        std::fs::write(&file, "9").unwrap();
        assert_eq!(p.discover().await.unwrap().desired_size, 9, "the most");
        // Nothing departs on a bad read: it is an error (the confirmed view
        // keeps the last good group), never a size, never an abort.
        let ids = ["eco-4".to_string()].into_iter().collect();
        for bad in [
            "five",
            "0",
            "",
            "-1",
            "10",
            "100000000",
            "4294967295",
            "99999999999",
        ] {
            std::fs::write(&file, bad).unwrap();
            let e = p.discover().await.unwrap_err().to_string();
            assert!(
                e.starts_with(&format!("replicas file {}", file.display()))
                    && e.contains("from 1 to 9"),
                "{bad:?}: {e}"
            );
            assert!(!e.contains("group file"), "{e}");
            assert!(p.departed(&ids).await.is_err(), "{bad:?}");
        }
        std::fs::remove_file(&file).unwrap();
        let e = p.discover().await.unwrap_err().to_string();
        assert!(e.contains("cannot read the replicas file"), "{e}");
        std::fs::write(&file, "3").unwrap();
        assert_eq!(p.departed(&ids).await.unwrap().len(), 1);
        // At start the file must read, and hold a sane size.
        std::fs::remove_file(&file).unwrap();
        let e = StatefulSetProvider::open(&c, &env("eco-0"), Duration::from_secs(5))
            .err()
            .unwrap();
        assert!(e.to_string().contains("replicas file"), "{e}");
        std::fs::write(&file, "4294967295").unwrap();
        let e = StatefulSetProvider::open(&c, &env("eco-0"), Duration::from_secs(5))
            .err()
            .unwrap();
        assert!(e.to_string().contains("from 1 to 9"), "{e}");
    }

    #[test]
    fn the_pod_comes_from_the_environment_in_order() {
        let c = config("service = \"s\"\nreplicas = 1\n");
        let e = PodEnvironment {
            instance_id: Some("given-2".into()),
            pod_name: Some("podname-1".into()),
            hostname_env: Some("host-0".into()),
            namespace_file: Some("from-file\n".into()),
            ..Default::default()
        };
        let p = pod(&c, &e).unwrap();
        assert_eq!(
            (p.name.as_str(), p.set.as_str(), p.ordinal),
            ("given-2", "given", 2)
        );
        assert_eq!(p.namespace, "from-file");
        assert_eq!(p.zone, None);
        let e = PodEnvironment {
            hostname_env: Some(" ".into()),
            hostname: Some("eco-etcd-4".into()),
            namespace_env: Some("ns".into()),
            zone: Some("".into()),
            ..Default::default()
        };
        let p = pod(&c, &e).unwrap();
        assert_eq!((p.set.as_str(), p.ordinal), ("eco-etcd", 4));
        assert_eq!(p.zone, None, "an empty zone is unknown");
    }

    #[test]
    fn a_pod_that_is_not_of_the_set_is_refused_with_what_to_set() {
        let c = config("service = \"s\"\nreplicas = 1\n");
        let no_ordinal = pod(&c, &env("my-laptop")).unwrap_err().to_string();
        assert!(no_ordinal.contains("-<ordinal>"), "{no_ordinal}");
        let c = config("service = \"s\"\nreplicas = 1\nset = \"etcd\"\n");
        let other_set = pod(&c, &env("eco-0")).unwrap_err().to_string();
        assert!(other_set.contains("\"etcd-<ordinal>\""), "{other_set}");
        let no_namespace = pod(
            &config("service = \"s\"\nreplicas = 1\n"),
            &PodEnvironment {
                pod_name: Some("eco-0".into()),
                ..Default::default()
            },
        )
        .unwrap_err()
        .to_string();
        assert!(no_namespace.contains("POD_NAMESPACE"), "{no_namespace}");
        let nothing = pod(&c, &PodEnvironment::default()).unwrap_err().to_string();
        assert!(nothing.contains("POD_NAME"), "{nothing}");
    }
}
