//! The two exposition formats of `/metrics`, chosen by the scraper's
//! `Accept` header as Prometheus's own clients do: OpenMetrics 1.0 (what
//! the `prometheus-client` crate encodes, and what a Prometheus server asks
//! for) or, for every other client (`curl`, `promtool check metrics`, older
//! agents), the classic Prometheus text format 0.0.4.
//!
//! The two differ, for what eco exports (counters and gauges), only in the
//! name a counter's `# HELP` and `# TYPE` lines carry (the family `x` in
//! OpenMetrics, the sample name `x_total` in the text format), the `# EOF`
//! terminator and `# UNIT` lines (OpenMetrics only), and the escapes
//! allowed in `# HELP` (the text format knows `\\` and `\n` only). This
//! module translates one into the other; it does not parse or check
//! anything else.

/// The content type of an OpenMetrics exposition.
pub const OPENMETRICS: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";
/// The content type of the classic Prometheus text format.
pub const TEXT: &str = "text/plain; version=0.0.4; charset=utf-8";

/// Whether a request's `Accept` header asks for OpenMetrics.
pub fn wants_openmetrics(accept: Option<&str>) -> bool {
    accept.is_some_and(|a| {
        a.split(',').any(|part| {
            part.split(';').next().is_some_and(|t| {
                t.trim()
                    .eq_ignore_ascii_case("application/openmetrics-text")
            })
        })
    })
}

/// The text format 0.0.4 of an OpenMetrics exposition of counters and
/// gauges.
pub fn to_text_format(openmetrics: &str) -> String {
    let counters: std::collections::HashSet<&str> = openmetrics
        .lines()
        .filter_map(|l| l.strip_prefix("# TYPE "))
        .filter_map(|rest| rest.strip_suffix(" counter"))
        .collect();
    let mut out = String::with_capacity(openmetrics.len());
    for line in openmetrics.lines() {
        if line == "# EOF" || line.starts_with("# UNIT ") {
            continue;
        }
        if let Some((kind, rest)) = line
            .strip_prefix("# HELP ")
            .map(|r| ("HELP", r))
            .or_else(|| line.strip_prefix("# TYPE ").map(|r| ("TYPE", r)))
        {
            let (name, tail) = rest.split_once(' ').unwrap_or((rest, ""));
            let name = if counters.contains(name) {
                format!("{name}_total")
            } else {
                name.to_string()
            };
            let tail = if kind == "HELP" {
                tail.replace("\\\"", "\"")
            } else {
                tail.to_string()
            };
            out.push_str(&format!("# {kind} {name} {tail}\n"));
            continue;
        }
        out.push_str(line);
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accept_headers() {
        assert!(wants_openmetrics(Some(
            "application/openmetrics-text;version=1.0.0,application/openmetrics-text;version=0.0.1;q=0.75,text/plain;version=0.0.4;q=0.5,*/*;q=0.1"
        )));
        assert!(wants_openmetrics(Some("Application/OpenMetrics-Text")));
        assert!(!wants_openmetrics(Some("text/plain;version=0.0.4")));
        assert!(!wants_openmetrics(Some("*/*")));
        assert!(!wants_openmetrics(None));
    }

    #[test]
    fn counters_take_their_sample_name_and_eof_goes() {
        let om = "# HELP eco_etcd_starts Starts of \\\"etcd\\\".\n# TYPE eco_etcd_starts counter\neco_etcd_starts_total 1\n# HELP eco_ready 1 when ready.\n# TYPE eco_ready gauge\neco_ready 1\n# EOF\n";
        assert_eq!(
            to_text_format(om),
            "# HELP eco_etcd_starts_total Starts of \"etcd\".\n# TYPE eco_etcd_starts_total counter\neco_etcd_starts_total 1\n# HELP eco_ready 1 when ready.\n# TYPE eco_ready gauge\neco_ready 1\n"
        );
    }
}
