//! The one outbound door: every HTTP request the service makes goes through a `Client` here, with a connect
//! timeout, a total deadline and a cap on response bytes, and failures sorted into a few kinds the callers report.
//!
//! It knows nothing of search or payment; callers build the request and read the `Fetched` response.

pub mod guard;
pub mod untrusted;

/// The longest a TCP and TLS handshake may take when a call's own deadline is longer.
pub const CONNECT_TIMEOUT_MAX: Duration = Duration::from_secs(3);

/// A current browser's User-Agent: some pages serve bots an empty shell.
pub const BROWSER_USER_AGENT: &str = "Mozilla/5.0 (X11; Linux x86_64; rv:128.0) Gecko/20100101 Firefox/128.0";

use std::time::Duration;

/// Bounds of an outbound request.
#[derive(Debug, Clone)]
pub struct Limits {
    pub connect_timeout: Duration,
    /// From the start of the request to the last byte of the body.
    pub total_timeout: Duration,
    pub body_bytes_max: u64,
    pub redirects_max: u32,
}

/// A response, read whole (within the byte cap).
#[derive(Debug, Clone)]
pub struct Fetched {
    pub status: u16,
    pub content_type: Option<String>,
    /// `Content-Encoding`, for callers that asked for a compressed body (the client itself decodes nothing).
    pub content_encoding: Option<String>,
    pub body: Vec<u8>,
}

/// Why a request produced no response.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Error {
    Timeout,
    /// DNS failure, refused or reset connection.
    Connect(String),
    Tls(String),
    /// The body was larger than the cap.
    TooLarge {
        limit: u64,
    },
    /// The peer spoke broken HTTP.
    Protocol(String),
    BadUrl(String),
    Other(String),
}

impl Error {
    /// A stable snake_case code for reports.
    pub fn code(&self) -> &'static str {
        match self {
            Error::Timeout => "timeout",
            Error::Connect(_) => "connect",
            Error::Tls(_) => "tls",
            Error::TooLarge { .. } => "too_large",
            Error::Protocol(_) => "protocol",
            Error::BadUrl(_) => "bad_url",
            Error::Other(_) => "io",
        }
    }
}

impl std::fmt::Display for Error {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Error::Timeout => f.write_str("timed out"),
            Error::Connect(e) => write!(f, "cannot connect: {e}"),
            Error::Tls(e) => write!(f, "TLS failed: {e}"),
            Error::TooLarge { limit } => write!(f, "response larger than {limit} bytes"),
            Error::Protocol(e) => write!(f, "bad HTTP from the peer: {e}"),
            Error::BadUrl(e) => write!(f, "bad URL: {e}"),
            Error::Other(e) => f.write_str(e),
        }
    }
}

impl std::error::Error for Error {}

impl From<ureq::Error> for Error {
    fn from(e: ureq::Error) -> Error {
        match e {
            ureq::Error::Timeout(_) => Error::Timeout,
            ureq::Error::HostNotFound => Error::Connect("host not found".into()),
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
}

impl Client {
    pub fn new(limits: Limits) -> Client {
        let config = ureq::Agent::config_builder()
            .http_status_as_error(false)
            .timeout_connect(Some(limits.connect_timeout))
            .timeout_global(Some(limits.total_timeout))
            .max_redirects(limits.redirects_max)
            .max_redirects_will_error(false)
            // Proxies from the environment are not used: every destination is named in our configuration.
            .proxy(None)
            .user_agent(concat!("websearchd/", env!("CARGO_PKG_VERSION")))
            .max_response_header_size(32 * 1_024)
            .build();
        Client { agent: config.into(), limits }
    }

    pub fn get(&self, url: &str, headers: &[(&str, &str)]) -> Result<Fetched, Error> {
        let mut req = self.agent.get(url);
        for (k, v) in headers {
            req = req.header(*k, *v);
        }
        self.read(req.call())
    }

    /// POSTs `application/x-www-form-urlencoded` fields.
    pub fn post_form(&self, url: &str, headers: &[(&str, &str)], fields: &[(&str, &str)]) -> Result<Fetched, Error> {
        let mut req = self.agent.post(url);
        for (k, v) in headers {
            req = req.header(*k, *v);
        }
        self.read(req.send_form(fields.iter().copied()))
    }

    /// POSTs a JSON body.
    pub fn post_json(&self, url: &str, headers: &[(&str, &str)], body: &[u8]) -> Result<Fetched, Error> {
        let mut req = self.agent.post(url).header("Content-Type", "application/json");
        for (k, v) in headers {
            req = req.header(*k, *v);
        }
        self.read(req.send(body))
    }

    fn read(&self, response: Result<ureq::http::Response<ureq::Body>, ureq::Error>) -> Result<Fetched, Error> {
        let mut response = response?;
        let status = response.status().as_u16();
        let content_type = response.headers().get("content-type").and_then(|v| v.to_str().ok()).map(str::to_owned);
        let content_encoding =
            response.headers().get("content-encoding").and_then(|v| v.to_str().ok()).map(str::to_owned);
        let body = response.body_mut().with_config().limit(self.limits.body_bytes_max).read_to_vec()?;
        Ok(Fetched { status, content_type, content_encoding, body })
    }
}
