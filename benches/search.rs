//! Search benchmarks (`cargo bench --bench search`): parse time per recorded page, fresh searches per second against
//! four paced loopback providers, and `/service` requests per second against a loopback source, with and without the
//! answer cache. Bounded in time; prints a table.
//!
//! Pages come from `$WEBSEARCHD_SHARED_DIR/fixtures/search` (default `../shared`); without it, from `fixtures/`.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)]

#[path = "support/http.rs"]
mod http;

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use websearchd::app::App;
use websearchd::clock::SystemClock;
use websearchd::config::{Config, Source};
use websearchd::http::{Limits, Server, ServerStats};
use websearchd::search::sources::Kind;
use websearchd::search::Engine;

fn main() {
    // `cargo bench` passes `--bench`; any other argument filters nothing here.
    parse_pages();
    four_providers();
    service_throughput();
}

fn pages() -> Vec<(Kind, PathBuf)> {
    let shared = std::env::var_os("WEBSEARCHD_SHARED_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../shared")))
        .join("fixtures/search");
    let own = PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/fixtures/search"));
    let dir = if shared.is_dir() { shared } else { own };
    let mut out: Vec<(Kind, PathBuf)> = std::fs::read_dir(&dir)
        .expect("fixtures")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter_map(|p| {
            let name = p.file_name()?.to_str()?.to_owned();
            let kind = if name.starts_with("ddg_html") {
                Kind::DdgHtml
            } else if name.starts_with("ddg_lite") {
                Kind::DdgLite
            } else if name.starts_with("searxng") {
                Kind::Searxng
            } else if name.starts_with("mojeek") {
                Kind::Mojeek
            } else if name.starts_with("wikipedia") {
                Kind::Wikipedia
            } else {
                return None;
            };
            Some((kind, p))
        })
        .collect();
    // The recorded pages of the issue-15 providers are kept in the project.
    for (kind, name) in [
        (Kind::Bing, "bing__does-caffeine-affect-sleep__10results.html"),
        (Kind::Bing, "bing__javascript-tutorial__10results.html"),
        (Kind::Brave, "brave__react__web_result_and_infobox.html"),
        (Kind::Brave, "brave__rust-programming-language__20web_results.html"),
        (Kind::Wikipedia, "wikipedia__meaning__2results.json"),
    ] {
        out.push((kind, PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/fixtures/search")).join(name)));
    }
    out.sort_by(|a, b| a.1.cmp(&b.1));
    out
}

fn parse_pages() {
    println!("parse time per page (one thread, page in memory)");
    println!("{:<70} {:>9} {:>11} {:>9}", "page", "bytes", "us/page", "MB/s");
    for (kind, path) in pages() {
        let body = std::fs::read(&path).expect("page");
        let budget = Duration::from_millis(400);
        let started = Instant::now();
        let mut n = 0u32;
        while started.elapsed() < budget {
            std::hint::black_box(kind.parse(200, std::hint::black_box(&body)));
            n += 1;
        }
        let per = started.elapsed() / n;
        let mbps = body.len() as f64 / per.as_secs_f64() / 1e6;
        let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
        println!("{name:<70} {:>9} {:>11.1} {mbps:>9.1}", body.len(), per.as_secs_f64() * 1e6);
    }
}

/// A loopback source that answers every request with `body` (Connection: close).
fn upstream(body: Vec<u8>) -> SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    let addr = listener.local_addr().expect("addr");
    let body = Arc::new(body);
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            let body = body.clone();
            std::thread::spawn(move || {
                let mut s = stream;
                let mut buf = [0u8; 8_192];
                let mut got = Vec::new();
                while !got.windows(4).any(|w| w == b"\r\n\r\n") {
                    match s.read(&mut buf) {
                        Ok(0) | Err(_) => return,
                        Ok(n) => got.extend_from_slice(&buf[..n]),
                    }
                }
                let head = format!(
                    "HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
                    body.len()
                );
                let _ = s.write_all(head.as_bytes());
                let _ = s.write_all(&body);
            });
        }
    });
    addr
}

fn service_throughput() {
    let page = pages()
        .into_iter()
        .find(|(k, _)| *k == Kind::DdgHtml)
        .map(|(_, p)| std::fs::read(p).expect("page"))
        .expect("a ddg_html page");
    let up = upstream(page);
    println!("\n/service against a loopback ddg_html source (8 keep-alive clients, 3 s each)");
    println!("{:<28} {:>10} {:>10} {:>10}", "case", "req/s", "p50 ms", "p99 ms");
    for (case, cache_ttl) in [("upstream fetch every call", "0"), ("warm cache", "600")] {
        let vars = [
            ("WEBSEARCHD_LISTEN", "127.0.0.1:0".to_string()),
            ("WEBSEARCHD_SOURCES", "ddg_html".to_string()),
            ("WEBSEARCHD_DDG_HTML_URL", format!("http://{up}/html/")),
            ("WEBSEARCHD_SOURCE_INTERVAL_MS", "0".to_string()),
            ("WEBSEARCHD_CACHE_TTL_S", cache_ttl.to_string()),
            ("WEBSEARCHD_LOG", "off".to_string()),
            ("WEBSEARCHD_STATE_DIR", std::env::temp_dir().join("websearchd-bench").display().to_string()),
        ];
        let source = Source::from_pairs(vars.iter().map(|(k, v)| (k.to_string(), v.clone())), None).expect("env");
        let config = Config::from_source(&source).expect("config");
        let stats = Arc::new(ServerStats::default());
        let limits = Limits::from_config(&config);
        let listen = config.listen;
        let engine = Engine::from_config(&config, Arc::new(SystemClock));
        let gate = websearchd::x402::Gate::from_config(&config, Arc::new(SystemClock)).expect("gate");
        let keys = Arc::new(websearchd::sign::Keyring::load_or_create(&config.key_paths()).expect("keys"));
        let app = Arc::new(App::new(config, stats.clone(), engine, gate, keys, Arc::new(SystemClock)).expect("app"));
        let server = Server::bind(listen, limits, app, stats).expect("bind");
        let addr = server.local_addr().expect("addr");
        let shutdown = server.shutdown_handle();
        let running = std::thread::spawn(move || server.run());
        let (rps, p50, p99) = load(addr, 8, Duration::from_secs(3));
        println!("{case:<28} {rps:>10.0} {p50:>10.2} {p99:>10.2}");
        shutdown.shutdown();
        let _ = running.join();
    }
}

/// Fresh searches (cache off, a new query each call) against four providers on loopback with the pacing defaults
/// (one search per provider per WEBSEARCHD_SOURCE_INTERVAL_MS, 2 s): answered searches per second, and how many
/// calls got 503 (every provider paced).
fn four_providers() {
    let pages = pages();
    let page = |kind: Kind| {
        pages.iter().find(|(k, _)| *k == kind).map(|(_, p)| std::fs::read(p).expect("page")).expect("a page")
    };
    let ddg = upstream(page(Kind::DdgHtml));
    let bing = upstream(page(Kind::Bing));
    let brave = upstream(page(Kind::Brave));
    let mojeek = upstream(page(Kind::Mojeek));
    let vars = [
        ("WEBSEARCHD_LISTEN", "127.0.0.1:0".to_string()),
        ("WEBSEARCHD_SOURCES", "ddg_html,brave,bing,mojeek".to_string()),
        ("WEBSEARCHD_DDG_HTML_URL", format!("http://{ddg}/html/")),
        ("WEBSEARCHD_BING_URL", format!("http://{bing}/search")),
        ("WEBSEARCHD_BRAVE_URL", format!("http://{brave}/search")),
        ("WEBSEARCHD_MOJEEK_URL", format!("http://{mojeek}/search")),
        ("WEBSEARCHD_CACHE_TTL_S", "0".to_string()),
        ("WEBSEARCHD_LOG", "off".to_string()),
        ("WEBSEARCHD_STATE_DIR", std::env::temp_dir().join("websearchd-bench").display().to_string()),
    ];
    let source = Source::from_pairs(vars.iter().map(|(k, v)| (k.to_string(), v.clone())), None).expect("env");
    let config = Config::from_source(&source).expect("config");
    let engine = Engine::from_config(&config, Arc::new(SystemClock));
    let duration = Duration::from_secs(10);
    let started = Instant::now();
    let (mut ok, mut paced, mut n) = (0u32, 0u32, 0u32);
    let mut by_source = std::collections::BTreeMap::new();
    while started.elapsed() < duration {
        n += 1;
        let request = websearchd::search::SearchRequest::from_json(
            format!(r#"{{"query":"fresh query {n}","max_results":10}}"#).as_bytes(),
        )
        .expect("request");
        match engine.search(&request, "bench") {
            Ok(answer) => {
                ok += 1;
                let first = answer["results"][0]["source"].as_str().unwrap_or("none").to_string();
                *by_source.entry(first).or_insert(0u32) += 1;
            }
            Err(_) => paced += 1,
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let secs = started.elapsed().as_secs_f64();
    println!("\nfresh searches, four loopback providers, pacing defaults (one caller, a call every 50 ms, 10 s)");
    println!(
        "answered/s {:.2}, paced (503)/s {:.2}, first result's source: {by_source:?}",
        ok as f64 / secs,
        paced as f64 / secs
    );
}

/// Keep-alive clients POSTing the same search for `duration`; requests/s and latency percentiles in ms.
fn load(addr: SocketAddr, clients: usize, duration: Duration) -> (f64, f64, f64) {
    let body = br#"{"query":"bench query","max_results":10}"#;
    let request = [
        format!(
            "POST /service HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n",
            body.len()
        )
        .as_bytes(),
        body,
    ]
    .concat();
    let started = Instant::now();
    let threads: Vec<_> = (0..clients)
        .map(|_| {
            let request = request.clone();
            std::thread::spawn(move || {
                let mut latencies = Vec::new();
                let mut s = TcpStream::connect(addr).expect("connect");
                while started.elapsed() < duration {
                    let t0 = Instant::now();
                    if s.write_all(&request).is_err() {
                        s = TcpStream::connect(addr).expect("reconnect");
                        continue;
                    }
                    if http::read_one(&mut s).is_none() {
                        s = TcpStream::connect(addr).expect("reconnect");
                        continue;
                    }
                    latencies.push(t0.elapsed());
                }
                latencies
            })
        })
        .collect();
    let mut all: Vec<Duration> = threads.into_iter().flat_map(|t| t.join().expect("client")).collect();
    let elapsed = started.elapsed();
    all.sort();
    let pct = |p: f64| all.get(((all.len() as f64 * p) as usize).min(all.len().saturating_sub(1)));
    let ms = |d: Option<&Duration>| d.map_or(0.0, |d| d.as_secs_f64() * 1e3);
    (all.len() as f64 / elapsed.as_secs_f64(), ms(pct(0.5)), ms(pct(0.99)))
}
