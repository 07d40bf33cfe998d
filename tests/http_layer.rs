//! The HTTP layer on its own, with handlers written for the test: a panic in a handler becomes a 500 and the worker
//! lives on; shutdown waits for a request in flight; a client that half-closes gets every answer; what is held for
//! clients that do not read stays within its bound.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)]

mod common;

use std::io::Write;
use std::net::{Shutdown, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use websearchd::config::Config;
use websearchd::http::{Handler, Limits, Request, Response, Server, ServerStats, WRITE_PENDING_BYTES_MAX};

struct Panicky;

impl Handler for Panicky {
    fn handle(&self, request: &Request) -> Response {
        if request.path() == "/panic" {
            panic!("a bug in a handler");
        }
        Response::new(200, "text/plain", "fine")
    }
}

struct Running {
    addr: std::net::SocketAddr,
    stats: Arc<ServerStats>,
    shutdown: websearchd::http::ShutdownHandle,
    thread: std::thread::JoinHandle<()>,
}

fn start(handler: Arc<dyn Handler>, workers: usize) -> Running {
    let mut limits = Limits::from_config(&Config::defaults());
    limits.workers = workers;
    start_limited(handler, limits)
}

fn start_limited(handler: Arc<dyn Handler>, limits: Limits) -> Running {
    let stats = Arc::new(ServerStats::default());
    let server = Server::bind("127.0.0.1:0".parse().unwrap(), limits, handler, stats.clone()).expect("bind");
    let addr = server.local_addr().expect("addr");
    let shutdown = server.shutdown_handle();
    let thread = std::thread::spawn(move || server.run().expect("run"));
    Running { addr, stats, shutdown, thread }
}

#[test]
fn a_panic_is_a_500_and_the_worker_survives() {
    let Running { addr, shutdown, thread, .. } = start(Arc::new(Panicky), 1);
    for _ in 0..3 {
        let r = common::request(addr, "GET", "/panic", &[], b"");
        assert_eq!((r.status, r.error_code().as_str()), (500, "internal_error"));
    }
    // The only worker is still there.
    let r = common::request(addr, "GET", "/ok", &[], b"");
    assert_eq!((r.status, r.text().as_str()), (200, "fine"));
    shutdown.shutdown();
    thread.join().expect("server thread");
}

/// Holds each request until released, to have one in flight at shutdown.
struct Gate(Arc<AtomicBool>);

impl Handler for Gate {
    fn handle(&self, _request: &Request) -> Response {
        while !self.0.load(Ordering::SeqCst) {
            std::thread::sleep(Duration::from_millis(5));
        }
        Response::new(200, "text/plain", "finished")
    }
}

#[test]
fn shutdown_finishes_the_request_in_flight() {
    let open = Arc::new(AtomicBool::new(false));
    let Running { addr, stats, shutdown, thread } = start(Arc::new(Gate(open.clone())), 2);
    let mut s = TcpStream::connect(addr).expect("connect");
    s.set_read_timeout(Some(Duration::from_secs(10))).expect("timeout");
    common::write_request(&mut s, "GET", "/slow", &[], b"");
    while stats.in_flight.load(Ordering::SeqCst) == 0 {
        std::thread::yield_now();
    }
    shutdown.shutdown();
    // New connections are refused once the listener is closed.
    let deadline = std::time::Instant::now() + Duration::from_secs(5);
    while TcpStream::connect(addr).is_ok() && std::time::Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(10));
    }
    assert!(TcpStream::connect(addr).is_err(), "listener still open after shutdown");
    open.store(true, Ordering::SeqCst);
    let reply = common::read_reply(&mut s).expect("the request in flight is answered");
    assert_eq!((reply.status, reply.text().as_str()), (200, "finished"));
    assert_eq!(reply.header("connection"), Some("close"));
    thread.join().expect("server thread");
}

/// Requests one after another, `total` bytes in all (GETs of `/n`, the last padded to the exact size), and how many.
fn pipelined(total: usize) -> (Vec<u8>, usize) {
    let one = b"GET /n HTTP/1.1\r\nHost: t\r\n\r\n";
    let (mut out, mut n) = (Vec::new(), 0);
    while total - out.len() >= 2 * one.len() + 9 {
        out.extend_from_slice(one);
        n += 1;
    }
    let pad = "a".repeat(total - out.len() - one.len() - 9);
    out.extend_from_slice(format!("GET /n HTTP/1.1\r\nHost: t\r\nX-Pad: {pad}\r\n\r\n").as_bytes());
    assert_eq!(out.len(), total);
    (out, n + 1)
}

/// Reads answers until the server closes; the `Connection` header of each (all 200).
fn answers_until_closed(s: &mut TcpStream) -> Vec<String> {
    let mut said = Vec::new();
    while let Some(r) = common::read_reply(s) {
        assert_eq!(r.status, 200);
        said.push(r.header("connection").unwrap_or_default().to_owned());
    }
    said
}

#[track_caller]
fn every_answer_and_the_last_says_close(said: &[String], requests: usize) {
    assert_eq!(said.len(), requests, "every request sent before the half-close is answered");
    assert!(said[..requests - 1].iter().all(|c| c == "keep-alive"), "{said:?}");
    assert_eq!(said[requests - 1], "close", "the last answer says the connection closes");
}

/// A client that pipelines requests and then closes its side (`printf ... | nc -N`): every request it sent is
/// answered, in order, and only the last answer says `close` (the server used to answer the first and drop the rest).
/// The client closes its side only once a worker holds its first request, and the handler answers only after that:
/// the EOF comes after the read that took the requests, and the worker that answers the last must look for it
/// (an answer made before the EOF would rightly say keep-alive, so the order is fixed, not left to the scheduler).
#[test]
fn a_half_closed_client_gets_every_answer() {
    let mut limits = Limits::from_config(&Config::defaults());
    limits.keepalive_requests_max = 100_000;
    let open = Arc::new(AtomicBool::new(false));
    let Running { addr, stats, shutdown, thread } = start_limited(Arc::new(Gate(open.clone())), limits);
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    s.write_all(&b"GET /n HTTP/1.1\r\nHost: t\r\n\r\n".repeat(3)).unwrap();
    let deadline = Instant::now() + Duration::from_secs(10);
    while stats.in_flight.load(Ordering::SeqCst) == 0 {
        assert!(Instant::now() < deadline, "the first request never reached a worker");
        std::thread::yield_now();
    }
    s.shutdown(Shutdown::Write).unwrap();
    open.store(true, Ordering::SeqCst);
    every_answer_and_the_last_says_close(&answers_until_closed(&mut s), 3);
    shutdown.shutdown();
    thread.join().unwrap();
}

/// The read that fills the input buffer (`Limits::input_bytes_max`) takes the client's last bytes, and the EOF behind
/// them is not read: the last answer must still say `close` (it said keep-alive, and the server closed only on its
/// next wake-up). The bytes and the EOF wait in the socket while a worker holds the connection, so that one read
/// round takes them all.
#[test]
fn the_read_that_fills_the_buffer_still_sees_the_half_close() {
    let mut limits = Limits::from_config(&Config::defaults());
    (limits.header_bytes_max, limits.body_bytes_max, limits.keepalive_requests_max) = (1_024, 256, 100_000);
    let (rest, n) = pipelined(limits.input_bytes_max());
    let open = Arc::new(AtomicBool::new(false));
    let Running { addr, stats, shutdown, thread } = start_limited(Arc::new(Gate(open.clone())), limits);
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    common::write_request(&mut s, "GET", "/held", &[], b"");
    let deadline = Instant::now() + Duration::from_secs(10);
    while stats.in_flight.load(Ordering::SeqCst) == 0 {
        assert!(Instant::now() < deadline, "the first request never reached a worker");
        std::thread::yield_now();
    }
    s.write_all(&rest).unwrap();
    s.shutdown(Shutdown::Write).unwrap();
    open.store(true, Ordering::SeqCst);
    every_answer_and_the_last_says_close(&answers_until_closed(&mut s), 1 + n);
    shutdown.shutdown();
    thread.join().unwrap();
}

/// Answers every request with `BIG_BYTES`: more than a loopback socket's send buffer takes (4 MiB at most, tcp_wmem).
struct Big;

const BIG_BYTES: usize = 5 * 1_024 * 1_024;

impl Handler for Big {
    fn handle(&self, _request: &Request) -> Response {
        Response::new(200, "application/octet-stream", vec![b'x'; BIG_BYTES])
    }
}

/// Clients that send a request and do not read: the reactor holds their unwritten answers only up to
/// `WRITE_PENDING_BYTES_MAX` over all of them (each answer counted whole); past it a worker writes its own answer,
/// within the write timeout, and nothing more is held. Every answer still arrives whole once the clients read.
#[test]
fn answers_held_for_slow_readers_stay_within_their_bound() {
    let mut limits = Limits::from_config(&Config::defaults());
    (limits.workers, limits.write_timeout) = (8, Duration::from_secs(60));
    let Running { addr, stats, shutdown, thread } = start_limited(Arc::new(Big), limits);
    let fit = WRITE_PENDING_BYTES_MAX / (BIG_BYTES + 1_024);
    let clients = fit + 3;
    let mut readers: Vec<TcpStream> = (0..clients)
        .map(|_| {
            let socket = socket2::Socket::new(socket2::Domain::IPV4, socket2::Type::STREAM, None).unwrap();
            socket.set_recv_buffer_size(4_096).unwrap();
            socket.connect(&addr.into()).unwrap();
            let mut s: TcpStream = socket.into();
            common::write_request(&mut s, "GET", "/big", &[], b"");
            s
        })
        .collect();
    // Until the answers that fit are held and the others' workers write them: the bound holds all along.
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let pending = stats.write_pending_bytes.load(Ordering::SeqCst);
        assert!(pending <= WRITE_PENDING_BYTES_MAX as u64, "{pending} bytes held for readers that do not read");
        let writing = stats.in_flight.load(Ordering::SeqCst);
        if pending >= (fit * BIG_BYTES) as u64 && writing >= (clients - fit) as u64 {
            break;
        }
        assert!(Instant::now() < deadline, "held {pending} bytes, {writing} workers writing");
        std::thread::sleep(Duration::from_millis(10));
    }
    for r in &mut readers {
        r.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
        let reply = common::read_reply(r).expect("an answer");
        assert_eq!((reply.status, reply.body.len()), (200, BIG_BYTES));
    }
    let deadline = Instant::now() + Duration::from_secs(10);
    while stats.write_pending_bytes.load(Ordering::SeqCst) > 0 {
        assert!(Instant::now() < deadline, "held bytes were never given back");
        std::thread::sleep(Duration::from_millis(10));
    }
    shutdown.shutdown();
    thread.join().unwrap();
}

/// Heads that arrive a few bytes at a time, each end of head httparse accepts, and a second request behind each in
/// the same connection: every one is answered (the head parser is asked only when new bytes may end the head, and
/// what it has seen starts again with the next request).
#[test]
fn heads_that_trickle_in_are_answered() {
    let Running { addr, shutdown, thread, .. } = start(Arc::new(Panicky), 1);
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_nodelay(true).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    for end in ["\r\n\r\n", "\n\n", "\r\n\n"] {
        let head = format!("GET /ok HTTP/1.1\r\nHost: t\r\nX-Pad: {}{end}", "a".repeat(40));
        for piece in head.as_bytes().chunks(3) {
            s.write_all(piece).unwrap();
            std::thread::sleep(Duration::from_millis(2));
        }
        let r = common::read_reply(&mut s).expect("an answer to the trickled head");
        assert_eq!((r.status, r.text().as_str()), (200, "fine"), "{end:?}");
        s.write_all(b"GET /ok HTTP/1.1\r\nHost: t\r\n\r\n").unwrap();
        assert_eq!(common::read_reply(&mut s).expect("and to the next").status, 200, "{end:?}");
    }
    shutdown.shutdown();
    thread.join().unwrap();
}
