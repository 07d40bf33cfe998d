//! Issue 33 (hardening, third pass), findings 1 and 2: what a hostile feed answer and the map's readers cost the real
//! server, read as VmHWM (the peak resident set) from its `/proc/<pid>/status`.
//!
//! Named after what broke: a feed answer parsed whole into a JSON tree (16 MB of `{"features":[0,0,...]}`,
//! `[{},{},...]`, or 15.5 KB of gzip that inflates to 16 MB of `[[],[],...]` took the server to 188-272 MB, over a
//! `MemoryMax=128M`, at every start).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)]

mod common;

use std::io::Write;
use std::sync::{mpsc, Arc, Mutex};
use std::time::{Duration, Instant};

use common::upstream::{Answer, Upstream};
use common::Server;

/// What one poll of a hostile feed answer may add to the server's peak: the body itself (the fetch holds it, up to
/// `WEBSEARCHD_MAP_BYTES_MAX`, 16 MiB by default; inflated, the compressed body and the inflated one) and what the
/// parser keeps. The whole tree cost 188-272 MB.
const FEED_PEAK_BYTES_MAX: u64 = 40 << 20;

/// The feeds' body size in these tests: just within the default `WEBSEARCHD_MAP_BYTES_MAX` (16 MiB).
const BODY_BYTES: usize = 16_000_000;

fn mb(bytes: u64) -> f64 {
    bytes as f64 / 1e6
}

fn gzip(bytes: &[u8]) -> Vec<u8> {
    let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
    e.write_all(bytes).unwrap();
    e.finish().unwrap()
}

/// A body of `open`, then `item,` repeated to `BODY_BYTES`, then `close`.
fn repeated(open: &str, item: &str, close: &str) -> Vec<u8> {
    let n = (BODY_BYTES - open.len() - close.len()) / (item.len() + 1);
    let mut body = Vec::with_capacity(BODY_BYTES);
    body.extend_from_slice(open.as_bytes());
    for i in 0..n {
        if i > 0 {
            body.push(b',');
        }
        body.extend_from_slice(item.as_bytes());
    }
    body.extend_from_slice(close.as_bytes());
    body
}

/// An upstream that holds its answer until `release` is called, so that the server's idle peak is read before the
/// first poll (which runs at start).
struct Gated {
    upstream: Upstream,
    arrived: mpsc::Receiver<()>,
    release: mpsc::Sender<()>,
}

fn gated(answer: Answer) -> Gated {
    let (release, wait) = mpsc::channel::<()>();
    let (came, arrived) = mpsc::channel::<()>();
    let (wait, came) = (Arc::new(Mutex::new(wait)), Mutex::new(came));
    let upstream = Upstream::start(move |_| {
        let _ = came.lock().unwrap().send(());
        let _ = wait.lock().unwrap().recv_timeout(Duration::from_secs(30));
        answer.clone()
    });
    Gated { upstream, arrived, release }
}

/// A server with one map layer on `url`.
fn map_server(layer: &str, url: &str) -> Server {
    let var = format!("WEBSEARCHD_MAP_{}_URL", layer.to_uppercase());
    Server::start(&[("WEBSEARCHD_MAP_LAYERS", layer), (&var, url), ("WEBSEARCHD_WORKERS", "4")])
}

/// Waits (bounded) until the layer's first poll has an outcome; gives its entry.
fn polled(server: &Server, layer: &str) -> serde_json::Value {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let state = server.get("/map/mapstate").json();
        let entry = state["layers"].as_array().unwrap().iter().find(|l| l["slug"] == layer).unwrap().clone();
        if entry["status"] != "pending" {
            return entry;
        }
        assert!(Instant::now() < deadline, "no poll outcome: {entry}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Polls `layer` once with `answer` and gives the peak it added and the layer's entry after.
fn poll_peak(layer: &str, answer: Answer) -> (u64, serde_json::Value) {
    let feed = gated(answer);
    let server = map_server(layer, &feed.upstream.url("/feed"));
    feed.arrived.recv_timeout(Duration::from_secs(20)).expect("the first poll");
    let idle = server.status_bytes("VmHWM:");
    feed.release.send(()).unwrap();
    let entry = polled(&server, layer);
    let peak = server.status_bytes("VmHWM:");
    eprintln!("{layer}: idle peak {:.1} MB, after the poll {:.1} MB: {}", mb(idle), mb(peak), entry["last_error"]);
    (peak.saturating_sub(idle), entry)
}

#[test]
fn a_feed_of_tiny_members_is_read_within_its_caps() {
    let (added, entry) = poll_peak("terremotos", Answer::json(200, repeated(r#"{"features":["#, "0", "]}")));
    assert!(added < FEED_PEAK_BYTES_MAX, "the poll added {:.1} MB", mb(added));
    assert_eq!((entry["status"].as_str(), entry["count"].as_u64()), (Some("ok"), Some(0)), "{entry}");
    assert!(entry["dropped"].as_u64().unwrap() > 7_000_000, "{entry}");
}

#[test]
fn a_list_of_empty_objects_is_read_within_its_caps() {
    let (added, entry) = poll_peak("satelites", Answer::json(200, repeated("[", "{}", "]")));
    assert!(added < FEED_PEAK_BYTES_MAX, "the poll added {:.1} MB", mb(added));
    assert_eq!(entry["last_error"], "no usable orbital elements", "{entry}");
}

#[test]
fn a_gzip_bomb_of_empty_lists_is_read_within_its_caps() {
    let bomb = gzip(&repeated("[", "[]", "]"));
    assert!(bomb.len() < 40_000, "{} bytes compressed", bomb.len());
    let answer =
        Answer::WithHeaders(Box::new(Answer::json(200, bomb)), vec![("Content-Encoding".into(), "gzip".into())]);
    let (added, entry) = poll_peak("satelites", answer);
    assert!(added < FEED_PEAK_BYTES_MAX, "the poll added {:.1} MB", mb(added));
    assert_eq!(entry["last_error"], "no usable orbital elements", "{entry}");
}
