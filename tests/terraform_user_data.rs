//! The Terraform module's user data, rendered by Terraform itself
//! (`terraform console`, offline: `templatefile` needs no provider) from
//! `terraform/templates/`, and run as cloud-init runs it — as root, at
//! first boot — on a booted machine (`testkit::machine`: systemd in
//! namespaces on an overlay of this host's root, on the host's network).
//!
//! What stands in for AWS, and is labelled as such:
//! - the AWS emulator (moto and the test kit's additions, `testkit::aws`):
//!   the auto-scaling group of one instance, its metadata service, the
//!   bucket, the KMS key and the SSM SecureString parameter the module
//!   makes;
//! - a drop-in of eco.service with the emulator's environment
//!   (`AWS_ENDPOINT_URL`, the instance's metadata endpoint): on EC2 the
//!   SDK finds both by itself; the script itself runs with the same
//!   environment and the AWS CLI of the emulator's venv on its PATH (a
//!   Debian AMI has none, so the script installs Debian's `awscli`: that
//!   branch needs the Debian mirror and is not run here);
//! - two keys added to the rendered config's `[snapshot.s3]`: the
//!   emulator's endpoint and path-style addressing (a bucket-named host
//!   does not resolve on loopback);
//! - the downloads: eco's package (built from the eco under test by
//!   scripts/build-deb.sh) and an etcd release archive (made of
//!   `.tools/etcd-3.5.30`, laid out as etcd's own archives are) over HTTPS
//!   from loopback, with a throwaway CA the script's curl trusts through
//!   `CURL_CA_BUNDLE`.
//!
//! Then the member must serve: eco.service becomes active only once eco
//! says READY=1, and the operator's steps of docs/aws.md (`eco certs
//! client`, etcdctl over TLS) work on it.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use sha2::Digest;
use testkit::aws::{self, Emulator};
use testkit::machine::{self, Machine};
use testkit::pki::{Pki, Usage, Validity};

const CLUSTER: &str = "main";
const GOSSIP_PARAMETER: &str = "/eco/main/gossip-keys";
const GOSSIP_KEY: &str = "3f1c2a9be07d5e6f8a4b3c2d1e0f9a8b7c6d5e4f3a2b1c0d9e8f7a6b5c4d3e2f";
const ETCD_VERSION: &str = "3.5.30";

fn root() -> PathBuf {
    testkit::workspace_root()
}

fn sha256_of(path: &Path) -> String {
    hex::encode(sha2::Sha256::digest(
        std::fs::read(path).expect("read a download"),
    ))
}

/// Runs the AWS CLI of the emulator's venv against the emulator.
fn aws_cli(emulator: &Emulator, args: &[&str]) -> String {
    let out = Command::new(root().join(".tools/aws-venv/bin/aws"))
        .args(args)
        .envs(emulator.env("127.0.0.1"))
        .output()
        .expect("run the AWS CLI");
    assert!(
        out.status.success(),
        "aws {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

/// An etcd release archive as etcd publishes them
/// (`etcd-v<version>-linux-amd64/{etcd,etcdctl,etcdutl}`), of the etcd
/// 3.5 scripts/install-deps.sh installed.
fn etcd_archive(into: &Path) -> PathBuf {
    let name = format!("etcd-v{ETCD_VERSION}-linux-amd64");
    let archive = into.join(format!("{name}.tar.gz"));
    let status = Command::new("tar")
        .arg("-czhf")
        .arg(&archive)
        .arg("-C")
        .arg(root().join(format!(".tools/etcd-{ETCD_VERSION}/bin")))
        .arg(format!("--transform=s,^,{name}/,"))
        .args(["etcd", "etcdctl", "etcdutl"])
        .status()
        .expect("tar");
    assert!(status.success(), "the etcd archive");
    archive
}

/// An HTTPS server of `dir` on 127.0.0.1 (Python's http.server), killed
/// by the caller; its port.
fn https_server(dir: &Path, cert: &Path, key: &Path) -> (Child, u16) {
    let port = testkit::s3_server::free_port();
    let script = r#"
import functools, http.server, ssl, sys
port, directory, cert, key = int(sys.argv[1]), sys.argv[2], sys.argv[3], sys.argv[4]
handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=directory)
server = http.server.ThreadingHTTPServer(("127.0.0.1", port), handler)
context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
context.load_cert_chain(cert, key)
server.socket = context.wrap_socket(server.socket, server_side=True)
server.serve_forever()
"#;
    let mut command = Command::new("python3");
    command
        .args(["-c", script, &port.to_string()])
        .arg(dir)
        .arg(cert)
        .arg(key)
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    testkit::process::die_with_parent(&mut command);
    let child = command.spawn().expect("start the HTTPS server");
    let up = testkit::wait_until(Duration::from_secs(20), || {
        std::net::TcpStream::connect(("127.0.0.1", port)).ok()
    });
    assert!(up.is_some(), "the HTTPS server did not listen");
    (child, port)
}

/// The module's two templates rendered by Terraform's own `templatefile`
/// (`terraform console`, no provider needed): the user data, given the
/// config `edit` makes of the rendered eco.toml.
fn render_user_data(
    vars: &[(&str, String)],
    config_vars: &[(&str, String)],
    edit: impl Fn(String) -> String,
) -> (String, String) {
    let object = |pairs: &[(&str, String)]| {
        let fields: Vec<String> = pairs.iter().map(|(k, v)| format!("{k} = {v}")).collect();
        format!("{{ {} }}", fields.join(", "))
    };
    let templates = root().join("terraform/templates");
    let config = console(&format!(
        "base64encode(templatefile({}, {}))",
        hcl_string(&templates.join("eco.toml.tftpl").display().to_string()),
        object(config_vars)
    ));
    let config = edit(config);
    let mut vars = vars.to_vec();
    vars.push(("eco_config", hcl_string(&config)));
    let user_data = console(&format!(
        "base64encode(templatefile({}, {}))",
        hcl_string(&templates.join("user-data.sh.tftpl").display().to_string()),
        object(&vars)
    ));
    (user_data, config)
}

/// `expression` (a base64encode(...)) evaluated by `terraform console`,
/// decoded.
fn console(expression: &str) -> String {
    use base64::Engine;
    let dir = tempfile::tempdir().expect("tempdir");
    let mut child = Command::new("terraform")
        .arg("console")
        .current_dir(dir.path())
        .env("TF_CLI_CONFIG_FILE", "/dev/null")
        .env("CHECKPOINT_DISABLE", "1")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("terraform console (terraform is on the machine image)");
    {
        use std::io::Write;
        let mut stdin = child.stdin.take().expect("stdin");
        writeln!(stdin, "{expression}").expect("write the expression");
    }
    let out = child.wait_with_output().expect("terraform console");
    assert!(
        out.status.success(),
        "terraform console: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8_lossy(&out.stdout);
    let encoded = text.trim().trim_matches('"');
    String::from_utf8(
        base64::engine::general_purpose::STANDARD
            .decode(encoded)
            .unwrap_or_else(|e| panic!("terraform console printed {text:?}: {e}")),
    )
    .expect("UTF-8")
}

/// `s` as an HCL string literal (JSON's escapes, `${` and `%{` escaped).
fn hcl_string(s: &str) -> String {
    serde_json::to_string(s)
        .expect("a JSON string")
        .replace("${", "$${")
        .replace("%{", "%%{")
}

/// Everything the tests share: the emulator with the module's AWS
/// objects, the downloads served over HTTPS, the user data.
struct Setup {
    _dir: tempfile::TempDir,
    emulator: Emulator,
    instance_ip: String,
    server: Child,
    ca_file: PathBuf,
    user_data: String,
    config: String,
    kms_key_arn: String,
}

impl Drop for Setup {
    fn drop(&mut self) {
        testkit::process::kill(self.server.id() as i32, libc::SIGKILL);
        let _ = self.server.wait();
    }
}

fn setup(net: u8, eco_sha256_override: Option<&str>) -> Setup {
    // Where the machine and eco.service (PrivateTmp) read the emulator's
    // AWS config files: never under /tmp, wherever the checkout is.
    let parent = testkit::machine::files_root();
    std::fs::create_dir_all(&parent).expect("the machines' files root");
    let dir = tempfile::Builder::new()
        .prefix("user-data-")
        .tempdir_in(parent)
        .expect("tempdir");
    let emulator = Emulator::start(&dir.path().join("aws"));
    let bucket = format!("{CLUSTER}-eco-snapshots-{net}");
    emulator.create_bucket(&bucket);
    let kms_key_arn = aws_cli(
        &emulator,
        &[
            "kms",
            "create-key",
            "--query",
            "KeyMetadata.Arn",
            "--output",
            "text",
        ],
    );
    aws_cli(
        &emulator,
        &[
            "ssm",
            "put-parameter",
            "--name",
            GOSSIP_PARAMETER,
            "--type",
            "SecureString",
            "--key-id",
            &kms_key_arn,
            "--value",
            &format!("{GOSSIP_KEY}\n"),
        ],
    );
    let cidr = format!("127.{net}.1.0/24");
    let group = emulator.create_group(
        &format!("{CLUSTER}-eco"),
        &[("us-east-1a", cidr.as_str())],
        1,
        Some(Duration::from_secs(600)),
    );
    let instances = testkit::wait_until(Duration::from_secs(30), || {
        let list = group.instances();
        (list.len() == 1 && list[0].ec2_state == "running").then_some(list)
    })
    .expect("the group's instance runs");
    let instance_ip = instances[0].private_ip.clone();

    // The downloads, over HTTPS from loopback.
    let files = dir.path().join("downloads");
    std::fs::create_dir_all(&files).expect("downloads dir");
    let deb = machine::build_debian_package(Path::new(env!("CARGO_BIN_EXE_eco")), &files)
        .expect("build the package");
    let etcd = etcd_archive(&files);
    let pki = Pki::new(&dir.path().join("pki"), "downloads").expect("a CA");
    let cert = pki
        .issue(
            "server",
            "downloads",
            &["127.0.0.1"],
            Usage::ServerAndClient,
            Validity::Current,
        )
        .expect("the server's certificate");
    let (server, port) = https_server(&files, &cert.cert, &cert.key);
    let url = |file: &Path| {
        format!(
            "https://127.0.0.1:{port}/{}",
            file.file_name()
                .and_then(|f| f.to_str())
                .expect("a file name")
        )
    };
    let eco_sha256 = eco_sha256_override.map_or_else(|| sha256_of(&deb), str::to_string);
    let endpoint = emulator.endpoint();
    let (user_data, config) = render_user_data(
        &[
            ("region", hcl_string(aws::REGION)),
            ("eco_package_url", hcl_string(&url(&deb))),
            ("eco_package_sha256", hcl_string(&eco_sha256)),
            ("etcd_version", hcl_string(ETCD_VERSION)),
            ("etcd_package_url", hcl_string(&url(&etcd))),
            ("etcd_package_sha256", hcl_string(&sha256_of(&etcd))),
            ("gossip_key_parameter", hcl_string(GOSSIP_PARAMETER)),
        ],
        &[
            ("cluster_name", hcl_string(CLUSTER)),
            ("region", hcl_string(aws::REGION)),
            ("group_name", hcl_string(&format!("{CLUSTER}-eco"))),
            ("bucket", hcl_string(&bucket)),
            ("prefix", hcl_string("eco")),
            ("kms_key_arn", hcl_string(&kms_key_arn)),
            ("extra_names", "[\"etcd.example.internal\"]".to_string()),
        ],
        // (the emulator's S3: see the module docs)
        |config| {
            config.replace(
                "[snapshot.s3]\n",
                &format!("[snapshot.s3]\nendpoint = \"{endpoint}\"\nforce_path_style = true\n"),
            )
        },
    );
    Setup {
        ca_file: pki.ca_file(),
        _dir: dir,
        emulator,
        instance_ip,
        server,
        user_data,
        config,
        kms_key_arn,
    }
}

/// Boots the machine, gives eco.service the emulator's environment (see
/// the module docs), and runs the user data as cloud-init does; its exit
/// code and output.
fn run_user_data(name: &str, s: &Setup) -> (Machine, i32, String) {
    let m = Machine::boot_on_host_network(name).expect("boot the machine");
    let env = s.emulator.env(&s.instance_ip);
    let dropin = m.path("/etc/systemd/system/eco.service.d");
    std::fs::create_dir_all(&dropin).expect("drop-in dir");
    let mut text = String::from(
        "# The test kit's stand-in for EC2: the AWS emulator's endpoints\n[Service]\n",
    );
    for (k, v) in &env {
        text.push_str(&format!("Environment=\"{k}={v}\"\n"));
    }
    std::fs::write(dropin.join("aws-emulator.conf"), text).expect("write the drop-in");
    let scripts = m.path("/var/lib/cloud/instance/scripts");
    std::fs::create_dir_all(&scripts).expect("cloud-init's scripts dir");
    std::fs::write(scripts.join("part-001"), &s.user_data).expect("write the user data");
    std::fs::copy(&s.ca_file, m.path("/tmp/downloads-ca.crt")).expect("the CA");
    m.run(&["systemctl", "daemon-reload"])
        .expect("daemon-reload");
    let mut args: Vec<String> = vec!["env".into()];
    args.extend(env.iter().map(|(k, v)| format!("{k}={v}")));
    args.push("CURL_CA_BUNDLE=/tmp/downloads-ca.crt".into());
    args.push(format!(
        "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin:{}",
        root().join(".tools/aws-venv/bin").display()
    ));
    args.extend([
        "bash".into(),
        "/var/lib/cloud/instance/scripts/part-001".into(),
    ]);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let (code, out, err) = m
        .exec_for(Duration::from_secs(300), &args)
        .expect("run the user data");
    (m, code, out + &err)
}

fn unavailable() -> Option<String> {
    if let Some(why) = machine::unavailable() {
        return Some(why);
    }
    let terraform = Command::new("terraform")
        .arg("version")
        .env("TF_CLI_CONFIG_FILE", "/dev/null")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status();
    if !terraform.is_ok_and(|s| s.success()) {
        return Some("terraform is not installed (it is on the machine image)".into());
    }
    None
}

#[test]
fn the_user_data_installs_eco_and_etcd_and_the_member_serves_over_tls() {
    if let Some(why) = unavailable() {
        eprintln!("skipped: {why}");
        return;
    }
    let s = setup(171, None);
    assert!(
        !s.user_data.contains(GOSSIP_KEY),
        "the gossip key must never be in the user data"
    );
    let (m, code, log) = run_user_data("eco-user-data", &s);
    eprintln!("{log}");
    assert_eq!(code, 0, "the user data failed:\n{log}");
    for step in [
        "tools",
        "etcd 3.5.30",
        "eco from",
        "/etc/eco/eco.toml",
        "gossip keys",
        "starting eco.service",
        "done",
    ] {
        assert!(
            log.contains(&format!("eco user data: {step}")),
            "step {step:?} missing:\n{log}"
        );
    }

    // What it installed and wrote.
    let installed = m
        .run(&["dpkg-query", "-W", "-f", "${Status}", "eco"])
        .expect("dpkg-query");
    assert_eq!(installed, "install ok installed");
    let version = m
        .run(&["/usr/local/bin/etcd", "--version"])
        .expect("etcd --version");
    assert!(version.contains("etcd Version: 3.5.30"), "{version}");
    assert!(m.path("/usr/local/bin/etcdctl").exists() && m.path("/usr/local/bin/etcdutl").exists());
    let written = std::fs::read_to_string(m.path("/etc/eco/eco.toml")).expect("the config");
    assert_eq!(written, s.config, "the config is the rendered template");
    assert!(written.contains(&s.kms_key_arn) && written.contains("etcd.example.internal"));
    let keys = std::fs::read_to_string(m.path("/etc/eco/gossip.keys")).expect("the keys");
    assert_eq!(keys, format!("{GOSSIP_KEY}\n"));
    let stat = m
        .run(&[
            "stat",
            "-c",
            "%U:%G %a",
            "/etc/eco/gossip.keys",
            "/etc/eco/eco.toml",
        ])
        .expect("stat");
    assert_eq!(stat, "eco:eco 600\nroot:eco 640\n");
    assert_eq!(
        m.run(&["systemctl", "is-enabled", "eco"])
            .expect("is-enabled")
            .trim(),
        "enabled"
    );

    // The member serves: eco.service turns active once eco said READY=1.
    let active = testkit::wait_until(Duration::from_secs(120), || {
        let state = m
            .run(&["systemctl", "show", "eco", "-p", "ActiveState", "--value"])
            .ok()?;
        (state.trim() == "active").then_some(())
    });
    assert!(
        active.is_some(),
        "eco.service never became ready:\n{}",
        m.journal("eco")
    );

    // The operator's steps of docs/aws.md: a client certificate from the
    // cluster's CA, then etcdctl over TLS.
    // (with the emulator's environment, as eco.service has it: on EC2 the
    // SDK finds the instance profile's credentials by itself)
    let mut certs: Vec<String> = vec!["env".into()];
    certs.extend(
        s.emulator
            .env(&s.instance_ip)
            .into_iter()
            .map(|(k, v)| format!("{k}={v}")),
    );
    certs.extend(
        [
            "eco",
            "certs",
            "client",
            "--config",
            "/etc/eco/eco.toml",
            "--user",
            "operator",
            "--out",
            "/root/etcd-operator",
        ]
        .map(String::from),
    );
    let certs: Vec<&str> = certs.iter().map(String::as_str).collect();
    m.run(&certs)
        .unwrap_or_else(|e| panic!("eco certs client: {e}\n{}", m.journal("eco")));
    let endpoint = format!("https://{}:2379", s.instance_ip);
    let etcdctl = |args: &[&str]| {
        let mut all = vec![
            "/usr/local/bin/etcdctl",
            "--endpoints",
            endpoint.as_str(),
            "--cacert",
            "/root/etcd-operator/ca.crt",
            "--cert",
            "/root/etcd-operator/operator.crt",
            "--key",
            "/root/etcd-operator/operator.key",
            "--command-timeout=5s",
        ];
        all.extend_from_slice(args);
        m.run(&all)
    };
    etcdctl(&["put", "hello", "from the user data"]).expect("etcdctl put");
    let got = etcdctl(&["get", "--print-value-only", "hello"]).expect("etcdctl get");
    assert_eq!(got, "from the user data\n");
    let members = etcdctl(&["member", "list"]).expect("member list");
    assert!(
        members.contains(&format!("https://{}:2380", s.instance_ip)),
        "{members}"
    );
    m.run(&["systemctl", "stop", "eco"]).expect("stop eco");
}

#[test]
fn a_download_whose_checksum_differs_is_refused_and_eco_is_not_started() {
    if let Some(why) = unavailable() {
        eprintln!("skipped: {why}");
        return;
    }
    let wrong = "0".repeat(64);
    let s = setup(172, Some(&wrong));
    let (m, code, log) = run_user_data("eco-user-data-bad", &s);
    assert_ne!(
        code, 0,
        "a package with another checksum was accepted:\n{log}"
    );
    assert!(log.contains(&format!("expected {wrong}")), "{log}");
    assert!(log.contains("FAILED at line"), "{log}");
    assert!(!m.path("/usr/bin/eco").exists(), "eco was installed anyway");
    assert!(!m.path("/etc/eco/gossip.keys").exists());
}
