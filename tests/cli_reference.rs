//! `docs/cli.md`, the command-line reference, is eco's own `--help` (clap)
//! for every command and subcommand, walked from `eco --help`'s command
//! list. The test fails when the page and the binary differ; to write the
//! page again from the binary:
//!
//! ```sh
//! ECO_UPDATE_DOCS=1 cargo nextest run -E 'binary(cli_reference)'
//! ```

use std::process::Command;
use testkit::eco_bin;

/// `eco <path> --help`, as printed to a pipe (clap wraps at 100 columns
/// when the output is no terminal).
fn help(path: &[String]) -> String {
    let out = Command::new(eco_bin!())
        .args(path)
        .arg("--help")
        .env_remove("COLUMNS")
        .output()
        .expect("eco --help");
    assert!(
        out.status.success(),
        "eco {} --help failed: {}",
        path.join(" "),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// The subcommands a help text lists under `Commands:` (not `help`).
fn subcommands(help: &str) -> Vec<String> {
    help.lines()
        .skip_while(|l| *l != "Commands:")
        .skip(1)
        .take_while(|l| !l.is_empty())
        .filter(|l| l.starts_with("  ") && !l.starts_with("   "))
        .filter_map(|l| l.split_whitespace().next())
        .filter(|name| *name != "help")
        .map(str::to_string)
        .collect()
}

/// The page: each command's help, depth first in the order eco lists them.
fn reference() -> String {
    let mut page = String::from(
        "# eco's command line\n\n\
         Every command's `--help`, as eco prints it. This page is generated from the\n\
         binary (`tests/cli_reference.rs` fails when they differ; `ECO_UPDATE_DOCS=1\n\
         cargo nextest run -E 'binary(cli_reference)'` writes it again). What each\n\
         command is for, with examples: [operations.md](operations.md) and\n\
         [runbook.md](runbook.md).\n",
    );
    let mut stack: Vec<Vec<String>> = vec![Vec::new()];
    let mut order = Vec::new();
    while let Some(path) = stack.pop() {
        let text = help(&path);
        let mut children: Vec<Vec<String>> = subcommands(&text)
            .into_iter()
            .map(|c| {
                let mut p = path.clone();
                p.push(c);
                p
            })
            .collect();
        children.reverse();
        stack.extend(children);
        order.push((path, text));
    }
    for (path, text) in order {
        let name = if path.is_empty() {
            "eco".to_string()
        } else {
            format!("eco {}", path.join(" "))
        };
        page.push_str(&format!(
            "\n## `{name}`\n\n```text\n{}\n```\n",
            text.trim_end()
        ));
    }
    page
}

#[test]
fn the_cli_reference_is_the_binarys_own_help() {
    let path = testkit::workspace_root().join("docs/cli.md");
    let want = reference();
    if std::env::var_os("ECO_UPDATE_DOCS").is_some() {
        std::fs::write(&path, &want).expect("write docs/cli.md");
        return;
    }
    let have = std::fs::read_to_string(&path).unwrap_or_default();
    if have != want {
        let first = have
            .lines()
            .zip(want.lines())
            .position(|(a, b)| a != b)
            .unwrap_or(have.lines().count().min(want.lines().count()));
        panic!(
            "docs/cli.md differs from eco's --help from line {}:\n  page:   {:?}\n  binary: {:?}\nwrite it again: ECO_UPDATE_DOCS=1 cargo nextest run -E 'binary(cli_reference)'",
            first + 1,
            have.lines().nth(first),
            want.lines().nth(first)
        );
    }
}

#[test]
fn every_subcommand_is_walked() {
    let top = subcommands(&help(&[]));
    for c in [
        "run", "config", "status", "certs", "snapshot", "restore", "pause", "resume", "upgrade",
        "version",
    ] {
        assert!(top.iter().any(|t| t == c), "{c} not listed: {top:?}");
    }
    let page = reference();
    for sub in [
        "## `eco snapshot list`",
        "## `eco certs client`",
        "## `eco upgrade finalize`",
    ] {
        assert!(page.contains(sub), "{sub} missing");
    }
}

/// The `eco …` commands of the README's "Running eco" block, each with its
/// continuation lines joined.
fn readme_commands() -> Vec<String> {
    let readme = std::fs::read_to_string(testkit::workspace_root().join("README.md")).unwrap();
    let block: Vec<&str> = readme
        .split("## Running eco")
        .nth(1)
        .expect("README has a \"Running eco\" section")
        .split("```sh\n")
        .nth(1)
        .expect("a sh block")
        .split("\n```")
        .next()
        .unwrap()
        .lines()
        .collect();
    let mut out: Vec<String> = Vec::new();
    let mut joining = false;
    for line in block {
        let code = line.split("  #").next().unwrap_or(line).trim_end();
        if joining {
            if let Some(last) = out.last_mut() {
                last.push(' ');
                last.push_str(code.trim_start().trim_end_matches('\\'));
            }
        } else if code.starts_with("eco ") {
            out.push(code.trim_end_matches('\\').to_string());
        }
        joining = code.ends_with('\\');
    }
    out
}

#[test]
fn the_readmes_commands_are_eco_commands_with_their_flags_and_name_every_command() {
    let commands = readme_commands();
    let mut named = std::collections::BTreeSet::new();
    for line in &commands {
        let words: Vec<&str> = line.split_whitespace().collect();
        let path: Vec<String> = words[1..]
            .iter()
            .take_while(|w| !w.starts_with('-'))
            .filter(|w| w.chars().all(|c| c.is_ascii_lowercase()))
            .map(|w| w.to_string())
            .collect();
        let text = help(&path);
        for flag in words.iter().filter(|w| w.starts_with("--")) {
            let flag = flag
                .trim_start_matches('[')
                .split('=')
                .next()
                .unwrap_or(flag);
            assert!(
                text.contains(&format!("{flag} ")) || text.contains(&format!("{flag}\n")),
                "README: `eco {}` takes no {flag}: {line}",
                path.join(" ")
            );
        }
        if let Some(first) = path.first() {
            named.insert(first.clone());
        }
    }
    for c in subcommands(&help(&[])) {
        assert!(
            named.contains(&c),
            "README's \"Running eco\" shows no `eco {c}`: {commands:#?}"
        );
    }
}
