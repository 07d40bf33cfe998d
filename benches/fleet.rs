//! The fleet benchmark (`cargo bench --bench fleet`): what sharing state through Redis adds to a paid call. The real
//! binary on loopback with a loopback search source and a loopback facilitator, first as one node without Redis, then
//! as two nodes sharing a `redis-server` started here (the clients alternate between the nodes). Keep-alive clients
//! send paid searches for a few seconds per case; printed: requests/s, p50 and p99, the share of 200s, and the time
//! the nodes spent in Redis per paid call (from `/metrics`). Without `redis-server` it says so and stops.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing, dead_code)]

#[path = "support/clients.rs"]
mod clients;
#[path = "../tests/common/mod.rs"]
mod common;
#[path = "support/http.rs"]
mod http;
#[path = "support/tally.rs"]
mod tally;

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use common::pay::{paid_env, Facilitator};
use common::redis::RedisServer;
use common::upstream::{Answer, Upstream};
use common::Server;
use serde_json::Value;

const CLIENTS: usize = 4;
const SECONDS: u64 = 4;

fn main() {
    if !common::redis::available() {
        println!("{} is absent: nothing measured (apt-get install redis-server)", common::redis::BINARY);
        return;
    }
    let source = Upstream::start(|_| Answer::html(200, common::own_fixture("search/ddg_html_results.html")));
    let facilitator = Facilitator::start();
    println!("{CLIENTS} keep-alive clients, {SECONDS} s per case, 2 workers per node; paid searches, a fresh authorization each");
    println!("{:<40} {:>8} {:>8} {:>8} {:>6} {:>16}", "case", "req/s", "p50 ms", "p99 ms", "200s", "redis ms/call");
    for cache in ["0", "600"] {
        let what = if cache == "0" { "upstream fetch per call" } else { "warm cache" };
        for redis in [None, RedisServer::start()] {
            let mut vars = paid_env(source.url("/html/"), facilitator.url());
            vars.extend(
                [
                    ("WEBSEARCHD_CACHE_TTL_S", cache),
                    ("WEBSEARCHD_WORKERS", "2"),
                    ("WEBSEARCHD_SOURCE_PAGES_MAX", "1"),
                    ("WEBSEARCHD_KEEPALIVE_REQUESTS_MAX", "100000"),
                    ("WEBSEARCHD_LOG", "info,websearchd::access=warn"),
                ]
                .map(|(k, v)| (k.to_owned(), v.to_owned())),
            );
            let nodes: Vec<Server> = match &redis {
                None => vec![Server::start(&common::pairs(&vars))],
                Some(r) => {
                    vars.push(("WEBSEARCHD_REDIS_URL".into(), r.url()));
                    vars.push(r.secret_var());
                    let pairs = common::pairs(&vars);
                    vec![Server::start(&pairs), Server::start(&pairs)]
                }
            };
            let accepted = accepted(&nodes[0]);
            let addrs: Vec<SocketAddr> = nodes.iter().map(|n| n.addr).collect();
            let (rps, p50, p99, ok) = load(&addrs, &accepted);
            let redis_ms = redis.as_ref().map_or("-".to_owned(), |_| {
                let (sum, count) = nodes.iter().map(store_seconds).fold((0.0, 0.0), |a, b| (a.0 + b.0, a.1 + b.1));
                let paid = nodes.iter().map(|n| n.metric("websearchd_payments_settled_total")).sum::<u64>();
                format!("{:.3} ({:.1} calls)", sum * 1e3 / paid.max(1) as f64, count / paid.max(1) as f64)
            });
            let case = match redis {
                None => format!("1 node, {what}"),
                Some(_) => format!("2 nodes + redis, {what}"),
            };
            println!("{case:<40} {rps:>8.0} {p50:>8.2} {p99:>8.2} {:>5.1}% {redis_ms:>16}", ok * 100.0);
        }
    }
}

/// `websearchd_store_seconds` of a node: (sum, count).
fn store_seconds(node: &Server) -> (f64, f64) {
    let text = node.get("/metrics").text();
    let value = |name: &str| text.lines().find_map(|l| l.strip_prefix(name)?.trim().parse::<f64>().ok()).unwrap_or(0.0);
    (value("websearchd_store_seconds_sum "), value("websearchd_store_seconds_count "))
}

fn accepted(server: &Server) -> Value {
    let r = server.request("POST", "/service", &[("Content-Type", "application/json")], br#"{"query":"x"}"#);
    r.json()["accepts"][0].clone()
}

/// Keep-alive clients, each alternating between the nodes, for `SECONDS`, each call paid with a fresh authorization:
/// requests/s, p50 and p99 in ms, the share of 200s.
fn load(addrs: &[SocketAddr], accepted: &Value) -> (f64, f64, f64, f64) {
    let accepted = accepted.clone();
    let make = move |client: usize, n: u64| {
        let body = br#"{"query":"bench query","max_results":10}"#;
        let head = format!(
            "POST /service HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\
             PAYMENT-SIGNATURE: {}\r\n\r\n",
            body.len(),
            crate::common::pay::Payer::numbered(client as u64, n).v2_header(&accepted)
        );
        [head.as_bytes(), body].concat()
    };
    clients::run(addrs, CLIENTS, Duration::from_secs(SECONDS), Arc::new(make), 200)
}
