//! The words docs/operations.md lists are eco's: the phases of
//! `eco_phase_info` are `recovery::pass::Phase`'s, and the wait reasons of
//! `eco_waits_total` / `eco_waiting` are `recovery::planner::WaitReason`'s —
//! each one, no other, in the code's order.

use recovery::pass::Phase;
use recovery::planner::WaitReason;

fn operations() -> String {
    std::fs::read_to_string(testkit::workspace_root().join("docs/operations.md")).unwrap()
}

/// The backticked words of `text`, in order.
fn backticked(text: &str) -> Vec<String> {
    text.split('`')
        .skip(1)
        .step_by(2)
        .map(str::to_string)
        .collect()
}

#[test]
fn the_documented_phases_are_the_codes() {
    let doc = operations();
    let row = doc
        .lines()
        .find(|l| l.starts_with("| `eco_phase_info`"))
        .expect("eco_phase_info's row");
    let listed = row
        .split_once("phase (")
        .and_then(|(_, rest)| rest.split_once(')'))
        .map(|(inside, _)| backticked(inside))
        .expect("the phases in parentheses");
    let code: Vec<String> = Phase::ALL.iter().map(|p| p.as_str().to_string()).collect();
    assert_eq!(
        listed, code,
        "eco_phase_info's phases in docs/operations.md"
    );
}

#[test]
fn the_documented_wait_reasons_are_the_codes() {
    let doc = operations();
    let para = doc
        .split("The wait reasons (`recovery::planner::WaitReason`):")
        .nth(1)
        .expect("the wait reasons paragraph")
        .split("\n\n")
        .next()
        .unwrap();
    // The reasons are the backticked lower-case words (one-word ones
    // included: `leaving`, `left`); the paragraph also quotes a metric
    // (`eco_…`) and a command (`eco status`), which are not.
    let code: Vec<String> = WaitReason::ALL
        .iter()
        .map(|w| w.as_str().to_string())
        .collect();
    let listed: Vec<String> = backticked(para)
        .into_iter()
        .filter(|w| !w.starts_with("eco"))
        .filter(|w| w.chars().all(|c| c.is_ascii_lowercase() || c == '_'))
        .collect();
    assert_eq!(listed, code, "the wait reasons in docs/operations.md");
}
