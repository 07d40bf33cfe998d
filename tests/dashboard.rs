//! Issue 20: the Grafana dashboard (`systemd/grafana-dashboard.json`). Every metric its PromQL queries is one that
//! `/metrics` exports (on a server with payments, the notary and the map on); its layout holds together; and it
//! type-checks against Grafana's own schema (npm `@grafana/schema`, through tests/browser/dashboard-check.mjs).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)]

mod common;

use std::collections::BTreeSet;

use common::pay::{paid_env, Facilitator};
use common::Server;
use serde_json::Value;

const DASHBOARD: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/systemd/grafana-dashboard.json");

fn dashboard() -> Value {
    serde_json::from_str(&std::fs::read_to_string(DASHBOARD).unwrap()).unwrap()
}

/// The PromQL expressions of every panel, and the metric the instance variable reads its values from.
fn expressions(d: &Value) -> Vec<String> {
    let mut out: Vec<String> = d["panels"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|p| p["targets"].as_array().cloned().unwrap_or_default())
        .map(|t| t["expr"].as_str().expect("every target has an expr").to_owned())
        .collect();
    for v in d["templating"]["list"].as_array().unwrap() {
        if let Some(q) = v["query"]["query"].as_str() {
            // label_values(<metric>, <label>): the metric as an expression.
            out.push(q.trim_start_matches("label_values(").split(',').next().unwrap().to_owned());
        }
    }
    out
}

/// The metric names a PromQL expression reads: what is left once strings, label matchers, ranges and grouping
/// clauses are taken out, and function names (followed by `(`), keywords and numbers set aside.
fn metric_names(expr: &str) -> Vec<String> {
    const KEYWORDS: [&str; 11] =
        ["by", "without", "on", "ignoring", "group_left", "group_right", "bool", "offset", "and", "or", "unless"];
    const AGGREGATIONS: [&str; 12] = [
        "sum",
        "min",
        "max",
        "avg",
        "group",
        "stddev",
        "stdvar",
        "count",
        "count_values",
        "bottomk",
        "topk",
        "quantile",
    ];
    let mut plain = String::new();
    let mut chars = expr.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '"' => {
                while let Some(s) = chars.next() {
                    match s {
                        '\\' => {
                            chars.next();
                        }
                        '"' => break,
                        _ => {}
                    }
                }
            }
            '{' | '[' => {
                let close = if c == '{' { '}' } else { ']' };
                for s in chars.by_ref() {
                    if s == close {
                        break;
                    }
                }
                plain.push(' ');
            }
            _ => plain.push(c),
        }
    }
    let bytes: Vec<char> = plain.chars().collect();
    let mut names = Vec::new();
    let mut i = 0;
    let mut after_grouping = false;
    while i < bytes.len() {
        let c = bytes[i];
        if c.is_ascii_digit() || (c == '.' && bytes.get(i + 1).is_some_and(char::is_ascii_digit)) {
            // A number, exponent included (1e-9).
            i += 1;
            while i < bytes.len() {
                let signed_exponent = matches!(bytes[i], '-' | '+') && matches!(bytes[i - 1], 'e' | 'E');
                if !(bytes[i].is_ascii_alphanumeric() || bytes[i] == '.' || signed_exponent) {
                    break;
                }
                i += 1;
            }
            continue;
        }
        if c.is_ascii_alphabetic() || c == '_' || c == ':' {
            let start = i;
            while i < bytes.len() && (bytes[i].is_ascii_alphanumeric() || matches!(bytes[i], '_' | ':')) {
                i += 1;
            }
            let word: String = bytes[start..i].iter().collect();
            let next = bytes[i..].iter().find(|c| !c.is_whitespace());
            if KEYWORDS.contains(&word.as_str()) {
                after_grouping = matches!(word.as_str(), "by" | "without" | "on" | "ignoring");
                continue;
            }
            // A function, or an aggregation whose grouping comes first (`sum by (route) (...)`).
            let grouped = ["by", "without"].iter().any(|k| {
                let rest: String = bytes[i..].iter().collect();
                rest.trim_start().strip_prefix(k).is_some_and(|r| r.trim_start().starts_with('('))
            });
            if next == Some(&'(') || (AGGREGATIONS.contains(&word.as_str()) && grouped) {
                after_grouping = false;
                continue;
            }
            names.push(word);
            continue;
        }
        if c == '(' && after_grouping {
            // `by (route, le)`: label names, not metrics.
            while i < bytes.len() && bytes[i] != ')' {
                i += 1;
            }
            after_grouping = false;
        }
        i += 1;
    }
    names
}

/// Names `/metrics` exports: each sample's name, and each family's (with `_bucket`, `_sum`, `_count` for histograms
/// and summaries), so that a labelled family with no series yet (refusals by reason) still counts.
fn exported(text: &str) -> BTreeSet<String> {
    let mut names = BTreeSet::new();
    for line in text.lines() {
        if let Some(rest) = line.strip_prefix("# TYPE ") {
            let mut parts = rest.split_whitespace();
            let (name, kind) = (parts.next().unwrap(), parts.next().unwrap());
            names.insert(name.to_owned());
            if matches!(kind, "histogram" | "summary") {
                for suffix in ["_bucket", "_sum", "_count"] {
                    names.insert(format!("{name}{suffix}"));
                }
            }
        } else if !line.starts_with('#') && !line.is_empty() {
            names.insert(line.split(['{', ' ']).next().unwrap().to_owned());
        }
    }
    names
}

#[test]
fn promql_metric_names_are_read_as_prometheus_reads_them() {
    for (expr, expected) in [
        ("websearchd_uptime_seconds{instance=~\"$instance\"}", vec!["websearchd_uptime_seconds"]),
        (
            "sum by (route, le) (rate(websearchd_http_request_duration_seconds_bucket{a=\"{x}\"}[$__rate_interval]))",
            vec!["websearchd_http_request_duration_seconds_bucket"],
        ),
        ("sum(rate(a_total[5m])) / clamp_min(sum(rate(b_total[5m])) + 2.5e-9, 1e-9)", vec!["a_total", "b_total"]),
        ("max by (layer) (x{s=\"stale\"}) * 1 + max without (job) (y) * 2", vec!["x", "y"]),
        ("a / on (instance) group_left b offset 5m", vec!["a", "b"]),
        ("histogram_quantile(0.95, sum by (le) (rate(h_bucket[1m])))", vec!["h_bucket"]),
    ] {
        assert_eq!(metric_names(expr), expected, "{expr}");
    }
}

#[test]
fn every_metric_the_dashboard_queries_is_exported() {
    let facilitator = Facilitator::start();
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap();
    let env = paid_env(format!("http://{closed}/html/"), facilitator.url());
    let server = Server::start(&common::pairs(&env));
    let metrics = server.get("/metrics");
    assert_eq!(metrics.status, 200);
    let names = exported(&metrics.text());
    for family in ["websearchd_map_layer_status", "websearchd_notary_receipts", "websearchd_ledger_records"] {
        assert!(names.contains(family), "{family} is exported with payments, the notary and the map on");
    }
    let mut queried = BTreeSet::new();
    for expr in expressions(&dashboard()) {
        let found = metric_names(&expr);
        assert!(!found.is_empty(), "no metric in {expr}");
        queried.extend(found);
    }
    let missing: Vec<&String> = queried.iter().filter(|n| !names.contains(*n)).collect();
    assert!(missing.is_empty(), "the dashboard queries metrics /metrics does not export: {missing:?}");
    // The list, each with at least one panel.
    for wanted in [
        "websearchd_http_requests_total",
        "websearchd_http_request_duration_seconds_bucket",
        "websearchd_source_requests_total",
        "websearchd_source_blocks_total",
        "websearchd_source_breaker_open",
        "websearchd_cache_hits_total",
        "websearchd_payment_challenges_total",
        "websearchd_payments_verified_total",
        "websearchd_payments_settled_total",
        "websearchd_payments_refused_total",
        "websearchd_facilitator_seconds_sum",
        "websearchd_notary_receipts",
        "websearchd_map_layer_status",
    ] {
        assert!(queried.contains(wanted), "no panel queries {wanted}");
    }
}

#[test]
fn the_dashboard_layout_holds_together() {
    let d = dashboard();
    assert_eq!(d["uid"], "websearchd");
    assert!(d["schemaVersion"].as_u64().unwrap() >= 36, "datasource references by uid need schemaVersion 36+");
    let panels = d["panels"].as_array().unwrap();
    let mut ids = BTreeSet::new();
    let mut cells = BTreeSet::new();
    for p in panels {
        assert!(ids.insert(p["id"].as_u64().unwrap()), "panel id {} twice", p["id"]);
        let g = &p["gridPos"];
        let (x, y, w, h) =
            (g["x"].as_u64().unwrap(), g["y"].as_u64().unwrap(), g["w"].as_u64().unwrap(), g["h"].as_u64().unwrap());
        assert!(x + w <= 24 && w > 0 && h > 0, "{} leaves the 24-column grid", p["title"]);
        for cell in (x..x + w).flat_map(|cx| (y..y + h).map(move |cy| (cx, cy))) {
            assert!(cells.insert(cell), "{} overlaps another panel at {cell:?}", p["title"]);
        }
        if p["type"] == "row" {
            continue;
        }
        assert_eq!(p["datasource"]["uid"], "${datasource}", "{}", p["title"]);
        let refs: Vec<&str> = p["targets"].as_array().unwrap().iter().map(|t| t["refId"].as_str().unwrap()).collect();
        assert_eq!(refs.iter().collect::<BTreeSet<_>>().len(), refs.len(), "{}: refIds repeat", p["title"]);
        assert!(!p["description"].as_str().unwrap_or("").is_empty(), "{} says what it shows", p["title"]);
    }
}

#[test]
fn the_dashboard_type_checks_against_grafanas_schema() {
    let Some(tools) = common::browser_tools_or_skip() else { return };
    let run = std::process::Command::new(&tools.node)
        .arg(tools.dir.join("dashboard-check.mjs"))
        .arg(DASHBOARD)
        .current_dir(&tools.dir)
        .output()
        .unwrap();
    let out = String::from_utf8_lossy(&run.stdout);
    assert!(run.status.success(), "{out}{}", String::from_utf8_lossy(&run.stderr));
    assert!(out.contains(" panels checked against @grafana/schema; 0 diagnostic(s)"), "{out}");
}
