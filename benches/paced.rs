//! A paced load generator (`cargo bench --bench paced -- ADDR PATH RATE [SECONDS [CONNECTIONS]]`): keep-alive
//! connections send requests at a fixed total rate, each at its scheduled instant, and a request's latency is counted
//! from that instant (open loop: an answer that comes late delays the next sends, and their wait is counted, as wrk2
//! does). PATH `/service` is sent as wrk's `post.lua` sends it (POST `{"query":"x"}`, JSON); any other path is a GET.
//! Prints the answers per second, the share of expected statuses (402 for `/service`, else 200), and the latency
//! percentiles in ms, so that a server and the C ceiling can be compared at the same rate below saturation.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing, dead_code)]

#[path = "support/http.rs"]
mod http;

use std::io::Write;
use std::net::{SocketAddr, TcpStream};
use std::time::{Duration, Instant};

fn main() {
    let args: Vec<String> = std::env::args().skip(1).filter(|a| a != "--bench").collect();
    let [addr, path, rate, rest @ ..] = args.as_slice() else {
        eprintln!("usage: cargo bench --bench paced -- ADDR PATH RATE [SECONDS [CONNECTIONS]]");
        std::process::exit(2);
    };
    let addr: SocketAddr = addr.parse().expect("ADDR: host:port");
    let rate: f64 = rate.parse().expect("RATE: requests per second");
    let seconds: f64 = rest.first().map_or(5.0, |s| s.parse().expect("SECONDS"));
    let connections: usize = rest.get(1).map_or(16, |s| s.parse().expect("CONNECTIONS"));
    let (request, expected) = if path == "/service" {
        let body = r#"{"query":"x"}"#;
        let head = format!(
            "POST {path} HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n",
            body.len()
        );
        (format!("{head}{body}"), 402)
    } else {
        (format!("GET {path} HTTP/1.1\r\nHost: {addr}\r\n\r\n"), 200)
    };
    // Each connection sends every `connections / rate` seconds, the connections spread evenly over that interval.
    let interval = Duration::from_secs_f64(connections as f64 / rate);
    let started = Instant::now() + Duration::from_millis(100);
    let end = started + Duration::from_secs_f64(seconds);
    let clients: Vec<_> = (0..connections)
        .map(|i| {
            let request = request.clone();
            std::thread::spawn(move || {
                let mut s = connect(addr);
                let (mut latencies, mut good) = (Vec::new(), 0u64);
                let mut due = started + interval.mul_f64(i as f64 / connections as f64);
                while due < end {
                    if let Some(wait) = due.checked_duration_since(Instant::now()) {
                        std::thread::sleep(wait);
                    }
                    // The server closes a connection after its keep-alive maximum: open another and send again.
                    let status = match send(&mut s, &request) {
                        Some(status) => status,
                        None => {
                            s = connect(addr);
                            send(&mut s, &request).expect("an answer on a new connection")
                        }
                    };
                    latencies.push(due.elapsed());
                    good += u64::from(status == expected);
                    due += interval;
                }
                (latencies, good)
            })
        })
        .collect();
    let (mut all, mut good) = (Vec::new(), 0);
    for client in clients {
        let (latencies, n) = client.join().expect("client");
        all.extend(latencies);
        good += n;
    }
    all.sort();
    let ms = |p: f64| {
        let i = ((all.len() as f64 * p) as usize).min(all.len().saturating_sub(1));
        all.get(i).map_or(0.0, |d| d.as_secs_f64() * 1e3)
    };
    println!(
        "{addr}{path} at {rate}/s over {connections} connections: {:.0} answers/s, {:.1}% expected, \
         p50 {:.3} p90 {:.3} p99 {:.3} p99.9 {:.3} max {:.3} ms",
        all.len() as f64 / seconds,
        100.0 * good as f64 / all.len().max(1) as f64,
        ms(0.5),
        ms(0.9),
        ms(0.99),
        ms(0.999),
        ms(1.0),
    );
}

fn connect(addr: SocketAddr) -> TcpStream {
    let s = TcpStream::connect(addr).expect("connect");
    s.set_nodelay(true).unwrap();
    s
}

/// Sends one request and reads its answer's status; `None` when the connection was closed.
fn send(s: &mut TcpStream, request: &str) -> Option<u16> {
    s.write_all(request.as_bytes()).ok()?;
    http::read_one(s)
}
