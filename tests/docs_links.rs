//! The documents hold together and stay inside the repository: every
//! relative link of every Markdown page (README, CHANGELOG, docs/, the
//! chart's) names a file that exists and, with `#anchor`, a heading of it
//! (GitHub's anchors); and no text of the repository points at a design
//! document outside it.

use std::path::{Path, PathBuf};

fn root() -> PathBuf {
    testkit::workspace_root()
}

/// Markdown without its fenced code blocks (links and headings inside
/// them are examples, not links).
fn prose(text: &str) -> String {
    let mut out = String::new();
    let mut fenced = false;
    for line in text.lines() {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
            continue;
        }
        if !fenced {
            out.push_str(line);
            out.push('\n');
        }
    }
    out
}

/// GitHub's anchor of a heading: lower case, punctuation dropped, spaces
/// as hyphens.
fn anchor(heading: &str) -> String {
    heading
        .trim()
        .to_lowercase()
        .chars()
        .filter(|c| c.is_alphanumeric() || matches!(c, '-' | '_' | ' '))
        .map(|c| if c == ' ' { '-' } else { c })
        .collect()
}

fn anchors(path: &Path) -> Vec<String> {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    prose(&text)
        .lines()
        .filter(|l| l.starts_with('#'))
        .map(|l| anchor(l.trim_start_matches('#')))
        .collect()
}

fn pages() -> Vec<PathBuf> {
    let r = root();
    let mut pages = vec![
        r.join("README.md"),
        r.join("CHANGELOG.md"),
        r.join("chart/README.md"),
    ];
    for e in std::fs::read_dir(r.join("docs")).unwrap().flatten() {
        if e.path().extension().is_some_and(|x| x == "md") {
            pages.push(e.path());
        }
    }
    pages.retain(|p| p.is_file());
    pages.sort();
    pages
}

/// The `(target)` of each `[text](target)` in `text`.
fn links(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut rest = text;
    while let Some(at) = rest.find("](") {
        rest = &rest[at + 2..];
        if let Some(end) = rest.find(')') {
            let target = &rest[..end];
            if !target.contains(char::is_whitespace) {
                out.push(target.to_string());
            }
        }
    }
    out
}

#[test]
fn every_relative_link_names_a_file_and_heading_that_exist() {
    let mut broken = Vec::new();
    for page in pages() {
        let text = prose(&std::fs::read_to_string(&page).unwrap());
        for link in links(&text) {
            if link.contains("://") || link.starts_with("mailto:") {
                continue;
            }
            let (path, hash) = link.split_once('#').unwrap_or((&link, ""));
            let target = if path.is_empty() {
                page.clone()
            } else {
                page.parent().unwrap().join(path)
            };
            if !target.exists() {
                broken.push(format!("{}: {link} (no such file)", page.display()));
                continue;
            }
            if !hash.is_empty()
                && target.extension().is_some_and(|x| x == "md")
                && !anchors(&target).iter().any(|a| a == hash)
            {
                broken.push(format!("{}: {link} (no such heading)", page.display()));
            }
        }
    }
    assert!(broken.is_empty(), "broken links:\n{}", broken.join("\n"));
}

#[test]
fn the_checker_finds_links_and_anchors() {
    assert_eq!(
        links("see [a](b.md#c) and [d](https://x)"),
        ["b.md#c", "https://x"]
    );
    assert_eq!(
        anchor(" Quorum loss in the daemon (`src/quorum_loss/`)"),
        "quorum-loss-in-the-daemon-srcquorum_loss"
    );
    assert_eq!(prose("a\n```\n[x](y)\n```\nb\n"), "a\nb\n");
}

/// Text files of the repository (not build output, tools or git).
fn text_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let p = e.path();
        let name = e.file_name().to_string_lossy().into_owned();
        if p.is_dir() {
            if !matches!(
                name.as_str(),
                "target" | ".tools" | ".git" | ".run" | "node_modules"
            ) {
                text_files(&p, out);
            }
        } else if [
            "rs", "md", "toml", "sh", "py", "yaml", "yml", "tf", "txt", "tpl", "service",
        ]
        .iter()
        .any(|x| p.extension().is_some_and(|e| e == *x))
        {
            out.push(p);
        }
    }
}

#[test]
fn nothing_points_at_a_design_document_outside_the_repository() {
    let mut files = Vec::new();
    text_files(&root(), &mut files);
    let me = root().join("tests/docs_links.rs");
    let outside: Vec<String> = files
        .iter()
        .filter(|p| **p != me)
        .filter_map(|p| {
            let text = std::fs::read_to_string(p).ok()?;
            let hit = ["DESIGN.md", "DESIGN §", "../shared"]
                .iter()
                .find(|needle| text.contains(*needle))?;
            Some(format!("{}: {hit}", p.display()))
        })
        .collect();
    assert!(
        outside.is_empty(),
        "pointers outside the repository:\n{}",
        outside.join("\n")
    );
}
