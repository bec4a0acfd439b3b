//! The human-readable views of a chaos run, made from the [`Outcome`]s the
//! scenarios produced:
//!
//! - [`table`]: a plain-text terminal table, one row per scenario (result,
//!   acknowledged and lost writes, time to detect the fault, to become
//!   writable again and to get the full membership back, whether the cluster
//!   was reseeded), followed by each failed scenario's failures and each
//!   skipped scenario's reason.
//! - [`markdown`]: the same table as a Markdown report, with the command
//!   that produced it and one section per scenario (counts, timings,
//!   failures, notes and a link to its timeline).
//! - [`svg`]: one scenario's timeline as a self-contained SVG: successful
//!   (and failed) writes per second on top, healthy voters below, and the
//!   scenario's marks (fault, detected, writable, ...) as dashed lines
//!   across both; [`svg_file_name`] names the file the Markdown links to.

use std::fmt::Write as _;

use super::outcome::{Mark, Outcome, Sample};

/// The columns of the results table, in the terminal and in Markdown.
const COLUMNS: [&str; 10] = [
    "scenario",
    "instances",
    "result",
    "acked",
    "lost",
    "detect s",
    "writable s",
    "full membership s",
    "majority gap s",
    "reseeded",
];

/// Which columns hold numbers (right-aligned).
const NUMERIC: [bool; 10] = [
    false, true, false, true, true, true, true, true, true, false,
];

/// PASS, FAIL or SKIP.
fn result_word(o: &Outcome) -> &'static str {
    if o.skipped.is_some() {
        "SKIP"
    } else if o.passed {
        "PASS"
    } else {
        "FAIL"
    }
}

/// Seconds with one decimal, `-` when not measured.
fn seconds(v: Option<f64>) -> String {
    v.map_or_else(|| "-".to_string(), |s| format!("{s:.1}"))
}

/// Lost acknowledged writes, with the allowance of a lossy scenario.
fn lost_cell(o: &Outcome) -> String {
    if o.lossy {
        format!("{} (≤ allowed {})", o.lost_acked_writes, o.allowed_loss)
    } else {
        o.lost_acked_writes.to_string()
    }
}

fn yes_no(b: bool) -> &'static str {
    if b { "yes" } else { "no" }
}

/// One row of the results table. A skipped scenario measured nothing, so
/// its counts are `-` rather than zeros.
fn row(o: &Outcome) -> [String; 10] {
    let ran = o.skipped.is_none();
    let if_ran = |s: String| if ran { s } else { "-".to_string() };
    let name = if o.run == 0 {
        o.name.clone()
    } else {
        format!("{} (run {})", o.name, o.run + 1)
    };
    [
        name,
        o.instances.to_string(),
        result_word(o).to_string(),
        if_ran(o.acked_writes.to_string()),
        if_ran(lost_cell(o)),
        seconds(o.time_to_detect_s),
        seconds(o.time_to_writable_s),
        seconds(o.time_to_full_membership_s),
        o.majority_gap_s()
            .map_or_else(|| "-".to_string(), |g| format!("{g:.3}")),
        if_ran(yes_no(o.reseeded).to_string()),
    ]
}

/// Writes `text` one line at a time, each line prefixed with `indent`.
fn push_indented(out: &mut String, indent: &str, text: &str) {
    for line in text.lines() {
        let _ = writeln!(out, "{indent}{line}");
    }
    if text.is_empty() {
        let _ = writeln!(out, "{indent}");
    }
}

/// A plain-text table for the terminal, one row per scenario, then the
/// failures of each failed scenario and the reason of each skipped one.
pub fn table(outcomes: &[Outcome]) -> String {
    let header = COLUMNS.map(String::from);
    let rows: Vec<[String; 10]> = outcomes.iter().map(row).collect();
    let mut widths = COLUMNS.map(|c| c.chars().count());
    for r in &rows {
        for (w, cell) in widths.iter_mut().zip(r) {
            *w = (*w).max(cell.chars().count());
        }
    }

    let mut out = String::new();
    push_table_line(&mut out, &header, &widths);
    let rule: Vec<String> = widths.iter().map(|w| "-".repeat(*w)).collect();
    let _ = writeln!(out, "{}", rule.join("  "));
    for r in &rows {
        push_table_line(&mut out, r, &widths);
    }
    if outcomes.is_empty() {
        out.push_str("(no scenarios)\n");
    }

    let mut details = String::new();
    for o in outcomes {
        if let Some(reason) = &o.skipped {
            let _ = writeln!(details, "SKIP {} ({} instances):", o.name, o.instances);
            push_indented(&mut details, "    ", reason);
        } else if !o.passed {
            let _ = writeln!(details, "FAIL {} ({} instances):", o.name, o.instances);
            if o.failures.is_empty() {
                details.push_str("    (no failure recorded)\n");
            }
            for f in &o.failures {
                push_indented(&mut details, "    ", f);
            }
        }
    }
    if !details.is_empty() {
        out.push('\n');
        out.push_str(&details);
    }
    out
}

/// One aligned line: text left-aligned, numbers right-aligned, two spaces
/// between columns, no trailing spaces.
fn push_table_line(out: &mut String, cells: &[String; 10], widths: &[usize; 10]) {
    let mut line = String::new();
    for (i, cell) in cells.iter().enumerate() {
        if i > 0 {
            line.push_str("  ");
        }
        let pad = " ".repeat(widths[i].saturating_sub(cell.chars().count()));
        if NUMERIC[i] {
            line.push_str(&pad);
            line.push_str(cell);
        } else {
            line.push_str(cell);
            line.push_str(&pad);
        }
    }
    out.push_str(line.trim_end());
    out.push('\n');
}

/// Escapes the characters Markdown would otherwise interpret in inline text
/// (and in table cells, `|`); line breaks become spaces.
fn md_escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '\\' | '`' | '*' | '_' | '[' | ']' | '<' | '>' | '|' | '#' => {
                out.push('\\');
                out.push(c);
            }
            '\n' | '\r' => out.push(' '),
            _ => out.push(c),
        }
    }
    out
}

/// Percent-encodes what may not appear as is in a relative link.
fn url_escape(path: &str) -> String {
    let mut out = String::with_capacity(path.len());
    for b in path.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~' | b'/') {
            out.push(char::from(b));
        } else {
            let _ = write!(out, "%{b:02X}");
        }
    }
    out
}

/// A code fence longer than any run of backticks in `text`.
fn fence_for(text: &str) -> String {
    let mut longest = 0;
    let mut run = 0;
    for c in text.chars() {
        if c == '`' {
            run += 1;
            longest = longest.max(run);
        } else {
            run = 0;
        }
    }
    "`".repeat((longest + 1).max(3))
}

/// A Markdown report: the command, a results table, then one section per
/// scenario with its measurements, failures, notes and timeline.
pub fn markdown(outcomes: &[Outcome], command: &str) -> String {
    let mut out = String::from("# Chaos report\n\n");
    let fence = fence_for(command);
    let _ = writeln!(out, "Produced by:\n\n{fence}\n{command}\n{fence}\n");

    let count = |word: &str| outcomes.iter().filter(|o| result_word(o) == word).count();
    let _ = writeln!(
        out,
        "**{} passed, {} failed, {} skipped** ({} scenario runs).\n",
        count("PASS"),
        count("FAIL"),
        count("SKIP"),
        outcomes.len()
    );

    out.push_str("## Results\n\n");
    let _ = writeln!(out, "| {} |", COLUMNS.join(" | "));
    let align: Vec<&str> = NUMERIC
        .iter()
        .map(|n| if *n { "---:" } else { "---" })
        .collect();
    let _ = writeln!(out, "| {} |", align.join(" | "));
    for o in outcomes {
        let cells: Vec<String> = row(o).iter().map(|c| md_escape(c)).collect();
        let _ = writeln!(out, "| {} |", cells.join(" | "));
    }
    out.push('\n');

    for o in outcomes {
        markdown_section(&mut out, o);
    }
    out
}

/// One scenario's section of the Markdown report.
fn markdown_section(out: &mut String, o: &Outcome) {
    let _ = writeln!(
        out,
        "## {} — {} instances — {}\n",
        md_escape(&o.name),
        o.instances,
        result_word(o)
    );
    if let Some(reason) = &o.skipped {
        let _ = writeln!(out, "Skipped: {}\n", md_escape(reason));
        return;
    }

    let _ = write!(
        out,
        "- Writes: {} acknowledged, {} failed, {} acknowledged lost",
        o.acked_writes, o.failed_writes, o.lost_acked_writes
    );
    if o.lossy {
        let _ = write!(
            out,
            " (declared lossy: at most {} may be lost)",
            o.allowed_loss
        );
    }
    out.push_str(".\n");
    let took =
        |v: Option<f64>| v.map_or_else(|| "not measured".to_string(), |s| format!("{s:.1} s"));
    let _ = writeln!(
        out,
        "- Time to detect the fault: {}; to be writable again: {}; to full membership: {} \
         (quorum-loss timeout {:.1} s).",
        took(o.time_to_detect_s),
        took(o.time_to_writable_s),
        took(o.time_to_full_membership_s),
        o.quorum_loss_timeout_s
    );
    if let Some(gap) = o.max_write_gap_s {
        let _ = writeln!(
            out,
            "- While the cut lasted, the majority's longest gap between acknowledged writes: {gap:.3} s ({} from the new leader's first write).",
            o.max_write_gap_new_leader_s
                .map_or_else(|| "no write".to_string(), |g| format!("{g:.3} s"))
        );
    }
    let _ = writeln!(out, "- Reseeded: {}.\n", yes_no(o.reseeded));

    if !o.failures.is_empty() {
        out.push_str("Failures:\n\n");
        for f in &o.failures {
            let _ = writeln!(out, "- {}", md_escape(f));
        }
        out.push('\n');
    } else if !o.passed {
        out.push_str("Failures: none recorded.\n\n");
    }
    if !o.notes.is_empty() {
        out.push_str("Notes:\n\n");
        for n in &o.notes {
            let _ = writeln!(out, "- {}", md_escape(n));
        }
        out.push('\n');
    }

    let file = url_escape(&svg_file_name(o));
    let _ = writeln!(
        out,
        "Timeline: [{}]({file})\n\n[![timeline of {}]({file})]({file})\n",
        md_escape(&svg_file_name(o)),
        md_escape(&o.name)
    );
}

/// The file name of a scenario's SVG timeline (what the Markdown links to).
pub fn svg_file_name(o: &Outcome) -> String {
    if o.run == 0 {
        format!("timeline-{}-{}.svg", o.instances, o.name)
    } else {
        format!("timeline-{}-{}-r{}.svg", o.instances, o.name, o.run)
    }
}

// Layout of the SVG timeline, in pixels.
const SVG_W: f64 = 900.0;
const SVG_H: f64 = 360.0;
const PLOT_X0: f64 = 64.0;
const PLOT_X1: f64 = 880.0;
/// Baselines of the staggered mark labels, between the title and the plots.
const LABEL_ROWS: [f64; 3] = [38.0, 50.0, 62.0];
const WRITES_Y0: f64 = 72.0;
const WRITES_Y1: f64 = 180.0;
const VOTERS_Y0: f64 = 198.0;
const VOTERS_Y1: f64 = 298.0;
/// Rough width of one character of an 11 px sans-serif label.
const CHAR_W: f64 = 6.0;

const OK_COLOUR: &str = "#4c78a8";
const FAILED_COLOUR: &str = "#d62728";
const VOTERS_COLOUR: &str = "#2ca02c";
const MARK_COLOUR: &str = "#555555";
const GRID_COLOUR: &str = "#e4e4e4";

/// Escapes text for XML content and attribute values; drops control
/// characters XML 1.0 does not allow.
fn xml_escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            '\t' | '\n' | '\r' => out.push(' '),
            c if c.is_control() => {}
            c => out.push(c),
        }
    }
    out
}

/// A finite, non-negative time (anything else is taken as 0).
fn time(t: f64) -> f64 {
    if t.is_finite() { t.max(0.0) } else { 0.0 }
}

/// The end of the x axis in whole seconds: the end of the last sample (a
/// sample covers `[t_s, t_s + 1)`) or the last mark, at least 1.
fn x_extent(samples: &[Sample], marks: &[Mark]) -> f64 {
    samples
        .iter()
        .map(|s| time(s.t_s) + 1.0)
        .chain(marks.iter().map(|m| time(m.t_s)))
        .fold(1.0, f64::max)
        .ceil()
}

/// Seconds between x ticks: every 5 s for short runs, every 10 s for
/// longer ones, coarser still so there are never more than ~15 ticks.
fn x_tick_step(x_max: f64) -> f64 {
    if x_max < 10.0 {
        return 1.0;
    }
    [5.0, 10.0, 30.0, 60.0, 120.0, 300.0, 600.0, 1800.0, 3600.0]
        .into_iter()
        .find(|step| x_max / step <= 15.0)
        .unwrap_or_else(|| (x_max / 15.0).ceil())
}

/// A round step (1, 2 or 5 times a power of ten, at least 1) giving about
/// `ticks` ticks up to `max`.
fn nice_step(max: f64, ticks: f64) -> f64 {
    if !max.is_finite() || max <= 0.0 {
        return 1.0;
    }
    let raw = max / ticks;
    let magnitude = 10f64.powf(raw.log10().floor());
    let norm = raw / magnitude;
    let step = if norm <= 1.0 {
        1.0
    } else if norm <= 2.0 {
        2.0
    } else if norm <= 5.0 {
        5.0
    } else {
        10.0
    } * magnitude;
    step.max(1.0)
}

/// The top of a y axis: `max` rounded up to a whole number of steps.
fn axis_top(max: f64, step: f64) -> f64 {
    ((max / step).ceil() * step).max(step)
}

/// Formats a tick value without a useless `.0`.
fn tick_label(v: f64) -> String {
    if v.fract() == 0.0 {
        format!("{v:.0}")
    } else {
        format!("{v:.1}")
    }
}

/// A self-contained SVG timeline of one scenario: writes per second on top
/// (failed writes as thin red bars), healthy voters below as a step line
/// (gaps where nothing answered), marks as dashed vertical lines.
pub fn svg(o: &Outcome) -> String {
    let x_max = x_extent(&o.samples, &o.marks);
    let plot_w = PLOT_X1 - PLOT_X0;
    let xs = |t: f64| PLOT_X0 + time(t).min(x_max) / x_max * plot_w;

    let max_writes = o
        .samples
        .iter()
        .map(|s| s.writes_ok.max(s.writes_failed))
        .max()
        .unwrap_or(0);
    let w_step = nice_step(f64::from(max_writes), 4.0);
    let w_top = axis_top(f64::from(max_writes), w_step);
    let wy = |v: f64| WRITES_Y1 - v.min(w_top) / w_top * (WRITES_Y1 - WRITES_Y0);

    let max_healthy = o
        .samples
        .iter()
        .filter_map(|s| s.healthy_voters)
        .max()
        .unwrap_or(0);
    let voters_max = u32::try_from(o.instances)
        .unwrap_or(u32::MAX)
        .max(max_healthy)
        .max(1);
    let v_step = if voters_max <= 7 {
        1.0
    } else {
        nice_step(f64::from(voters_max), 5.0)
    };
    let v_top = axis_top(f64::from(voters_max), v_step);
    let vy = |v: f64| VOTERS_Y1 - v.min(v_top) / v_top * (VOTERS_Y1 - VOTERS_Y0);

    let title = format!(
        "{} — {} instances — {}",
        o.name,
        o.instances,
        result_word(o)
    );
    let mut s = String::new();
    let _ = writeln!(
        s,
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{SVG_W}\" height=\"{SVG_H}\" \
         viewBox=\"0 0 {SVG_W} {SVG_H}\" font-family=\"sans-serif\" font-size=\"11\">"
    );
    let _ = writeln!(s, "<title>{}</title>", xml_escape(&title));
    let _ = writeln!(
        s,
        "<rect width=\"{SVG_W}\" height=\"{SVG_H}\" fill=\"white\"/>"
    );
    let _ = writeln!(
        s,
        "<text x=\"{:.1}\" y=\"20\" text-anchor=\"middle\" font-size=\"15\" font-weight=\"bold\">{}</text>",
        SVG_W / 2.0,
        xml_escape(&title)
    );

    // Grid: vertical lines at the x ticks across both plots, horizontal
    // lines at the y ticks of each.
    let x_step = x_tick_step(x_max);
    let x_ticks: Vec<f64> = (0..)
        .map(|i| f64::from(i) * x_step)
        .take_while(|t| *t <= x_max + 1e-9)
        .collect();
    let w_ticks: Vec<f64> = (0..)
        .map(|i| f64::from(i) * w_step)
        .take_while(|v| *v <= w_top + 1e-9)
        .collect();
    let v_ticks: Vec<f64> = (0..)
        .map(|i| f64::from(i) * v_step)
        .take_while(|v| *v <= v_top + 1e-9)
        .collect();
    s.push_str("<g class=\"grid\" stroke=\"");
    s.push_str(GRID_COLOUR);
    s.push_str("\" stroke-width=\"1\">\n");
    for t in &x_ticks {
        let x = xs(*t);
        let _ = writeln!(
            s,
            "<line x1=\"{x:.1}\" y1=\"{WRITES_Y0}\" x2=\"{x:.1}\" y2=\"{WRITES_Y1}\"/>\
             <line x1=\"{x:.1}\" y1=\"{VOTERS_Y0}\" x2=\"{x:.1}\" y2=\"{VOTERS_Y1}\"/>"
        );
    }
    for v in &w_ticks {
        let y = wy(*v);
        let _ = writeln!(
            s,
            "<line x1=\"{PLOT_X0}\" y1=\"{y:.1}\" x2=\"{PLOT_X1}\" y2=\"{y:.1}\"/>"
        );
    }
    for v in &v_ticks {
        let y = vy(*v);
        let _ = writeln!(
            s,
            "<line x1=\"{PLOT_X0}\" y1=\"{y:.1}\" x2=\"{PLOT_X1}\" y2=\"{y:.1}\"/>"
        );
    }
    s.push_str("</g>\n");

    // Top plot: writes per second.
    let slot = plot_w / x_max;
    s.push_str("<g class=\"writes\">\n");
    for sample in &o.samples {
        let x0 = xs(sample.t_s);
        let tip = format!(
            "<title>{:.0} s: {} ok, {} failed</title>",
            time(sample.t_s),
            sample.writes_ok,
            sample.writes_failed
        );
        if sample.writes_ok > 0 {
            let y = wy(f64::from(sample.writes_ok));
            let _ = writeln!(
                s,
                "<rect x=\"{:.1}\" y=\"{y:.1}\" width=\"{:.2}\" height=\"{:.1}\" fill=\"{OK_COLOUR}\">{tip}</rect>",
                x0 + slot * 0.1,
                (slot * 0.8).max(0.5),
                WRITES_Y1 - y
            );
        }
        if sample.writes_failed > 0 {
            let y = wy(f64::from(sample.writes_failed));
            let w = (slot * 0.2).max(1.5);
            let _ = writeln!(
                s,
                "<rect x=\"{:.1}\" y=\"{y:.1}\" width=\"{w:.2}\" height=\"{:.1}\" fill=\"{FAILED_COLOUR}\">{tip}</rect>",
                x0 + slot * 0.9 - w,
                (WRITES_Y1 - y).max(1.5)
            );
        }
    }
    if o.samples.is_empty() {
        let _ = writeln!(
            s,
            "<text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"middle\" fill=\"#888\">no samples recorded</text>",
            (PLOT_X0 + PLOT_X1) / 2.0,
            (WRITES_Y0 + WRITES_Y1) / 2.0
        );
    }
    s.push_str("</g>\n");

    // Bottom plot: healthy voters as a step line, a gap where nothing
    // answered; the quorum as a dashed reference line.
    s.push_str("<g class=\"voters\">\n");
    if o.instances > 0 {
        let quorum = (o.instances / 2 + 1) as f64;
        let y = vy(quorum);
        let _ = writeln!(
            s,
            "<line x1=\"{PLOT_X0}\" y1=\"{y:.1}\" x2=\"{PLOT_X1}\" y2=\"{y:.1}\" stroke=\"#999\" \
             stroke-dasharray=\"2 3\"/>\n<text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"end\" \
             fill=\"#777\" font-size=\"10\">quorum</text>",
            PLOT_X1 - 2.0,
            y - 3.0
        );
    }
    let path = voters_path(&o.samples, &xs, &vy);
    if !path.is_empty() {
        let _ = writeln!(
            s,
            "<path d=\"{path}\" fill=\"none\" stroke=\"{VOTERS_COLOUR}\" stroke-width=\"2\"/>"
        );
    }
    s.push_str("</g>\n");

    // Axes, ticks and their labels.
    s.push_str("<g class=\"axes\" stroke=\"#000\" stroke-width=\"1\">\n");
    for (y0, y1) in [(WRITES_Y0, WRITES_Y1), (VOTERS_Y0, VOTERS_Y1)] {
        let _ = writeln!(
            s,
            "<line x1=\"{PLOT_X0}\" y1=\"{y0}\" x2=\"{PLOT_X0}\" y2=\"{y1}\"/>\
             <line x1=\"{PLOT_X0}\" y1=\"{y1}\" x2=\"{PLOT_X1}\" y2=\"{y1}\"/>"
        );
    }
    for t in &x_ticks {
        let x = xs(*t);
        let _ = writeln!(
            s,
            "<line x1=\"{x:.1}\" y1=\"{WRITES_Y1}\" x2=\"{x:.1}\" y2=\"{:.1}\"/>\
             <line x1=\"{x:.1}\" y1=\"{VOTERS_Y1}\" x2=\"{x:.1}\" y2=\"{:.1}\"/>\
             <text x=\"{x:.1}\" y=\"{:.1}\" text-anchor=\"middle\" stroke=\"none\">{}</text>",
            WRITES_Y1 + 4.0,
            VOTERS_Y1 + 4.0,
            VOTERS_Y1 + 16.0,
            tick_label(*t)
        );
    }
    for (ticks, y_of) in [
        (&w_ticks, &wy as &dyn Fn(f64) -> f64),
        (&v_ticks, &vy as &dyn Fn(f64) -> f64),
    ] {
        for v in ticks {
            let y = y_of(*v);
            let _ = writeln!(
                s,
                "<line x1=\"{:.1}\" y1=\"{y:.1}\" x2=\"{PLOT_X0}\" y2=\"{y:.1}\"/>\
                 <text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"end\" stroke=\"none\">{}</text>",
                PLOT_X0 - 4.0,
                PLOT_X0 - 6.0,
                y + 4.0,
                tick_label(*v)
            );
        }
    }
    for (label, y0, y1) in [
        ("writes/s", WRITES_Y0, WRITES_Y1),
        ("healthy voters", VOTERS_Y0, VOTERS_Y1),
    ] {
        let y = (y0 + y1) / 2.0;
        let _ = writeln!(
            s,
            "<text x=\"16\" y=\"{y:.1}\" text-anchor=\"middle\" stroke=\"none\" \
             transform=\"rotate(-90 16 {y:.1})\">{label}</text>"
        );
    }
    let _ = writeln!(
        s,
        "<text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"middle\" stroke=\"none\">seconds since the load started</text>",
        (PLOT_X0 + PLOT_X1) / 2.0,
        VOTERS_Y1 + 32.0
    );
    s.push_str("</g>\n");

    push_marks(&mut s, &o.marks, &xs);
    push_legend(&mut s);
    s.push_str("</svg>");
    s
}

/// The path of the healthy-voters step line: each sample is a horizontal
/// segment over its second, joined vertically to the next one when they
/// are adjacent; a sample without a value leaves a gap.
fn voters_path(samples: &[Sample], xs: &dyn Fn(f64) -> f64, vy: &dyn Fn(f64) -> f64) -> String {
    let mut path = String::new();
    let mut last_end: Option<f64> = None;
    for sample in samples {
        let Some(v) = sample.healthy_voters else {
            last_end = None;
            continue;
        };
        let t = time(sample.t_s);
        let (x0, x1, y) = (xs(t), xs(t + 1.0), vy(f64::from(v)));
        match last_end {
            Some(end) if (end - x0).abs() < 0.5 => {
                let _ = write!(path, " V{y:.1} H{x1:.1}");
            }
            _ => {
                let sep = if path.is_empty() { "" } else { " " };
                let _ = write!(path, "{sep}M{x0:.1} {y:.1} H{x1:.1}");
            }
        }
        last_end = Some(x1);
    }
    path
}

/// The marks: a dashed vertical line across both plots, its label above
/// the plots on the first of three rows where it does not overlap the
/// previous label (by index when every row is taken).
fn push_marks(s: &mut String, marks: &[Mark], xs: &dyn Fn(f64) -> f64) {
    let mut sorted: Vec<&Mark> = marks.iter().collect();
    sorted.sort_by(|a, b| time(a.t_s).total_cmp(&time(b.t_s)));
    let mut row_end = [f64::NEG_INFINITY; LABEL_ROWS.len()];

    s.push_str("<g class=\"marks\" font-size=\"10\">\n");
    for (i, mark) in sorted.iter().enumerate() {
        let x = xs(mark.t_s);
        let label = xml_escape(&mark.label);
        let width = mark.label.chars().count() as f64 * CHAR_W;
        let (start, anchor, tx) = if x + 3.0 + width > SVG_W - 10.0 {
            (x - 3.0 - width, "end", x - 3.0)
        } else {
            (x + 3.0, "start", x + 3.0)
        };
        let row = row_end
            .iter()
            .position(|end| *end + 4.0 < start)
            .unwrap_or(i % LABEL_ROWS.len());
        row_end[row] = row_end[row].max(start + width);
        let y = LABEL_ROWS[row];
        let colour = if mark.label == "fault" {
            FAILED_COLOUR
        } else {
            MARK_COLOUR
        };
        let _ = writeln!(
            s,
            "<line x1=\"{x:.1}\" y1=\"{:.1}\" x2=\"{x:.1}\" y2=\"{VOTERS_Y1}\" stroke=\"{colour}\" \
             stroke-dasharray=\"4 3\"/>\n<text x=\"{tx:.1}\" y=\"{y:.1}\" text-anchor=\"{anchor}\" \
             fill=\"{colour}\">{label}<title>{label} at {:.1} s</title></text>",
            y - 9.0,
            time(mark.t_s)
        );
    }
    s.push_str("</g>\n");
}

/// What the colours mean, in the bottom-left corner.
fn push_legend(s: &mut String) {
    let y = SVG_H - 8.0;
    let _ = writeln!(
        s,
        "<g class=\"legend\" font-size=\"10\">\n\
         <rect x=\"{PLOT_X0}\" y=\"{:.1}\" width=\"10\" height=\"8\" fill=\"{OK_COLOUR}\"/>\
         <text x=\"{:.1}\" y=\"{y:.1}\">writes ok</text>\n\
         <rect x=\"{:.1}\" y=\"{:.1}\" width=\"3\" height=\"8\" fill=\"{FAILED_COLOUR}\"/>\
         <text x=\"{:.1}\" y=\"{y:.1}\">writes failed</text>\n\
         <line x1=\"{:.1}\" y1=\"{:.1}\" x2=\"{:.1}\" y2=\"{:.1}\" stroke=\"{VOTERS_COLOUR}\" stroke-width=\"2\"/>\
         <text x=\"{:.1}\" y=\"{y:.1}\">healthy voters</text>\n\
         <line x1=\"{:.1}\" y1=\"{:.1}\" x2=\"{:.1}\" y2=\"{:.1}\" stroke=\"{MARK_COLOUR}\" stroke-dasharray=\"4 3\"/>\
         <text x=\"{:.1}\" y=\"{y:.1}\">event</text>\n</g>",
        y - 8.0,
        PLOT_X0 + 14.0,
        PLOT_X0 + 80.0,
        y - 8.0,
        PLOT_X0 + 87.0,
        PLOT_X0 + 170.0,
        y - 4.0,
        PLOT_X0 + 186.0,
        y - 4.0,
        PLOT_X0 + 190.0,
        PLOT_X0 + 280.0,
        y - 10.0,
        PLOT_X0 + 280.0,
        y + 1.0,
        PLOT_X0 + 285.0,
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample(t: f64, ok: u32, failed: u32, healthy: Option<u32>) -> Sample {
        Sample {
            t_s: t,
            writes_ok: ok,
            writes_failed: failed,
            healthy_voters: healthy,
        }
    }

    fn mark(t: f64, label: &str) -> Mark {
        Mark {
            t_s: t,
            label: label.to_string(),
        }
    }

    fn passed() -> Outcome {
        Outcome {
            name: "kill-leader".into(),
            instances: 3,
            passed: true,
            acked_writes: 1234,
            failed_writes: 7,
            time_to_detect_s: Some(1.25),
            time_to_writable_s: Some(3.0),
            time_to_full_membership_s: Some(42.36),
            quorum_loss_timeout_s: 30.0,
            notes: vec!["alert fired: quorum lost".into()],
            samples: (0..40)
                .map(|t| {
                    let t = f64::from(t);
                    let healthy = if t < 10.0 { 3 } else { 2 };
                    sample(t, 30, u32::from(t == 10.0) * 5, Some(healthy))
                })
                .collect(),
            marks: vec![
                mark(10.0, "fault"),
                mark(11.2, "detected"),
                mark(13.0, "writable"),
                mark(38.0, "full membership"),
            ],
            ..Outcome::default()
        }
    }

    fn failed() -> Outcome {
        Outcome {
            name: "lose_quorum".into(),
            instances: 5,
            passed: false,
            lossy: true,
            acked_writes: 500,
            lost_acked_writes: 12,
            allowed_loss: 4,
            time_to_detect_s: Some(2.0),
            reseeded: true,
            failures: vec![
                "lost 12 acknowledged writes, 4 allowed".into(),
                "never regained full membership".into(),
            ],
            samples: vec![
                sample(0.0, 10, 0, Some(5)),
                sample(1.0, 0, 8, None),
                sample(2.0, 0, 9, None),
                sample(3.0, 4, 1, Some(3)),
            ],
            marks: vec![mark(0.5, "fault"), mark(0.6, "a<b & \"c\""), mark(0.7, "x")],
            ..Outcome::default()
        }
    }

    fn skipped() -> Outcome {
        Outcome {
            name: "partition".into(),
            instances: 3,
            skipped: Some("partitions need root and nft".into()),
            ..Outcome::default()
        }
    }

    fn all() -> Vec<Outcome> {
        vec![passed(), failed(), skipped()]
    }

    fn line_of<'a>(text: &'a str, name: &str) -> &'a str {
        text.lines()
            .find(|l| l.starts_with(name) || l.starts_with(&format!("| {name}")))
            .unwrap()
    }

    #[test]
    fn table_has_every_scenario_with_its_result() {
        let t = table(&all());
        assert!(line_of(&t, "kill-leader").contains("PASS"));
        assert!(line_of(&t, "lose_quorum").contains("FAIL"));
        assert!(line_of(&t, "partition").contains("SKIP"));
        assert!(line_of(&t, "kill-leader").contains("1.2"));
        assert!(line_of(&t, "kill-leader").contains("42.4"));
        assert!(line_of(&t, "lose_quorum").contains("12 (≤ allowed 4)"));
        assert!(line_of(&t, "lose_quorum").contains("yes"));
        assert!(line_of(&t, "lose_quorum").contains('-'));
        // Failures and skip reasons below the table, indented.
        assert!(t.contains("FAIL lose_quorum (5 instances):"));
        assert!(t.contains("\n    lost 12 acknowledged writes, 4 allowed\n"));
        assert!(t.contains("\n    never regained full membership\n"));
        assert!(t.contains("SKIP partition (3 instances):\n    partitions need root and nft\n"));
        assert!(!t.contains("FAIL kill-leader"));
    }

    #[test]
    fn table_columns_are_aligned() {
        let t = table(&all());
        let lines: Vec<&str> = t.lines().take(5).collect();
        let col = |l: &str, word: &str| l.find(word).map(|b| l[..b].chars().count());
        let result_col = col(lines[0], "result").unwrap();
        for (line, word) in lines[2..].iter().zip(["PASS", "FAIL", "SKIP"]) {
            assert_eq!(col(line, word), Some(result_col), "{t}");
        }
        let reseeded_col = col(lines[0], "reseeded").unwrap();
        assert_eq!(col(lines[2], "no"), Some(reseeded_col), "{t}");
        assert_eq!(col(lines[3], "yes"), Some(reseeded_col), "{t}");
    }

    #[test]
    fn empty_table_does_not_panic() {
        assert!(table(&[]).contains("no scenarios"));
    }

    #[test]
    fn markdown_has_every_scenario_and_links_timelines_of_those_that_ran() {
        let md = markdown(&all(), "simulations chaos --scenario all --out r");
        assert!(md.starts_with("# "));
        assert!(md.contains("```\nsimulations chaos --scenario all --out r\n```"));
        assert!(line_of(&md, "kill-leader").contains("| PASS |"));
        assert!(line_of(&md, "lose\\_quorum").contains("| FAIL |"));
        assert!(line_of(&md, "partition").contains("| SKIP |"));
        assert!(md.contains("## kill-leader — 3 instances — PASS"));
        assert!(md.contains("## lose\\_quorum — 5 instances — FAIL"));
        assert!(md.contains("## partition — 3 instances — SKIP"));
        assert!(md.contains("(timeline-3-kill-leader.svg)"));
        assert!(md.contains("(timeline-5-lose_quorum.svg)"));
        assert!(!md.contains("timeline-3-partition.svg"));
        assert!(md.contains("- never regained full membership"));
        assert!(md.contains("- alert fired: quorum lost"));
        assert!(md.contains("Skipped: partitions need root and nft"));
        assert!(md.contains("to be writable again: 3.0 s; to full membership: 42.4 s"));
        assert!(md.contains("to be writable again: not measured"));
        assert!(md.contains("1 passed, 1 failed, 1 skipped"));
        // Every table row has as many cells as the header.
        let pipes = |l: &str| l.matches(" | ").count();
        let header = md.lines().find(|l| l.starts_with("| scenario")).unwrap();
        for name in ["kill-leader", "lose\\_quorum", "partition"] {
            assert_eq!(pipes(line_of(&md, name)), pipes(header));
        }
    }

    #[test]
    fn markdown_fences_a_command_with_backticks() {
        let md = markdown(&[], "echo ```x```");
        assert!(md.contains("````\necho ```x```\n````"));
    }

    #[test]
    fn svg_file_name_has_instances_and_name() {
        assert_eq!(svg_file_name(&passed()), "timeline-3-kill-leader.svg");
    }

    fn assert_well_formed(s: &str) {
        assert!(s.starts_with("<svg"), "{s}");
        assert!(s.ends_with("</svg>"), "{s}");
        let opened = s.matches("<g>").count() + s.matches("<g ").count();
        assert_eq!(opened, s.matches("</g>").count());
        assert_eq!(s.matches("<text").count(), s.matches("</text>").count());
        assert_eq!(s.matches("<svg").count(), 1);
        assert!(!s.contains("NaN") && !s.contains("inf"), "{s}");
    }

    #[test]
    fn svg_has_title_marks_and_balanced_groups() {
        let s = svg(&passed());
        assert_well_formed(&s);
        assert!(s.contains("kill-leader — 3 instances — PASS"));
        for m in &passed().marks {
            assert!(s.contains(&format!(">{}<", m.label)), "{}", m.label);
        }
        assert!(s.contains(OK_COLOUR) && s.contains(FAILED_COLOUR));
        assert!(s.contains("<path d=\"M"));
    }

    #[test]
    fn svg_escapes_labels_and_leaves_gaps() {
        let s = svg(&failed());
        assert_well_formed(&s);
        assert!(s.contains("lose_quorum — 5 instances — FAIL"));
        assert!(s.contains("a&lt;b &amp; &quot;c&quot;"));
        assert!(!s.contains("a<b"));
        // Two runs of answered samples, separated by a gap.
        let path = s.split("<path d=\"").nth(1).unwrap();
        let path = &path[..path.find('"').unwrap()];
        assert_eq!(path.matches('M').count(), 2, "{path}");
        // Close marks are put on different label rows.
        let ys: Vec<&str> = s
            .lines()
            .filter(|l| l.contains("<text") && l.contains("<title>") && l.contains(" at "))
            .filter_map(|l| l.split(" y=\"").nth(1))
            .map(|rest| &rest[..rest.find('"').unwrap()])
            .collect();
        assert_eq!(ys.len(), 3);
        assert!(ys[0] != ys[1] && ys[1] != ys[2], "{ys:?}");
    }

    #[test]
    fn svg_of_empty_samples_draws_axes_and_title() {
        let mut o = skipped();
        o.skipped = None;
        o.instances = 0;
        let s = svg(&o);
        assert_well_formed(&s);
        assert!(s.contains("partition — 0 instances — FAIL"));
        assert!(s.contains("class=\"axes\""));
        assert!(!s.contains("<path"));

        let mut o = passed();
        o.samples.clear();
        o.marks.push(mark(f64::NAN, "odd"));
        let s = svg(&o);
        assert_well_formed(&s);
        assert!(s.contains(">odd<"));
    }

    #[test]
    fn long_runs_get_coarser_ticks() {
        assert_eq!(x_tick_step(40.0), 5.0);
        assert_eq!(x_tick_step(120.0), 10.0);
        assert_eq!(x_tick_step(900.0), 60.0);
        assert_eq!(nice_step(0.0, 4.0), 1.0);
        assert_eq!(nice_step(130.0, 4.0), 50.0);
        assert_eq!(axis_top(130.0, 50.0), 150.0);
    }
}
