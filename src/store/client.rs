//! A small blocking Redis client: the URL (`redis://` and `rediss://`, user and password as redis-cli takes them, a
//! database number), connections over TCP or TLS (rustls, the webpki roots or an operator's CA file), AUTH and
//! SELECT on connect, and a bounded pool. Every call is pipelined (all commands written, then all replies read) and
//! bounded by one deadline: connecting, writing and reading together take at most the configured timeout.
//!
//! It knows nothing of what the keys mean (`store` does); replies are read by `resp`.

use std::fmt;
use std::io::{self, Read, Write};
use std::net::{IpAddr, SocketAddr, TcpStream};
use std::path::PathBuf;
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use super::resp::{self, Parser, Reply};
use crate::fetch::lookup::{LookupError, Lookups};

/// The port when the URL names none.
const PORT_DEFAULT: u16 = 6379;
/// Highest database number accepted (Redis has 16 by default; the server refuses those it lacks).
const DB_MAX: u32 = 1_023;
/// Bytes read from the socket at once.
const READ_CHUNK_BYTES: usize = 16 * 1_024;

/// Where the store is and how to log in: from `WEBSEARCHD_REDIS_URL`.
#[derive(Clone, PartialEq, Eq)]
pub struct Url {
    pub tls: bool,
    pub host: String,
    pub port: u16,
    pub user: Option<String>,
    pub password: Option<String>,
    pub db: u32,
}

impl fmt::Debug for Url {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.redacted())
    }
}

impl Url {
    /// `redis[s]://[[user][:password]@]host[:port][/db]`; user and password percent-decoded (an invalid escape is
    /// refused, as redis-cli refuses it), an IPv6 host in brackets. `None` for anything else (a query, a path that is
    /// not a number, an empty host).
    pub fn parse(raw: &str) -> Option<Url> {
        let (tls, rest) = match raw.split_once("://")? {
            ("redis", rest) => (false, rest),
            ("rediss", rest) => (true, rest),
            _ => return None,
        };
        let (authority, db) = match rest.split_once('/') {
            Some((a, "")) => (a, 0),
            Some((a, db)) => {
                (a, db.parse::<u32>().ok().filter(|d| *d <= DB_MAX && db.bytes().all(|b| b.is_ascii_digit()))?)
            }
            None => (rest, 0),
        };
        let (userinfo, hostport) = match authority.rsplit_once('@') {
            Some((u, h)) => (Some(u), h),
            None => (None, authority),
        };
        let (user, password) = match userinfo {
            None => (None, None),
            Some(u) => {
                let (user, password) = match u.split_once(':') {
                    Some((user, password)) => (user, Some(percent_decode(password)?)),
                    None => (u, None),
                };
                let user = Some(percent_decode(user)?).filter(|u| !u.is_empty());
                // `redis://:password@host` is a password for the default user, as redis-cli reads it; a lone name is
                // a password too (the form of Redis before ACLs).
                match (user, password) {
                    (Some(u), None) => (None, Some(u)),
                    (u, p) => (u, p.filter(|p| !p.is_empty())),
                }
            }
        };
        // The host and port as the fetcher reads them: an IPv6 literal in brackets, the host lowercased and checked,
        // an IPv4 literal in any notation normalised.
        let (host, port) = crate::fetch::guard::split_host_port(hostport).ok()?;
        let host = crate::fetch::guard::normalize_host(&host).ok()?;
        let port = port.unwrap_or(PORT_DEFAULT);
        (port != 0).then_some(Url { tls, host, port, user, password, db })
    }

    /// The URL with its password hidden, for logs, `check-config` and `/health`.
    pub fn redacted(&self) -> String {
        let scheme = if self.tls { "rediss" } else { "redis" };
        let user = self.user.as_deref().unwrap_or("");
        let auth = match (&self.user, &self.password) {
            (None, None) => String::new(),
            (_, Some(_)) => format!("{user}:(hidden)@"),
            (Some(_), None) => format!("{user}@"),
        };
        let host = if self.host.contains(':') { format!("[{}]", self.host) } else { self.host.clone() };
        format!("{scheme}://{auth}{host}:{}/{}", self.port, self.db)
    }
}

fn percent_decode(s: &str) -> Option<String> {
    let mut out = Vec::with_capacity(s.len());
    let mut bytes = s.bytes();
    while let Some(b) = bytes.next() {
        if b == b'%' {
            let hex = [bytes.next()?, bytes.next()?];
            out.push(u8::from_str_radix(std::str::from_utf8(&hex).ok()?, 16).ok()?);
        } else {
            out.push(b);
        }
    }
    String::from_utf8(out).ok()
}

/// How the client connects.
#[derive(Debug, Clone)]
pub struct Settings {
    pub url: Url,
    /// The bound on one call: connecting (with AUTH and SELECT), writing and reading.
    pub timeout: Duration,
    pub connections_max: usize,
    /// PEM certificates to trust for `rediss://` instead of the webpki roots.
    pub ca_file: Option<PathBuf>,
    /// The fleet's secret, which authenticates the answers it shares (read by `Store::new`, not the client).
    pub secret_file: Option<PathBuf>,
}

/// Why a call failed. Every one of them leaves the call's outcome unknown to the caller, except `Server`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Error {
    /// Connecting, reading or writing failed, or the deadline passed.
    Io(String),
    /// The reply could not be read.
    Protocol(String),
    /// The server refused the login or the database (the configuration's fault).
    Refused(String),
    /// Every connection is in use and none came back within the deadline.
    Busy,
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Io(e) => write!(f, "{e}"),
            Error::Protocol(e) => write!(f, "protocol: {e}"),
            Error::Refused(e) => write!(f, "refused: {e}"),
            Error::Busy => f.write_str("every connection is busy"),
        }
    }
}

impl Error {
    fn io(e: &io::Error) -> Error {
        match e.kind() {
            io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut => Error::Io("timed out".into()),
            _ => Error::Io(e.to_string()),
        }
    }
}

/// A connection's socket: every read and write ends by the call's deadline. Each operation is armed with the time
/// left, so loops of several (rustls reading a record or shaking hands, `write_all` against a slow reader) end by it
/// too, not one timeout per operation later.
struct Socket {
    tcp: TcpStream,
    deadline: Instant,
}

impl Socket {
    fn left(&self) -> io::Result<Duration> {
        let left = self.deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(io::ErrorKind::TimedOut.into());
        }
        Ok(left)
    }
}

impl Read for Socket {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        self.tcp.set_read_timeout(Some(self.left()?))?;
        self.tcp.read(buf)
    }
}

impl Write for Socket {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.tcp.set_write_timeout(Some(self.left()?))?;
        self.tcp.write(buf)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.tcp.flush()
    }
}

trait Stream: Read + Write + Send {
    fn socket(&mut self) -> &mut Socket;
}

impl Stream for Socket {
    fn socket(&mut self) -> &mut Socket {
        self
    }
}

impl Stream for rustls::StreamOwned<rustls::ClientConnection, Socket> {
    fn socket(&mut self) -> &mut Socket {
        &mut self.sock
    }
}

/// One open connection, logged in and on its database. Between calls nothing of a reply is left unread: a call
/// that reads past its last reply fails, and its connection is dropped.
struct Conn {
    stream: Box<dyn Stream>,
    parser: Parser,
    /// Where reads land, kept for the connection's next calls.
    buf: Vec<u8>,
}

impl Conn {
    /// Writes every command (each its arguments), then reads one reply per command, all before `deadline`.
    fn call(&mut self, commands: &[&[&[u8]]], deadline: Instant) -> Result<Vec<Reply>, Error> {
        let mut out = Vec::new();
        for args in commands {
            resp::encode(args, &mut out);
        }
        self.stream.socket().deadline = deadline;
        self.stream.write_all(&out).and_then(|()| self.stream.flush()).map_err(|e| Error::io(&e))?;
        let mut replies = Vec::with_capacity(commands.len());
        while replies.len() < commands.len() {
            let n = self.stream.read(&mut self.buf).map_err(|e| Error::io(&e))?;
            if n == 0 {
                return Err(Error::Io("the server closed the connection".into()));
            }
            let mut input = self.buf.get(..n).unwrap_or_default();
            while !input.is_empty() {
                // More than was asked for: the server is not answering these commands (a broken server or proxy);
                // a reply read later on this connection would be taken for another command's.
                if replies.len() == commands.len() {
                    return Err(Error::Protocol(format!("{} bytes after the last reply", input.len())));
                }
                let (used, reply) = self.parser.feed(input).map_err(|e| Error::Protocol(e.to_string()))?;
                input = input.get(used..).unwrap_or_default();
                replies.extend(reply);
            }
        }
        Ok(replies)
    }
}

/// The connections: those idle, and how many are open (idle or in use), never more than `connections_max`.
#[derive(Default)]
struct Pool {
    idle: Vec<Conn>,
    open: usize,
}

/// The client: a pool of at most `connections_max` connections, opened on demand, dropped on any error (the next
/// call opens a new one: reconnection needs no restart).
pub struct Client {
    settings: Settings,
    tls: Option<Arc<rustls::ClientConfig>>,
    pool: Mutex<Pool>,
    /// A connection came back or its place was freed (the pool changed under its lock: no waiter misses either).
    returned: Condvar,
}

impl Client {
    pub fn new(settings: Settings) -> Result<Client, String> {
        let tls = if settings.url.tls { Some(Arc::new(tls_config(settings.ca_file.as_deref())?)) } else { None };
        Ok(Client { settings, tls, pool: Mutex::new(Pool::default()), returned: Condvar::new() })
    }

    pub fn settings(&self) -> &Settings {
        &self.settings
    }

    /// Runs the commands pipelined on one connection, within the timeout: one reply each (a server error is a
    /// `Reply::Error`, for the caller to judge).
    pub fn call(&self, commands: &[&[&[u8]]]) -> Result<Vec<Reply>, Error> {
        let deadline = Instant::now() + self.settings.timeout;
        let mut conn = self.checkout(deadline)?;
        match conn.call(commands, deadline) {
            Ok(replies) => {
                self.checkin(conn);
                Ok(replies)
            }
            Err(e) => {
                self.discard();
                Err(e)
            }
        }
    }

    /// Connections open now.
    pub fn open(&self) -> usize {
        self.pool().open
    }

    fn pool(&self) -> std::sync::MutexGuard<'_, Pool> {
        self.pool.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn checkout(&self, deadline: Instant) -> Result<Conn, Error> {
        let mut pool = self.pool();
        loop {
            if let Some(conn) = pool.idle.pop() {
                return Ok(conn);
            }
            if pool.open < self.settings.connections_max {
                pool.open += 1;
                drop(pool);
                return self.connect(deadline).inspect_err(|_| self.discard());
            }
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Err(Error::Busy);
            }
            pool = self.returned.wait_timeout(pool, left).unwrap_or_else(|p| p.into_inner()).0;
        }
    }

    fn checkin(&self, conn: Conn) {
        self.pool().idle.push(conn);
        self.returned.notify_one();
    }

    /// A connection was dropped: its place is free.
    fn discard(&self) {
        let mut pool = self.pool();
        pool.open = pool.open.saturating_sub(1);
        drop(pool);
        self.returned.notify_one();
    }

    /// Drops every idle connection (after a failure, those may be dead too: the next call connects anew).
    pub fn reset(&self) {
        let mut pool = self.pool();
        let dropped = std::mem::take(&mut pool.idle);
        pool.open = pool.open.saturating_sub(dropped.len());
        drop(pool);
        drop(dropped);
        self.returned.notify_all();
    }

    fn connect(&self, deadline: Instant) -> Result<Conn, Error> {
        let url = &self.settings.url;
        let addrs = self.resolve(deadline)?;
        let mut last = Error::Io(format!("{}: no address", url.host));
        let mut socket = None;
        for addr in addrs {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                last = Error::Io("timed out".into());
                break;
            }
            match TcpStream::connect_timeout(&addr, left) {
                Ok(s) => {
                    socket = Some(s);
                    break;
                }
                Err(e) => last = Error::io(&e),
            }
        }
        let socket = socket.ok_or(last)?;
        socket.set_nodelay(true).map_err(|e| Error::io(&e))?;
        let socket = Socket { tcp: socket, deadline };
        let stream: Box<dyn Stream> = match &self.tls {
            None => Box::new(socket),
            Some(config) => {
                let name = rustls::pki_types::ServerName::try_from(url.host.clone())
                    .map_err(|e| Error::Refused(format!("TLS server name {}: {e}", url.host)))?;
                let tls = rustls::ClientConnection::new(config.clone(), name)
                    .map_err(|e| Error::Refused(format!("TLS: {e}")))?;
                Box::new(rustls::StreamOwned::new(tls, socket))
            }
        };
        let mut conn = Conn { stream, parser: Parser::new(), buf: vec![0; READ_CHUNK_BYTES] };
        let auth: Vec<&[u8]> = match (&url.user, &url.password) {
            (Some(u), Some(p)) => vec![b"AUTH", u.as_bytes(), p.as_bytes()],
            (None, Some(p)) => vec![b"AUTH", p.as_bytes()],
            _ => Vec::new(),
        };
        let db = url.db.to_string();
        let select: [&[u8]; 2] = [b"SELECT", db.as_bytes()];
        let login: Vec<&[&[u8]]> = [(!auth.is_empty()).then_some(&auth[..]), (url.db != 0).then_some(&select[..])]
            .into_iter()
            .flatten()
            .collect();
        if !login.is_empty() {
            for reply in conn.call(&login, deadline)? {
                if let Reply::Error(e) = reply {
                    return Err(Error::Refused(e));
                }
            }
        }
        Ok(conn)
    }

    /// The server's addresses: an IP literal as is; a name looked up until the deadline (the system resolver has
    /// no timeout of its own), one lookup at a time (a hung resolver costs one thread, not one per call).
    fn resolve(&self, deadline: Instant) -> Result<Vec<SocketAddr>, Error> {
        static LOOKUPS: Lookups = Lookups::new(1);
        let url = &self.settings.url;
        if let Ok(ip) = url.host.parse::<IpAddr>() {
            return Ok(vec![SocketAddr::new(ip, url.port)]);
        }
        LOOKUPS.resolve(&url.host, url.port, deadline.saturating_duration_since(Instant::now())).map_err(|e| match e {
            LookupError::Busy => Error::Io(format!("{}: a lookup of this name is still running", url.host)),
            LookupError::TimedOut => Error::Io(format!("{}: the lookup timed out", url.host)),
            LookupError::Failed(why) => Error::Io(why),
        })
    }
}

/// TLS on the ring provider (see ARCHITECTURE, dependency hazards), trusting the webpki roots, or only the
/// certificates in `ca_file`.
fn tls_config(ca_file: Option<&std::path::Path>) -> Result<rustls::ClientConfig, String> {
    use rustls::pki_types::{pem::PemObject, CertificateDer};
    let mut roots = rustls::RootCertStore::empty();
    match ca_file {
        None => roots.extend(webpki_roots::TLS_SERVER_ROOTS.iter().cloned()),
        Some(path) => {
            let pem = std::fs::read(path).map_err(|e| format!("{}: {e}", path.display()))?;
            for cert in CertificateDer::pem_slice_iter(&pem) {
                let cert = cert.map_err(|e| format!("{}: {e}", path.display()))?;
                roots.add(cert).map_err(|e| format!("{}: {e}", path.display()))?;
            }
            if roots.is_empty() {
                return Err(format!("{}: no certificate", path.display()));
            }
        }
    }
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let config = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| e.to_string())?
        .with_root_certificates(roots)
        .with_no_client_auth();
    Ok(config)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[track_caller]
    fn check(raw: &str, expected: Option<&str>) {
        assert_eq!(Url::parse(raw).map(|u| u.redacted()).as_deref(), expected, "{raw}");
    }

    #[test]
    fn urls_as_redis_cli_reads_them() {
        check("redis://127.0.0.1", Some("redis://127.0.0.1:6379/0"));
        check("redis://cache.internal:6380/2", Some("redis://cache.internal:6380/2"));
        check("rediss://default:s%40cret@[::1]:7000/", Some("rediss://default:(hidden)@[::1]:7000/0"));
        check("redis://:pw@h", Some("redis://:(hidden)@h:6379/0"));
        // The host as the fetcher reads it: lowercased, an IPv4 literal in any notation made standard.
        check("redis://Redis_1.Local:7000", Some("redis://redis_1.local:7000/0"));
        check("redis://127.1/1", Some("redis://127.0.0.1:6379/1"));
        let u = Url::parse("redis://app:p%3Aw@h/3").expect("valid");
        assert_eq!((u.user.as_deref(), u.password.as_deref(), u.db), (Some("app"), Some("p:w"), 3));
        let legacy = Url::parse("redis://onlypassword@h").expect("valid");
        assert_eq!((legacy.user, legacy.password.as_deref()), (None, Some("onlypassword")));
        for bad in [
            "http://h",
            "redis://",
            "redis://h:0",
            "redis://h:x",
            "redis://h/abc",
            "redis://h/1?x=1",
            "redis://[zz]",
            "redis://h/99999",
            "redis://a b",
            "redis://::1",
            "redis://:p%zz@h",
        ] {
            check(bad, None);
        }
    }

    /// A server that reads slowly: a large command is cut at the call's deadline, not one write timeout per partial
    /// write later (`write_all` goes on while each write makes some progress).
    #[test]
    fn a_slow_reader_costs_a_call_its_deadline() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        std::thread::spawn(move || {
            let (mut conn, _) = listener.accept().unwrap();
            let mut buf = vec![0u8; 32 * 1_024];
            while conn.read(&mut buf).is_ok_and(|n| n > 0) {
                std::thread::sleep(Duration::from_millis(10));
            }
        });
        let timeout = Duration::from_millis(300);
        let url = Url::parse(&format!("redis://127.0.0.1:{port}")).unwrap();
        let client =
            Client::new(Settings { url, timeout, connections_max: 1, ca_file: None, secret_file: None }).unwrap();
        let value = vec![b'x'; 32 << 20];
        let started = Instant::now();
        let result = client.call(&[&[b"SET", b"k", &value]]);
        assert_eq!(result, Err(Error::Io("timed out".into())));
        assert!(started.elapsed() < timeout + Duration::from_millis(1_500), "{:?}", started.elapsed());
        assert_eq!(client.open(), 0, "the connection is dropped");
    }

    /// A call waiting for a connection (all in use) takes the place of one that failed as soon as it is freed.
    #[test]
    fn a_waiting_call_takes_the_place_of_a_failed_connection() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let (asked, asked_rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            // The first connection reads its command and closes without a reply; the next answers each command.
            let (mut first, _) = listener.accept().unwrap();
            let mut buf = [0u8; 1_024];
            let _ = first.read(&mut buf);
            asked.send(()).unwrap();
            std::thread::sleep(Duration::from_millis(150));
            drop(first);
            let (mut next, _) = listener.accept().unwrap();
            while next.read(&mut buf).is_ok_and(|n| n > 0) {
                let _ = next.write_all(b"+OK\r\n");
            }
        });
        let url = Url::parse(&format!("redis://127.0.0.1:{port}")).unwrap();
        let timeout = Duration::from_secs(5);
        let client = Arc::new(
            Client::new(Settings { url, timeout, connections_max: 1, ca_file: None, secret_file: None }).unwrap(),
        );
        let ping: &[&[u8]] = &[b"PING"];
        let c2 = client.clone();
        let failing = std::thread::spawn(move || c2.call(&[ping]));
        asked_rx.recv_timeout(Duration::from_secs(10)).unwrap();
        let started = Instant::now();
        assert_eq!(client.call(&[ping]), Ok(vec![Reply::Status("OK".into())]));
        assert!(started.elapsed() < timeout / 2, "{:?}", started.elapsed());
        assert!(matches!(failing.join().unwrap(), Err(Error::Io(_))));
        assert_eq!(client.open(), 1);
    }

    /// A server that sends more replies than commands: the call fails and its connection is not used again (the
    /// extra reply would be read as the next command's).
    #[test]
    fn a_reply_too_many_drops_the_connection() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        std::thread::spawn(move || {
            for (n, conn) in listener.incoming().enumerate() {
                let mut conn = conn.unwrap();
                let mut buf = [0u8; 1_024];
                let reply: &[u8] = if n == 0 { b"+OK\r\n$-1\r\n" } else { b"$-1\r\n" };
                while conn.read(&mut buf).is_ok_and(|n| n > 0) {
                    let _ = conn.write_all(reply);
                }
            }
        });
        let url = Url::parse(&format!("redis://127.0.0.1:{port}")).unwrap();
        let client = Client::new(Settings {
            url,
            timeout: Duration::from_secs(5),
            connections_max: 1,
            ca_file: None,
            secret_file: None,
        })
        .unwrap();
        let set: &[&[u8]] = &[b"SET", b"k", b"v", b"NX"];
        assert!(matches!(client.call(&[set]), Err(Error::Protocol(_))));
        assert_eq!(client.open(), 0);
        assert_eq!(client.call(&[set]), Ok(vec![Reply::Nil]), "a new connection's own reply");
    }
}
