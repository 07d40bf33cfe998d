//! The reactor (accept, read, frame, time out) and the worker pool (handle, write, return the connection).

use std::collections::hash_map::RandomState;
use std::collections::HashMap;
use std::hash::{BuildHasher, Hasher};
use std::io::{self, Read, Write};
use std::net::IpAddr;
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::os::fd::AsRawFd;
use std::os::unix::net::UnixStream;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};
use std::sync::mpsc::{self, Receiver, Sender, SyncSender, TrySendError};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use super::client_addr::{self, Cidr, ForwardedHeader};
use super::request::{head_may_be_complete, parse_head, Framing, Head, HeadError, Request, RequestId};
use super::response::{Reply, Response, Unsent};
use super::sys;
use crate::clock::{Clock, HttpDate, SystemClock};
use crate::config::Config;
use crate::error::ApiError;

/// Every bound the server enforces.
#[derive(Debug, Clone)]
pub struct Limits {
    pub workers: usize,
    pub queue_depth: usize,
    pub connections_max: usize,
    /// Open connections from one address (an IPv6 /64); trusted proxies are exempt.
    pub connections_per_address_max: usize,
    /// Reverse proxies whose forwarded client addresses are believed.
    pub trusted_proxies: Vec<Cidr>,
    /// The header those proxies write the client into.
    pub forwarded_header: ForwardedHeader,
    pub header_bytes_max: usize,
    pub headers_max: usize,
    pub body_bytes_max: usize,
    pub request_timeout: Duration,
    pub idle_timeout: Duration,
    pub write_timeout: Duration,
    pub keepalive_requests_max: u32,
    pub shutdown_grace: Duration,
}

impl Limits {
    pub fn from_config(c: &Config) -> Limits {
        Limits {
            workers: c.workers,
            queue_depth: c.queue_depth,
            connections_max: c.connections_max,
            connections_per_address_max: c.connections_per_address_max,
            trusted_proxies: c.trusted_proxies.clone(),
            forwarded_header: c.forwarded_header,
            header_bytes_max: c.header_bytes_max,
            headers_max: c.headers_max,
            body_bytes_max: c.body_bytes_max,
            request_timeout: Duration::from_millis(c.request_timeout_ms),
            idle_timeout: Duration::from_millis(c.idle_timeout_ms),
            write_timeout: Duration::from_millis(c.write_timeout_ms),
            keepalive_requests_max: c.keepalive_requests_max,
            shutdown_grace: Duration::from_millis(c.shutdown_grace_ms),
        }
    }

    /// Bytes read from one connection and held at most: a whole request (head and body at their limits) and one read
    /// beyond it, pipelined requests included. Reading stops there until requests are taken out; a refused
    /// connection's input is drained at most this much per round.
    pub fn input_bytes_max(&self) -> usize {
        self.header_bytes_max + self.body_bytes_max + READ_CHUNK_BYTES
    }
}

/// What the application supplies.
pub trait Handler: Send + Sync + 'static {
    /// Answers one request. A panic here is logged (`logger::PANIC_TARGET`); in a build that unwinds (tests, debug) it
    /// becomes a 500 and the worker survives, a release build (`panic = "abort"`) ends the process.
    fn handle(&self, request: &Request) -> Response;
    /// Answers one request on a worker: `handle`'s response, or an answer rendered before and shared
    /// (`Reply::Prepared`, written from its own bytes: a large one is not copied per request).
    fn reply(&self, request: &Request) -> Reply {
        Reply::Built(self.handle(request))
    }
    /// Answers, on the reactor thread and without a worker, a request that costs a few microseconds and never waits
    /// (no I/O, no lock held across I/O), so that it stays answerable while every worker is busy and skips the
    /// hand-off to a worker and back; `None` for the rest, which a worker runs. A panic here is caught in a build that
    /// unwinds, and the request goes to a worker.
    fn handle_inline(&self, _request: &Request) -> Option<Reply> {
        None
    }
    /// Called once the response has been written, handed to the reactor to finish, or failed, for metrics.
    fn completed(&self, _request: &Request, _status: u16, _elapsed: Duration) {}
}

/// Why the server itself refused a connection or request, before any handler saw it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reject {
    ConnectionsMax,
    AddressMax,
    QueueFull,
    Timeout,
    BadRequest,
    HeadersTooLarge,
    BodyTooLarge,
    LengthRequired,
}

impl Reject {
    pub const ALL: [Reject; 8] = [
        Reject::ConnectionsMax,
        Reject::AddressMax,
        Reject::QueueFull,
        Reject::Timeout,
        Reject::BadRequest,
        Reject::HeadersTooLarge,
        Reject::BodyTooLarge,
        Reject::LengthRequired,
    ];

    pub fn label(self) -> &'static str {
        match self {
            Reject::ConnectionsMax => "connections_max",
            Reject::AddressMax => "address_connections_max",
            Reject::QueueFull => "queue_full",
            Reject::Timeout => "timeout",
            Reject::BadRequest => "bad_request",
            Reject::HeadersTooLarge => "headers_too_large",
            Reject::BodyTooLarge => "body_too_large",
            Reject::LengthRequired => "length_required",
        }
    }

    fn of_status(status: u16) -> Reject {
        match status {
            408 => Reject::Timeout,
            411 => Reject::LengthRequired,
            413 => Reject::BodyTooLarge,
            431 => Reject::HeadersTooLarge,
            503 => Reject::QueueFull,
            _ => Reject::BadRequest,
        }
    }
}

/// Live figures of the server, read by `/metrics` and `/health`.
#[derive(Debug, Default)]
pub struct ServerStats {
    pub workers: AtomicU64,
    pub queue_capacity: AtomicU64,
    pub connections_open: AtomicU64,
    pub connections_accepted: AtomicU64,
    pub accept_errors: AtomicU64,
    /// Complete requests waiting for a worker.
    pub queued: AtomicU64,
    /// Requests a worker is running now.
    pub in_flight: AtomicU64,
    /// Response bytes the reactor still has to write to slow readers.
    pub write_pending_bytes: AtomicU64,
    rejected: [AtomicU64; Reject::ALL.len()],
    /// Open connections per address key (`client_addr::key`), for the per-address limit.
    per_address: Mutex<HashMap<IpAddr, u32>>,
}

impl ServerStats {
    pub fn rejected(&self, reason: Reject) -> u64 {
        self.rejected.get(reason as usize).map_or(0, |n| n.load(Relaxed))
    }

    fn reject(&self, reason: Reject) {
        if let Some(n) = self.rejected.get(reason as usize) {
            n.fetch_add(1, Relaxed);
        }
    }

    /// Counts a new connection from `key`; false (and nothing counted) when the address has `max` open already.
    fn take_address_slot(&self, key: IpAddr, max: usize) -> bool {
        let mut open = self.per_address.lock().unwrap_or_else(|p| p.into_inner());
        let n = open.get(&key).copied().unwrap_or(0);
        if n as usize >= max {
            return false;
        }
        open.insert(key, n + 1);
        true
    }

    fn release_address_slot(&self, key: IpAddr) {
        let mut open = self.per_address.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(n) = open.get_mut(&key) {
            *n = n.saturating_sub(1);
            if *n == 0 {
                open.remove(&key);
            }
        }
    }
}

/// Asks a running server to stop: no new connections, requests in flight finish within the grace time.
#[derive(Clone)]
pub struct ShutdownHandle {
    flag: Arc<AtomicBool>,
    waker: Arc<UnixStream>,
}

impl ShutdownHandle {
    pub fn shutdown(&self) {
        self.flag.store(true, Relaxed);
        wake(&self.waker);
    }
}

fn wake(waker: &UnixStream) {
    // The socket is non-blocking: a full buffer means a wake-up is already pending.
    let _ = (&*waker).write(&[1]);
}

pub struct Server {
    listener: TcpListener,
    wake_rx: UnixStream,
    shared: Arc<Shared>,
    jobs: SyncSender<Job>,
    back: Receiver<Conn>,
    workers: Vec<JoinHandle<()>>,
}

/// What the reactor and the workers share.
struct Shared {
    limits: Limits,
    handler: Arc<dyn Handler>,
    stats: Arc<ServerStats>,
    shutdown: Arc<AtomicBool>,
    waker: Arc<UnixStream>,
    ids: RequestIds,
}

impl Server {
    pub fn bind(
        addr: SocketAddr,
        limits: Limits,
        handler: Arc<dyn Handler>,
        stats: Arc<ServerStats>,
    ) -> io::Result<Server> {
        let listener = TcpListener::bind(addr)?;
        listener.set_nonblocking(true)?;
        let (waker, wake_rx) = UnixStream::pair()?;
        waker.set_nonblocking(true)?;
        wake_rx.set_nonblocking(true)?;
        stats.workers.store(limits.workers as u64, Relaxed);
        stats.queue_capacity.store(limits.queue_depth as u64, Relaxed);
        let shared = Shared {
            limits,
            handler,
            stats,
            shutdown: Arc::new(AtomicBool::new(false)),
            waker: Arc::new(waker),
            ids: RequestIds::new(),
        };
        let shared = Arc::new(shared);
        // The pool starts with the server, so its size is fixed from the first request on.
        let (jobs, job_rx) = mpsc::sync_channel::<Job>(shared.limits.queue_depth);
        let (back_tx, back) = mpsc::channel::<Conn>();
        let job_rx = Arc::new(Mutex::new(job_rx));
        let mut workers = Vec::with_capacity(shared.limits.workers);
        for i in 0..shared.limits.workers {
            let (rx, shared, back) = (job_rx.clone(), shared.clone(), back_tx.clone());
            let handle = std::thread::Builder::new()
                .name(format!("worker-{i}"))
                .spawn(move || worker_loop(&rx, &shared, &back))?;
            workers.push(handle);
        }
        Ok(Server { listener, wake_rx, shared, jobs, back, workers })
    }

    pub fn local_addr(&self) -> io::Result<SocketAddr> {
        self.listener.local_addr()
    }

    pub fn shutdown_handle(&self) -> ShutdownHandle {
        ShutdownHandle { flag: self.shared.shutdown.clone(), waker: self.shared.waker.clone() }
    }

    /// Runs until shut down, then waits (at most the grace time) for requests in flight.
    pub fn run(self) -> io::Result<()> {
        let workers = self.workers;
        let mut reactor = Reactor {
            listener: Some(self.listener),
            wake_rx: self.wake_rx,
            shared: self.shared,
            conns: Vec::new(),
            jobs: self.jobs,
            back: self.back,
            accept_paused_until: None,
            fds: Vec::new(),
            spare: Vec::new(),
        };
        reactor.run()?;
        let grace_end = Instant::now() + reactor.shared.limits.shutdown_grace;
        reactor.drain(grace_end);
        let stats = reactor.shared.stats.clone();
        drop(reactor);
        finish_workers(workers, grace_end, &stats);
        Ok(())
    }
}

/// Joins the workers (the job channel is closed, so each ends after its current request), waiting no longer than
/// the grace time.
fn finish_workers(workers: Vec<JoinHandle<()>>, grace_end: Instant, stats: &ServerStats) {
    while workers.iter().any(|w| !w.is_finished()) && Instant::now() < grace_end {
        std::thread::sleep(Duration::from_millis(5));
    }
    let left = stats.in_flight.load(Relaxed) + stats.queued.load(Relaxed);
    if left > 0 {
        log::warn!("shutdown grace time over with {left} requests unfinished");
        return;
    }
    for w in workers {
        let _ = w.join();
    }
}

/// A client connection and the bytes read from it that no request has consumed yet.
struct Conn {
    stream: TcpStream,
    peer: SocketAddr,
    buf: Vec<u8>,
    served: u32,
    phase: Phase,
    deadline: Instant,
    continue_sent: bool,
    /// The client has closed its side (EOF read): the complete requests in `buf` are still answered, the last one
    /// with `connection: close`, and the connection is closed once nothing is left to write.
    input_closed: bool,
    /// How much of `buf` the head parser has seen without finding the head's end (`head_may_be_complete`).
    head_scanned: usize,
    /// Complete requests were left in `buf` when the round's `ANSWERS_PER_TURN_MAX` was reached: the next round takes
    /// them up without waiting for the socket.
    backlog: bool,
    _open: OpenGuard,
}

enum Phase {
    /// Between requests.
    Idle,
    /// A request has begun; its framing is known once its head is parsed.
    Reading(Option<Framing>),
    /// A refusal was written and the write side shut: unread input is drained until EOF or the deadline, so the
    /// client reads the refusal instead of a connection reset.
    Closing,
    /// A response the socket did not take at once (a slow reader): the reactor writes the rest as the client reads,
    /// so a slow reader costs a buffer (or a reference to a prepared answer's body), not a worker. `keep`: whether
    /// the connection stays open afterwards.
    Writing { out: Unsent, keep: bool },
}

/// Counts a connection as open for as long as it lives, and against its address when that is limited.
struct OpenGuard {
    stats: Arc<ServerStats>,
    address: Option<IpAddr>,
}

impl Drop for OpenGuard {
    fn drop(&mut self) {
        self.stats.connections_open.fetch_sub(1, Relaxed);
        if let Some(key) = self.address {
            self.stats.release_address_slot(key);
        }
    }
}

/// Where a connection stands after the reactor acted on its bytes.
enum Step {
    /// The reactor keeps it, waiting for input or for room to write.
    Wait(Conn),
    /// A worker has it, or it is closed.
    Gone,
    /// A request was answered here and the connection is idle again: look at its buffer once more.
    Again(Conn),
}

struct Job {
    conn: Conn,
    request: Request,
    keep_alive: bool,
    head_only: bool,
    started: Instant,
}

/// How long a refused connection is drained before it is closed.
const LINGER: Duration = Duration::from_secs(2);
/// How long accepting pauses after accept() fails for lack of resources (EMFILE and the like).
const ACCEPT_PAUSE: Duration = Duration::from_millis(100);
/// Connections accepted per wake-up, so that a flood of new connections cannot starve the open ones.
const ACCEPTS_PER_WAKE_MAX: usize = 64;
/// Bytes read from a socket per read call.
const READ_CHUNK_BYTES: usize = 8_192;
/// Pipelined requests the reactor answers for one connection in one round; the rest wait for the next round, after
/// every other ready connection has had its turn: a client pipelining a whole input buffer of requests (thousands of
/// small ones) delays the others by this many answers, not by all of them.
const ANSWERS_PER_TURN_MAX: usize = 16;
/// The longest the reactor sleeps with nothing to do.
const POLL_IDLE_MAX: Duration = Duration::from_secs(1);
/// Response bytes held at most for slow readers, over all connections (whole responses, written part included).
/// Past it, a worker finishes its own write (within the write timeout, in total) and the reactor closes the
/// connection instead: memory stays bounded whatever the clients do.
pub const WRITE_PENDING_BYTES_MAX: usize = 16 * 1_024 * 1_024;

struct Reactor {
    listener: Option<TcpListener>,
    wake_rx: UnixStream,
    shared: Arc<Shared>,
    conns: Vec<Conn>,
    jobs: SyncSender<Job>,
    back: Receiver<Conn>,
    accept_paused_until: Option<Instant>,
    fds: Vec<sys::PollFd>,
    /// The connection list being rebuilt while servicing, kept between rounds so no round allocates.
    spare: Vec<Conn>,
}

impl Reactor {
    fn run(&mut self) -> io::Result<()> {
        while !self.shared.shutdown.load(Relaxed) {
            let now = Instant::now();
            let accepting = self.accept_paused_until.is_none_or(|t| now >= t);
            if accepting {
                self.accept_paused_until = None;
            }
            self.fds.clear();
            self.fds.push(sys::poll_fd(self.wake_rx.as_raw_fd()));
            if let (true, Some(l)) = (accepting, &self.listener) {
                self.fds.push(sys::poll_fd(l.as_raw_fd()));
            }
            let first_conn = self.fds.len();
            self.fds.extend(self.conns.iter().map(|c| match c.phase {
                Phase::Writing { .. } => sys::poll_fd_out(c.stream.as_raw_fd()),
                _ => sys::poll_fd(c.stream.as_raw_fd()),
            }));
            let timeout = self.next_deadline().map_or(POLL_IDLE_MAX, |d| d.saturating_duration_since(now));
            // Requests left waiting in a buffer are taken up at once, after whatever else is ready.
            let timeout = if self.conns.iter().any(|c| c.backlog) { Duration::ZERO } else { timeout };
            sys::poll(&mut self.fds, timeout.min(POLL_IDLE_MAX))?;

            let wake_ready = self.fds.first().is_some_and(sys::is_ready);
            let listener_ready = accepting && self.fds.get(1).is_some_and(sys::is_ready);
            let fds = std::mem::take(&mut self.fds);
            self.service_conns(fds.get(first_conn..).unwrap_or_default());
            self.fds = fds;
            if wake_ready {
                self.drain_wake();
            }
            self.take_back();
            if listener_ready {
                self.accept();
            }
            self.expire(Instant::now());
            // The access lines of the answers made in this round, in one write.
            crate::logger::flush_access_lines();
        }
        crate::logger::flush_access_lines();
        Ok(())
    }

    fn next_deadline(&self) -> Option<Instant> {
        let conn = self.conns.iter().map(|c| c.deadline).min();
        match (conn, self.accept_paused_until) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    fn drain_wake(&mut self) {
        let mut sink = [0u8; 64];
        while matches!((&self.wake_rx).read(&mut sink), Ok(n) if n > 0) {}
    }

    /// Connections that workers hand back after a keep-alive response.
    fn take_back(&mut self) {
        while let Ok(mut conn) = self.back.try_recv() {
            if let Phase::Writing { .. } = conn.phase {
                // The worker set the write deadline.
                self.conns.push(conn);
                continue;
            }
            conn.phase = Phase::Idle;
            conn.deadline = Instant::now() + self.shared.limits.idle_timeout;
            // A pipelined request may already be in the buffer.
            if let Some(conn) = self.advance(conn) {
                self.conns.push(conn);
            }
        }
    }

    fn accept(&mut self) {
        for stream in self.accept_batch() {
            let Ok(peer) = stream.peer_addr() else {
                continue;
            };
            let stats = &self.shared.stats;
            stats.connections_accepted.fetch_add(1, Relaxed);
            stats.connections_open.fetch_add(1, Relaxed);
            let limits = &self.shared.limits;
            let exempt = limits.trusted_proxies.iter().any(|c| c.contains(peer.ip()));
            let key = client_addr::key(peer.ip());
            let over_address = !exempt && !stats.take_address_slot(key, limits.connections_per_address_max);
            let guard = OpenGuard { stats: stats.clone(), address: (!exempt && !over_address).then_some(key) };
            let conn = Conn {
                stream,
                peer,
                buf: Vec::new(),
                served: 0,
                phase: Phase::Idle,
                deadline: Instant::now() + self.shared.limits.idle_timeout,
                continue_sent: false,
                input_closed: false,
                head_scanned: 0,
                backlog: false,
                _open: guard,
            };
            if over_address {
                // Written and closed at once, without lingering: lingering would let one address hold slots anyway.
                let err = ApiError::unavailable(
                    "too_many_connections_from_address",
                    "this address has too many open connections; close some or retry shortly",
                    1,
                );
                self.refuse(conn, err, None, Reject::AddressMax);
                continue;
            }
            if self.conns.len() >= self.shared.limits.connections_max {
                let err = ApiError::unavailable(
                    "too_many_connections",
                    "the server has too many open connections; retry shortly",
                    1,
                );
                self.refuse(conn, err, None, Reject::ConnectionsMax);
                continue;
            }
            if conn.stream.set_nonblocking(true).is_err() {
                continue;
            }
            let _ = conn.stream.set_nodelay(true);
            self.conns.push(conn);
        }
    }

    /// Accepts what the backlog holds, up to `ACCEPTS_PER_WAKE_MAX`.
    fn accept_batch(&mut self) -> Vec<TcpStream> {
        let mut accepted = Vec::new();
        let Some(listener) = &self.listener else {
            return accepted;
        };
        while accepted.len() < ACCEPTS_PER_WAKE_MAX {
            match listener.accept() {
                Ok((stream, _)) => accepted.push(stream),
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => {
                    // EMFILE, ENFILE, ENOBUFS, ENOMEM, or a connection that died in the backlog: the server goes
                    // on. For lack of resources, pause accepting briefly instead of spinning on a ready listener.
                    self.shared.stats.accept_errors.fetch_add(1, Relaxed);
                    if e.raw_os_error().is_some_and(|c| c != libc::ECONNABORTED && c != libc::EPROTO) {
                        log::warn!("accept failed: {e}; pausing accepts for {} ms", ACCEPT_PAUSE.as_millis());
                        self.accept_paused_until = Some(Instant::now() + ACCEPT_PAUSE);
                        break;
                    }
                }
            }
        }
        accepted
    }

    /// Acts on the connections `poll` found ready (`polled[i]` is `self.conns[i]`'s entry).
    fn service_conns(&mut self, polled: &[sys::PollFd]) {
        let conns = std::mem::take(&mut self.conns);
        let mut kept = std::mem::take(&mut self.spare);
        kept.clear();
        kept.reserve(conns.len());
        let mut emptied = conns;
        for (i, conn) in emptied.drain(..).enumerate() {
            let Some(p) = polled.get(i).filter(|p| sys::is_ready(p)) else {
                let idle = if conn.backlog && !matches!(conn.phase, Phase::Writing { .. }) {
                    self.advance(conn)
                } else {
                    Some(conn)
                };
                kept.extend(idle);
                continue;
            };
            if let Phase::Writing { .. } = conn.phase {
                if let Some(conn) = self.flush(conn) {
                    kept.push(conn);
                }
                continue;
            }
            if let Some(conn) = self.read_and_advance(conn, sys::peer_may_have_closed(p)) {
                kept.push(conn);
            }
        }
        // Connections refused while servicing went to `self.conns` to linger: keep both.
        kept.append(&mut self.conns);
        self.conns = kept;
        self.spare = emptied;
    }

    /// Writes what the socket takes of a pending response; when it is all written, the connection goes back to
    /// reading (or is closed). Returns the connection if the reactor keeps it.
    fn flush(&mut self, mut conn: Conn) -> Option<Conn> {
        let Phase::Writing { out, keep } = &mut conn.phase else {
            return Some(conn);
        };
        let done = out.write_nonblocking(&mut conn.stream);
        let keep = *keep;
        if let Ok(false) = done {
            return Some(conn);
        }
        drop_pending(&conn, &self.shared.stats.write_pending_bytes);
        match done {
            Ok(true) if keep => {
                conn.phase = Phase::Idle;
                conn.deadline = Instant::now() + self.shared.limits.idle_timeout;
                self.advance(conn)
            }
            // All written and the connection closes, or the client is gone.
            _ => None,
        }
    }

    /// Reads what the socket has and acts on it; returns the connection if the reactor keeps it. A short read ends
    /// the reading unless the peer `may_have_closed` (then it goes on to the end of input, so that the answer to a
    /// client's last request says `close`): one read call per request instead of two.
    fn read_and_advance(&mut self, mut conn: Conn, may_have_closed: bool) -> Option<Conn> {
        let cap = self.shared.limits.input_bytes_max();
        let closing = matches!(conn.phase, Phase::Closing);
        let mut chunk = [0u8; READ_CHUNK_BYTES];
        // What a refused connection sends is thrown away, but counted against the cap all the same: a client that
        // sends without pause cannot hold the reactor in this loop.
        let mut discarded = 0;
        loop {
            // A read is made only while its chunk fits under the cap: pipelined requests left in the buffer
            // (`Conn::backlog`) are taken out before more is read, whatever the client sends meanwhile.
            if (if closing { discarded } else { conn.buf.len() }) + READ_CHUNK_BYTES > cap {
                // Stopped by the cap, not by the socket: the read that reached it may have taken the client's last
                // bytes, and the answer to its last request must then say `close`. A peek tells EOF (0) from more
                // input or none yet, and takes nothing.
                conn.input_closed = matches!(conn.stream.peek(&mut [0u8; 1]), Ok(0));
                break;
            }
            match conn.stream.read(&mut chunk) {
                Ok(0) => {
                    conn.input_closed = true;
                    break;
                }
                Ok(n) if closing => discarded += n,
                Ok(n) => {
                    conn.buf.extend_from_slice(chunk.get(..n).unwrap_or_default());
                    if n < chunk.len() && !may_have_closed {
                        break;
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(_) => return None,
            }
        }
        if closing {
            return (!conn.input_closed).then_some(conn);
        }
        self.advance(conn)
    }

    /// Moves a connection's state forward with the bytes it has: parse, refuse, answer here, or dispatch; pipelined
    /// requests answered here are taken one after another (a loop, so the stack does not grow with them). After the
    /// client's EOF, the reactor keeps a connection only while an answer is still being written to it.
    fn advance(&mut self, mut conn: Conn) -> Option<Conn> {
        conn.backlog = false;
        let mut answered = 0;
        loop {
            match self.advance_once(conn) {
                Step::Wait(c) => return (!c.input_closed || matches!(c.phase, Phase::Writing { .. })).then_some(c),
                Step::Gone => return None,
                Step::Again(mut c) => {
                    answered += 1;
                    if answered >= ANSWERS_PER_TURN_MAX && !c.buf.is_empty() {
                        c.backlog = true;
                        return Some(c);
                    }
                    conn = c;
                }
            }
        }
    }

    fn advance_once(&mut self, mut conn: Conn) -> Step {
        if conn.buf.is_empty() {
            return Step::Wait(conn);
        }
        let limits = &self.shared.limits;
        if matches!(conn.phase, Phase::Idle) {
            conn.phase = Phase::Reading(None);
            conn.deadline = Instant::now() + limits.request_timeout;
        }
        // The head, when it was parsed here and the body is all in already (the usual case: the head is then parsed
        // once); a request whose body comes later keeps its framing only, and its head is parsed again at the end.
        let mut parsed: Option<Head> = None;
        if let Phase::Reading(None) = conn.phase {
            if !head_may_be_complete(&conn.buf, conn.head_scanned, limits.header_bytes_max) {
                conn.head_scanned = conn.buf.len();
                return Step::Wait(conn);
            }
            match parse_head(&conn.buf, limits.header_bytes_max, limits.headers_max, limits.body_bytes_max) {
                Ok(Some(head)) => {
                    conn.phase = Phase::Reading(Some(head.framing));
                    parsed = Some(head);
                }
                Ok(None) => {
                    conn.head_scanned = conn.buf.len();
                    return Step::Wait(conn);
                }
                Err(e) => return self.refuse_head(conn, e),
            }
        }
        let Phase::Reading(Some(framing)) = conn.phase else {
            return Step::Wait(conn);
        };
        if conn.buf.len() < framing.total_bytes() {
            if framing.expect_continue && !conn.continue_sent {
                conn.continue_sent = true;
                let _ = conn.stream.write(b"HTTP/1.1 100 Continue\r\n\r\n");
            }
            return Step::Wait(conn);
        }
        let head = match parsed {
            Some(head) => head,
            None => match parse_head(&conn.buf, limits.header_bytes_max, limits.headers_max, limits.body_bytes_max) {
                Ok(Some(head)) if head.framing == framing => head,
                // The same bytes parsed the same way the first time.
                Ok(_) => return self.refuse_head(conn, HeadError::Malformed("request head changed")),
                Err(e) => return self.refuse_head(conn, e),
            },
        };
        conn.phase = Phase::Idle;
        conn.head_scanned = 0;
        conn.continue_sent = false;
        let client = client_addr::client(
            conn.peer.ip(),
            &head.headers(&conn.buf),
            &limits.trusted_proxies,
            limits.forwarded_header,
        );
        let peer = client_addr::canonical(conn.peer.ip());
        if !client.local && peer.is_loopback() && limits.trusted_proxies.is_empty() {
            static WARNED: AtomicBool = AtomicBool::new(false);
            if !WARNED.swap(true, Relaxed) {
                log::warn!(
                    "a request from {} carries forwarding headers: a proxy on this machine relays clients, but \
                     WEBSEARCHD_TRUSTED_PROXIES is unset, so every client counts as the proxy (and none as local)",
                    conn.peer.ip()
                );
            }
        }
        // The request borrows the connection's buffer (no copy of the head or the body); it is given back, without
        // the request's bytes, once the answer is written.
        let input = std::mem::take(&mut conn.buf);
        let request = Request::new(input, head, conn.peer, client, self.shared.ids.next());
        let job = Job {
            keep_alive: framing.keep_alive,
            head_only: request.method() == "HEAD",
            started: Instant::now(),
            conn,
            request,
        };
        let handler = &self.shared.handler;
        match catch_unwind(AssertUnwindSafe(|| handler.handle_inline(&job.request))) {
            Ok(Some(response)) => self.answer_here(job, &response),
            _ => {
                self.dispatch(job);
                Step::Gone
            }
        }
    }

    /// Refuses a request whose head cannot be taken.
    fn refuse_head(&mut self, conn: Conn, e: HeadError) -> Step {
        let err = e.into_api_error();
        let reason = Reject::of_status(err.status);
        self.refuse(conn, err, None, reason);
        Step::Gone
    }

    /// Writes a response made on the reactor; what the socket does not take is written as the client reads.
    fn answer_here(&mut self, job: Job, response: &Reply) -> Step {
        match respond(job, response, &self.shared, false) {
            Sent::Open(mut conn) => {
                conn.phase = Phase::Idle;
                conn.deadline = Instant::now() + self.shared.limits.idle_timeout;
                Step::Again(conn)
            }
            Sent::Pending(conn) => Step::Wait(conn),
            Sent::Closed => Step::Gone,
        }
    }

    fn dispatch(&mut self, job: Job) {
        // The lines of the answers made here so far go out before the worker can write the line of this one: a
        // connection's lines stay in the order of its requests.
        crate::logger::flush_access_lines();
        let stats = &self.shared.stats;
        stats.queued.fetch_add(1, Relaxed);
        match self.jobs.try_send(job) {
            Ok(()) => {}
            Err(TrySendError::Full(job) | TrySendError::Disconnected(job)) => {
                stats.queued.fetch_sub(1, Relaxed);
                let err =
                    ApiError::unavailable("overloaded", "all workers are busy and the queue is full; retry shortly", 1);
                let Job { conn, request, .. } = job;
                log_access(&request, 503, Duration::ZERO, true);
                self.refuse(conn, err, Some(request.request_id), Reject::QueueFull);
            }
        }
    }

    /// Writes a refusal, shuts the write side and keeps the connection to drain (see `Phase::Closing`).
    fn refuse(&mut self, mut conn: Conn, err: ApiError, request_id: Option<RequestId>, reason: Reject) {
        self.shared.stats.reject(reason);
        let id = request_id.unwrap_or_else(|| self.shared.ids.next());
        if reason != Reject::QueueFull {
            crate::logger::access_line(true, format_args!("- - {} {} {} peer={}", err.status, err.code, id, conn.peer));
        }
        let bytes = with_date(|date| err.into_response().to_bytes(&id, false, false, date));
        // Best effort: the socket is non-blocking and a refusal is small.
        let _ = conn.stream.write(&bytes);
        let _ = conn.stream.shutdown(Shutdown::Write);
        conn.phase = Phase::Closing;
        conn.buf = Vec::new();
        conn.deadline = Instant::now() + LINGER;
        if matches!(reason, Reject::ConnectionsMax | Reject::AddressMax) || conn.stream.set_nonblocking(true).is_err() {
            return;
        }
        self.conns.push(conn);
    }

    /// Closes idle connections past their time and answers slow requests with 408.
    fn expire(&mut self, now: Instant) {
        if self.conns.iter().all(|c| c.deadline > now) {
            return;
        }
        let conns = std::mem::take(&mut self.conns);
        for conn in conns {
            if conn.deadline > now {
                self.conns.push(conn);
                continue;
            }
            if let Phase::Writing { .. } = conn.phase {
                log::debug!("{} read its response too slowly; closing", conn.peer);
                drop_pending(&conn, &self.shared.stats.write_pending_bytes);
                continue;
            }
            if let Phase::Reading(_) = conn.phase {
                let secs = self.shared.limits.request_timeout.as_millis();
                let err = ApiError::new(408, "request_timeout", format!("the request did not arrive within {secs} ms"));
                self.refuse(conn, err, None, Reject::Timeout);
            }
        }
    }

    /// After shutdown: no listener, no idle or half-read connections; wait for the workers' requests to end, and
    /// finish writing the answers slow readers are still taking, all within the grace time.
    fn drain(&mut self, grace_end: Instant) {
        self.listener = None;
        let mut writing = Vec::new();
        let stats = self.shared.stats.clone();
        loop {
            let conns =
                std::mem::take(&mut self.conns).into_iter().chain(std::iter::from_fn(|| self.back.try_recv().ok()));
            for mut conn in conns {
                if let Phase::Writing { keep, .. } = &mut conn.phase {
                    *keep = false;
                    writing.push(conn);
                }
            }
            let busy = stats.in_flight.load(Relaxed) + stats.queued.load(Relaxed) > 0;
            if (!busy && writing.is_empty()) || Instant::now() >= grace_end {
                break;
            }
            let mut fds = vec![sys::poll_fd(self.wake_rx.as_raw_fd())];
            fds.extend(writing.iter().map(|c| sys::poll_fd_out(c.stream.as_raw_fd())));
            let _ = sys::poll(&mut fds, grace_end.saturating_duration_since(Instant::now()).min(POLL_IDLE_MAX));
            self.drain_wake();
            let ready: Vec<bool> = fds.iter().skip(1).map(sys::is_ready).collect();
            for (conn, ready) in std::mem::take(&mut writing).into_iter().zip(ready) {
                // Not keep-alive any more: a written answer closes its connection.
                let kept = if ready { self.flush(conn) } else { Some(conn) };
                self.conns.extend(kept);
            }
        }
        for conn in writing.iter().chain(&self.conns) {
            drop_pending(conn, &stats.write_pending_bytes);
        }
        self.conns.clear();
        crate::logger::flush_access_lines();
    }
}

fn worker_loop(jobs: &Mutex<Receiver<Job>>, shared: &Shared, back: &Sender<Conn>) {
    loop {
        let job = {
            let rx = jobs.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
            match rx.recv() {
                Ok(job) => job,
                Err(_) => return,
            }
        };
        shared.stats.queued.fetch_sub(1, Relaxed);
        shared.stats.in_flight.fetch_add(1, Relaxed);
        serve(job, shared, back);
        shared.stats.in_flight.fetch_sub(1, Relaxed);
        wake(&shared.waker);
    }
}

fn serve(job: Job, shared: &Shared, back: &Sender<Conn>) {
    let request = &job.request;
    let response = catch_unwind(AssertUnwindSafe(|| shared.handler.reply(request))).unwrap_or_else(|_| {
        log::error!("handler panicked on {} {} (request {})", request.method(), request.path(), request.request_id);
        Reply::Built(ApiError::internal().into_response())
    });
    match respond(job, &response, shared, true) {
        Sent::Open(conn) | Sent::Pending(conn) => {
            if let Err(mpsc::SendError(conn)) = back.send(conn) {
                drop_pending(&conn, &shared.stats.write_pending_bytes);
            }
        }
        Sent::Closed => {}
    }
}

/// Where a connection stands after its response was written, or handed over.
enum Sent {
    /// All written; the connection stays open for the next request.
    Open(Conn),
    /// The socket did not take it all: the connection is in `Phase::Writing`, its buffer counted in
    /// `write_pending_bytes`, for the reactor to finish.
    Pending(Conn),
    /// Written and closed (no keep-alive), or the client is gone.
    Closed,
}

/// Writes a response without blocking. What the socket does not take is left to the reactor while all such buffers
/// stay within `WRITE_PENDING_BYTES_MAX`; past that a worker (`may_block`) finishes the write itself, bounded by the
/// write timeout in total, and the reactor closes the connection instead.
fn respond(job: Job, response: &Reply, shared: &Shared, may_block: bool) -> Sent {
    let Job { mut conn, request, keep_alive, head_only, started } = job;
    conn.served = conn.served.saturating_add(1);
    // After the client's EOF, the answer to the last request it sent says `close` (bytes left in the buffer then
    // are taken for one more request; if they are not a complete one, the connection closes after this answer all
    // the same). A worker's answer comes long after the read that took the request, so an EOF that came meanwhile
    // (a client that pipelines and half-closes) is looked for with a peek, which takes nothing: one call on the
    // worker's path only, the reactor's answers follow their read at once.
    let more_input = request.more_input();
    if may_block && !conn.input_closed && !more_input {
        conn.input_closed = matches!(conn.stream.peek(&mut [0u8; 1]), Ok(0));
    }
    let last = conn.input_closed && !more_input;
    let keep =
        keep_alive && conn.served < shared.limits.keepalive_requests_max && !shared.shutdown.load(Relaxed) && !last;
    let mut result =
        with_date(|date| response.write_nonblocking(&mut conn.stream, &request.request_id, keep, head_only, date));
    finish(&request, response.status(), started, shared, !may_block);
    conn.buf = request.into_rest();
    if let Ok(Some(out)) = result {
        let held = out.held() as u64;
        let pending = &shared.stats.write_pending_bytes;
        if pending.fetch_add(held, Relaxed) + held <= WRITE_PENDING_BYTES_MAX as u64 {
            conn.phase = Phase::Writing { out, keep };
            conn.deadline = Instant::now() + shared.limits.write_timeout;
            return Sent::Pending(conn);
        }
        pending.fetch_sub(held, Relaxed);
        if !may_block {
            return Sent::Closed;
        }
        result = write_blocking(&mut conn.stream, &out.rest(), shared.limits.write_timeout)
            .and_then(|()| conn.stream.set_nonblocking(true))
            .map(|()| None);
    }
    match result {
        Ok(_) if keep => Sent::Open(conn),
        Ok(_) => Sent::Closed,
        Err(e) => {
            log::debug!("writing the response to {} failed: {e}", conn.peer);
            Sent::Closed
        }
    }
}

/// The access line and the handler's completion hook, once the response is written or handed to the reactor (the
/// time logged is then the time to the first write, not to the last byte taken).
fn finish(request: &Request, status: u16, started: Instant, shared: &Shared, on_reactor: bool) {
    let elapsed = started.elapsed();
    log_access(request, status, elapsed, on_reactor);
    let _ = catch_unwind(AssertUnwindSafe(|| shared.handler.completed(request, status, elapsed)));
}

/// Writes all of `parts`, in order, within `timeout` in total (a socket timeout alone applies per send call, and a
/// client that reads a byte at a time would hold the worker for ever).
fn write_blocking(stream: &mut TcpStream, parts: &[&[u8]], timeout: Duration) -> io::Result<()> {
    let deadline = Instant::now() + timeout;
    stream.set_nonblocking(false)?;
    for &part in parts {
        write_all_by(stream, part, deadline)?;
    }
    Ok(())
}

/// Writes all of `bytes` to a blocking `stream` by `deadline`.
fn write_all_by(stream: &mut TcpStream, bytes: &[u8], deadline: Instant) -> io::Result<()> {
    let mut rest = bytes;
    while !rest.is_empty() {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(io::ErrorKind::TimedOut.into());
        }
        stream.set_write_timeout(Some(left))?;
        match stream.write(rest) {
            Ok(0) => return Err(io::ErrorKind::WriteZero.into()),
            Ok(n) => rest = rest.get(n..).unwrap_or_default(),
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

/// Gives back the count of a connection's held response when it leaves `Phase::Writing` (written, closed, expired).
fn drop_pending(conn: &Conn, pending: &AtomicU64) {
    if let Phase::Writing { out, .. } = &conn.phase {
        pending.fetch_sub(out.held() as u64, Relaxed);
    }
}

/// One access line: the peer, and the client a trusted proxy forwarded when it is another. The reactor's lines
/// (`batch`) are written together once per wake-up (`logger::flush_access_lines` in `Reactor::run`).
fn log_access(request: &Request, status: u16, elapsed: Duration, batch: bool) {
    let (peer, client) = (request.peer, request.client.ip);
    let forwarded = ForwardedClient((client != client_addr::canonical(peer.ip())).then_some(client));
    crate::logger::access_line(
        batch,
        format_args!(
            "{} {} {status} {}ms {} peer={peer}{forwarded}",
            request.method(),
            request.path().escape_debug(),
            elapsed.as_millis(),
            request.request_id,
        ),
    );
}

/// ` client=<address>` in an access line when a trusted proxy forwarded another client than the peer (formatted in
/// the line, not into a string of its own).
struct ForwardedClient(Option<IpAddr>);

impl std::fmt::Display for ForwardedClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.0 {
            Some(client) => write!(f, " client={client}"),
            None => Ok(()),
        }
    }
}

/// Request ids: 32 hex digits from SipHash of a counter under a random key (std's hasher seed): unpredictable, and
/// they reveal nothing of the request count.
pub struct RequestIds {
    seed: RandomState,
    counter: AtomicU64,
}

impl Default for RequestIds {
    fn default() -> Self {
        RequestIds::new()
    }
}

impl RequestIds {
    pub fn new() -> RequestIds {
        RequestIds { seed: RandomState::new(), counter: AtomicU64::new(0) }
    }

    pub fn next(&self) -> RequestId {
        let n = self.counter.fetch_add(1, Relaxed);
        let half = |lane: u8| {
            let mut h = self.seed.build_hasher();
            h.write_u64(n);
            h.write_u8(lane);
            h.finish()
        };
        RequestId::from_bits(u128::from(half(0)) << 64 | u128::from(half(1)))
    }
}

/// Calls `f` with the `Date` header's value for now, formatted at most once a second on each thread, into the same
/// string.
fn with_date<R>(f: impl FnOnce(&str) -> R) -> R {
    thread_local! {
        static DATE: std::cell::RefCell<(u64, String)> = const { std::cell::RefCell::new((0, String::new())) };
    }
    let now_s = SystemClock.now_unix_ms() / 1_000;
    DATE.with(|cell| {
        let mut date = cell.borrow_mut();
        if date.0 != now_s || date.1.is_empty() {
            // Written over the last one: no allocation after the first.
            date.0 = now_s;
            date.1.clear();
            let _ = std::fmt::Write::write_fmt(&mut date.1, format_args!("{}", HttpDate(now_s * 1_000)));
        }
        f(&date.1)
    })
}
