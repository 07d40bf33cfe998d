//! The soak test (`cargo bench --bench soak -- --minutes 10`): mixed traffic against the release binary while its
//! upstreams misbehave on a schedule (the search source hangs, resets, sends garbage, oversized bodies and errors;
//! the facilitator fails in each of its ways; the map feed alternates good and broken answers), hostile pages are
//! extracted (issue 13's shapes: 700,000 tiny paragraphs, 200,000 table rows, tags of 40,000 attributes), and
//! hostile clients run beside (one that pipelines and reads slowly, another address that opens a hundred idle
//! connections). A prober asks `/health` every 50 ms on a fresh connection. Every 10 s it samples the server's RSS,
//! its peak RSS so far (VmHWM: the kernel's high-water mark, so no peak between two samples is missed), threads,
//! open files and the authorizations its replay guard holds. It fails (exit 1) when a client gets no answer at all, when threads pile up, when memory or file
//! descriptors keep growing, when a sample's RSS or the peak passes `RSS_MAX_KB`, when `/health` takes 100 ms or
//! more at p99, or when the payment ledger or the notary journal is not consistent
//! afterwards (every receipt a client got is in the chain, and the chain verifies). It starts the release build
//! beside it (glibc), or the binary `WEBSEARCHD_BIN` names (the static musl release that ships).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing, dead_code)]

#[path = "../tests/common/mod.rs"]
mod common;
#[path = "support/http.rs"]
mod http;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use common::pay::{Facilitator, Mode, Payer, PAY_TO};
use common::upstream::{Answer, Upstream};
use common::Server;
use serde_json::Value;

/// The server's RSS at every moment (issue 18: the soak within 24 MB): in every sample, and its peak (VmHWM, which
/// counts from the start, so the peak between two samples too).
const RSS_MAX_KB: u64 = 24 * 1_024;
/// `/health` at p99 must answer within this, whatever else runs.
const HEALTH_P99_MAX: Duration = Duration::from_millis(100);

/// The hostile pages, in turn the top result of an `extract` search.
fn hostile_page(n: u64) -> Vec<u8> {
    match n % 3 {
        0 => b"<p>a".repeat(700_000),
        1 => {
            let mut page = b"<table>".to_vec();
            page.extend(b"<tr><td>a</td>".repeat(200_000));
            page
        }
        _ => {
            let mut tag = b"<div".to_vec();
            for i in 0..40_000 {
                tag.extend_from_slice(format!(" a{i}").as_bytes());
            }
            tag.extend_from_slice(b">x</div>\n");
            tag.repeat(11)
        }
    }
}

fn connect_from(local: [u8; 4], to: std::net::SocketAddr) -> Option<TcpStream> {
    let socket = socket2::Socket::new(socket2::Domain::IPV4, socket2::Type::STREAM, None).ok()?;
    socket.bind(&std::net::SocketAddr::from((local, 0)).into()).ok()?;
    socket.connect(&to.into()).ok()?;
    Some(socket.into())
}

const MODES: [Mode; 9] = [
    Mode::Honest,
    Mode::VerifyInvalid,
    Mode::Verify5xx,
    Mode::VerifyHang,
    Mode::Honest,
    Mode::SettleFalse,
    Mode::Settle5xx,
    Mode::SettleHang,
    Mode::Settle4xx,
];

fn main() {
    let minutes: f64 =
        std::env::args().skip_while(|a| a != "--minutes").nth(1).and_then(|m| m.parse().ok()).unwrap_or(10.0);
    let total = Duration::from_secs_f64(minutes * 60.0);
    let page = common::own_fixture("search/ddg_html_results.html");
    let pages: Vec<Vec<u8>> = (0..3).map(hostile_page).collect();
    let site = Upstream::start(move |seen| {
        let n: usize = seen.path().trim_start_matches("/page").parse().unwrap_or(0);
        Answer::html(200, pages[n % 3].clone())
    });
    let hostile_results: Vec<Vec<u8>> =
        (0..3).map(|n| common::results_pointing_at(&site.url(&format!("/page{n}")))).collect();
    let source = Upstream::start(move |seen| {
        let q = seen.param("q").unwrap_or_default();
        if let Some(n) = q.strip_prefix("hostile ").and_then(|n| n.split_whitespace().next()?.parse::<usize>().ok()) {
            return Answer::html(200, hostile_results[n % 3].clone());
        }
        match q.chars().last().and_then(|c| c.to_digit(10)).unwrap_or(0) {
            1 => Answer::Hang(Duration::from_secs(3)),
            2 => Answer::Reset,
            3 => Answer::Garbage(b"\x00\xffHTTP/9 nonsense\r\n\r\n".to_vec()),
            4 => Answer::html(200, vec![b'a'; 3 * 1_048_576]),
            5 => Answer::html(503, "busy"),
            6 => Answer::Delay(Duration::from_millis(300), Box::new(Answer::html(200, page.clone()))),
            _ => Answer::html(200, page.clone()),
        }
    });
    let facilitator = Facilitator::start();
    let usgs = common::shared_fixture("map/terremotos/usgs_all_hour_2024-05-31.geojson")
        .unwrap_or_else(|| br#"{"type":"FeatureCollection","features":[]}"#.to_vec());
    let flip = Arc::new(AtomicU64::new(0));
    let f2 = flip.clone();
    let feed = Upstream::start(move |_| {
        if f2.fetch_add(1, Relaxed).is_multiple_of(2) {
            Answer::json(200, usgs.clone())
        } else {
            Answer::Garbage(b"garbage".to_vec())
        }
    });
    let vars: Vec<(String, String)> = vec![
        ("WEBSEARCHD_LOG".into(), "info,websearchd::access=warn".into()),
        ("WEBSEARCHD_SOURCES".into(), "ddg_html".into()),
        ("WEBSEARCHD_DDG_HTML_URL".into(), source.url("/html/")),
        ("WEBSEARCHD_SOURCE_INTERVAL_MS".into(), "0".into()),
        ("WEBSEARCHD_SOURCE_TIMEOUT_MS".into(), "1000".into()),
        ("WEBSEARCHD_BREAKER_COOLDOWN_MS".into(), "1000".into()),
        ("WEBSEARCHD_BREAKER_COOLDOWN_MAX_MS".into(), "2000".into()),
        ("WEBSEARCHD_CACHE_TTL_S".into(), "5".into()),
        ("WEBSEARCHD_PAY_TO".into(), PAY_TO.into()),
        ("WEBSEARCHD_FACILITATOR_URL".into(), facilitator.url()),
        ("WEBSEARCHD_FACILITATOR_TIMEOUT_MS".into(), "800".into()),
        ("WEBSEARCHD_MAP_LAYERS".into(), "terremotos".into()),
        ("WEBSEARCHD_MAP_TERREMOTOS_URL".into(), feed.url("/feed")),
        ("WEBSEARCHD_MAP_REFRESH_S".into(), "terremotos=15".into()),
        ("WEBSEARCHD_FETCH_ALLOW".into(), format!("127.0.0.1:{}", site.addr.port())),
    ];
    // To compare allocator settings: glibc's own, given to the server (they replace `http::sys::tune_allocator`'s).
    let mut vars = vars;
    if let Ok(t) = std::env::var("GLIBC_TUNABLES") {
        vars.push(("GLIBC_TUNABLES".into(), t));
    }
    let pairs: Vec<(&str, &str)> = vars.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
    let server = Server::start(&pairs);
    let addr = server.addr;
    let accepted = server.post_json("/service", r#"{"query":"terms"}"#).json()["accepts"][0].clone();
    println!("soak: {minutes} min of mixed traffic; the facilitator changes mode every 20 s");

    let stop = Arc::new(AtomicBool::new(false));
    let answered = Arc::new(AtomicU64::new(0));
    let unanswered = Arc::new(AtomicU64::new(0));
    let statuses = Arc::new(Mutex::new(std::collections::BTreeMap::<u16, u64>::new()));
    let receipts = Arc::new(Mutex::new(Vec::<Value>::new()));
    let clients: Vec<_> = (0..6u64)
        .map(|client| {
            let (stop, answered, unanswered, statuses, receipts, accepted) = (
                stop.clone(),
                answered.clone(),
                unanswered.clone(),
                statuses.clone(),
                receipts.clone(),
                accepted.clone(),
            );
            std::thread::spawn(move || {
                let mut n = 0u64;
                while !stop.load(Relaxed) {
                    n += 1;
                    let kind = (client + n) % 7;
                    let (method, path, body, pay): (&str, &str, String, bool) = match kind {
                        0 => ("POST", "/service", format!(r#"{{"query":"soak {n} {}"}}"#, n % 7), true),
                        6 => {
                            ("POST", "/service", format!(r#"{{"query":"hostile {n} {client}","extract":true}}"#), true)
                        }
                        1 => ("POST", "/service", r#"{"query":"unpaid"}"#.into(), false),
                        2 => {
                            let h = websearchd::sign::sha256_hex(format!("{client}-{n}").as_bytes());
                            ("POST", "/notary/service", format!(r#"{{"op":"notarize","hash":"{h}"}}"#), true)
                        }
                        3 => ("GET", "/map/api/capa/terremotos", String::new(), false),
                        4 => ("POST", "/service", "{not json".into(), false),
                        _ => ("GET", "/map/mapstate", String::new(), false),
                    };
                    let mut head = format!(
                        "{method} {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\nContent-Length: {}\r\n",
                        body.len()
                    );
                    if method == "POST" {
                        head.push_str("Content-Type: application/json\r\n");
                    }
                    if pay {
                        let payer = Payer::numbered(client, n);
                        head.push_str(&format!("PAYMENT-SIGNATURE: {}\r\n", payer.v2_header(&accepted)));
                    }
                    head.push_str("\r\n");
                    let reply = TcpStream::connect(addr).ok().and_then(|mut s| {
                        s.set_read_timeout(Some(Duration::from_secs(30))).ok()?;
                        s.write_all(head.as_bytes()).ok()?;
                        s.write_all(body.as_bytes()).ok()?;
                        let mut all = Vec::new();
                        s.read_to_end(&mut all).ok()?;
                        let text = String::from_utf8_lossy(&all).into_owned();
                        let status: u16 = text.split_whitespace().nth(1)?.parse().ok()?;
                        Some((status, text))
                    });
                    match reply {
                        Some((status, text)) => {
                            answered.fetch_add(1, Relaxed);
                            *statuses.lock().unwrap().entry(status).or_default() += 1;
                            if kind == 2 && status == 200 {
                                if let Some(json) = text.split("\r\n\r\n").nth(1) {
                                    if let Ok(v) = serde_json::from_str::<Value>(json) {
                                        receipts.lock().unwrap().push(v);
                                    }
                                }
                            }
                        }
                        None => {
                            unanswered.fetch_add(1, Relaxed);
                        }
                    }
                }
            })
        })
        .collect();

    // Hostile clients: one pipelines 200 requests and reads them a little at a time; another address (127.0.0.2)
    // opens a hundred connections and leaves them idle. Both start over every few seconds.
    let drip = {
        let stop = stop.clone();
        std::thread::spawn(move || {
            let one = b"GET /llms.txt HTTP/1.1\r\nHost: drip\r\n\r\n".repeat(200);
            while !stop.load(Relaxed) {
                if let Ok(mut s) = TcpStream::connect(addr) {
                    let _ = s.write_all(&one);
                    let _ = s.set_read_timeout(Some(Duration::from_millis(200)));
                    let mut buf = [0u8; 2_048];
                    let until = Instant::now() + Duration::from_secs(5);
                    while Instant::now() < until && !stop.load(Relaxed) {
                        let _ = s.read(&mut buf);
                        std::thread::sleep(Duration::from_millis(100));
                    }
                }
            }
        })
    };
    let flood = {
        let stop = stop.clone();
        std::thread::spawn(move || {
            while !stop.load(Relaxed) {
                let held: Vec<TcpStream> = (0..100).filter_map(|_| connect_from([127, 0, 0, 2], addr)).collect();
                std::thread::sleep(Duration::from_secs(3));
                drop(held);
            }
        })
    };
    let health_ms = Arc::new(Mutex::new(Vec::<Duration>::new()));
    let prober = {
        let (stop, health_ms, unanswered) = (stop.clone(), health_ms.clone(), unanswered.clone());
        std::thread::spawn(move || {
            while !stop.load(Relaxed) {
                let started = Instant::now();
                let ok = connect_from([127, 0, 0, 3], addr).and_then(|mut s| {
                    s.set_read_timeout(Some(Duration::from_secs(10))).ok()?;
                    s.write_all(b"GET /health HTTP/1.1\r\nHost: p\r\nConnection: close\r\n\r\n").ok()?;
                    http::read_one(&mut s).filter(|status| *status == 200)
                });
                match ok {
                    Some(_) => health_ms.lock().unwrap().push(started.elapsed()),
                    None => {
                        unanswered.fetch_add(1, Relaxed);
                    }
                }
                std::thread::sleep(Duration::from_millis(50));
            }
        })
    };

    let started = Instant::now();
    let mut samples: Vec<(u64, u64, u64, u64)> = Vec::new();
    let mut peak = 0;
    // The replay guard's size (`/metrics`; absent from builds before it was reported).
    let guard = || -> String {
        let text = server.get("/metrics").text();
        let held = text.lines().find_map(|l| l.strip_prefix("websearchd_replay_guard_held "));
        held.map_or_else(|| "-".to_owned(), |v| v.trim().to_owned())
    };
    println!(
        "{:>6} {:>10} {:>10} {:>8} {:>6} {:>10} {:>10} {:>7}  facilitator",
        "t (s)", "RSS kB", "peak kB", "threads", "fds", "answered", "no answer", "guard"
    );
    let mut mode_i = 0;
    while started.elapsed() < total {
        std::thread::sleep(Duration::from_secs(10));
        let t = started.elapsed().as_secs();
        if t / 20 != mode_i as u64 {
            mode_i = (t / 20) as usize;
            facilitator.set(MODES[mode_i % MODES.len()]);
        }
        let status = std::fs::read_to_string(format!("/proc/{}/status", server.pid())).unwrap_or_default();
        let field = |name: &str| -> u64 {
            status
                .lines()
                .find_map(|l| l.strip_prefix(name))
                .and_then(|v| v.split_whitespace().next()?.parse().ok())
                .unwrap_or(0)
        };
        let fds = std::fs::read_dir(format!("/proc/{}/fd", server.pid())).map_or(0, |d| d.count() as u64);
        let (rss, threads) = (field("VmRSS:"), field("Threads:"));
        peak = peak.max(field("VmHWM:"));
        samples.push((t, rss, threads, fds));
        println!(
            "{t:>6} {rss:>10} {peak:>10} {threads:>8} {fds:>6} {:>10} {:>10} {:>7}  {:?}",
            answered.load(Relaxed),
            unanswered.load(Relaxed),
            guard(),
            MODES[mode_i % MODES.len()]
        );
    }
    stop.store(true, Relaxed);
    for c in clients {
        c.join().unwrap();
    }
    for t in [drip, flood, prober] {
        t.join().unwrap();
    }
    println!("statuses: {:?}", statuses.lock().unwrap());

    let mut failures = Vec::new();
    let mut health = health_ms.lock().unwrap().clone();
    health.sort();
    let at = |q: f64| health.get(((health.len() as f64 * q) as usize).min(health.len().saturating_sub(1))).copied();
    let (p50, p99, worst) = (at(0.5).unwrap_or_default(), at(0.99).unwrap_or_default(), at(1.0).unwrap_or_default());
    println!("health: {} probes, p50 {p50:?}, p99 {p99:?}, max {worst:?}", health.len());
    if health.is_empty() || p99 >= HEALTH_P99_MAX {
        failures.push(format!("/health p99 was {p99:?} (at most {HEALTH_P99_MAX:?})"));
    }
    let status = std::fs::read_to_string(format!("/proc/{}/status", server.pid())).unwrap_or_default();
    let hwm: u64 = status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.split_whitespace().next()?.parse().ok())
        .unwrap_or(0)
        .max(peak);
    let least_rss = samples.iter().map(|s| s.1).min().unwrap_or(0);
    let most_rss = samples.iter().map(|s| s.1).max().unwrap_or(0);
    println!("memory: RSS {least_rss} to {most_rss} kB in the samples, peak (VmHWM) {hwm} kB");
    if most_rss > RSS_MAX_KB {
        failures.push(format!("RSS reached {most_rss} kB in the samples (at most {RSS_MAX_KB} kB)"));
    }
    if hwm > RSS_MAX_KB {
        failures.push(format!("peak RSS (VmHWM) reached {hwm} kB (at most {RSS_MAX_KB} kB)"));
    }
    if unanswered.load(Relaxed) > 0 {
        failures.push(format!("{} requests got no answer", unanswered.load(Relaxed)));
    }
    // Threads: the fixed set, plus the short-lived ones ureq starts per DNS lookup with a timeout while outbound
    // calls are in flight; the count must not trend upwards.
    let (least, most) =
        (samples.iter().map(|s| s.2).min().unwrap_or(0), samples.iter().map(|s| s.2).max().unwrap_or(0));
    if most > least + 16 {
        failures.push(format!("the thread count ranged from {least} to {most}"));
    }
    // Growth: the largest sample of the last third against the largest of the first third (after warm-up).
    let third = (samples.len() / 3).max(1);
    let early = |f: fn(&(u64, u64, u64, u64)) -> u64| samples.iter().take(third).map(f).max().unwrap_or(0);
    let late = |f: fn(&(u64, u64, u64, u64)) -> u64| samples.iter().rev().take(third).map(f).max().unwrap_or(0);
    if late(|s| s.1) > early(|s| s.1) * 3 / 2 + 2_048 {
        failures.push(format!("RSS grew from {} kB to {} kB", early(|s| s.1), late(|s| s.1)));
    }
    if late(|s| s.3) > early(|s| s.3) + 64 {
        failures.push(format!("open files grew from {} to {}", early(|s| s.3), late(|s| s.3)));
    }

    // Consistency after a clean stop.
    server.signal("TERM");
    std::thread::sleep(Duration::from_secs(2));
    let data = server.state_dir.path().join("data");
    match websearchd::journal::Journal::read(&data.join("payments.journal")) {
        Ok(o) if o.torn_bytes == 0 => println!("ledger: {} records, no torn tail", o.records.len()),
        Ok(o) => failures.push(format!("the ledger has a torn tail of {} bytes", o.torn_bytes)),
        Err(e) => failures.push(format!("the ledger does not read: {e}")),
    }
    match websearchd::journal::Journal::read(&data.join("notary.journal")) {
        Ok(o) => {
            let chain: Vec<Value> = o.records.iter().map(|r| r["receipt"].clone()).collect();
            if let Err(e) = websearchd::notary::check_links(&chain) {
                failures.push(format!("the notary chain is broken: {e}"));
            }
            let got = receipts.lock().unwrap();
            let missing = got
                .iter()
                .filter(|r| {
                    let seq = r["receipt"]["seq"].as_u64().unwrap_or(0) as usize;
                    o.records.get(seq.wrapping_sub(1)) != Some(*r)
                })
                .count();
            if missing > 0 {
                failures.push(format!("{missing} receipts clients got are not in the journal"));
            }
            println!("notary: {} receipts in the chain, {} delivered, the chain verifies", o.records.len(), got.len());
        }
        Err(e) => failures.push(format!("the notary journal does not read: {e}")),
    }
    if failures.is_empty() {
        println!("soak: passed");
    } else {
        for f in &failures {
            println!("soak: FAILED: {f}");
        }
        std::process::exit(1);
    }
}
