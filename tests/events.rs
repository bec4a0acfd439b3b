//! The structured events' contract: docs/operations.md's "Events" table,
//! `eco::base::events::Event` and the code that emits each event agree — every
//! event is documented with its level and fields, emitted somewhere, at
//! the documented level, with every documented field. (That real
//! processes log them is checked where they happen: tests/resize.rs
//! counts a resize's events in the instances' logs.)

use eco::base::events::Event;
use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// A documented event: its level and fields.
#[derive(Debug, PartialEq, Eq)]
struct Documented {
    level: String,
    fields: Vec<String>,
}

fn documented() -> BTreeMap<String, Documented> {
    let doc = std::fs::read_to_string(testkit::workspace_root().join("docs/operations.md"))
        .expect("docs/operations.md");
    let section = doc
        .split("\n# Events\n")
        .nth(1)
        .expect("an Events section")
        .split("\n# ")
        .next()
        .unwrap_or_default();
    let mut out = BTreeMap::new();
    for line in section.lines().filter(|l| l.starts_with("| `")) {
        let cells: Vec<&str> = line.split('|').map(str::trim).collect();
        let name = cells[1].trim_matches('`').to_string();
        let fields = cells[3]
            .split(',')
            .map(|f| f.trim().trim_matches('`').to_string())
            .filter(|f| !f.is_empty())
            .collect();
        let level = cells[2].to_string();
        assert!(
            out.insert(name.clone(), Documented { level, fields })
                .is_none(),
            "{name} documented twice"
        );
    }
    out
}

/// A `crate::event!(level, Event::Variant, …)` call in the sources.
#[derive(Debug)]
struct CallSite {
    file: String,
    level: String,
    variant: String,
    rest: String,
}

fn rust_files(dir: &Path, out: &mut Vec<std::path::PathBuf>) {
    for entry in std::fs::read_dir(dir).expect("read src") {
        let path = entry.expect("entry").path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

fn call_sites() -> Vec<CallSite> {
    let mut files = Vec::new();
    rust_files(&testkit::workspace_root().join("src"), &mut files);
    let mut sites = Vec::new();
    for file in files {
        let text = std::fs::read_to_string(&file).expect("source");
        for (at, _) in text.match_indices("crate::event!(") {
            let args = &text[at + "crate::event!(".len()..];
            // The call's arguments, up to its closing parenthesis.
            let mut depth = 1;
            let end = args
                .char_indices()
                .find(|(_, c)| {
                    match c {
                        '(' => depth += 1,
                        ')' => depth -= 1,
                        _ => {}
                    }
                    depth == 0
                })
                .map(|(i, _)| i)
                .expect("a closed call");
            let args = &args[..end];
            let mut parts = args.splitn(3, ',');
            let level = parts.next().unwrap_or_default().trim().to_string();
            let variant = parts
                .next()
                .unwrap_or_default()
                .trim()
                .strip_prefix("Event::")
                .unwrap_or_else(|| panic!("{}: not an Event:: argument: {args}", file.display()))
                .to_string();
            sites.push(CallSite {
                file: file.display().to_string(),
                level,
                variant,
                rest: parts.next().unwrap_or_default().to_string(),
            });
        }
    }
    sites
}

/// Whether the call's arguments set `field` (`field = …`, `%field`,
/// `?field`, or `field` alone).
fn sets(rest: &str, field: &str) -> bool {
    rest.split(',').any(|arg| {
        let arg = arg.trim();
        let name = arg
            .split('=')
            .next()
            .unwrap_or_default()
            .trim()
            .trim_start_matches(['%', '?']);
        name == field
    })
}

#[test]
fn the_table_the_enum_and_the_call_sites_agree() {
    let docs = documented();
    let names: BTreeSet<String> = Event::ALL.iter().map(|e| e.name().to_string()).collect();
    let in_docs: BTreeSet<String> = docs.keys().cloned().collect();
    assert_eq!(
        names, in_docs,
        "docs/operations.md's Events table and eco::base::events::Event differ"
    );
    for e in Event::ALL {
        let d = &docs[e.name()];
        assert_eq!(
            d.fields,
            e.fields(),
            "{}: fields in the docs and in Event::fields",
            e.name()
        );
    }

    let sites = call_sites();
    let mut emitted = BTreeSet::new();
    for site in &sites {
        let event = Event::ALL
            .into_iter()
            .find(|e| format!("{e:?}") == site.variant)
            .unwrap_or_else(|| panic!("{site:?}: no such event"));
        emitted.insert(event.name());
        assert_eq!(
            site.level,
            docs[event.name()].level,
            "{}: {} is logged at {} but documented at {}",
            site.file,
            event.name(),
            site.level,
            docs[event.name()].level
        );
        for field in event.fields() {
            assert!(
                sets(&site.rest, field),
                "{}: {} does not set its field {field}: {}",
                site.file,
                event.name(),
                site.rest
            );
        }
    }
    let never: Vec<&str> = Event::ALL
        .iter()
        .map(|e| e.name())
        .filter(|n| !emitted.contains(n))
        .collect();
    assert!(never.is_empty(), "events never emitted: {never:?}");
}

#[test]
fn the_checker_sees_a_missing_field() {
    assert!(sets(
        " member_id = format!(\"{id:x}\"), %name, \"m\"",
        "name"
    ));
    assert!(sets(" ?plan, %reason, \"m\"", "plan"));
    assert!(sets(" incarnation, \"m\"", "incarnation"));
    assert!(!sets(" member_id = 1, \"removed\"", "name"));
}
