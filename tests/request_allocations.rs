//! The reactor's hot path allocates nothing: a request answered on the reactor with a prepared answer (a 402, a
//! discovery document, a 304, a preflight) is read, parsed, handed to the handler with its head, headers and body,
//! answered and logged without one heap allocation on the reactor thread, pipelined or not, with a body or without.
//!
//! A counting allocator (this test binary's own; the product is unchanged) counts the allocations made on the thread
//! that runs the server's reactor, and nowhere else.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)]

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::sync::atomic::{AtomicU64, Ordering::SeqCst};
use std::sync::Arc;

use websearchd::config::Config;
use websearchd::http::{Handler, Limits, Prepared, Reply, Request, Response, Server, ServerStats, ShutdownHandle};

struct Counting;

thread_local! {
    /// Set on the reactor's thread only.
    static COUNTED: Cell<bool> = const { Cell::new(false) };
}

/// Allocations (and reallocations) made on the reactor's thread.
static ALLOCATIONS: AtomicU64 = AtomicU64::new(0);

thread_local! {
    /// Set on the reactor's thread of the test that measures sizes (apart from `COUNTED`: the tests run at once).
    static SIZED: Cell<bool> = const { Cell::new(false) };
}

/// The largest block allocated (or reallocated to) on the thread marked `SIZED`.
static LARGEST_BYTES: AtomicU64 = AtomicU64::new(0);

fn count(bytes: usize) {
    if COUNTED.with(Cell::get) {
        ALLOCATIONS.fetch_add(1, SeqCst);
    }
    if SIZED.with(Cell::get) {
        LARGEST_BYTES.fetch_max(bytes as u64, SeqCst);
    }
}

// SAFETY: every call is passed on to the system allocator unchanged; only counters are added.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        count(layout.size());
        unsafe { System.alloc(layout) }
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        count(layout.size());
        unsafe { System.alloc_zeroed(layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        count(new_size);
        unsafe { System.realloc(ptr, layout, new_size) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        unsafe { System.dealloc(ptr, layout) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

/// Answers on the reactor from prepared bytes, after reading every part of the request the way the application does
/// (method, path, query, a header by name, all headers, the body); anything it does not expect goes to a worker.
struct Fixed {
    ok: Arc<Prepared>,
    preflight: Arc<Prepared>,
}

impl Handler for Fixed {
    fn handle(&self, _request: &Request) -> Response {
        Response::new(404, "text/plain", "not inline")
    }

    fn handle_inline(&self, request: &Request) -> Option<Reply> {
        let headers = request.headers();
        let probe = request.header("x-probe")?;
        let named = headers.iter().filter(|(name, _)| name.eq_ignore_ascii_case("x-probe")).count();
        let expected_body: &[u8] = if request.method() == "POST" { br#"{"query":"x"}"# } else { b"" };
        let fine = probe == "yes"
            && named == 1
            && request.body() == expected_body
            && request.path() == "/fixed"
            && request.query().is_none_or(|q| q == "a=1&b=2");
        match (request.method(), fine) {
            ("OPTIONS", true) => Some(Reply::Prepared(self.preflight.clone())),
            ("GET" | "HEAD" | "POST", true) => Some(Reply::Prepared(self.ok.clone())),
            _ => None,
        }
    }
}

/// The requests measured: a GET, a GET with a query and more headers, a HEAD, a preflight and a POST with a body.
const REQUESTS: [&str; 5] = [
    "GET /fixed HTTP/1.1\r\nHost: a\r\nX-Probe: yes\r\n\r\n",
    "GET /fixed?a=1&b=2 HTTP/1.1\r\nHost: a\r\nAccept: */*\r\nUser-Agent: test/1.0\r\nIf-None-Match: \"x\"\r\n\
     X-Probe: yes\r\n\r\n",
    "HEAD /fixed HTTP/1.1\r\nHost: a\r\nX-Probe: yes\r\n\r\n",
    "OPTIONS /fixed HTTP/1.1\r\nHost: a\r\nOrigin: https://o.example\r\nX-Probe: yes\r\n\r\n",
    "POST /fixed HTTP/1.1\r\nHost: a\r\nContent-Type: application/json\r\nContent-Length: 13\r\nX-Probe: yes\r\n\r\n\
     {\"query\":\"x\"}",
];

/// Reads one answer (head, and a body of its `Content-Length` unless it answers a HEAD); returns its status.
fn read_answer(stream: &mut TcpStream, pending: &mut Vec<u8>, head_only: bool) -> u16 {
    loop {
        let mut headers = [httparse::EMPTY_HEADER; 32];
        let mut response = httparse::Response::new(&mut headers);
        if let httparse::Status::Complete(head) = response.parse(pending).expect("a response") {
            let length = response
                .headers
                .iter()
                .find(|h| h.name.eq_ignore_ascii_case("content-length"))
                .map_or(0, |h| std::str::from_utf8(h.value).unwrap().parse::<usize>().unwrap());
            let total = head + if head_only { 0 } else { length };
            if pending.len() >= total {
                let status = response.code.unwrap();
                pending.drain(..total);
                return status;
            }
        }
        let mut chunk = [0u8; 16_384];
        let n = stream.read(&mut chunk).expect("read");
        assert!(n > 0, "the server closed the connection");
        pending.extend_from_slice(&chunk[..n]);
    }
}

/// Sends `rounds` of every request in `REQUESTS` (`pipelined`: each round's five in one write) and reads the answers.
fn exchange(stream: &mut TcpStream, pending: &mut Vec<u8>, rounds: usize, pipelined: bool) {
    for _ in 0..rounds {
        if pipelined {
            stream.write_all(REQUESTS.concat().as_bytes()).unwrap();
        }
        for request in REQUESTS {
            if !pipelined {
                stream.write_all(request.as_bytes()).unwrap();
            }
            let status = read_answer(stream, pending, request.starts_with("HEAD"));
            let expected = if request.starts_with("OPTIONS") { 204 } else { 402 };
            assert_eq!(status, expected, "{request}");
        }
    }
}

/// A server on a thread of its own, which `mark` (`COUNTED` or `SIZED`) marks for the allocator.
struct Running {
    addr: std::net::SocketAddr,
    shutdown: ShutdownHandle,
    reactor: std::thread::JoinHandle<()>,
}

impl Running {
    fn start(handler: Fixed, limits: Limits, mark: &'static std::thread::LocalKey<Cell<bool>>) -> Running {
        let stats = Arc::new(ServerStats::default());
        let server = Server::bind("127.0.0.1:0".parse().unwrap(), limits, Arc::new(handler), stats).unwrap();
        let (addr, shutdown) = (server.local_addr().unwrap(), server.shutdown_handle());
        let reactor = std::thread::spawn(move || {
            mark.with(|c| c.set(true));
            server.run().unwrap();
        });
        Running { addr, shutdown, reactor }
    }

    fn stop(self) {
        self.shutdown.shutdown();
        self.reactor.join().unwrap();
    }
}

#[test]
fn a_request_answered_on_the_reactor_allocates_nothing() {
    requests_allocate_nothing();
}

/// The same with the access log on (`info`, the default), in a process of its own (the logger is the process's) whose
/// stderr goes nowhere: formatting and writing the access line allocates nothing either.
#[test]
fn with_the_access_log_on_too() {
    const CHILD: &str = "REQUEST_ALLOCATIONS_LOGGED";
    if std::env::var_os(CHILD).is_some() {
        websearchd::logger::init("info");
        requests_allocate_nothing();
        return;
    }
    let out = std::process::Command::new(std::env::current_exe().unwrap())
        .args(["--exact", "with_the_access_log_on_too", "--test-threads=1", "--nocapture"])
        .env(CHILD, "1")
        .stderr(std::process::Stdio::null())
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stdout));
}

fn requests_allocate_nothing() {
    let body = vec![b'x'; 2_600];
    let challenge = Response::new(402, "application/json", body).header("PAYMENT-REQUIRED", "e30=".repeat(800));
    let preflight = Response::new(204, "text/plain", Vec::new()).header("Access-Control-Max-Age", "86400");
    let handler = Fixed { ok: Arc::new(Prepared::new(&challenge)), preflight: Arc::new(Prepared::new(&preflight)) };
    let mut limits = Limits::from_config(&Config::defaults());
    // Every request on one connection.
    limits.keepalive_requests_max = 10_000;
    let server = Running::start(handler, limits, &COUNTED);
    let mut stream = TcpStream::connect(server.addr).unwrap();
    stream.set_read_timeout(Some(std::time::Duration::from_secs(30))).unwrap();
    let mut pending = Vec::new();
    // The first requests size the connection's buffer, the reactor's lists and the thread's date string.
    exchange(&mut stream, &mut pending, 20, true);
    exchange(&mut stream, &mut pending, 20, false);
    // The reactor takes requests one at a time: once this answer is read, everything before it is done.
    let before = ALLOCATIONS.load(SeqCst);
    exchange(&mut stream, &mut pending, 100, false);
    exchange(&mut stream, &mut pending, 100, true);
    // A last answer, so that the work after the measured requests' writes (access line, hooks) is counted too.
    exchange(&mut stream, &mut pending, 1, false);
    let made = ALLOCATIONS.load(SeqCst) - before;
    assert_eq!(made, 0, "allocations on the reactor for {} requests", 201 * REQUESTS.len());

    drop(stream);
    server.stop();
}

/// A client that pipelines small requests answered on the reactor without pause, and reads the answers: the reactor
/// answers 16 of them per round (`ANSWERS_PER_TURN_MAX`) and leaves the rest in the connection's buffer, and it read
/// on into that buffer every round past `Limits::input_bytes_max` (8 KiB a round, for 16 answers of 45 bytes), so
/// that the buffer grew with everything the client sent. Reading stops at the bound: the reactor thread's largest
/// block is the buffer's, within twice the bound (a `Vec` doubles as it grows).
#[test]
fn a_pipelining_client_fills_no_more_than_the_input_bound() {
    let ok = Response::new(402, "application/json", b"{}".to_vec());
    let handler = Fixed { ok: Arc::new(Prepared::new(&ok)), preflight: Arc::new(Prepared::new(&ok)) };
    let mut limits = Limits::from_config(&Config::defaults());
    limits.keepalive_requests_max = 1_000_000;
    limits.header_bytes_max = 1_024;
    limits.body_bytes_max = 1_024;
    let bound = limits.input_bytes_max();
    let server = Running::start(handler, limits, &SIZED);
    let mut stream = TcpStream::connect(server.addr).unwrap();
    stream.set_read_timeout(Some(std::time::Duration::from_secs(30))).unwrap();
    let requests = 40_000;
    let mut writer = stream.try_clone().unwrap();
    let sender = std::thread::spawn(move || writer.write_all(REQUESTS[0].repeat(requests).as_bytes()).unwrap());
    let mut pending = Vec::new();
    for n in 0..requests {
        assert_eq!(read_answer(&mut stream, &mut pending, false), 402, "answer {n}");
    }
    sender.join().unwrap();
    let largest = LARGEST_BYTES.load(SeqCst);
    assert!(largest <= 2 * bound as u64, "a block of {largest} bytes on the reactor (input bound {bound})");

    drop(stream);
    server.stop();
}
