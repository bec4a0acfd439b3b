//! Network namespaces for partitions (root, `ip` and `nft`).
//!
//! On loopback, etcd's outgoing connections all leave from 127.0.0.1, so
//! no filter on address pairs could tell instances apart. With
//! [`super::Network::Namespaces`] every instance gets a namespace
//! `ecoch<net>-<n>` with a veth `ecoch<net>v<n>` into the bridge
//! `ecoch<net>` and the address `10.<net>.0.<n>`; the harness (in the root
//! namespace) reaches them through the bridge (`10.<net>.0.254`). A
//! partition is an nftables table `bridge ecoch<net>` dropping the pairs'
//! frames on the bridge, both directions, TCP and UDP; healing deletes the
//! table. The cluster's `Drop` deletes the table, the namespaces and the
//! bridge, and a new cluster first removes leftovers of the same names.

use anyhow::Context;
use std::process::{Command, Stdio};

pub(crate) fn ip(args: &[&str]) -> anyhow::Result<()> {
    let out = Command::new("ip").args(args).output().context("run ip")?;
    anyhow::ensure!(
        out.status.success(),
        "ip {}: {}",
        args.join(" "),
        String::from_utf8_lossy(&out.stderr).trim()
    );
    Ok(())
}

fn nft(script: &str) -> anyhow::Result<()> {
    let mut child = Command::new("nft")
        .args(["-f", "-"])
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .context("run nft")?;
    if let Some(mut stdin) = child.stdin.take() {
        use std::io::Write;
        stdin.write_all(script.as_bytes()).context("nft input")?;
    }
    let out = child.wait_with_output().context("nft")?;
    anyhow::ensure!(
        out.status.success(),
        "nft: {}",
        String::from_utf8_lossy(&out.stderr).trim()
    );
    Ok(())
}

/// Why partitions cannot be made here, if they cannot.
pub fn partitions_unavailable() -> Option<String> {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        return Some("partitions need root (network namespaces and nftables); run as root".into());
    }
    for tool in ["ip", "nft"] {
        let found = Command::new(tool)
            .arg("-V")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .is_ok();
        if !found {
            return Some(format!(
                "partitions need `{tool}` (scripts/install-deps.sh installs iproute2 and nftables)"
            ));
        }
    }
    None
}

/// The bridge of block `net` (leftovers of the same names removed first).
pub(super) fn add_bridge(net: u8) -> anyhow::Result<()> {
    remove_namespaces(net);
    let bridge = format!("ecoch{net}");
    ip(&["link", "add", &bridge, "type", "bridge"])?;
    ip(&["addr", "add", &format!("10.{net}.0.254/24"), "dev", &bridge])?;
    ip(&["link", "set", &bridge, "up"])?;
    Ok(())
}

/// The namespace of instance `n` of block `net`: its name and address.
pub(super) fn add_namespace(net: u8, n: usize) -> anyhow::Result<(String, String)> {
    let ns = format!("ecoch{net}-{n}");
    let address = format!("10.{net}.0.{n}");
    add_host(
        &ns,
        &format!("ecoch{net}v{n}"),
        &format!("ecoch{net}"),
        &address,
    )?;
    Ok((ns, address))
}

/// A network namespace `ns` whose `eth0` has `address`/24, its peer
/// `veth` in the root namespace on `bridge`, both up, and `lo` up.
pub(crate) fn add_host(ns: &str, veth: &str, bridge: &str, address: &str) -> anyhow::Result<()> {
    ip(&["netns", "add", ns])?;
    ip(&[
        "link", "add", veth, "type", "veth", "peer", "name", "eth0", "netns", ns,
    ])?;
    ip(&["link", "set", veth, "master", bridge, "up"])?;
    ip(&[
        "-n",
        ns,
        "addr",
        "add",
        &format!("{address}/24"),
        "dev",
        "eth0",
    ])?;
    ip(&["-n", ns, "link", "set", "eth0", "up"])?;
    ip(&["-n", ns, "link", "set", "lo", "up"])?;
    Ok(())
}

/// Drops every frame between an address of `a` and one of `b`, both
/// directions, on the bridge of block `net` (replaces any earlier cut).
pub(super) fn cut(net: u8, a: &[String], b: &[String]) -> anyhow::Result<()> {
    heal(net);
    let mut rules = String::new();
    for x in a {
        for y in b {
            rules.push_str(&format!(
                "    ip saddr {x} ip daddr {y} drop\n    ip saddr {y} ip daddr {x} drop\n"
            ));
        }
    }
    nft(&format!(
        "table bridge ecoch{net} {{\n  chain cut {{\n    type filter hook forward priority 0;\n{rules}  }}\n}}\n"
    ))
}

/// Drops TCP from an address of `from` to port `port` of one of `to` on
/// the bridge of block `net` (replaces any earlier cut).
pub(super) fn drop_port(net: u8, from: &[String], to: &[String], port: u16) -> anyhow::Result<()> {
    heal(net);
    let mut rules = String::new();
    for x in from {
        for y in to {
            rules.push_str(&format!(
                "    ip saddr {x} ip daddr {y} tcp dport {port} drop\n"
            ));
        }
    }
    nft(&format!(
        "table bridge ecoch{net} {{\n  chain cut {{\n    type filter hook forward priority 0;\n{rules}  }}\n}}\n"
    ))
}

/// Removes every cut of block `net`.
pub(super) fn heal(net: u8) {
    let _ = nft(&format!("delete table bridge ecoch{net}\n"));
}

/// Removes every namespace, bridge and nft table this harness may have
/// made (any block): at start, for leftovers of a killed run, and on
/// SIGINT/SIGTERM.
pub fn remove_all_namespaces() {
    let mut nets = std::collections::BTreeSet::new();
    let names = |args: &[&str]| -> Vec<String> {
        Command::new(args[0])
            .args(&args[1..])
            .output()
            .map(|o| String::from_utf8_lossy(&o.stdout).to_string())
            .unwrap_or_default()
            .lines()
            .flat_map(|l| l.split_whitespace().map(str::to_string).collect::<Vec<_>>())
            .collect()
    };
    for word in names(&["ip", "-br", "link"])
        .into_iter()
        .chain(names(&["ip", "netns", "list"]))
        .chain(names(&["nft", "list", "tables"]))
    {
        let digits: String = word
            .strip_prefix("ecoch")
            .unwrap_or_default()
            .chars()
            .take_while(char::is_ascii_digit)
            .collect();
        if let Ok(net) = digits.parse::<u8>() {
            nets.insert(net);
        }
    }
    for net in nets {
        remove_namespaces(net);
    }
}

/// Removes the namespaces, bridge and nft table of block `net` (leftovers
/// of an interrupted run included).
pub(super) fn remove_namespaces(net: u8) {
    heal(net);
    remove_network(
        &format!("ecoch{net}-"),
        &format!("ecoch{net}v"),
        &format!("ecoch{net}"),
    );
}

/// Removes every namespace named `netns_prefix…`, every root-namespace
/// link named `veth_prefix…` (a namespace the kernel has not torn down
/// yet would otherwise keep its veth pair) and the bridge `bridge`; what
/// is not there is skipped.
pub(crate) fn remove_network(netns_prefix: &str, veth_prefix: &str, bridge: &str) {
    if let Ok(out) = Command::new("ip").args(["netns", "list"]).output() {
        for line in String::from_utf8_lossy(&out.stdout).lines() {
            if let Some(name) = line
                .split_whitespace()
                .next()
                .filter(|n| n.starts_with(netns_prefix))
            {
                let _ = ip(&["netns", "del", name]);
            }
        }
    }
    if let Ok(out) = Command::new("ip").args(["-br", "link"]).output() {
        for line in String::from_utf8_lossy(&out.stdout).lines() {
            let name = line.split_whitespace().next().unwrap_or_default();
            let name = name.split('@').next().unwrap_or_default();
            if name.starts_with(veth_prefix) {
                let _ = ip(&["link", "del", name]);
            }
        }
    }
    let _ = ip(&["link", "del", bridge]);
}
