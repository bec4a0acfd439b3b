//! The IAM policy docs/aws.md gives operators to attach is
//! exactly what eco calls: every AWS SDK operation the AWS provider
//! (`src/provider/aws/`) and the S3 store (`src/store/s3/`) call needs an
//! action the policy allows, and every action the policy allows is needed
//! by some call. The operations are found in the source as method calls
//! whose names are operations of the SDK crates (read from the crates'
//! own `src/operation/` directories through `cargo metadata`), so a new
//! call fails this test until the policy has its action. The Terraform
//! module's `eco` policy (terraform/iam.tf) is in turn checked against
//! this documented one by scripts/check-terraform.py: code, doc and module
//! agree.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::Command;

/// The SDK crates eco calls, the IAM service prefix of each, and the
/// source directories that call them.
const SERVICES: [(&str, &str, &str); 3] = [
    ("aws-sdk-autoscaling", "autoscaling", "src/provider/aws"),
    ("aws-sdk-ec2", "ec2", "src/provider/aws"),
    ("aws-sdk-s3", "s3", "src/store/s3"),
];

/// S3 operations whose IAM actions are not named after them.
fn s3_actions(op: &str) -> Vec<&'static str> {
    match op {
        "list_objects_v2" | "head_bucket" => vec!["s3:ListBucket"],
        "get_object" | "head_object" => vec!["s3:GetObject"],
        "put_object" | "create_multipart_upload" | "upload_part" | "complete_multipart_upload" => {
            vec!["s3:PutObject"]
        }
        "delete_object" => vec!["s3:DeleteObject"],
        "abort_multipart_upload" => vec!["s3:AbortMultipartUpload"],
        "list_multipart_uploads" => vec!["s3:ListBucketMultipartUploads"],
        "list_parts" => vec!["s3:ListMultipartUploadParts"],
        other => panic!("tests/aws_policy.rs does not know the IAM action of s3 {other}: add it"),
    }
}

fn pascal(op: &str) -> String {
    op.split('_')
        .map(|w| {
            let mut c = w.chars();
            c.next()
                .map(|f| f.to_ascii_uppercase().to_string() + c.as_str())
                .unwrap_or_default()
        })
        .collect()
}

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The operations of each SDK crate: its `src/operation/` module names.
fn sdk_operations() -> BTreeMap<String, BTreeSet<String>> {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    // This platform's packages only: the others' were never downloaded.
    let rustc = Command::new("rustc")
        .arg("-vV")
        .output()
        .expect("rustc -vV");
    let host = String::from_utf8_lossy(&rustc.stdout)
        .lines()
        .find_map(|l| l.strip_prefix("host: ").map(str::to_string))
        .expect("rustc's host triple");
    let out = Command::new(cargo)
        .args([
            "metadata",
            "--format-version",
            "1",
            "--offline",
            "--filter-platform",
        ])
        .arg(host)
        .current_dir(root())
        .output()
        .expect("cargo metadata");
    assert!(
        out.status.success(),
        "cargo metadata: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let meta: serde_json::Value = serde_json::from_slice(&out.stdout).expect("metadata JSON");
    let mut ops = BTreeMap::new();
    for (krate, _, _) in SERVICES {
        let manifest = meta["packages"]
            .as_array()
            .and_then(|ps| ps.iter().find(|p| p["name"] == krate))
            .and_then(|p| p["manifest_path"].as_str())
            .unwrap_or_else(|| panic!("{krate} is not a dependency"));
        let dir = Path::new(manifest).with_file_name("src").join("operation");
        let names: BTreeSet<String> = std::fs::read_dir(&dir)
            .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
            .flatten()
            .filter(|e| e.path().is_dir())
            .filter_map(|e| e.file_name().to_str().map(str::to_string))
            .collect();
        assert!(
            names.len() > 10,
            "{krate}: operations not found in {}",
            dir.display()
        );
        ops.insert(krate.to_string(), names);
    }
    ops
}

/// `.name()` method calls in the `.rs` files under `dir`.
fn calls_in(dir: &Path) -> BTreeSet<String> {
    let mut found = BTreeSet::new();
    for entry in std::fs::read_dir(dir).expect("source dir").flatten() {
        let text = std::fs::read_to_string(entry.path()).unwrap_or_default();
        for piece in text.split('.').skip(1) {
            if let Some(name) = piece
                .strip_suffix("()")
                .or_else(|| piece.split_once("()").map(|(n, _)| n))
                && !name.is_empty()
                && name
                    .bytes()
                    .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_')
            {
                found.insert(name.to_string());
            }
        }
    }
    found
}

/// The actions of the policy in docs/aws.md.
fn documented_policy() -> BTreeSet<String> {
    let doc = std::fs::read_to_string(root().join("docs/aws.md")).expect("docs/aws.md");
    let section = doc
        .split("## The IAM policy (least privilege)")
        .nth(1)
        .expect("docs/aws.md has the IAM policy section");
    let json = section
        .split("```json")
        .nth(1)
        .and_then(|s| s.split("```").next())
        .expect("a json block in the IAM policy section");
    let policy: serde_json::Value = serde_json::from_str(json).expect("the policy is valid JSON");
    let mut actions = BTreeSet::new();
    for statement in policy["Statement"].as_array().expect("statements") {
        assert_eq!(statement["Effect"], "Allow", "{statement}");
        match &statement["Action"] {
            serde_json::Value::String(a) => {
                actions.insert(a.clone());
            }
            serde_json::Value::Array(list) => {
                actions.extend(list.iter().filter_map(|a| a.as_str().map(str::to_string)));
            }
            other => panic!("Action {other}"),
        }
    }
    actions
}

#[test]
fn the_documented_iam_policy_is_exactly_what_the_code_calls() {
    let ops = sdk_operations();
    let mut needed: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for (krate, service, dir) in SERVICES {
        let calls = calls_in(&root().join(dir));
        for op in calls.intersection(&ops[krate]) {
            let actions = if service == "s3" {
                s3_actions(op).into_iter().map(str::to_string).collect()
            } else {
                vec![format!("{service}:{}", pascal(op))]
            };
            for a in actions {
                needed.entry(a).or_default().push(format!("{dir}: {op}"));
            }
        }
    }
    // SSE-KMS: writing and reading objects encrypted with a KMS key.
    let kms = std::fs::read_dir(root().join("src/store/s3"))
        .expect("s3 store")
        .flatten()
        .any(|e| {
            std::fs::read_to_string(e.path())
                .unwrap_or_default()
                .contains("AwsKms")
        });
    if kms {
        for a in ["kms:GenerateDataKey", "kms:Decrypt"] {
            needed.entry(a.into()).or_default().push("SSE-KMS".into());
        }
    }
    assert!(needed.contains_key("ec2:DescribeInstances"), "{needed:#?}");
    assert!(
        needed.contains_key("autoscaling:CompleteLifecycleAction"),
        "{needed:#?}"
    );
    assert!(needed.contains_key("s3:PutObject"), "{needed:#?}");
    let documented = documented_policy();
    let needed_actions: BTreeSet<String> = needed.keys().cloned().collect();
    let missing: Vec<_> = needed_actions.difference(&documented).collect();
    let unneeded: Vec<_> = documented.difference(&needed_actions).collect();
    assert!(
        missing.is_empty() && unneeded.is_empty(),
        "docs/aws.md's policy differs from the calls in src/:\n  missing (called, not allowed): {missing:?}\n  not needed (allowed, never called): {unneeded:?}\n  calls: {needed:#?}"
    );
}
