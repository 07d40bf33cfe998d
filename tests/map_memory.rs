//! Issue 33 (hardening, third pass), findings 1 and 2: what a hostile feed answer and the map's readers cost the real
//! server, read as VmHWM (the peak resident set) from its `/proc/<pid>/status`.
//!
//! Named after what broke: a feed answer parsed whole into a JSON tree (16 MB of `{"features":[0,0,...]}`,
//! `[{},{},...]`, or 15.5 KB of gzip that inflates to 16 MB of `[[],[],...]` took the server to 188-272 MB, over a
//! `MemoryMax=128M`, at every start), and a layer's data copied into a new JSON tree per request (one read of a
//! 5,000-satellite layer raised the peak from 27.5 to 116 MB; three at once ended the server under that budget).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)]

mod common;

use std::io::Write;
use std::sync::{mpsc, Arc, Mutex};
use std::time::{Duration, Instant};

use common::upstream::{Answer, Upstream};
use common::Server;
use websearchd::clock::Clock;

/// What one poll of a hostile feed answer may add to the server's peak: the body itself (the fetch holds it, up to
/// `WEBSEARCHD_MAP_BYTES_MAX`, 16 MiB by default; a compressed one is inflated as it arrives, within the same cap)
/// and what the parser keeps. The whole tree cost 188-272 MB.
const FEED_PEAK_BYTES_MAX: u64 = 40 << 20;

/// What reading a 5,000-object layer may add to the server's peak, for one reader and for several at once: the
/// document rendered once (about 4.5 MB for satellites with their ground tracks) and what a socket does not take at
/// once, copied for the reactor to write. A tree per request cost 78 MB for one reader.
const READERS_PEAK_BYTES_MAX: u64 = 24 << 20;

/// The issue's budget: the server's address space is capped at its size when idle plus this (a stand-in for the
/// unit's `MemoryMax=128M`); the unbounded parser and the per-request trees ended the server under it.
const BUDGET_BYTES: u64 = 128 << 20;

/// Caps the server's address space at its present size plus `BUDGET_BYTES` (false, with a notice, where the system
/// refuses).
fn cap_address_space(server: &Server) -> bool {
    let cap = server.status_bytes("VmSize:") + BUDGET_BYTES;
    let limit = libc::rlimit { rlim_cur: cap, rlim_max: libc::RLIM_INFINITY };
    // SAFETY: a valid pid, a pointer to a live rlimit, and a null pointer for the old value.
    let rc = unsafe { libc::prlimit(server.pid() as libc::pid_t, libc::RLIMIT_AS, &limit, std::ptr::null_mut()) };
    if rc != 0 {
        eprintln!("notice: prlimit(RLIMIT_AS) on the server failed ({})", std::io::Error::last_os_error());
    }
    rc == 0
}

/// The server is still there and answers.
fn alive(server: &mut Server) {
    assert!(server.child.try_wait().unwrap().is_none(), "the server ended: {}", server.log_text());
    assert_eq!(server.get("/health").status, 200);
}

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
    let mut server = map_server(layer, &feed.upstream.url("/feed"));
    feed.arrived.recv_timeout(Duration::from_secs(20)).expect("the first poll");
    let idle = server.status_bytes("VmHWM:");
    cap_address_space(&server);
    feed.release.send(()).unwrap();
    let entry = polled(&server, layer);
    alive(&mut server);
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

/// `n` satellites on the ISS's elements (distinct catalogue numbers), their epoch now.
fn satellites(n: usize) -> Vec<u8> {
    let epoch = websearchd::clock::rfc3339(websearchd::clock::SystemClock.now_unix_ms());
    let items: Vec<String> = (0..n)
        .map(|i| {
            format!(
                r#"{{"OBJECT_NAME":"SAT {i}","OBJECT_ID":"1998-067A","EPOCH":"{epoch}","MEAN_MOTION":15.49359774,"ECCENTRICITY":0.00072161,"INCLINATION":51.6321,"RA_OF_ASC_NODE":{},"ARG_OF_PERICENTER":17.1615,"MEAN_ANOMALY":{},"EPHEMERIS_TYPE":0,"CLASSIFICATION_TYPE":"U","NORAD_CAT_ID":{},"ELEMENT_SET_NO":999,"REV_AT_EPOCH":57948,"BSTAR":7.969016e-5,"MEAN_MOTION_DOT":3.997e-5,"MEAN_MOTION_DDOT":0}}"#,
                i % 360,
                (i * 7) % 360,
                100_000 + i
            )
        })
        .collect();
    format!("[{}]", items.join(",")).into_bytes()
}

/// `n` aircraft in the ADS-B Exchange v2 shape.
fn aircraft(n: usize) -> Vec<u8> {
    let items: Vec<String> = (0..n)
        .map(|i| {
            format!(
                r#"{{"hex":"{i:06x}","flight":"TEST{i} ","r":"D-A{i}","t":"A320","alt_baro":{},"gs":{},"track":{},"squawk":"1000","lat":{},"lon":{},"seen_pos":1.2,"seen":0.4,"messages":1234,"rssi":-20.1}}"#,
                1_000 + i % 40_000,
                200 + i % 300,
                i % 360,
                40.0 + (i % 1_000) as f64 / 100.0,
                (i % 2_000) as f64 / 100.0,
            )
        })
        .collect();
    format!(r#"{{"ac":[{}],"now":1700000000000}}"#, items.join(",")).into_bytes()
}

/// Reads `layer` with `readers` clients at once; checks each answer holds `count` features.
fn read_layer(server: &Server, layer: &str, readers: usize, count: usize) {
    let path = format!("/map/api/capa/{layer}");
    let handles: Vec<_> = (0..readers)
        .map(|_| {
            let (addr, path) = (server.addr, path.clone());
            std::thread::spawn(move || common::request(addr, "GET", &path, &[], b""))
        })
        .collect();
    for h in handles {
        let reply = h.join().unwrap();
        assert_eq!(reply.status, 200);
        let data = reply.json();
        assert_eq!(data["features"].as_array().unwrap().len(), count, "{}", data["layer"]);
    }
}

/// Polls a 5,000-object layer, then reads it with one client and with `readers` at once; gives the peaks added.
fn readers_peak(layer: &str, body: Vec<u8>, readers: usize) -> (u64, u64) {
    let feed = Upstream::start(move |_| Answer::json(200, body.clone()));
    let mut server = map_server(layer, &feed.url("/feed"));
    let entry = polled(&server, layer);
    assert_eq!((entry["status"].as_str(), entry["count"].as_u64()), (Some("ok"), Some(5_000)), "{entry}");
    let polled_peak = server.status_bytes("VmHWM:");
    cap_address_space(&server);
    read_layer(&server, layer, 1, 5_000);
    let one = server.status_bytes("VmHWM:");
    for _ in 0..3 {
        read_layer(&server, layer, readers, 5_000);
    }
    alive(&mut server);
    let many = server.status_bytes("VmHWM:");
    eprintln!(
        "{layer}: peak after the poll {:.1} MB, after one reader {:.1} MB, after {readers} at once (three rounds) {:.1} \
         MB; resident after {:.1} MB",
        mb(polled_peak),
        mb(one),
        mb(many),
        mb(server.status_bytes("VmRSS:"))
    );
    (one.saturating_sub(polled_peak), many.saturating_sub(polled_peak))
}

#[test]
fn readers_of_a_satellite_layer_share_its_document() {
    let (one, three) = readers_peak("satelites", satellites(5_000), 3);
    assert!(one < READERS_PEAK_BYTES_MAX, "one reader added {:.1} MB", mb(one));
    assert!(three < READERS_PEAK_BYTES_MAX, "three readers at once added {:.1} MB", mb(three));
}

#[test]
fn readers_of_an_aircraft_layer_share_its_document() {
    let (one, four) = readers_peak("vuelos", aircraft(5_000), 4);
    assert!(one < READERS_PEAK_BYTES_MAX, "one reader added {:.1} MB", mb(one));
    assert!(four < READERS_PEAK_BYTES_MAX, "four readers at once added {:.1} MB", mb(four));
}

/// A gzip feed body is inflated as it arrives: the poll holds the inflated body, not the compressed one beside it
/// (8.7 MB of gzip inflating to 16 MB added 24.4 MB to the peak when the whole compressed body was read first, 16.0 MB
/// inflated as it is read).
#[test]
fn a_gzip_body_is_inflated_without_its_compressed_copy() {
    // Hex digits: a body that gzip halves, no more.
    let mut x: u64 = 0x1234_5678;
    let mut text = String::from("[");
    while text.len() < BODY_BYTES - 100 {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        text.push_str(&format!("\"{x:016x}\","));
    }
    text.push_str("0]");
    let gz = gzip(text.as_bytes());
    assert!(gz.len() > BODY_BYTES / 2, "{} bytes compressed", gz.len());
    let answer = Answer::WithHeaders(Box::new(Answer::json(200, gz)), vec![("Content-Encoding".into(), "gzip".into())]);
    let (added, entry) = poll_peak("satelites", answer);
    assert!(added < (BODY_BYTES as u64) + (4 << 20), "the poll added {:.1} MB", mb(added));
    assert_eq!(entry["last_error"], "no usable orbital elements", "{entry}");
}

/// What slow readers of a layer's document may add to the server's resident set and peak: what their sockets have not
/// taken is written from the shared document, not copied per reader (five readers of a 5.5 MB document, 13.6 MB of
/// it not taken by their sockets, added 13.7 MB resident and 8.3 MB to the peak with a copy each).
const SLOW_READERS_PEAK_BYTES_MAX: u64 = 4 << 20;

/// Issue 41, item 7: readers that take a large document slowly (a 4 KB receive buffer, nothing read for a while) are
/// written from the document all readers share; once they read, each gets it whole.
#[test]
fn slow_readers_of_a_layer_share_its_document() {
    use std::io::Read;
    let (objects, readers) = (20_000, 5);
    let body = aircraft(objects);
    let feed = Upstream::start(move |_| Answer::json(200, body.clone()));
    let var = "WEBSEARCHD_MAP_VUELOS_URL";
    let mut server = Server::start(&[
        ("WEBSEARCHD_MAP_LAYERS", "vuelos"),
        (var, &feed.url("/feed")),
        ("WEBSEARCHD_MAP_OBJECTS_MAX", "20000"),
        ("WEBSEARCHD_WRITE_TIMEOUT_MS", "30000"),
    ]);
    let entry = polled(&server, "vuelos");
    assert_eq!(entry["count"].as_u64(), Some(objects as u64), "{entry}");
    let path = "/map/api/capa/vuelos";
    let document = server.get(path).body.len();
    let before = server.status_bytes("VmHWM:");
    let resident = server.status_bytes("VmRSS:");
    let request = format!("GET {path} HTTP/1.1\r\nHost: slow\r\n\r\n");
    let mut slow: Vec<std::net::TcpStream> = (0..readers)
        .map(|_| {
            let socket = socket2::Socket::new(socket2::Domain::IPV4, socket2::Type::STREAM, None).unwrap();
            socket.set_recv_buffer_size(4_096).unwrap();
            socket.connect(&server.addr.into()).unwrap();
            let mut s: std::net::TcpStream = socket.into();
            s.write_all(request.as_bytes()).unwrap();
            s
        })
        .collect();
    // The answers are handed to the reactor (what the kernel's buffers did not take is pending).
    let deadline = Instant::now() + Duration::from_secs(20);
    let pending = loop {
        let pending = server.metric("websearchd_http_write_pending_bytes");
        if pending > 0 && server.metric("websearchd_http_requests_in_flight") <= 1 {
            std::thread::sleep(Duration::from_millis(300));
            break server.metric("websearchd_http_write_pending_bytes");
        }
        assert!(Instant::now() < deadline, "no answer is pending");
        std::thread::sleep(Duration::from_millis(50));
    };
    let (held, rss) = (server.status_bytes("VmHWM:"), server.status_bytes("VmRSS:"));
    eprintln!(
        "{readers} slow readers of a {:.1} MB document: {:.1} MB pending; resident {:.1} -> {:.1} MB, the peak {:.1} -> \
         {:.1} MB",
        mb(document as u64),
        mb(pending),
        mb(resident),
        mb(rss),
        mb(before),
        mb(held),
    );
    assert!(pending > (readers as u64) << 20, "the sockets took most of it: {:.1} MB pending", mb(pending));
    for s in &mut slow {
        s.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
        let (mut got, mut buf) = (Vec::new(), [0u8; 65_536]);
        let head = loop {
            let head = got.windows(4).position(|w| w == b"\r\n\r\n").map(|i| i + 4);
            if let Some(head) = head.filter(|h| got.len() >= h + document) {
                break head;
            }
            let n = s.read(&mut buf).unwrap();
            assert!(n > 0, "closed after {} bytes", got.len());
            got.extend_from_slice(&buf[..n]);
        };
        assert_eq!(got.len() - head, document);
        let features = serde_json::from_slice::<serde_json::Value>(&got[head..]).unwrap()["features"].clone();
        assert_eq!(features.as_array().unwrap().len(), objects);
    }
    alive(&mut server);
    assert_eq!(server.metric("websearchd_http_write_pending_bytes"), 0);
    for (what, added) in [("resident set", rss.saturating_sub(resident)), ("peak", held.saturating_sub(before))] {
        assert!(added < SLOW_READERS_PEAK_BYTES_MAX, "{readers} slow readers added {:.1} MB to the {what}", mb(added));
    }
}
