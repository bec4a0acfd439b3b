//! The local AWS API the AWS tests run against: moto (EC2, Auto Scaling,
//! S3 on one loopback endpoint) plus the test kit's additions
//! (`testkit/aws/`, see its README): termination lifecycle hooks that
//! wait (`Terminating:Wait`) with `CompleteLifecycleAction` and
//! `RecordLifecycleActionHeartbeat`, an IMDSv2 server per instance on
//! (its loopback address, [`Emulator::imds_port`]), a record of the
//! lifecycle action calls, and API outages on demand.
//!
//! [`Emulator::start`] runs `testkit/aws/emulator.py` with the Python of
//! `.tools/aws-venv` (installed by `make deps`) and kills it by pid when
//! dropped. [`Emulator::create_group`] builds an auto-scaling group with
//! the AWS SDK: a VPC (the /16 of its subnets: tests that run at the same
//! time use different /16s of 127.0.0.0/8), a subnet per zone, a launch
//! template, the group across the subnets and, optionally, a termination
//! lifecycle hook. Instances get the subnets' addresses in order (moto
//! skips `.0`–`.3`, as AWS does), spread over the zones.
//!
//! A test helper: blocking (a runtime of its own inside; do not call it
//! from async code), and it panics when the machine or the emulator fails
//! it, except where a `try_` method returns the error for the test to
//! inspect. The kit's own SDK clients make one attempt per call (no
//! retries: an outage shows at once) and time out after
//! [`CALL_TIMEOUT`].

use crate::process::{die_with_parent, kill};
use crate::{wait_until, workspace_root};
use aws_config::SdkConfig;
use aws_config::retry::RetryConfig;
use aws_config::timeout::TimeoutConfig;
use aws_sdk_autoscaling::types::LaunchTemplateSpecification;
use aws_sdk_ec2::config::{BehaviorVersion, Credentials, Region, SharedCredentialsProvider};
use aws_sdk_ec2::error::DisplayErrorContext;
use aws_sdk_ec2::types::{
    Filter, LaunchTemplateHttpTokensState, LaunchTemplateInstanceMetadataOptionsRequest,
    RequestLaunchTemplateData,
};
use std::future::Future;
use std::io::{Read, Write};
use std::net::{Ipv4Addr, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, SystemTime};

/// The region of everything the emulator holds.
pub const REGION: &str = "us-east-1";
/// The credentials the emulator accepts (any would do).
pub const ACCESS_KEY_ID: &str = "testing";
pub const SECRET_ACCESS_KEY: &str = "testing";
/// The image of the launch templates (one moto knows).
pub const IMAGE_ID: &str = "ami-12c6146b";
/// The bound of each call of the kit's own SDK clients.
pub const CALL_TIMEOUT: Duration = Duration::from_secs(10);
/// How long [`Emulator::start`] waits for the emulator to listen.
pub const START_TIMEOUT: Duration = Duration::from_secs(60);
/// The bound of one request to the kit's routes or an IMDS server.
const HTTP_TIMEOUT: Duration = Duration::from_secs(5);

/// A running emulator (moto and the kit's additions), killed by pid when
/// dropped.
pub struct Emulator {
    child: Child,
    port: u16,
    imds_port: u16,
    dir: PathBuf,
    log: PathBuf,
    // Declared before `rt`: the clients go before their runtime.
    sdk: SdkConfig,
    ec2: aws_sdk_ec2::Client,
    autoscaling: aws_sdk_autoscaling::Client,
    s3: aws_sdk_s3::Client,
    rt: tokio::runtime::Runtime,
}

/// What a service answers during an outage ([`Emulator::outage_with`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OutageKind {
    /// 503: `Unavailable` (EC2), `ServiceUnavailable` (Auto Scaling, S3).
    Unavailable,
    /// `RequestLimitExceeded` (EC2, 503), `Throttling` (Auto Scaling,
    /// 400), `SlowDown` (S3, 503).
    Throttling,
}

/// One call of `CompleteLifecycleAction` or `RecordLifecycleActionHeartbeat`
/// that reached the emulator (failed ones too), or a heartbeat timeout.
#[derive(Clone, Debug, PartialEq)]
pub struct LifecycleActionRecord {
    /// `CompleteLifecycleAction`, `RecordLifecycleActionHeartbeat`, or
    /// `HeartbeatTimeout` (the emulator applied the hook's default result).
    pub action: String,
    pub group: String,
    pub hook: String,
    /// As called, or the action's instance when called by token.
    pub instance_id: Option<String>,
    pub token: Option<String>,
    /// `CONTINUE` / `ABANDON` (none for a heartbeat).
    pub result: Option<String>,
    pub time: SystemTime,
    /// The error the call got (`ValidationError`'s message), if any.
    pub error: Option<String>,
}

/// One instance of a group, as the Auto Scaling and EC2 APIs report it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GroupInstance {
    pub id: String,
    pub private_ip: String,
    pub zone: String,
    /// `InService`, `Terminating:Wait`, ...
    pub lifecycle_state: String,
    /// `running`, `shutting-down`, `terminated`, ...
    pub ec2_state: String,
    /// `Healthy` or `Unhealthy` (`SetInstanceHealth`).
    pub health_status: String,
}

/// An auto-scaling group made by [`Emulator::create_group`].
pub struct GroupHandle<'a> {
    emulator: &'a Emulator,
    name: String,
    hook: Option<String>,
}

impl Emulator {
    /// Starts the emulator on free ports of 127.0.0.1 (its ready file,
    /// log and the empty AWS config files of [`Emulator::env`] go in
    /// `dir`), and waits for it to listen. Panics when the venv is missing
    /// (run `make deps`) or the emulator does not start within
    /// [`START_TIMEOUT`].
    pub fn start(dir: &Path) -> Emulator {
        let root = workspace_root();
        let python = root.join(".tools/aws-venv/bin/python");
        assert!(
            python.exists(),
            "{} is missing: run make deps (scripts/install-deps.sh installs moto there)",
            python.display()
        );
        let script = root.join("testkit/aws/emulator.py");
        std::fs::create_dir_all(dir).expect("emulator dir");
        let aws_home = dir.join("aws-home");
        std::fs::create_dir_all(&aws_home).expect("aws config dir");
        std::fs::write(aws_home.join("config"), "[default]\n").expect("aws config file");
        std::fs::write(aws_home.join("credentials"), "[default]\n").expect("aws credentials file");
        let ready = dir.join("aws-emulator.ready");
        let _ = std::fs::remove_file(&ready);
        let log = dir.join("aws-emulator.log");
        let out = std::fs::File::create(&log).expect("emulator log");
        let mut command = Command::new(&python);
        command
            .arg(&script)
            .args(["--host", "127.0.0.1", "--port", "0", "--imds-port", "0"])
            .arg("--ready-file")
            .arg(&ready)
            .stdin(Stdio::null())
            .stdout(out.try_clone().expect("emulator log"))
            .stderr(out);
        die_with_parent(&mut command);
        let child = command.spawn().expect("start the AWS emulator");
        let mut guard = KillOnDrop(Some(child));
        let started = wait_until(START_TIMEOUT, || {
            if let Ok(Some(status)) = guard.child().try_wait() {
                return Some(Err(status));
            }
            let text = std::fs::read_to_string(&ready).ok()?;
            let value: serde_json::Value = serde_json::from_str(&text).ok()?;
            let port = value["port"].as_u64()?;
            let imds_port = value["imds_port"].as_u64()?;
            Some(Ok((port as u16, imds_port as u16)))
        });
        let (port, imds_port) = match started {
            Some(Ok(ports)) => ports,
            Some(Err(status)) => panic!(
                "the AWS emulator exited ({status}) before it listened:\n{}",
                tail(&log)
            ),
            None => panic!(
                "the AWS emulator did not listen within {START_TIMEOUT:?}:\n{}",
                tail(&log)
            ),
        };
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .expect("runtime");
        let endpoint = format!("http://127.0.0.1:{port}");
        let sdk = SdkConfig::builder()
            .behavior_version(BehaviorVersion::latest())
            .region(Region::new(REGION))
            .endpoint_url(&endpoint)
            .credentials_provider(SharedCredentialsProvider::new(Credentials::new(
                ACCESS_KEY_ID,
                SECRET_ACCESS_KEY,
                None,
                None,
                "testkit",
            )))
            .retry_config(RetryConfig::standard().with_max_attempts(1))
            .timeout_config(
                TimeoutConfig::builder()
                    .operation_timeout(CALL_TIMEOUT)
                    .build(),
            )
            .build();
        let (ec2, autoscaling, s3) = {
            let _entered = rt.enter();
            let s3_config = aws_sdk_s3::config::Builder::from(&sdk)
                .force_path_style(true)
                .build();
            (
                aws_sdk_ec2::Client::new(&sdk),
                aws_sdk_autoscaling::Client::new(&sdk),
                aws_sdk_s3::Client::from_conf(s3_config),
            )
        };
        Emulator {
            child: guard.0.take().expect("child"),
            port,
            imds_port,
            dir: dir.to_path_buf(),
            log,
            sdk,
            ec2,
            autoscaling,
            s3,
            rt,
        }
    }

    /// The endpoint of every service: `http://127.0.0.1:<port>`.
    pub fn endpoint(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    pub fn port(&self) -> u16 {
        self.port
    }

    /// The port of every instance's IMDS server (on the instance's address).
    pub fn imds_port(&self) -> u16 {
        self.imds_port
    }

    /// `http://<instance_ip>:<imds port>`: the instance metadata service
    /// of the instance with that private address.
    pub fn imds_endpoint(&self, instance_ip: &str) -> String {
        format!("http://{instance_ip}:{}", self.imds_port)
    }

    /// The emulator's pid.
    pub fn pid(&self) -> i32 {
        self.child.id() as i32
    }

    /// The emulator's output (moto errors, IMDS servers started and
    /// stopped, poller errors).
    pub fn log(&self) -> &Path {
        &self.log
    }

    /// The environment for an `eco` running as the instance with private
    /// address `instance_ip`: credentials and region for the emulator,
    /// every service's endpoint (`AWS_ENDPOINT_URL`), the instance's IMDS
    /// endpoint, and what keeps the SDK away from real AWS and the user's
    /// `~/.aws` (empty config files of the emulator's own, an empty session
    /// token, no proxy for loopback).
    pub fn env(&self, instance_ip: &str) -> Vec<(String, String)> {
        let aws_home = self.dir.join("aws-home");
        let no_proxy = "127.0.0.0/8,127.0.0.1,localhost".to_string();
        [
            ("AWS_ACCESS_KEY_ID", ACCESS_KEY_ID.to_string()),
            ("AWS_SECRET_ACCESS_KEY", SECRET_ACCESS_KEY.to_string()),
            ("AWS_SESSION_TOKEN", String::new()),
            ("AWS_REGION", REGION.to_string()),
            ("AWS_DEFAULT_REGION", REGION.to_string()),
            ("AWS_ENDPOINT_URL", self.endpoint()),
            ("AWS_IGNORE_CONFIGURED_ENDPOINT_URLS", "false".to_string()),
            (
                "AWS_EC2_METADATA_SERVICE_ENDPOINT",
                self.imds_endpoint(instance_ip),
            ),
            ("AWS_EC2_METADATA_DISABLED", "false".to_string()),
            (
                "AWS_CONFIG_FILE",
                aws_home.join("config").display().to_string(),
            ),
            (
                "AWS_SHARED_CREDENTIALS_FILE",
                aws_home.join("credentials").display().to_string(),
            ),
            ("AWS_PROFILE", "default".to_string()),
            ("NO_PROXY", no_proxy.clone()),
            ("no_proxy", no_proxy),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v))
        .collect()
    }

    /// The SDK configuration of the kit's clients (one attempt per call).
    pub fn sdk_config(&self) -> &SdkConfig {
        &self.sdk
    }

    pub fn ec2(&self) -> &aws_sdk_ec2::Client {
        &self.ec2
    }

    pub fn autoscaling(&self) -> &aws_sdk_autoscaling::Client {
        &self.autoscaling
    }

    /// Path-style addressing.
    pub fn s3(&self) -> &aws_sdk_s3::Client {
        &self.s3
    }

    /// Runs `f` (calls of the kit's clients) on the emulator's runtime.
    pub fn block_on<F: Future>(&self, f: F) -> F::Output {
        self.rt.block_on(f)
    }

    /// Every lifecycle action call the emulator got, oldest first.
    pub fn lifecycle_actions(&self) -> Vec<LifecycleActionRecord> {
        let body = self.kit_request("GET", "/_testkit/lifecycle-actions", "");
        let value: serde_json::Value = serde_json::from_str(&body).expect("lifecycle actions JSON");
        let text = |v: &serde_json::Value| v.as_str().map(str::to_string);
        value
            .as_array()
            .expect("a list of lifecycle actions")
            .iter()
            .map(|r| LifecycleActionRecord {
                action: text(&r["action"]).unwrap_or_default(),
                group: text(&r["group"]).unwrap_or_default(),
                hook: text(&r["hook"]).unwrap_or_default(),
                instance_id: text(&r["instance_id"]),
                token: text(&r["token"]),
                result: text(&r["result"]),
                time: SystemTime::UNIX_EPOCH
                    + Duration::from_secs_f64(r["time"].as_f64().unwrap_or(0.0)),
                error: text(&r["error"]),
            })
            .collect()
    }

    /// `services` (signing names: `autoscaling`, `ec2`, `s3`...) answer 503
    /// ServiceUnavailable for `duration`, from now.
    pub fn outage(&self, services: &[&str], duration: Duration) {
        self.outage_with(services, duration, OutageKind::Unavailable);
    }

    /// `services` answer `kind` for `duration` (zero ends their outage).
    pub fn outage_with(&self, services: &[&str], duration: Duration, kind: OutageKind) {
        let error = match kind {
            OutageKind::Unavailable => "unavailable",
            OutageKind::Throttling => "throttling",
        };
        let body = serde_json::json!({
            "services": services,
            "seconds": duration.as_secs_f64(),
            "error": error,
        })
        .to_string();
        self.kit_request("POST", "/_testkit/outage", &body);
    }

    /// Creates bucket `name` (in [`REGION`]).
    pub fn create_bucket(&self, name: &str) {
        self.block_on(self.s3.create_bucket().bucket(name).send())
            .unwrap_or_else(|e| panic!("create bucket {name}: {}", DisplayErrorContext(e)));
    }

    /// Creates auto-scaling group `name` of `desired` instances (at most
    /// 20) across `zones` — (zone, subnet CIDR), all in one /16, which
    /// becomes the group's VPC (created when missing) — with a launch
    /// template that requires IMDSv2 and, with `termination_hook`, a
    /// lifecycle hook for `autoscaling:EC2_INSTANCE_TERMINATING` with that
    /// heartbeat timeout (whole seconds, at least one) and default result
    /// `CONTINUE`.
    /// A handle of the group `name` made earlier by
    /// [`Emulator::create_group`] (with its hook's name, if it has one).
    pub fn group(&self, name: &str, hook: Option<&str>) -> GroupHandle<'_> {
        GroupHandle {
            emulator: self,
            name: name.to_string(),
            hook: hook.map(str::to_string),
        }
    }

    pub fn create_group(
        &self,
        name: &str,
        zones: &[(&str, &str)],
        desired: u32,
        termination_hook: Option<Duration>,
    ) -> GroupHandle<'_> {
        assert!(!zones.is_empty(), "a group needs one zone at least");
        let vpc_cidr = vpc_of(zones);
        let hook = termination_hook.map(|_| format!("{name}-terminating"));
        let result: Result<(), String> = self.block_on(async {
            let vpc_id = self.vpc(&vpc_cidr).await?;
            let mut subnets = Vec::new();
            for (zone, cidr) in zones {
                let subnet = self
                    .ec2
                    .create_subnet()
                    .vpc_id(&vpc_id)
                    .cidr_block(*cidr)
                    .availability_zone(*zone)
                    .send()
                    .await
                    .map_err(|e| format!("create subnet {cidr}: {}", DisplayErrorContext(e)))?;
                let id = subnet
                    .subnet()
                    .and_then(|s| s.subnet_id())
                    .ok_or("no subnet id")?;
                subnets.push(id.to_string());
            }
            let template = format!("{name}-template");
            self.ec2
                .create_launch_template()
                .launch_template_name(&template)
                .launch_template_data(
                    RequestLaunchTemplateData::builder()
                        .image_id(IMAGE_ID)
                        .instance_type(aws_sdk_ec2::types::InstanceType::T3Micro)
                        .metadata_options(
                            LaunchTemplateInstanceMetadataOptionsRequest::builder()
                                .http_tokens(LaunchTemplateHttpTokensState::Required)
                                .build(),
                        )
                        .build(),
                )
                .send()
                .await
                .map_err(|e| format!("create launch template: {}", DisplayErrorContext(e)))?;
            self.autoscaling
                .create_auto_scaling_group()
                .auto_scaling_group_name(name)
                .launch_template(
                    LaunchTemplateSpecification::builder()
                        .launch_template_name(&template)
                        .build(),
                )
                .min_size(0)
                .max_size(20)
                .desired_capacity(desired as i32)
                .vpc_zone_identifier(subnets.join(","))
                .send()
                .await
                .map_err(|e| format!("create group {name}: {}", DisplayErrorContext(e)))?;
            if let (Some(hook), Some(timeout)) = (&hook, termination_hook) {
                self.autoscaling
                    .put_lifecycle_hook()
                    .auto_scaling_group_name(name)
                    .lifecycle_hook_name(hook)
                    .lifecycle_transition("autoscaling:EC2_INSTANCE_TERMINATING")
                    .heartbeat_timeout(timeout.as_secs_f64().ceil().max(1.0) as i32)
                    .default_result("CONTINUE")
                    .send()
                    .await
                    .map_err(|e| format!("put lifecycle hook: {}", DisplayErrorContext(e)))?;
            }
            Ok(())
        });
        if let Err(e) = result {
            panic!("create group {name}: {e}");
        }
        GroupHandle {
            emulator: self,
            name: name.to_string(),
            hook,
        }
    }

    /// The id of the VPC with `cidr`, created when missing.
    async fn vpc(&self, cidr: &str) -> Result<String, String> {
        let found = self
            .ec2
            .describe_vpcs()
            .filters(Filter::builder().name("cidr").values(cidr).build())
            .send()
            .await
            .map_err(|e| format!("describe vpcs: {}", DisplayErrorContext(e)))?;
        if let Some(id) = found.vpcs().iter().find_map(|v| v.vpc_id()) {
            return Ok(id.to_string());
        }
        let created = self
            .ec2
            .create_vpc()
            .cidr_block(cidr)
            .send()
            .await
            .map_err(|e| format!("create vpc {cidr}: {}", DisplayErrorContext(e)))?;
        Ok(created
            .vpc()
            .and_then(|v| v.vpc_id())
            .ok_or("no vpc id")?
            .to_string())
    }

    /// A request to the kit's routes; panics unless it answers 200.
    fn kit_request(&self, method: &str, path: &str, body: &str) -> String {
        let address = format!("127.0.0.1:{}", self.port);
        let headers = [("Content-Type", "application/json")];
        match http_request(&address, method, path, &headers, body.as_bytes()) {
            Ok((200, text)) => text,
            Ok((status, text)) => panic!("{method} {path}: {status} {text}"),
            Err(e) => panic!("{method} {path}: {e}"),
        }
    }
}

impl Drop for Emulator {
    /// SIGTERM, up to 5 s for a clean exit, then SIGKILL (by pid); a
    /// failing test gets the end of the emulator's log on stderr.
    fn drop(&mut self) {
        stop(&mut self.child);
        if std::thread::panicking() {
            eprintln!(
                "--- AWS emulator log ({}) ---\n{}",
                self.log.display(),
                tail(&self.log)
            );
        }
    }
}

impl GroupHandle<'_> {
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The termination lifecycle hook's name, when the group has one.
    pub fn hook_name(&self) -> Option<&str> {
        self.hook.as_deref()
    }

    /// The group's instances (DescribeAutoScalingGroups, then
    /// DescribeInstances for addresses and EC2 states), in the group's
    /// order; panics on an API error.
    pub fn instances(&self) -> Vec<GroupInstance> {
        self.try_instances()
            .unwrap_or_else(|e| panic!("group {}: {e}", self.name))
    }

    /// [`GroupHandle::instances`], or the API error (with its code).
    pub fn try_instances(&self) -> Result<Vec<GroupInstance>, String> {
        let emulator = self.emulator;
        emulator.block_on(async {
            let groups = emulator
                .autoscaling
                .describe_auto_scaling_groups()
                .auto_scaling_group_names(&self.name)
                .send()
                .await
                .map_err(|e| DisplayErrorContext(e).to_string())?;
            let group = groups
                .auto_scaling_groups()
                .first()
                .ok_or_else(|| format!("no group {}", self.name))?;
            let members: Vec<(String, String, String, String)> = group
                .instances()
                .iter()
                .map(|i| {
                    (
                        i.instance_id().unwrap_or_default().to_string(),
                        i.availability_zone().unwrap_or_default().to_string(),
                        i.lifecycle_state()
                            .map(|s| s.as_str().to_string())
                            .unwrap_or_default(),
                        i.health_status().unwrap_or_default().to_string(),
                    )
                })
                .collect();
            if members.is_empty() {
                return Ok(Vec::new());
            }
            let described = emulator
                .ec2
                .describe_instances()
                .set_instance_ids(Some(members.iter().map(|m| m.0.clone()).collect()))
                .send()
                .await
                .map_err(|e| DisplayErrorContext(e).to_string())?;
            let ec2: Vec<_> = described
                .reservations()
                .iter()
                .flat_map(|r| r.instances())
                .collect();
            Ok(members
                .into_iter()
                .map(|(id, zone, lifecycle_state, health_status)| {
                    let found = ec2.iter().find(|i| i.instance_id() == Some(id.as_str()));
                    GroupInstance {
                        private_ip: found
                            .and_then(|i| i.private_ip_address())
                            .unwrap_or_default()
                            .to_string(),
                        ec2_state: found
                            .and_then(|i| i.state())
                            .and_then(|s| s.name())
                            .map(|n| n.as_str().to_string())
                            .unwrap_or_default(),
                        id,
                        zone,
                        lifecycle_state,
                        health_status,
                    }
                })
                .collect())
        })
    }

    /// Polls [`GroupHandle::instances`] every 100 ms until `done` holds;
    /// panics with the last listing after `limit`.
    pub fn wait_for(
        &self,
        limit: Duration,
        mut done: impl FnMut(&[GroupInstance]) -> bool,
    ) -> Vec<GroupInstance> {
        let start = std::time::Instant::now();
        loop {
            let now = self.instances();
            if done(&now) {
                return now;
            }
            if start.elapsed() > limit {
                panic!(
                    "group {}: not reached within {limit:?}: {now:#?}",
                    self.name
                );
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// The EC2 state of `instance_id` (in the group or not): `running`,
    /// `terminated`...; `None` when EC2 does not know it.
    pub fn ec2_state(&self, instance_id: &str) -> Option<String> {
        let emulator = self.emulator;
        let described = emulator
            .block_on(
                emulator
                    .ec2
                    .describe_instances()
                    .instance_ids(instance_id)
                    .send(),
            )
            .ok()?;
        described
            .reservations()
            .iter()
            .flat_map(|r| r.instances())
            .find_map(|i| i.state().and_then(|s| s.name()))
            .map(|n| n.as_str().to_string())
    }

    /// The group's desired capacity.
    pub fn desired(&self) -> u32 {
        let emulator = self.emulator;
        let groups = emulator
            .block_on(
                emulator
                    .autoscaling
                    .describe_auto_scaling_groups()
                    .auto_scaling_group_names(&self.name)
                    .send(),
            )
            .unwrap_or_else(|e| panic!("describe group {}: {}", self.name, DisplayErrorContext(e)));
        groups
            .auto_scaling_groups()
            .first()
            .and_then(|g| g.desired_capacity())
            .unwrap_or_else(|| panic!("no group {}", self.name)) as u32
    }

    /// `SetDesiredCapacity` (a scale-in with a termination hook leaves the
    /// removed instances in `Terminating:Wait`).
    pub fn set_desired(&self, desired: u32) {
        let emulator = self.emulator;
        emulator
            .block_on(
                emulator
                    .autoscaling
                    .set_desired_capacity()
                    .auto_scaling_group_name(&self.name)
                    .desired_capacity(desired as i32)
                    .send(),
            )
            .unwrap_or_else(|e| panic!("set desired {desired}: {}", DisplayErrorContext(e)));
    }

    /// EC2 `TerminateInstances`: terminated at once (no hook), replaced by
    /// the group.
    pub fn terminate_ec2(&self, instance_id: &str) {
        let emulator = self.emulator;
        emulator
            .block_on(
                emulator
                    .ec2
                    .terminate_instances()
                    .instance_ids(instance_id)
                    .send(),
            )
            .unwrap_or_else(|e| panic!("terminate {instance_id}: {}", DisplayErrorContext(e)));
    }

    /// `TerminateInstanceInAutoScalingGroup` (through the termination hook
    /// when the group has one; replaced unless `decrement`).
    pub fn terminate_in_group(&self, instance_id: &str, decrement: bool) {
        let emulator = self.emulator;
        emulator
            .block_on(
                emulator
                    .autoscaling
                    .terminate_instance_in_auto_scaling_group()
                    .instance_id(instance_id)
                    .should_decrement_desired_capacity(decrement)
                    .send(),
            )
            .unwrap_or_else(|e| panic!("terminate {instance_id}: {}", DisplayErrorContext(e)));
    }

    /// `CompleteLifecycleAction` for `instance_id` on the group's hook
    /// (`result`: `CONTINUE` or `ABANDON`), or the API error.
    pub fn complete_lifecycle_action(&self, instance_id: &str, result: &str) -> Result<(), String> {
        let emulator = self.emulator;
        let hook = self
            .hook
            .as_deref()
            .expect("the group has no termination hook");
        emulator
            .block_on(
                emulator
                    .autoscaling
                    .complete_lifecycle_action()
                    .auto_scaling_group_name(&self.name)
                    .lifecycle_hook_name(hook)
                    .instance_id(instance_id)
                    .lifecycle_action_result(result)
                    .send(),
            )
            .map(|_| ())
            .map_err(|e| DisplayErrorContext(e).to_string())
    }

    /// `RecordLifecycleActionHeartbeat` for `instance_id` on the group's
    /// hook, or the API error.
    pub fn record_heartbeat(&self, instance_id: &str) -> Result<(), String> {
        let emulator = self.emulator;
        let hook = self
            .hook
            .as_deref()
            .expect("the group has no termination hook");
        emulator
            .block_on(
                emulator
                    .autoscaling
                    .record_lifecycle_action_heartbeat()
                    .auto_scaling_group_name(&self.name)
                    .lifecycle_hook_name(hook)
                    .instance_id(instance_id)
                    .send(),
            )
            .map(|_| ())
            .map_err(|e| DisplayErrorContext(e).to_string())
    }
}

/// One HTTP/1.1 request (`Connection: close`) to `address` (`ip:port`),
/// bounded by 5 s: the status and the body. For the kit's routes and for
/// raw IMDS requests (a GET without a token must get 401).
pub fn http_request(
    address: &str,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: &[u8],
) -> std::io::Result<(u16, String)> {
    let socket: std::net::SocketAddr = address.parse().map_err(|e| {
        std::io::Error::new(std::io::ErrorKind::InvalidInput, format!("{address}: {e}"))
    })?;
    let mut stream = TcpStream::connect_timeout(&socket, HTTP_TIMEOUT)?;
    stream.set_read_timeout(Some(HTTP_TIMEOUT))?;
    stream.set_write_timeout(Some(HTTP_TIMEOUT))?;
    let mut request = format!(
        "{method} {path} HTTP/1.1\r\nHost: {address}\r\nConnection: close\r\nContent-Length: {}\r\n",
        body.len()
    );
    for (name, value) in headers {
        request.push_str(&format!("{name}: {value}\r\n"));
    }
    request.push_str("\r\n");
    stream.write_all(request.as_bytes())?;
    stream.write_all(body)?;
    let mut response = Vec::new();
    stream.read_to_end(&mut response)?;
    let text = String::from_utf8_lossy(&response);
    let (head, rest) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
    let status = head
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .ok_or_else(|| std::io::Error::new(std::io::ErrorKind::InvalidData, "no HTTP status"))?;
    Ok((status, rest.to_string()))
}

/// The /16 of the subnets (they must share it).
fn vpc_of(zones: &[(&str, &str)]) -> String {
    let prefix = |cidr: &str| -> [u8; 2] {
        let ip: Ipv4Addr = cidr
            .split('/')
            .next()
            .and_then(|a| a.parse().ok())
            .unwrap_or_else(|| panic!("subnet CIDR {cidr}"));
        let o = ip.octets();
        [o[0], o[1]]
    };
    let first = prefix(zones[0].1);
    for (_, cidr) in zones {
        assert_eq!(
            prefix(cidr),
            first,
            "the subnets of a group share one /16 (its VPC): {cidr}"
        );
    }
    format!("{}.{}.0.0/16", first[0], first[1])
}

/// Kills the child by pid: SIGTERM, up to 5 s, then SIGKILL.
fn stop(child: &mut Child) {
    if let Ok(Some(_)) = child.try_wait() {
        return;
    }
    kill(child.id() as i32, libc::SIGTERM);
    let exited = wait_until(Duration::from_secs(5), || child.try_wait().ok().flatten());
    if exited.is_none() {
        kill(child.id() as i32, libc::SIGKILL);
        let _ = child.wait();
    }
}

/// The last 60 lines of a log.
fn tail(path: &Path) -> String {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(60)..].join("\n")
}

/// Kills a child being started when the start fails.
struct KillOnDrop(Option<Child>);

impl KillOnDrop {
    fn child(&mut self) -> &mut Child {
        self.0.as_mut().expect("child")
    }
}

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        if let Some(child) = self.0.as_mut() {
            stop(child);
        }
    }
}
