//! The AWS test kit itself (`testkit::aws`): moto with the kit's
//! additions — groups spread over their subnets, an IMDSv2 server per
//! instance, termination lifecycle hooks that wait, the record of lifecycle
//! action calls, API outages — as the AWS SDK sees them.
//!
//! Each test runs its own emulator and uses its own /16 of 127.0.0.0/8
//! (127.80 to 127.86), so the tests run in parallel.

use aws_config::BehaviorVersion;
use aws_sdk_ec2::error::DisplayErrorContext;
use std::collections::{BTreeMap, HashSet};
use std::net::Ipv4Addr;
use std::time::{Duration, Instant};
use testkit::aws::{Emulator, GroupHandle, GroupInstance, OutageKind, http_request};

const WAIT: Duration = Duration::from_secs(15);

fn start() -> (tempfile::TempDir, Emulator) {
    let dir = tempfile::Builder::new()
        .prefix("eco-aws-")
        .tempdir()
        .expect("tempdir");
    let emulator = Emulator::start(dir.path());
    (dir, emulator)
}

/// Zones a, b, c with subnets 127.`b`.1.0/24, 127.`b`.2.0/24, 127.`b`.3.0/24.
fn subnets(b: u8) -> Vec<(&'static str, String)> {
    ["us-east-1a", "us-east-1b", "us-east-1c"]
        .into_iter()
        .zip(1..)
        .map(|(zone, n)| (zone, format!("127.{b}.{n}.0/24")))
        .collect()
}

fn group<'a>(
    emulator: &'a Emulator,
    name: &str,
    b: u8,
    desired: u32,
    hook: Option<Duration>,
) -> GroupHandle<'a> {
    let zones = subnets(b);
    let zones: Vec<(&str, &str)> = zones.iter().map(|(z, c)| (*z, c.as_str())).collect();
    emulator.create_group(name, &zones, desired, hook)
}

fn in_state<'a>(instances: &'a [GroupInstance], state: &str) -> Vec<&'a GroupInstance> {
    instances
        .iter()
        .filter(|i| i.lifecycle_state == state)
        .collect()
}

/// An IMDS client for the instance at `ip`, as aws-config builds it.
fn imds(emulator: &Emulator, ip: &str) -> aws_config::imds::Client {
    aws_config::imds::Client::builder()
        .endpoint(emulator.imds_endpoint(ip))
        .expect("endpoint")
        .max_attempts(1)
        .build()
}

fn imds_get(emulator: &Emulator, ip: &str, path: &str) -> Result<String, String> {
    let client = imds(emulator, ip);
    emulator
        .block_on(client.get(path))
        .map(|v| v.as_ref().to_string())
        .map_err(|e| DisplayErrorContext(e).to_string())
}

#[test]
fn group_instances_get_the_subnets_addresses_across_zones() {
    let (_dir, emulator) = start();
    let g = group(&emulator, "spread", 80, 3, None);
    let instances = g.wait_for(WAIT, |i| i.len() == 3);
    let mut ips = Vec::new();
    for (zone, subnet) in [
        ("us-east-1a", "127.80.1."),
        ("us-east-1b", "127.80.2."),
        ("us-east-1c", "127.80.3."),
    ] {
        let here: Vec<_> = instances.iter().filter(|i| i.zone == zone).collect();
        assert_eq!(here.len(), 1, "one instance per zone: {instances:#?}");
        let i = here[0];
        assert_eq!(
            i.private_ip,
            format!("{subnet}4"),
            "first address of the subnet"
        );
        assert_eq!(i.lifecycle_state, "InService");
        assert_eq!(i.ec2_state, "running");
        ips.push(i.private_ip.clone());
    }
    assert_eq!(g.desired(), 3);

    // Growing keeps the zones balanced and the addresses in order.
    g.set_desired(5);
    let instances = g.wait_for(WAIT, |i| i.len() == 5);
    let mut per_zone = BTreeMap::new();
    for i in &instances {
        *per_zone.entry(i.zone.clone()).or_insert(0) += 1;
        let ip: Ipv4Addr = i.private_ip.parse().expect("ipv4");
        let zone_number = i.zone.as_bytes()[i.zone.len() - 1] - b'a' + 1;
        assert_eq!(ip.octets()[..3], [127, 80, zone_number], "{i:?}");
    }
    assert_eq!(per_zone.values().copied().collect::<Vec<_>>(), [2, 2, 1]);
    let new: HashSet<_> = instances.iter().map(|i| i.private_ip.clone()).collect();
    assert!(
        new.contains("127.80.1.5") && new.contains("127.80.2.5"),
        "{new:?}"
    );
}

#[test]
fn imds_v2_answers_each_instance_with_its_own_identity_and_enforces_tokens() {
    let (_dir, emulator) = start();
    let g = group(&emulator, "meta", 81, 3, None);
    let instances = g.wait_for(WAIT, |i| i.len() == 3);
    for i in &instances {
        let ip = i.private_ip.as_str();
        // The poller starts the server within ~200 ms of the launch.
        let id = testkit::wait_until(WAIT, || {
            imds_get(&emulator, ip, "/latest/meta-data/instance-id").ok()
        })
        .expect("IMDS serves the instance");
        assert_eq!(id, i.id);
        let get = |path: &str| imds_get(&emulator, ip, path).expect(path);
        assert_eq!(get("/latest/meta-data/local-ipv4"), i.private_ip);
        assert_eq!(get("/latest/meta-data/placement/availability-zone"), i.zone);
        assert_eq!(get("/latest/meta-data/placement/region"), "us-east-1");
        assert_eq!(
            get("/latest/meta-data/autoscaling/target-lifecycle-state"),
            "InService"
        );
        let document: serde_json::Value =
            serde_json::from_str(&get("/latest/dynamic/instance-identity/document"))
                .expect("identity document JSON");
        assert_eq!(document["instanceId"], i.id.as_str());
        assert_eq!(document["privateIp"], i.private_ip.as_str());
        assert_eq!(document["availabilityZone"], i.zone.as_str());
        assert_eq!(document["region"], "us-east-1");
        assert!(imds_get(&emulator, ip, "/latest/meta-data/no-such-key").is_err());

        // IMDSv2 exactly: a token is required, its TTL is bounded.
        let address = format!("{ip}:{}", emulator.imds_port());
        let raw = |method: &str, path: &str, headers: &[(&str, &str)]| {
            http_request(&address, method, path, headers, b"").expect("IMDS request")
        };
        let id_path = "/latest/meta-data/instance-id";
        assert_eq!(raw("GET", id_path, &[]).0, 401, "no token");
        let bogus = [("X-aws-ec2-metadata-token", "not-a-token")];
        assert_eq!(raw("GET", id_path, &bogus).0, 401, "unknown token");
        let token_path = "/latest/api/token";
        assert_eq!(raw("PUT", token_path, &[]).0, 400, "no TTL");
        for ttl in ["0", "21601", "x"] {
            let headers = [("X-aws-ec2-metadata-token-ttl-seconds", ttl)];
            assert_eq!(raw("PUT", token_path, &headers).0, 400, "TTL {ttl}");
        }
        let (status, token) = raw(
            "PUT",
            token_path,
            &[("X-aws-ec2-metadata-token-ttl-seconds", "1")],
        );
        assert_eq!(status, 200);
        let with_token = [("X-aws-ec2-metadata-token", token.as_str())];
        assert_eq!(raw("GET", id_path, &with_token), (200, i.id.clone()));
        // A token is this instance's only.
        let other = format!("{}:{}", instances[0].private_ip, emulator.imds_port());
        if other != address {
            let (status, _) =
                http_request(&other, "GET", id_path, &with_token, b"").expect("IMDS request");
            assert_eq!(status, 401, "another instance's token");
        }
    }
    // Tokens expire (the last one's TTL was 1 s).
    let last = instances.last().expect("instances");
    let address = format!("{}:{}", last.private_ip, emulator.imds_port());
    let ttl_1 = [("X-aws-ec2-metadata-token-ttl-seconds", "1")];
    let (_, token) =
        http_request(&address, "PUT", "/latest/api/token", &ttl_1, b"").expect("token");
    std::thread::sleep(Duration::from_millis(1100));
    let with_token = [("X-aws-ec2-metadata-token", token.as_str())];
    let (status, _) = http_request(
        &address,
        "GET",
        "/latest/meta-data/instance-id",
        &with_token,
        b"",
    )
    .expect("IMDS request");
    assert_eq!(status, 401, "expired token");
}

/// Run by `the_env_of_an_instance_is_enough_for_the_sdk` in a child process
/// whose environment is only `Emulator::env`: the SDK's default chain finds
/// the credentials, region and endpoint, and its IMDS client the
/// instance's metadata through `AWS_EC2_METADATA_SERVICE_ENDPOINT`.
#[test]
#[ignore = "run by the_env_of_an_instance_is_enough_for_the_sdk"]
fn child_uses_the_sdk_with_the_environment_only() {
    let expected = std::env::var("ECO_TESTKIT_EXPECT_INSTANCE").expect("run by the parent test");
    let rt = testkit::etcd::rt();
    rt.block_on(async {
        let config = aws_config::defaults(BehaviorVersion::latest()).load().await;
        assert_eq!(config.region().map(|r| r.as_ref()), Some("us-east-1"));
        let imds = aws_config::imds::Client::builder().build();
        let id = imds
            .get("/latest/meta-data/instance-id")
            .await
            .expect("instance id");
        assert_eq!(id.as_ref(), expected);
        let ip = imds
            .get("/latest/meta-data/local-ipv4")
            .await
            .expect("local ipv4");
        let ec2 = aws_sdk_ec2::Client::new(&config);
        let described = ec2
            .describe_instances()
            .instance_ids(&expected)
            .send()
            .await
            .unwrap_or_else(|e| panic!("describe instances: {}", DisplayErrorContext(e)));
        let found = described.reservations()[0].instances()[0].private_ip_address();
        assert_eq!(found, Some(ip.as_ref()));
    });
}

#[test]
fn the_env_of_an_instance_is_enough_for_the_sdk() {
    let (_dir, emulator) = start();
    let g = group(&emulator, "env", 87, 1, None);
    let instance = g.wait_for(WAIT, |i| i.len() == 1).remove(0);
    testkit::wait_until(WAIT, || {
        imds_get(
            &emulator,
            &instance.private_ip,
            "/latest/meta-data/instance-id",
        )
        .ok()
    })
    .expect("IMDS serves the instance");
    let output = std::process::Command::new(std::env::current_exe().expect("test binary"))
        .args([
            "child_uses_the_sdk_with_the_environment_only",
            "--exact",
            "--ignored",
            "--nocapture",
            "--test-threads=1",
        ])
        .env_clear()
        .envs(emulator.env(&instance.private_ip))
        .env("ECO_TESTKIT_EXPECT_INSTANCE", &instance.id)
        .output()
        .expect("run the child test");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success() && stdout.contains("1 passed"),
        "child: {}\n{stdout}\n{}",
        output.status,
        String::from_utf8_lossy(&output.stderr)
    );
}

#[test]
fn scale_in_waits_for_the_termination_hook_until_completed() {
    let (_dir, emulator) = start();
    let g = group(&emulator, "hooked", 82, 3, Some(Duration::from_secs(120)));
    let hook = g.hook_name().expect("hook").to_string();
    let before = g.wait_for(WAIT, |i| i.len() == 3);

    g.set_desired(2);
    let now = g.instances();
    let waiting = in_state(&now, "Terminating:Wait");
    assert_eq!(waiting.len(), 1, "{now:#?}");
    let leaving = waiting[0].clone();
    assert_eq!(
        leaving.ec2_state, "running",
        "it keeps running while it waits"
    );
    assert_eq!(g.desired(), 2);
    // It no longer counts: no replacement, even a while later.
    std::thread::sleep(Duration::from_millis(600));
    let now = g.instances();
    assert_eq!(now.len(), 3, "{now:#?}");
    assert_eq!(in_state(&now, "InService").len(), 2);
    assert!(now.iter().all(|i| before.iter().any(|b| b.id == i.id)));

    // IMDS tells the instance it is to terminate; the others stay.
    assert_eq!(
        imds_get(
            &emulator,
            &leaving.private_ip,
            "/latest/meta-data/autoscaling/target-lifecycle-state"
        )
        .as_deref(),
        Ok("Terminated")
    );
    let staying = in_state(&now, "InService")[0].clone();
    assert_eq!(
        imds_get(
            &emulator,
            &staying.private_ip,
            "/latest/meta-data/autoscaling/target-lifecycle-state"
        )
        .as_deref(),
        Ok("InService")
    );

    g.record_heartbeat(&leaving.id).expect("heartbeat");
    let err = g
        .complete_lifecycle_action(&staying.id, "CONTINUE")
        .expect_err("no action for an instance in service");
    assert!(err.contains("No active Lifecycle Action"), "{err}");
    assert_eq!(g.ec2_state(&leaving.id).as_deref(), Some("running"));

    g.complete_lifecycle_action(&leaving.id, "CONTINUE")
        .expect("complete");
    let now = g.wait_for(WAIT, |i| i.len() == 2);
    assert!(
        now.iter()
            .all(|i| i.id != leaving.id && i.lifecycle_state == "InService")
    );
    assert_eq!(g.ec2_state(&leaving.id).as_deref(), Some("terminated"));
    // Its metadata server goes with it.
    let address = format!("{}:{}", leaving.private_ip, emulator.imds_port());
    testkit::wait_until(WAIT, || {
        http_request(&address, "PUT", "/latest/api/token", &[], b"")
            .is_err()
            .then_some(())
    })
    .expect("the IMDS server of a terminated instance stops");

    let actions = emulator.lifecycle_actions();
    let summary: Vec<_> = actions
        .iter()
        .map(|a| {
            (
                a.action.as_str(),
                a.instance_id.as_deref().unwrap_or(""),
                a.result.as_deref(),
                a.error.is_some(),
            )
        })
        .collect();
    assert_eq!(
        summary,
        [
            (
                "RecordLifecycleActionHeartbeat",
                leaving.id.as_str(),
                None,
                false
            ),
            (
                "CompleteLifecycleAction",
                staying.id.as_str(),
                Some("CONTINUE"),
                true
            ),
            (
                "CompleteLifecycleAction",
                leaving.id.as_str(),
                Some("CONTINUE"),
                false
            ),
        ]
    );
    assert!(
        actions
            .iter()
            .all(|a| a.group == "hooked" && a.hook == hook)
    );
    assert!(actions[0].token.is_some() && actions[0].token == actions[2].token);
}

#[test]
fn the_heartbeat_timeout_applies_the_default_result() {
    let (_dir, emulator) = start();
    let g = group(&emulator, "timeout", 83, 2, Some(Duration::from_secs(3)));
    g.wait_for(WAIT, |i| i.len() == 2);
    g.set_desired(1);
    let start = Instant::now();
    let now = g.instances();
    let leaving = in_state(&now, "Terminating:Wait")[0].id.clone();

    // A heartbeat restarts the 3 s timeout...
    std::thread::sleep(Duration::from_millis(1500));
    g.record_heartbeat(&leaving).expect("heartbeat");
    let heartbeat = Instant::now();
    std::thread::sleep(Duration::from_millis(1800));
    assert!(start.elapsed() > Duration::from_secs(3));
    assert!(
        heartbeat.elapsed() < Duration::from_millis(2500),
        "too slow a machine to tell"
    );
    let now = g.instances();
    assert!(
        now.iter()
            .any(|i| i.id == leaving && i.lifecycle_state == "Terminating:Wait"),
        "still waiting past the first timeout: {now:#?}"
    );

    // ...and without one, the default result (CONTINUE) applies.
    g.wait_for(WAIT, |i| i.iter().all(|i| i.id != leaving));
    assert!(heartbeat.elapsed() >= Duration::from_secs(3));
    assert_eq!(g.ec2_state(&leaving).as_deref(), Some("terminated"));
    let actions = emulator.lifecycle_actions();
    let last = actions.last().expect("a timeout recorded");
    assert_eq!(last.action, "HeartbeatTimeout");
    assert_eq!(last.instance_id.as_deref(), Some(leaving.as_str()));
    assert_eq!(last.result.as_deref(), Some("CONTINUE"));
}

#[test]
fn a_direct_ec2_terminate_is_replaced_at_once_without_the_hook() {
    let (_dir, emulator) = start();
    let g = group(&emulator, "direct", 84, 3, Some(Duration::from_secs(120)));
    let before = g.wait_for(WAIT, |i| i.len() == 3);
    let victim = before[1].clone();
    g.terminate_ec2(&victim.id);
    assert_eq!(g.ec2_state(&victim.id).as_deref(), Some("terminated"));
    let after = g.wait_for(WAIT, |i| i.len() == 3);
    assert!(
        after
            .iter()
            .all(|i| i.lifecycle_state == "InService" && i.id != victim.id)
    );
    let new: Vec<_> = after
        .iter()
        .filter(|i| before.iter().all(|b| b.id != i.id))
        .collect();
    assert_eq!(new.len(), 1, "{after:#?}");
    assert!(before.iter().all(|b| b.private_ip != new[0].private_ip));
    assert_eq!(
        new[0].zone, victim.zone,
        "the replacement rebalances the zones"
    );
    assert!(emulator.lifecycle_actions().is_empty());
}

#[test]
fn terminate_in_group_waits_and_is_replaced_unless_decremented() {
    let (_dir, emulator) = start();
    let g = group(&emulator, "tig", 85, 3, Some(Duration::from_secs(120)));
    let before = g.wait_for(WAIT, |i| i.len() == 3);
    let (a, b) = (before[0].id.clone(), before[1].id.clone());

    g.terminate_in_group(&a, false);
    let now = g.instances();
    assert_eq!(in_state(&now, "Terminating:Wait").len(), 1);
    assert_eq!(in_state(&now, "InService").len(), 3, "replaced: {now:#?}");
    assert_eq!(g.desired(), 3);

    g.terminate_in_group(&b, true);
    let now = g.instances();
    assert_eq!(in_state(&now, "Terminating:Wait").len(), 2);
    assert_eq!(
        in_state(&now, "InService").len(),
        2,
        "not replaced: {now:#?}"
    );
    assert_eq!(g.desired(), 2);

    // ABANDON terminates a terminating instance too.
    g.complete_lifecycle_action(&a, "ABANDON").expect("abandon");
    g.complete_lifecycle_action(&b, "CONTINUE")
        .expect("continue");
    let now = g.wait_for(WAIT, |i| i.len() == 2);
    assert!(now.iter().all(|i| i.lifecycle_state == "InService"));
    assert_eq!(g.ec2_state(&a).as_deref(), Some("terminated"));
    assert_eq!(g.ec2_state(&b).as_deref(), Some("terminated"));
}

#[test]
fn an_outage_fails_the_calls_then_they_recover() {
    let (_dir, emulator) = start();
    let g = group(&emulator, "outage", 86, 1, None);
    g.wait_for(WAIT, |i| i.len() == 1);
    emulator.create_bucket("eco-outage");

    emulator.outage(&["autoscaling", "ec2"], Duration::from_secs(3));
    let started = Instant::now();
    let err = g.try_instances().expect_err("Auto Scaling is out");
    assert!(err.contains("ServiceUnavailable"), "{err}");
    let err = emulator
        .block_on(emulator.ec2().describe_vpcs().send())
        .map_err(|e| DisplayErrorContext(e).to_string())
        .expect_err("EC2 is out");
    assert!(err.contains("Unavailable"), "{err}");
    // S3 is not part of it: a conditional put still works, and only once.
    let put = || {
        emulator
            .block_on(
                emulator
                    .s3()
                    .put_object()
                    .bucket("eco-outage")
                    .key("k")
                    .if_none_match("*")
                    .body(b"v".to_vec().into())
                    .send(),
            )
            .map_err(|e| DisplayErrorContext(e).to_string())
    };
    put().expect("first conditional put");
    let err = put().expect_err("second conditional put");
    assert!(err.contains("PreconditionFailed"), "{err}");
    // It ends by itself.
    testkit::wait_until(WAIT, || g.try_instances().ok()).expect("recovered");
    assert!(started.elapsed() >= Duration::from_millis(2900));

    // Throttling, ended early.
    emulator.outage_with(
        &["autoscaling"],
        Duration::from_secs(60),
        OutageKind::Throttling,
    );
    let err = g.try_instances().expect_err("throttled");
    assert!(err.contains("Throttling"), "{err}");
    emulator.outage(&["autoscaling"], Duration::ZERO);
    assert_eq!(g.try_instances().expect("outage ended").len(), 1);
}
