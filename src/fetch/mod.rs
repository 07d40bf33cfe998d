//! The one outbound door: every HTTP request the service makes goes through a `Client` here, with a connect
//! timeout, a total deadline and a cap on response bytes, and failures sorted into a few kinds the callers report.
//!
//! A `Client` asks the URL it is given as it is (a source's, a feed's or the facilitator's URL, which the operator
//! configured, possibly on loopback or the LAN). A redirect is chosen by the remote party, so redirects are followed
//! by hand: a target in the origin (scheme, host, port) that was asked is fetched as configured; any other target
//! goes through the SSRF guard like a third party's URL (`untrusted::check_hop`: scheme, port, one resolution, every
//! address checked, the connection pinned to them), and the operator's `WEBSEARCHD_FETCH_ALLOW` hosts pass it.
//! After a POST, a 301, 302 or 303 is followed with a GET without the body (as browsers do); a 307 or 308 would have
//! to repeat the body, and is returned as it is. `Authorization`, `Cookie` and `Content-Type` are not carried to a
//! redirect's target.
//!
//! It knows nothing of search or payment; callers build the request and read the `Fetched` response.

pub mod body;
pub mod guard;
pub mod lookup;
pub mod untrusted;

/// The longest a TCP and TLS handshake may take when a call's own deadline is longer.
pub const CONNECT_TIMEOUT_MAX: Duration = Duration::from_secs(3);

/// A current browser's User-Agent: some pages serve bots an empty shell.
pub const BROWSER_USER_AGENT: &str = "Mozilla/5.0 (X11; Linux x86_64; rv:128.0) Gecko/20100101 Firefox/128.0";

use std::time::{Duration, Instant};

use guard::{Policy, Refusal};

/// Longest redirect target quoted in an error.
const LOCATION_CHARS_MAX: usize = 200;

/// How std's resolver words a failed lookup (`ToSocketAddrs`, which ureq's resolver calls).
const LOOKUP_FAILED: &str = "failed to lookup address information";

/// Bytes of a response's status line and headers, at most.
pub const RESPONSE_HEADER_BYTES_MAX: usize = 32 * 1_024;

/// Headers sent on to a redirect target outside the configured origin; every other one (tokens, cookies, the
/// operator's own headers) stays with the origin it was configured for.
const HEADERS_ACROSS_ORIGINS: [&str; 2] = ["accept", "accept-language"];
/// Headers not sent on even within the configured origin: credentials, and the type of a body that is not repeated.
const HEADERS_WITHIN_ORIGIN_DROPPED: [&str; 3] = ["authorization", "cookie", "content-type"];

/// Bounds of an outbound request.
#[derive(Debug, Clone)]
pub struct Limits {
    pub connect_timeout: Duration,
    /// From the start of the request to the last byte of the body.
    pub total_timeout: Duration,
    pub body_bytes_max: u64,
    /// Redirects followed; the response after the last is returned as it is.
    pub redirects_max: u32,
}

impl Limits {
    /// A call that must end within `total`: its handshake gets `CONNECT_TIMEOUT_MAX` at most, and never more than the
    /// whole call.
    pub fn within(total: Duration, body_bytes_max: u64, redirects_max: u32) -> Limits {
        Limits { connect_timeout: CONNECT_TIMEOUT_MAX.min(total), total_timeout: total, body_bytes_max, redirects_max }
    }
}

/// A response, read whole (within the byte cap).
#[derive(Debug, Clone)]
pub struct Fetched {
    pub status: u16,
    pub content_type: Option<String>,
    /// `Content-Encoding`, as the server sent it (a `decoding` client has undone it in `body`).
    pub content_encoding: Option<String>,
    /// `Retry-After` in seconds (its delta form; a date is not read), within `RETRY_AFTER_MAX`.
    pub retry_after: Option<Duration>,
    pub body: Vec<u8>,
}

/// The longest `Retry-After` taken from a response: a day.
pub const RETRY_AFTER_MAX: Duration = Duration::from_secs(86_400);

/// A `Retry-After` header's delta-seconds (RFC 9110, 10.2.3), within `RETRY_AFTER_MAX`; an HTTP date is not read.
pub fn retry_after(value: &str) -> Option<Duration> {
    let digits = value.trim();
    if digits.is_empty() || digits.len() > 12 || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    digits.parse().ok().map(|s: u64| Duration::from_secs(s).min(RETRY_AFTER_MAX))
}

/// Why a request produced no response.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Error {
    Timeout,
    /// The host name did not resolve (the same code as the SSRF guard's: `resolve_failed`).
    Resolve(String),
    /// A refused, reset or aborted connection.
    Connect(String),
    Tls(String),
    /// The body was larger than the cap.
    TooLarge {
        limit: u64,
    },
    /// The peer spoke broken HTTP.
    Protocol(String),
    BadUrl(String),
    /// A `Content-Encoding` that cannot be undone (`br`, `zstd`, ...), or a compressed body that does not inflate.
    ContentEncoding(String),
    /// A redirect to a place the SSRF guard refuses: the hop (1 for the first redirect), its target, and why.
    RedirectRefused {
        hop: u32,
        location: String,
        refusal: Refusal,
    },
    Other(String),
}

impl Error {
    /// A stable snake_case code for reports: the one vocabulary of upstream failures, for search sources, map feeds,
    /// the facilitator and (with the guard's refusals) `extract`.
    pub fn code(&self) -> &'static str {
        match self {
            Error::Timeout => "timeout",
            Error::Resolve(_) => guard::RESOLVE_FAILED,
            Error::Connect(_) => "connect",
            Error::Tls(_) => "tls",
            Error::TooLarge { .. } => "too_large",
            Error::Protocol(_) => "protocol",
            Error::BadUrl(_) => "bad_url",
            Error::ContentEncoding(_) => "content_encoding_refused",
            Error::RedirectRefused { refusal, .. } => refusal.code(),
            Error::Other(_) => "io",
        }
    }
}

impl std::fmt::Display for Error {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Error::Timeout => f.write_str("timed out"),
            Error::Resolve(e) => write!(f, "cannot resolve the host: {e}"),
            Error::Connect(e) => write!(f, "cannot connect: {e}"),
            Error::Tls(e) => write!(f, "TLS failed: {e}"),
            Error::TooLarge { limit } => write!(f, "response larger than {limit} bytes"),
            Error::Protocol(e) => write!(f, "bad HTTP from the peer: {e}"),
            Error::BadUrl(e) => write!(f, "bad URL: {e}"),
            Error::ContentEncoding(e) => write!(f, "the body cannot be decoded: {e}"),
            Error::RedirectRefused { hop, location, refusal } => {
                write!(f, "redirect {hop} to {location} refused: {refusal}")
            }
            Error::Other(e) => f.write_str(e),
        }
    }
}

impl std::error::Error for Error {}

impl From<ureq::Error> for Error {
    fn from(e: ureq::Error) -> Error {
        match e {
            ureq::Error::Timeout(_) => Error::Timeout,
            ureq::Error::HostNotFound => Error::Resolve("no address for the host".into()),
            ureq::Error::ConnectionFailed => Error::Connect("connection failed".into()),
            ureq::Error::BodyExceedsLimit(limit) => Error::TooLarge { limit },
            ureq::Error::Tls(e) => Error::Tls(e.to_string()),
            ureq::Error::Rustls(e) => Error::Tls(e.to_string()),
            ureq::Error::BadUri(e) => Error::BadUrl(e),
            ureq::Error::Http(e) => Error::BadUrl(e.to_string()),
            ureq::Error::Protocol(e) => Error::Protocol(e.to_string()),
            ureq::Error::Io(e) => match e.kind() {
                std::io::ErrorKind::TimedOut | std::io::ErrorKind::WouldBlock => Error::Timeout,
                std::io::ErrorKind::ConnectionRefused
                | std::io::ErrorKind::ConnectionReset
                | std::io::ErrorKind::ConnectionAborted
                | std::io::ErrorKind::NotConnected => Error::Connect(e.to_string()),
                // A failed `getaddrinfo` has no stable ErrorKind (it is `Uncategorized`): std's message names it.
                _ if e.to_string().starts_with(LOOKUP_FAILED) => Error::Resolve(e.to_string()),
                _ => Error::Other(e.to_string()),
            },
            other => Error::Other(other.to_string()),
        }
    }
}

/// A blocking HTTP client. Cheap to clone; safe to share between threads.
#[derive(Clone)]
pub struct Client {
    agent: ureq::Agent,
    limits: Limits,
    /// What a redirect out of the origin asked may reach.
    policy: Policy,
    /// Whether gzip is asked for (`decoding`).
    decodes: bool,
}

impl Client {
    /// What the service calls itself to sources, feeds and the facilitator (callers may send their own).
    const USER_AGENT: &'static str = concat!("websearchd/", env!("CARGO_PKG_VERSION"));

    /// `policy` decides the redirects that leave the origin asked (the allowlist and extra ports of `extract`).
    pub fn new(limits: Limits, policy: Policy) -> Client {
        let config = config(limits.connect_timeout, limits.total_timeout, Self::USER_AGENT);
        Client { agent: config.into(), limits, policy, decodes: false }
    }

    /// This client asking for gzip on a GET (`Accept-Encoding: gzip`, unless the caller names its own). Every client
    /// undoes the coding of a 2xx body as it reads it, asked for or not (`read`).
    pub fn decoding(mut self) -> Client {
        self.decodes = true;
        self
    }

    /// This client for requests that must be over by `deadline` (a search's): its timeouts cut to the time left.
    /// It shares this client's agent, so its connections and TLS settings, and costs a few reference counts.
    pub fn until(&self, deadline: Instant) -> Client {
        let left = deadline.saturating_duration_since(Instant::now());
        let total_timeout = self.limits.total_timeout.min(left);
        let connect_timeout = self.limits.connect_timeout.min(total_timeout);
        let limits = Limits { connect_timeout, total_timeout, ..self.limits.clone() };
        Client { agent: self.agent.clone(), limits, policy: self.policy.clone(), decodes: self.decodes }
    }

    pub fn get(&self, url: &str, headers: &[(&str, &str)]) -> Result<Fetched, Error> {
        let started = Instant::now();
        let mut req = self.agent.get(url);
        if self.decodes && !headers.iter().any(|(k, _)| k.eq_ignore_ascii_case("accept-encoding")) {
            req = req.header("Accept-Encoding", "gzip");
        }
        for (k, v) in headers {
            req = req.header(*k, *v);
        }
        self.follow(url, headers, self.within(req, started)?.call(), false, started)
    }

    /// POSTs `application/x-www-form-urlencoded` fields.
    pub fn post_form(&self, url: &str, headers: &[(&str, &str)], fields: &[(&str, &str)]) -> Result<Fetched, Error> {
        let started = Instant::now();
        let mut req = self.agent.post(url);
        for (k, v) in headers {
            req = req.header(*k, *v);
        }
        self.follow(url, headers, self.within(req, started)?.send_form(fields.iter().copied()), true, started)
    }

    /// POSTs a JSON body.
    pub fn post_json(&self, url: &str, headers: &[(&str, &str)], body: &[u8]) -> Result<Fetched, Error> {
        let started = Instant::now();
        let mut req = self.agent.post(url).header("Content-Type", "application/json");
        for (k, v) in headers {
            req = req.header(*k, *v);
        }
        self.follow(url, headers, self.within(req, started)?.send(body), true, started)
    }

    /// A request's timeouts, set on the request itself (the agent may be shared with a client of longer limits, see
    /// `until`): what is left of the total since `started`, and the connect timeout within it.
    fn within<B>(&self, req: ureq::RequestBuilder<B>, started: Instant) -> Result<ureq::RequestBuilder<B>, Error> {
        let left = self.limits.total_timeout.checked_sub(started.elapsed()).ok_or(Error::Timeout)?;
        Ok(req.config().timeout_connect(Some(self.limits.connect_timeout.min(left))).timeout_global(Some(left)).build())
    }

    /// Follows the redirects of the response to `url` (see the module's comment) and reads the last response.
    fn follow(
        &self,
        url: &str,
        headers: &[(&str, &str)],
        first: Result<ureq::http::Response<ureq::Body>, ureq::Error>,
        posted: bool,
        started: Instant,
    ) -> Result<Fetched, Error> {
        // The origin the operator configured; a URL that does not parse (userinfo, ...) trusts no redirect.
        let home = guard::parse_url(url).ok();
        let mut base = home.clone();
        // Whether every hop so far stayed in the configured origin: once a third party chose a hop, even a way back
        // to the origin is its choice, and goes through the guard.
        let mut trusted = true;
        let mut response = first?;
        let mut hop = 0;
        loop {
            let status = response.status().as_u16();
            let location = response.headers().get("location").and_then(|v| v.to_str().ok());
            let follows = match status {
                301..=303 => true,
                // Only a GET can be repeated; the body of a POST is not sent again.
                307 | 308 => !(posted && hop == 0),
                _ => false,
            };
            let (Some(location), true) = (location, follows && hop < self.limits.redirects_max) else {
                return self.read(response);
            };
            hop += 1;
            let next = match &base {
                Some(b) => untrusted::join(b, location),
                None => location.trim().to_owned(),
            };
            let refused = |refusal: Refusal| Error::RedirectRefused { hop, location: quote(&next), refusal };
            let target = guard::parse_url(&next).map_err(refused)?;
            trusted &= home.as_ref().is_some_and(|h| h.same_origin(&target));
            let agent = if trusted {
                self.agent.clone()
            } else {
                let left = self.limits.total_timeout.checked_sub(started.elapsed()).ok_or(Error::Timeout)?;
                let (_, addrs) = untrusted::check_hop(&self.policy, &next, left).map_err(|e| match e {
                    untrusted::Error::Refused(r) => refused(r),
                    untrusted::Error::Fetch(e) => e,
                    other => Error::Other(other.to_string()),
                })?;
                // The request's own timeouts (`within`) bound it; the agent's are the client's.
                let config = config(self.limits.connect_timeout, self.limits.total_timeout, Self::USER_AGENT);
                untrusted::pinned(config, addrs)
            };
            let mut req = agent.get(target.url());
            for (k, v) in headers {
                let named = |list: &[&str]| list.iter().any(|h| k.eq_ignore_ascii_case(h));
                let sent =
                    if trusted { !named(&HEADERS_WITHIN_ORIGIN_DROPPED) } else { named(&HEADERS_ACROSS_ORIGINS) };
                if sent {
                    req = req.header(*k, *v);
                }
            }
            response = self.within(req, started)?.call()?;
            base = Some(target);
        }
    }

    /// Reads the body: one declared longer than the cap is refused unread, one of a declared length is read into a
    /// buffer of that length (a growing buffer would reach twice the body, up to the cap, and copy it on the way),
    /// and one of unknown length (chunked, or up to the close) is read up to the cap. A 2xx body's gzip or deflate
    /// coding is undone as it is read (`body::decoded`), asked for or not (a request without `Accept-Encoding`
    /// accepts any coding, RFC 9110, 12.5.3), the inflated bytes within the cap: the compressed body is never held
    /// whole beside the inflated one. A coding that cannot be undone is `ContentEncoding`, never bytes a parser
    /// would call unreadable.
    fn read(&self, mut response: ureq::http::Response<ureq::Body>) -> Result<Fetched, Error> {
        use std::io::Read as _;
        let status = response.status().as_u16();
        let content_type = response.headers().get("content-type").and_then(|v| v.to_str().ok()).map(str::to_owned);
        let content_encoding =
            response.headers().get("content-encoding").and_then(|v| v.to_str().ok()).map(str::to_owned);
        let retry_after = response.headers().get("retry-after").and_then(|v| v.to_str().ok()).and_then(retry_after);
        let limit = self.limits.body_bytes_max;
        let declared = declared_length(response.body(), limit)?;
        let reader = response.body_mut().with_config().limit(limit).reader();
        let coding = match (200..300).contains(&status) {
            true => body::Coding::of(content_encoding.as_deref())
                .map_err(|c| Error::ContentEncoding(format!("the content coding {c:?} is not supported")))?,
            false => body::Coding::Identity,
        };
        let mut body = Vec::new();
        if coding == body::Coding::Identity {
            body.reserve_exact(usize::try_from(declared.unwrap_or(0)).unwrap_or(0));
        }
        // One byte past the cap tells an inflated body at the cap from one over it.
        let read = body::decoded(reader, coding).take(limit + 1).read_to_end(&mut body);
        read.map_err(|e| match e.get_ref().is_some_and(|inner| !inner.is::<ureq::Error>()) {
            // Not the connection's error: the inflater's, about the compressed bytes.
            true if coding != body::Coding::Identity => {
                Error::ContentEncoding(format!("the {} body: {e}", format!("{coding:?}").to_lowercase()))
            }
            _ => Error::from(ureq::Error::from(e)),
        })?;
        if body.len() as u64 > limit {
            return Err(Error::TooLarge { limit });
        }
        Ok(Fetched { status, content_type, content_encoding, retry_after, body })
    }
}

/// A body's declared length (`Content-Length`), if it has one; more than `limit` is `TooLarge` before a byte is read.
pub(crate) fn declared_length(body: &ureq::Body, limit: u64) -> Result<Option<u64>, Error> {
    match body.content_length() {
        Some(n) if n > limit => Err(Error::TooLarge { limit }),
        declared => Ok(declared),
    }
}

/// An agent's settings: both timeouts, no redirects followed by ureq (they are followed by hand), no proxy from the
/// environment (every destination is named in our configuration), bounded headers.
pub(crate) fn config(connect_timeout: Duration, total_timeout: Duration, user_agent: &str) -> ureq::config::Config {
    ureq::Agent::config_builder()
        .http_status_as_error(false)
        .timeout_connect(Some(connect_timeout))
        .timeout_global(Some(total_timeout))
        .max_redirects(0)
        .proxy(None)
        .user_agent(user_agent)
        .max_response_header_size(RESPONSE_HEADER_BYTES_MAX)
        .build()
}

/// A redirect target as quoted in an error: bounded.
fn quote(location: &str) -> String {
    match location.char_indices().nth(LOCATION_CHARS_MAX) {
        Some((i, _)) => format!("{}...", location.get(..i).unwrap_or_default()),
        None => location.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A host name that does not resolve has the guard's code, `resolve_failed`, and not `io` (issue 16). A label of
    /// 64 characters (DNS allows 63) fails inside the C library's resolver, so no DNS query leaves the machine.
    #[test]
    fn a_name_that_does_not_resolve_is_resolve_failed() {
        let client = Client::new(Limits::within(Duration::from_secs(3), 1_024, 0), Policy::default());
        let e = client.get(&format!("http://{}.invalid/", "a".repeat(64)), &[]).map(|f| f.status).unwrap_err();
        assert_eq!(e.code(), "resolve_failed", "{e:?}");
    }

    /// Serves one connection: reads the request's head, sends `head` and `body`, then holds the connection open for
    /// `hold` (a body shorter than declared never ends before that).
    fn serve_once(head: String, body: Vec<u8>, hold: Duration) -> String {
        use std::io::{Read as _, Write as _};
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("http://{}/", listener.local_addr().unwrap());
        std::thread::spawn(move || {
            let (mut stream, _) = listener.accept().unwrap();
            let mut seen = Vec::new();
            let mut byte = [0u8; 1];
            while !seen.ends_with(b"\r\n\r\n") && stream.read(&mut byte).unwrap_or(0) == 1 {
                seen.push(byte[0]);
            }
            let _ = stream.write_all(head.as_bytes()).and_then(|()| stream.write_all(&body));
            std::thread::sleep(hold);
        });
        url
    }

    /// `Retry-After`'s delta-seconds are read within a day; a date, a negative or fractional number, or digits past
    /// a trillion seconds are not.
    #[test]
    fn retry_after_takes_seconds_only() {
        let cases: [(&str, Option<u64>); 9] = [
            ("120", Some(120)),
            (" 7 ", Some(7)),
            ("0", Some(0)),
            ("999999999999", Some(86_400)),
            ("9999999999999", None),
            ("Wed, 21 Oct 2015 07:28:00 GMT", None),
            ("-1", None),
            ("1.5", None),
            ("", None),
        ];
        for (value, secs) in cases {
            assert_eq!(retry_after(value), secs.map(Duration::from_secs), "{value:?}");
        }
        let url = serve_once(
            "HTTP/1.1 429 Too Many\r\nRetry-After: 30\r\nContent-Length: 0\r\n\r\n".into(),
            Vec::new(),
            Duration::ZERO,
        );
        let client = Client::new(Limits::within(Duration::from_secs(5), 1_024, 0), Policy::default());
        let fetched = client.get(&url, &[]).unwrap();
        assert_eq!((fetched.status, fetched.retry_after), (429, Some(Duration::from_secs(30))));
    }

    /// A body declared longer than the cap is refused at once, unread (it once was read up to the cap, into a buffer
    /// grown to the cap: here it would wait for bytes that never come, and time out); one declared within the cap
    /// is read into a buffer of exactly its length; one of unknown length is still read up to the cap.
    #[test]
    fn a_body_is_read_by_its_declared_length() {
        let client = Client::new(Limits::within(Duration::from_secs(5), 100_000, 0), Policy::default());
        let declared = |n: usize| format!("HTTP/1.1 200 OK\r\nContent-Length: {n}\r\n\r\n");
        let url = serve_once(declared(100_001), vec![b'a'; 10], Duration::from_secs(10));
        let started = Instant::now();
        let e = client.get(&url, &[]).map(|f| f.status).unwrap_err();
        assert_eq!(e, Error::TooLarge { limit: 100_000 });
        assert!(started.elapsed() < Duration::from_secs(3), "{:?}", started.elapsed());
        let url = serve_once(declared(65_537), vec![b'a'; 65_537], Duration::ZERO);
        let body = client.get(&url, &[]).unwrap().body;
        assert_eq!((body.len(), body.capacity()), (65_537, 65_537), "the buffer is sized to the declared length");
        let close_delimited = "HTTP/1.1 200 OK\r\nConnection: close\r\n\r\n".to_owned();
        let url = serve_once(close_delimited.clone(), vec![b'a'; 99_999], Duration::ZERO);
        assert_eq!(client.get(&url, &[]).unwrap().body.len(), 99_999);
        let url = serve_once(close_delimited, vec![b'a'; 100_001], Duration::ZERO);
        assert_eq!(client.get(&url, &[]).map(|f| f.status).unwrap_err(), Error::TooLarge { limit: 100_000 });
    }

    /// `until` holds a request to a deadline shorter than the client's own timeout, on the shared agent: a listener
    /// that never answers (the kernel accepts the connection, nobody reads it) times the request out at the deadline.
    #[test]
    fn until_ends_a_request_at_the_deadline() {
        let silent = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("http://{}/", silent.local_addr().unwrap());
        let client = Client::new(Limits::within(Duration::from_secs(30), 1_024, 0), Policy::default());
        let started = Instant::now();
        let e = client.until(started + Duration::from_millis(300)).get(&url, &[]).map(|f| f.status).unwrap_err();
        assert_eq!(e, Error::Timeout);
        assert!(started.elapsed() < Duration::from_secs(10), "{:?}", started.elapsed());
        let e = client.until(started).post_form(&url, &[], &[]).map(|f| f.status).unwrap_err();
        assert_eq!(e, Error::Timeout, "a deadline already past sends nothing");
    }
}
