//! The `eco` command line: its arguments (clap) and which command runs.
//! Every command's body lives in the `eco` library (`eco::commands`).

use eco::commands::{
    self,
    one_shot::{load_or_exit, one_shot, print_out},
};
use eco::{base::version, local::logging};

use clap::{Parser, Subcommand};
use std::path::PathBuf;
use std::process::ExitCode;

/// eco supervises the local etcd and, with its peers, keeps one etcd cluster
/// alive. Run it on every machine of the group, in place of etcd.
#[derive(Parser)]
#[command(name = "eco", version = version::VERSION, propagate_version = true)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Run the daemon: start (or resume) the local etcd, keep it running, and
    /// serve health, metrics and status over HTTP. Stops etcd cleanly on
    /// SIGTERM or SIGINT; SIGHUP never stops it (the group is read again and
    /// a pass made at once).
    Run {
        /// Path of the configuration file (see config.example.toml); may
        /// also come from the ECO_CONFIG environment variable (the
        /// container image sets it to /etc/eco/eco.toml).
        #[arg(long, short, env = "ECO_CONFIG", value_name = "FILE")]
        config: PathBuf,
        /// This instance's id in the group. Overrides the provider's notion
        /// of it; may also come from the ECO_INSTANCE_ID environment variable.
        #[arg(long, env = "ECO_INSTANCE_ID", value_name = "ID")]
        instance_id: Option<String>,
    },
    /// Work with configuration files.
    Config {
        #[command(subcommand)]
        command: ConfigCommand,
    },
    /// Show what an instance knows and what it will do next, and why: its
    /// phase, readiness, next action with its reason, the etcd process and
    /// member, its durable state and its group. Asks the instance's HTTP API.
    Status {
        /// Address of the instance's API, e.g. 127.0.0.11:2390.
        #[arg(long, value_name = "ADDR:PORT", conflicts_with = "config")]
        api: Option<std::net::SocketAddr>,
        /// Derive the API address from this configuration file (with the
        /// instance's address from its group file).
        #[arg(long, short, value_name = "FILE")]
        config: Option<PathBuf>,
        /// The instance id, with --config (else ECO_INSTANCE_ID or the config).
        #[arg(long, env = "ECO_INSTANCE_ID", value_name = "ID")]
        instance_id: Option<String>,
        /// Print the raw JSON status instead of a summary.
        #[arg(long)]
        json: bool,
        /// The whole group from this instance: every instance's phase,
        /// readiness, member, newest snapshot, next action and why (each
        /// asked at its address on the same API port; one that does not
        /// answer is shown from what this instance knows of it).
        #[arg(long)]
        cluster: bool,
        /// With --api: the API serves HTTPS ([api.tls]); verify it against
        /// this CA file (PEM). With --config this comes from the config.
        #[arg(long, value_name = "FILE", requires = "api")]
        tls_ca: Option<PathBuf>,
        /// With --tls-ca: the name the API's certificate must carry (the
        /// instance's address or DNS name); default: the address of --api.
        #[arg(long, value_name = "NAME", requires = "tls_ca")]
        tls_server_name: Option<String>,
    },
    /// Certificates of the cluster's generated CA ([etcd.tls.generated]).
    Certs {
        #[command(subcommand)]
        command: CertsCommand,
    },
    /// Take or list snapshots in the configured store.
    Snapshot {
        #[command(subcommand)]
        command: SnapshotCommand,
    },
    /// Restore a snapshot (a file, or a snapshot name in the configured
    /// store) into a new data directory for a one-member cluster. The
    /// snapshot's checksum is verified (nothing is put in place unless it
    /// matches); an existing non-empty data directory is refused. Works
    /// for any etcd snapshot, not only eco's.
    #[command(group(clap::ArgGroup::new("point").required(true).args(["from", "latest", "at_revision", "at_time"])))]
    Restore {
        /// A snapshot file, or the name of a snapshot in the store (see
        /// `eco snapshot list`).
        #[arg(long, value_name = "NAME|FILE")]
        from: Option<String>,
        /// A point of the change archive instead (needs --config).
        #[command(flatten)]
        point: PointArgs,
        /// The data directory to create.
        #[arg(long, value_name = "DIR")]
        data_dir: PathBuf,
        /// Member name of the restored cluster's only member.
        #[arg(long, value_name = "NAME")]
        name: String,
        /// Peer URL of that member, e.g. http://10.0.0.5:2380.
        #[arg(long, value_name = "URL")]
        peer_url: String,
        /// Cluster token of the new cluster (default: a fresh random one).
        #[arg(long, value_name = "TOKEN")]
        token: Option<String>,
        /// Configuration file: names the store and the etcd binaries.
        #[arg(long, short, value_name = "FILE")]
        config: Option<PathBuf>,
        /// Directory holding etcdutl or etcdctl (default: from --config, else PATH).
        #[arg(long, value_name = "DIR")]
        etcd_bin_dir: Option<PathBuf>,
    },
    /// Pause eco on every instance of the cluster, for humans doing surgery:
    /// eco keeps supervising etcd and taking snapshots, but takes no
    /// membership, formation or quorum-loss action until `eco resume`.
    /// Written to the configured store; `eco status` shows who paused, when
    /// and why.
    Pause {
        /// Configuration file naming the cluster and the store.
        #[arg(long, short, value_name = "FILE")]
        config: PathBuf,
        /// Why (shown by eco status on every instance).
        #[arg(long, value_name = "TEXT")]
        reason: String,
        /// Who pauses (default: $USER@host).
        #[arg(long, value_name = "WHO")]
        by: Option<String>,
    },
    /// Lift a pause (`eco pause`): eco acts again on every instance.
    Resume {
        /// Configuration file naming the cluster and the store.
        #[arg(long, short, value_name = "FILE")]
        config: PathBuf,
    },
    /// Upgrades of eco itself (the cluster version).
    Upgrade {
        #[command(subcommand)]
        command: UpgradeCommand,
    },
    /// Print eco's version, the git commit it was built from, the etcd
    /// versions it supports, and the formats it reads (the cluster versions
    /// it runs against).
    Version,
}

#[derive(Subcommand)]
enum UpgradeCommand {
    /// Switch the cluster to this release's formats for good, once every
    /// instance of the group runs it (the instances record it; this waits
    /// for them). After it, the previous release of eco can no longer run
    /// against the cluster: going back is no longer possible.
    Finalize {
        /// Configuration file naming the cluster and the store.
        #[arg(long, short, value_name = "FILE")]
        config: PathBuf,
        /// How long to wait for the instances to record it.
        #[arg(long, value_name = "DURATION", default_value = "60s", value_parser = humantime::parse_duration)]
        wait: std::time::Duration,
        /// Who asks (default: $USER@host).
        #[arg(long, value_name = "WHO")]
        by: Option<String>,
    },
}

#[derive(Subcommand)]
enum SnapshotCommand {
    /// Take a snapshot of this instance's etcd now and store it (streamed,
    /// checksummed, verified before it is committed).
    Now {
        /// Configuration file of the instance.
        #[arg(long, short, value_name = "FILE")]
        config: PathBuf,
        /// The instance id (else ECO_INSTANCE_ID or the config).
        #[arg(long, env = "ECO_INSTANCE_ID", value_name = "ID")]
        instance_id: Option<String>,
    },
    /// List the cluster's snapshots in the store, oldest first.
    List {
        /// Configuration file naming the cluster and the store.
        #[arg(long, short, value_name = "FILE")]
        config: PathBuf,
        /// Print JSON instead of a table.
        #[arg(long)]
        json: bool,
    },
    /// Write a point of the change archive to an etcd snapshot file: the
    /// chain's snapshot and segments replayed into a throwaway etcd, its
    /// snapshot saved (etcd's checksum checked). With `eco snapshot import`
    /// into another cluster's store, the way to clone a cluster at a point.
    /// An existing file is refused; the store is only read.
    #[command(group(clap::ArgGroup::new("point").required(true).args(["latest", "at_revision", "at_time"])))]
    Export {
        /// The file to write (refused if it exists).
        #[arg(value_name = "SNAPSHOT_FILE")]
        file: PathBuf,
        /// Configuration file naming the cluster and the store (and the
        /// etcd binaries the replay runs).
        #[arg(long, short, value_name = "FILE")]
        config: PathBuf,
        #[command(flatten)]
        point: PointArgs,
    },
    /// Put an etcd snapshot file made by any tool (etcdctl snapshot save,
    /// another cluster) into the store as a snapshot of this cluster, for a
    /// new cluster to start from (recovery.bootstrap_from). The file is
    /// checked first: etcd's checksum, and a restore into a throwaway etcd.
    Import {
        /// The snapshot file (only read).
        #[arg(value_name = "SNAPSHOT_FILE")]
        file: PathBuf,
        /// Configuration file naming the cluster and the store (and the
        /// etcd binaries the check runs).
        #[arg(long, short, value_name = "FILE")]
        config: PathBuf,
        /// Who imports (recorded in its metadata; default: $USER@host).
        #[arg(long, value_name = "WHO")]
        by: Option<String>,
    },
    /// Make an age X25519 key pair for `[snapshot.encryption]`: the
    /// identity is written to a new file (mode 0600; refused if it exists),
    /// its recipient (public key) printed for `recipients`. Keep the
    /// identity off the instances that only write snapshots, and a copy
    /// of it away from the store: without it, no encrypted snapshot can be
    /// restored.
    Keygen {
        /// The identity file to write.
        #[arg(long, value_name = "FILE")]
        out: PathBuf,
    },
}

/// A point of the change archive: exactly one of these (clap's group on
/// the command says so).
#[derive(clap::Args)]
struct PointArgs {
    /// The newest point the change archive reaches: its chain's snapshot
    /// and segments replayed.
    #[arg(long)]
    latest: bool,
    /// Exactly this revision of the archived cluster.
    #[arg(long, value_name = "REVISION")]
    at_revision: Option<i64>,
    /// The last revision archived at or before this time, RFC 3339 (e.g.
    /// 2026-11-27T14:05:00Z).
    #[arg(long, value_name = "TIME")]
    at_time: Option<String>,
}

#[derive(Subcommand)]
enum CertsCommand {
    /// Issue a client certificate (CN = --user) from the cluster's CA, for
    /// etcdctl or an application. Run it where an instance runs: it needs
    /// the config, the gossip keys and the store.
    Client {
        /// Path of an instance's configuration file.
        #[arg(long, short, value_name = "FILE")]
        config: PathBuf,
        /// The certificate's common name (with etcd authentication: the
        /// user it authenticates as).
        #[arg(long, value_name = "NAME")]
        user: String,
        /// Directory the files go to (ca.crt, NAME.crt, NAME.key), or `-`:
        /// a tar archive of them on standard output (`kubectl exec POD --
        /// eco certs client … --out - | tar -x`).
        #[arg(long, value_name = "DIR|-")]
        out: PathBuf,
        /// How long it is valid: positive, and no longer than the CA has
        /// left (refused otherwise, naming the longest possible).
        #[arg(long, default_value = "30days", value_parser = humantime::parse_duration)]
        validity: std::time::Duration,
    },
}

#[derive(Subcommand)]
enum ConfigCommand {
    /// Check a configuration file. Prints the effective configuration (every
    /// default filled in) and exits 0, or prints every problem found and
    /// exits 2.
    Check {
        /// Path of the configuration file.
        #[arg(value_name = "FILE")]
        file: PathBuf,
        /// Also probe the snapshot store (the one check that contacts
        /// something): reachable, writable, and for S3 whether its
        /// conditional create holds under concurrent writers. Writes and
        /// deletes probe keys under the cluster's prefix.
        #[arg(long)]
        probe_store: bool,
    },
}

/// The most eco's PID-1 init waits, after passing on SIGTERM or SIGINT,
/// before it kills eco: longer than any termination grace period a
/// runtime gives (the runtime's own SIGKILL comes first), so the final
/// snapshot and etcd's clean stop are never cut short by eco itself.
const PID1_STOP_WAIT: std::time::Duration = std::time::Duration::from_secs(3600);

fn main() -> ExitCode {
    // As a container's PID 1 (no init in the image), eco relaunches itself
    // as its own child and stays behind as the init: it passes SIGTERM and
    // SIGINT on, reaps every orphan that the kernel hands to PID 1 (which
    // a tokio program cannot do without stealing its own children's exit
    // statuses), and exits with the child's status. Elsewhere: nothing.
    if let Err(e) = pid1::Pid1Settings::new().timeout(PID1_STOP_WAIT).launch() {
        eprintln!("eco: cannot start as PID 1: {e}");
        return ExitCode::from(1);
    }
    let cli = Cli::parse();
    match cli.command {
        Command::Pause { config, reason, by } => {
            let config = match load_or_exit(&config) {
                Ok(c) => c,
                Err(code) => return code,
            };
            let by = by.unwrap_or_else(commands::pause::default_by);
            one_shot(async move { commands::pause::pause(&config, &by, &reason).await })
        }
        Command::Resume { config } => {
            let config = match load_or_exit(&config) {
                Ok(c) => c,
                Err(code) => return code,
            };
            one_shot(async move { commands::pause::resume(&config).await })
        }
        Command::Upgrade {
            command: UpgradeCommand::Finalize { config, wait, by },
        } => {
            let config = match load_or_exit(&config) {
                Ok(c) => c,
                Err(code) => return code,
            };
            let by = by.unwrap_or_else(commands::pause::default_by);
            one_shot(async move { commands::upgrade::finalize(&config, &by, wait).await })
        }
        Command::Version => {
            print_out(&format!(
                "eco {}\ncommit: {}\nsupported etcd versions: {}\nformats read: {} to {} (runs against a cluster finalized at one of them)\n",
                version::VERSION,
                version::GIT_COMMIT,
                eco::etcd::binaries::SUPPORTED_VERSIONS,
                recovery::cluster_version::OLDEST,
                recovery::cluster_version::NEWEST
            ));
            ExitCode::SUCCESS
        }
        Command::Config {
            command: ConfigCommand::Check { file, probe_store },
        } => commands::config_check::check(&file, probe_store),
        Command::Run {
            config,
            instance_id,
        } => commands::run::run(config, instance_id),
        Command::Status {
            api,
            config,
            instance_id,
            json,
            cluster,
            tls_ca,
            tls_server_name,
        } => {
            let api = api.map(|addr| eco::api::status_client::ApiTarget {
                addr,
                tls: tls_ca.map(|ca| eco::api::tls::ApiClientTls {
                    trusted_ca: eco::config::KeyedPath {
                        key: "--tls-ca",
                        path: ca,
                    },
                    server_name: tls_server_name.unwrap_or_else(|| addr.ip().to_string()),
                }),
            });
            commands::status::status(api, config, instance_id, json, cluster)
        }
        Command::Certs {
            command:
                CertsCommand::Client {
                    config,
                    user,
                    out,
                    validity,
                },
        } => match load_or_exit(&config) {
            Ok(c) => one_shot(async move {
                let out = if out.as_os_str() == "-" {
                    commands::certs::Output::TarToStdout
                } else {
                    commands::certs::Output::Dir(&out)
                };
                commands::certs::client(&c, &user, validity, out).await
            }),
            Err(code) => code,
        },
        Command::Snapshot {
            command:
                SnapshotCommand::Now {
                    config,
                    instance_id,
                },
        } => {
            let config = match load_or_exit(&config) {
                Ok(c) => c,
                Err(code) => return code,
            };
            // Progress of a long transfer goes to the log (stderr).
            logging::init(&config.log);
            one_shot(async move { commands::snapshot::now(&config, instance_id.as_deref()).await })
        }
        Command::Snapshot {
            command: SnapshotCommand::List { config, json },
        } => match load_or_exit(&config) {
            Ok(c) => one_shot(async move { commands::snapshot::list_text(&c, json).await }),
            Err(code) => code,
        },
        Command::Snapshot {
            command:
                SnapshotCommand::Export {
                    file,
                    config,
                    point,
                },
        } => match load_or_exit(&config) {
            Ok(c) => {
                let point = match commands::restore::point_from_args(
                    point.latest,
                    point.at_revision,
                    point.at_time,
                ) {
                    Ok(p) => p,
                    Err(e) => {
                        eprintln!("eco snapshot export: {e}");
                        return ExitCode::from(2);
                    }
                };
                one_shot(async move { commands::snapshot::export(&c, point, &file).await })
            }
            Err(code) => code,
        },
        Command::Snapshot {
            command: SnapshotCommand::Keygen { out },
        } => one_shot(async move { commands::snapshot::keygen(&out) }),
        Command::Snapshot {
            command: SnapshotCommand::Import { file, config, by },
        } => match load_or_exit(&config) {
            Ok(c) => {
                let by = by.unwrap_or_else(commands::pause::default_by);
                one_shot(async move { commands::snapshot::import(&c, &file, &by).await })
            }
            Err(code) => code,
        },
        Command::Restore {
            from,
            point,
            data_dir,
            name,
            peer_url,
            token,
            config,
            etcd_bin_dir,
        } => {
            let source = match commands::restore::Source::from_args(
                from,
                point.latest,
                point.at_revision,
                point.at_time,
            ) {
                Ok(s) => s,
                Err(e) => {
                    eprintln!("eco restore: {e}");
                    return ExitCode::from(2);
                }
            };
            commands::restore::from_cli(
                source,
                data_dir,
                name,
                peer_url,
                token,
                config,
                etcd_bin_dir,
            )
        }
    }
}
