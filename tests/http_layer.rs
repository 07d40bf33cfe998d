//! The HTTP layer on its own, with handlers written for the test: a panic in a handler becomes a 500 and the worker
//! lives on; shutdown waits for a request in flight.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)]

mod common;

use std::net::TcpStream;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use websearchd::config::Config;
use websearchd::http::{Handler, Limits, Request, Response, Server, ServerStats};

struct Panicky;

impl Handler for Panicky {
    fn handle(&self, request: &Request) -> Response {
        if request.path == "/panic" {
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
