//! The load benchmark (`cargo bench --bench load`): the real binary on loopback, with a loopback search source, a
//! loopback facilitator that recovers every signature, and a loopback USGS feed for the map. For each path, keep-alive
//! clients send requests for a few seconds; requests/s, p50 and p99 latency, the share of expected answers, and the
//! server's peak RSS (VmHWM) are printed, with 2 workers and with the default.
//!
//! Paid paths sign a fresh EIP-3009 authorization per request (the client's cost is part of the latency).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing, dead_code)]

#[path = "support/clients.rs"]
mod clients;
#[path = "../tests/common/mod.rs"]
mod common;
#[path = "support/http.rs"]
mod http;
#[path = "support/tally.rs"]
mod tally;

use std::sync::Arc;
use std::time::Duration;

use clients::Make;
use common::pay::{Facilitator, Payer, PAY_TO};
use common::upstream::{Answer, Upstream};
use common::Server;

const CLIENTS: usize = 8;
const SECONDS: u64 = 3;

fn main() {
    let source = Upstream::start(|_| Answer::html(200, common::own_fixture("search/ddg_html_results.html")));
    let facilitator = Facilitator::start();
    let usgs = common::shared_fixture("map/terremotos/usgs_all_hour_2024-05-31.geojson")
        .unwrap_or_else(|| br#"{"type":"FeatureCollection","features":[]}"#.to_vec());
    let feed = Upstream::start(move |_| Answer::json(200, usgs.clone()));
    println!("{CLIENTS} keep-alive clients, {SECONDS} s per case; peak RSS is the server's VmHWM during the case");
    println!(
        "{:<9} {:<34} {:>8} {:>8} {:>8} {:>9} {:>10}",
        "workers", "case", "req/s", "p50 ms", "p99 ms", "expected", "peak RSS"
    );
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let default_workers = (2 * cores).max(2);
    for workers in [2, default_workers] {
        let label = if workers == 2 { "2".to_owned() } else { format!("{workers} (default)") };
        for case in CASES {
            let (server, make, expect) = start_case(case, workers, (&source, &facilitator, &feed));
            let (rps, p50, p99, ok) = clients::run(&[server.addr], CLIENTS, Duration::from_secs(SECONDS), make, expect);
            let peak = std::fs::read_to_string(format!("/proc/{}/status", server.pid()))
                .ok()
                .and_then(|s| s.lines().find_map(|l| l.strip_prefix("VmHWM:")).map(|v| v.trim().to_owned()))
                .unwrap_or_default();
            println!("{label:<9} {case:<34} {rps:>8.0} {p50:>8.2} {p99:>8.2} {:>8.1}% {peak:>10}", ok * 100.0);
        }
    }
    // Issue 18: the time a paid call spends in this server, apart from the facilitator's round trips and the waits for
    // the journals' disk syncs (the ledger's, and the notary's receipt). One client, so that no call waits for a
    // worker: the server's own figures per call (from a complete request to its written answer, the time in
    // facilitator calls, the time waiting for syncs) over the calls of the run.
    println!();
    println!("time per paid call, 1 client, {SECONDS} s, {default_workers} workers (the server's own figures)");
    println!(
        "{:<34} {:>7} {:>10} {:>15} {:>13} {:>13}",
        "case", "calls", "server ms", "facilitator ms", "disk sync ms", "our code ms"
    );
    for case in ["paid search, warm cache", "paid notary"] {
        let (server, make, expect) = start_case(case, default_workers, (&source, &facilitator, &feed));
        let route = if case == "paid notary" { "notary" } else { "service" };
        let before = PaidFigures::read(&server, route);
        clients::run(&[server.addr], 1, Duration::from_secs(SECONDS), make, expect);
        let after = PaidFigures::read(&server, route);
        let calls = after.calls - before.calls;
        let per_call = |s: f64| s / calls.max(1.0) * 1e3;
        let total = per_call(after.server_s - before.server_s);
        let facilitator = per_call(after.facilitator_s - before.facilitator_s);
        let sync = per_call(after.sync_s - before.sync_s);
        println!(
            "{case:<34} {calls:>7.0} {total:>10.3} {facilitator:>15.3} {sync:>13.3} {:>13.3}",
            total - facilitator - sync
        );
    }
}

const CASES: [&str; 5] =
    ["402 challenge", "paid search, warm cache", "paid search, upstream fetch", "paid notary", "map layer + state"];

/// Starts the server for one case; the requests to send and the status expected.
fn start_case(
    case: &'static str,
    workers: usize,
    (source, facilitator, feed): (&Upstream, &Facilitator, &Upstream),
) -> (Server, Make, u16) {
    let cache = if case.contains("upstream") { "0" } else { "600" };
    let vars: Vec<(String, String)> = vec![
        ("WEBSEARCHD_WORKERS".into(), workers.to_string()),
        ("WEBSEARCHD_LOG".into(), "info,websearchd::access=warn".into()),
        ("WEBSEARCHD_SOURCES".into(), "ddg_html".into()),
        ("WEBSEARCHD_DDG_HTML_URL".into(), source.url("/html/")),
        ("WEBSEARCHD_SOURCE_INTERVAL_MS".into(), "0".into()),
        ("WEBSEARCHD_CACHE_TTL_S".into(), cache.into()),
        ("WEBSEARCHD_PAY_TO".into(), PAY_TO.into()),
        ("WEBSEARCHD_FACILITATOR_URL".into(), facilitator.url()),
        ("WEBSEARCHD_MAP_LAYERS".into(), "terremotos".into()),
        ("WEBSEARCHD_MAP_TERREMOTOS_URL".into(), feed.url("/feed")),
        ("WEBSEARCHD_KEEPALIVE_REQUESTS_MAX".into(), "100000".into()),
    ];
    let pairs: Vec<(&str, &str)> = vars.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
    let server = Server::start(&pairs);
    let (path, expect) = match case {
        "402 challenge" => ("/service", 402),
        "paid notary" => ("/notary/service", 200),
        "map layer + state" => ("/map/api/capa/terremotos", 200),
        _ => ("/service", 200),
    };
    let accepted = if case.starts_with("paid") {
        let r =
            server.request("POST", path, &[("Content-Type", "application/json")], br#"{"query":"x","op":"notarize"}"#);
        let challenge = if path == "/notary/service" { server.get("/notary/service") } else { r };
        Some(challenge.json()["accepts"][0].clone())
    } else {
        None
    };
    if case == "paid search, warm cache" {
        // Warm: the first paid call fills the cache (as client 0's call 0: the clients' calls count from 1).
        let header = Payer::numbered(0, 0).v2_header(accepted.as_ref().expect("terms"));
        let body = br#"{"query":"bench query","max_results":10}"#;
        let headers = [("Content-Type", "application/json"), ("PAYMENT-SIGNATURE", header.as_str())];
        assert_eq!(server.request("POST", "/service", &headers, body).status, 200);
    }
    let make = move |client: usize, n: u64| -> Vec<u8> {
        let (method, target, body): (&str, &str, Vec<u8>) = match case {
            "map layer + state" => {
                ("GET", if n.is_multiple_of(2) { "/map/api/capa/terremotos" } else { "/map/mapstate" }, Vec::new())
            }
            "paid notary" => {
                let h = websearchd::sign::sha256_hex(format!("{client}-{n}").as_bytes());
                ("POST", "/notary/service", format!(r#"{{"op":"notarize","hash":"{h}"}}"#).into_bytes())
            }
            _ => ("POST", "/service", br#"{"query":"bench query","max_results":10}"#.to_vec()),
        };
        let mut head = format!("{method} {target} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: {}\r\n", body.len());
        if method == "POST" {
            head.push_str("Content-Type: application/json\r\n");
        }
        if let Some(accepted) = &accepted {
            head.push_str(&format!("PAYMENT-SIGNATURE: {}\r\n", Payer::numbered(client as u64, n).v2_header(accepted)));
        }
        head.push_str("\r\n");
        [head.into_bytes(), body].concat()
    };
    (server, Arc::new(make), expect)
}

/// A paid route's figures from the server's `/metrics`: calls answered and the seconds they took, and the seconds
/// spent in facilitator calls (two per paid call: verify and settle), and the seconds waited for the journals' syncs.
struct PaidFigures {
    calls: f64,
    server_s: f64,
    facilitator_s: f64,
    sync_s: f64,
}

impl PaidFigures {
    fn read(server: &Server, route: &str) -> PaidFigures {
        let text = server.get("/metrics").text();
        let value = |series: &str| {
            text.lines()
                .find_map(|l| l.strip_prefix(series).and_then(|rest| rest.strip_prefix(' ')))
                .and_then(|v| v.trim().parse::<f64>().ok())
                .unwrap_or(0.0)
        };
        let duration = "websearchd_http_request_duration_seconds";
        PaidFigures {
            calls: value(&format!("{duration}_count{{route=\"{route}\"}}")),
            server_s: value(&format!("{duration}_sum{{route=\"{route}\"}}")),
            facilitator_s: value("websearchd_facilitator_seconds_sum"),
            sync_s: value("websearchd_ledger_sync_seconds_sum") + value("websearchd_notary_sync_seconds_sum"),
        }
    }
}
