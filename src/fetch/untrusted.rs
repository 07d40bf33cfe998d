//! Fetching a URL a third party chose. Every hop goes through the guard: the URL is checked, the host resolved once
//! (on a helper thread, bounded by the deadline), every address checked, and the connection made only to those
//! addresses (a pinned resolver: there is no second lookup to rebind). Redirects are followed by hand, at most
//! `REDIRECTS_MAX`, each hop checked again. One total deadline; a cap on body bytes; only HTML, XHTML and plain text.
//! A body is handed on as text the extractor reads (`body`): a content coding the server applied unasked is undone
//! (gzip and deflate, the inflated bytes within the same cap; any other is refused), and UTF-16 becomes UTF-8.

use std::io::Read;
use std::net::{IpAddr, SocketAddr};
use std::time::{Duration, Instant};

use ureq::unversioned::resolver::{ResolvedSocketAddrs, Resolver};
use ureq::unversioned::transport::{DefaultConnector, NextTimeout};

use super::body;
use super::guard::{Policy, Refusal, Target};
use super::lookup::{LookupError, Lookups};

/// Redirect hops followed at most.
pub const REDIRECTS_MAX: usize = 5;
/// Checked addresses a pinned agent tries, at most (ureq's resolver answer holds 16).
const PINNED_ADDRESSES_MAX: usize = 16;
/// Name lookups of third parties' hosts running at once (see `lookup`: past it a lookup is not started and the
/// request times out at once).
pub const LOOKUPS_IN_FLIGHT_MAX: usize = 16;

static LOOKUPS: Lookups = Lookups::new(LOOKUPS_IN_FLIGHT_MAX);

#[derive(Debug, Clone)]
pub struct Limits {
    pub connect_timeout: Duration,
    /// For the whole fetch, redirects included.
    pub deadline: Duration,
    pub body_bytes_max: u64,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Error {
    Refused(Refusal),
    /// A redirect to somewhere the guard refuses, with the hop number.
    RedirectRefused {
        hop: usize,
        refusal: Refusal,
    },
    TooManyRedirects,
    Status(u16),
    ContentType(String),
    /// A `Content-Encoding` that cannot be undone, or a compressed body that does not inflate.
    ContentEncoding(String),
    Fetch(super::Error),
}

impl Error {
    pub fn code(&self) -> &'static str {
        match self {
            Error::Refused(r) | Error::RedirectRefused { refusal: r, .. } => r.code(),
            Error::TooManyRedirects => "too_many_redirects",
            Error::Status(_) => "http_status",
            Error::ContentType(_) => "content_type_refused",
            Error::ContentEncoding(_) => "content_encoding_refused",
            Error::Fetch(e) => e.code(),
        }
    }
}

impl std::fmt::Display for Error {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Error::Refused(r) => write!(f, "{r}"),
            Error::RedirectRefused { hop, refusal } => write!(f, "redirect {hop}: {refusal}"),
            Error::TooManyRedirects => write!(f, "more than {REDIRECTS_MAX} redirects"),
            Error::Status(s) => write!(f, "HTTP {s}"),
            Error::ContentType(t) => write!(f, "content type {t:?} is not HTML, XHTML or plain text"),
            Error::ContentEncoding(why) => write!(f, "the body cannot be decoded: {why}"),
            Error::Fetch(e) => write!(f, "{e}"),
        }
    }
}

impl std::error::Error for Error {}

/// What was fetched; the body went to the sink.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Fetched {
    pub final_url: String,
    pub content_type: String,
    pub bytes: u64,
    pub redirects: usize,
}

/// Resolves to the addresses the guard checked, and nothing else.
#[derive(Debug)]
struct Pinned(Vec<SocketAddr>);

impl Resolver for Pinned {
    fn resolve(
        &self,
        _uri: &ureq::http::Uri,
        _config: &ureq::config::Config,
        _timeout: NextTimeout,
    ) -> Result<ResolvedSocketAddrs, ureq::Error> {
        let mut out = self.empty();
        for a in self.0.iter().take(PINNED_ADDRESSES_MAX) {
            out.push(*a);
        }
        if out.is_empty() {
            return Err(ureq::Error::HostNotFound);
        }
        Ok(out)
    }
}

/// Fetches `url`, feeding the body to `sink` chunk by chunk as it arrives.
pub fn fetch(url: &str, policy: &Policy, limits: &Limits, sink: &mut dyn FnMut(&[u8])) -> Result<Fetched, Error> {
    let started = Instant::now();
    let mut current = url.to_owned();
    for hop in 0..=REDIRECTS_MAX {
        let remaining = limits.deadline.checked_sub(started.elapsed()).ok_or(Error::Fetch(super::Error::Timeout))?;
        let (target, addrs) = check_hop(policy, &current, remaining).map_err(|e| match e {
            Error::Refused(r) => refused(hop, r),
            other => other,
        })?;
        let remaining = limits.deadline.checked_sub(started.elapsed()).ok_or(Error::Fetch(super::Error::Timeout))?;
        let config = super::config(limits.connect_timeout.min(remaining), remaining, super::BROWSER_USER_AGENT);
        let agent = pinned(config, addrs);
        let mut response = agent
            .get(&target.url())
            .header("Accept", "text/html,application/xhtml+xml,text/plain;q=0.9,*/*;q=0.1")
            .header("Accept-Language", "en-US,en;q=0.7")
            .call()
            .map_err(|e| Error::Fetch(e.into()))?;
        let status = response.status().as_u16();
        let header = |name: &str| response.headers().get(name).and_then(|v| v.to_str().ok()).map(str::to_owned);
        if (300..400).contains(&status) {
            let Some(location) = header("location") else { return Err(Error::Status(status)) };
            current = join(&target, &location);
            continue;
        }
        if !(200..300).contains(&status) {
            return Err(Error::Status(status));
        }
        let content_type = header("content-type").unwrap_or_else(|| "text/html".into());
        let media = content_type.split(';').next().unwrap_or("").trim().to_ascii_lowercase();
        if !matches!(media.as_str(), "text/html" | "application/xhtml+xml" | "text/plain") {
            return Err(Error::ContentType(media));
        }
        let coding = body::Coding::of(header("content-encoding").as_deref())
            .map_err(|c| Error::ContentEncoding(format!("the content coding {c:?} is not supported")))?;
        let limit = limits.body_bytes_max;
        super::declared_length(response.body(), limit).map_err(Error::Fetch)?;
        let mut reader = body::decoded(response.body_mut().with_config().limit(limit).reader(), coding);
        let mut text = body::Utf16::new(&content_type);
        let mut buf = [0u8; 16 * 1_024];
        // Bytes of the body as the server sent it, then inflated: each within the cap.
        let mut bytes = 0u64;
        loop {
            match reader.read(&mut buf) {
                Ok(0) => break,
                Ok(n) => {
                    bytes += n as u64;
                    if bytes > limit {
                        return Err(Error::Fetch(super::Error::TooLarge { limit }));
                    }
                    text.feed(buf.get(..n).unwrap_or_default(), sink);
                }
                Err(e) => {
                    let why = e.to_string();
                    let err = match e.into_inner().map(|inner| inner.downcast::<ureq::Error>()) {
                        Some(Ok(inner)) => super::Error::from(*inner),
                        // Not the connection's error: the inflater's, about the compressed bytes.
                        _ if coding != body::Coding::Identity => return Err(Error::ContentEncoding(why)),
                        _ => super::Error::Other("read failed".into()),
                    };
                    return Err(Error::Fetch(if bytes >= limit { super::Error::TooLarge { limit } } else { err }));
                }
            }
        }
        text.finish(sink);
        return Ok(Fetched { final_url: target.url(), content_type, bytes, redirects: hop });
    }
    Err(Error::TooManyRedirects)
}

/// One hop to a URL a third party chose, up to the connection: the URL checked, its host resolved once (within
/// `within`), every address checked. The addresses returned are the only ones `pinned` lets ureq connect to.
pub(super) fn check_hop(policy: &Policy, url: &str, within: Duration) -> Result<(Target, Vec<SocketAddr>), Error> {
    let target = policy.check_url(url).map_err(Error::Refused)?;
    let addrs = resolve(&target, within)?;
    let ips: Vec<IpAddr> = addrs.iter().map(SocketAddr::ip).collect();
    policy.check_addresses(&target, &ips).map_err(Error::Refused)?;
    Ok((target, addrs))
}

/// An agent that connects only to `addrs`, whatever host and port the URL it is given names (no lookup happens).
pub(super) fn pinned(config: ureq::config::Config, addrs: Vec<SocketAddr>) -> ureq::Agent {
    ureq::Agent::with_parts(config, DefaultConnector::new(), Pinned(addrs))
}

fn refused(hop: usize, refusal: Refusal) -> Error {
    if hop == 0 {
        Error::Refused(refusal)
    } else {
        Error::RedirectRefused { hop, refusal }
    }
}

/// Resolves a host once, on a helper thread so the deadline holds even if the resolver hangs.
fn resolve(target: &Target, within: Duration) -> Result<Vec<SocketAddr>, Error> {
    if let Some(ip) = target.ip() {
        return Ok(vec![SocketAddr::new(ip, target.port)]);
    }
    LOOKUPS.resolve(&target.host, target.port, within).map_err(|e| match e {
        LookupError::Failed(why) => Error::Refused(Refusal::Resolve(why)),
        LookupError::Busy | LookupError::TimedOut => Error::Fetch(super::Error::Timeout),
    })
}

/// Resolves a `Location` against the URL it came from (RFC 3986, section 5.2, without dot segments: the target is
/// checked as it is). A location with a scheme of any kind is taken as it is (the guard refuses other schemes).
pub(super) fn join(base: &Target, location: &str) -> String {
    let location = location.trim();
    if has_scheme(location) {
        return location.to_owned();
    }
    let scheme = if base.https { "https" } else { "http" };
    if let Some(rest) = location.strip_prefix("//") {
        return format!("{scheme}://{rest}");
    }
    let origin = Target { path: String::new(), ..base.clone() }.url();
    let origin = origin.trim_end_matches('/');
    let path = base.path.split('?').next().unwrap_or("/");
    if location.starts_with('/') {
        format!("{origin}{location}")
    } else if location.is_empty() || location.starts_with('#') {
        format!("{origin}{}", base.path)
    } else if location.starts_with('?') {
        format!("{origin}{path}{location}")
    } else {
        let dir = path.rsplit_once('/').map_or("", |(d, _)| d);
        format!("{origin}{dir}/{location}")
    }
}

/// Whether a URL reference starts with a scheme (`ALPHA *( ALPHA / DIGIT / "+" / "-" / "." ) ":"`), so is absolute.
fn has_scheme(reference: &str) -> bool {
    let Some((scheme, _)) = reference.split_once(':') else { return false };
    let mut bytes = scheme.bytes();
    bytes.next().is_some_and(|b| b.is_ascii_alphabetic())
        && bytes.all(|b| b.is_ascii_alphanumeric() || matches!(b, b'+' | b'-' | b'.'))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write as _;
    use std::net::TcpListener;

    /// Answers `n` requests with 200 and returns the `Host` header of each.
    fn serve(listener: TcpListener, n: usize) -> std::thread::JoinHandle<Vec<String>> {
        std::thread::spawn(move || {
            let mut hosts = Vec::new();
            for _ in 0..n {
                let (mut stream, _) = listener.accept().unwrap();
                let mut head = Vec::new();
                let mut byte = [0u8; 1];
                while !head.ends_with(b"\r\n\r\n") && stream.read(&mut byte).unwrap() == 1 {
                    head.push(byte[0]);
                }
                let head = String::from_utf8(head).unwrap();
                let host = head.lines().find_map(|l| l.strip_prefix("host: ").or_else(|| l.strip_prefix("Host: ")));
                hosts.push(host.unwrap_or("").to_owned());
                stream.write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok").unwrap();
            }
            hosts
        })
    }

    /// DNS rebinding: a name checked once must not be looked up again when connecting, where it could answer with
    /// another (private) address. The agent every guarded hop uses connects only to the checked addresses: whatever
    /// host and port the URL names (another listener's port, a name that does not resolve at all), the connection
    /// goes to the pinned address, and the URL's own address receives nothing.
    #[test]
    fn the_pinned_agent_connects_only_to_the_checked_addresses() {
        let checked = TcpListener::bind("127.0.0.1:0").unwrap();
        let pinned_to = checked.local_addr().unwrap();
        let named = TcpListener::bind("127.0.0.1:0").unwrap();
        let named_port = named.local_addr().unwrap().port();
        let server = serve(checked, 2);
        let config = ureq::Agent::config_builder()
            .http_status_as_error(false)
            .max_redirects(0)
            .timeout_global(Some(Duration::from_secs(3)))
            .proxy(None)
            .build();
        let agent = pinned(config, vec![pinned_to]);
        for url in [format!("http://127.0.0.1:{named_port}/"), format!("http://rebound.invalid:{named_port}/")] {
            let response = agent.get(&url).call().unwrap();
            assert_eq!(response.status().as_u16(), 200, "{url}");
        }
        let hosts = server.join().unwrap();
        assert_eq!(hosts, [format!("127.0.0.1:{named_port}"), format!("rebound.invalid:{named_port}")]);
        named.set_nonblocking(true).unwrap();
        assert_eq!(named.accept().unwrap_err().kind(), std::io::ErrorKind::WouldBlock, "the URL's address got nothing");
    }

    #[test]
    fn an_empty_pinned_list_connects_nowhere() {
        let config = ureq::Agent::config_builder().timeout_global(Some(Duration::from_secs(3))).proxy(None).build();
        let e = pinned(config, Vec::new()).get("http://example.com/").call().unwrap_err();
        assert!(matches!(e, ureq::Error::HostNotFound), "{e}");
    }

    #[test]
    fn locations_are_joined() {
        let base = Policy::default().check_url("https://example.com/a/b?c=1").unwrap();
        assert_eq!(join(&base, "https://other.org/x"), "https://other.org/x");
        assert_eq!(join(&base, "//cdn.example.com/y"), "https://cdn.example.com/y");
        assert_eq!(join(&base, "/root"), "https://example.com/root");
        assert_eq!(join(&base, "sibling"), "https://example.com/a/sibling");
        assert_eq!(join(&base, "HTTP://Other.org"), "HTTP://Other.org");
        assert_eq!(join(&base, "?page=2"), "https://example.com/a/b?page=2");
        assert_eq!(join(&base, "#top"), "https://example.com/a/b?c=1");
        assert_eq!(join(&base, ""), "https://example.com/a/b?c=1");
        // A relative reference that quotes a URL in its query is relative; a scheme of any kind is a scheme.
        assert_eq!(join(&base, "go?to=http://x.org/"), "https://example.com/a/go?to=http://x.org/");
        assert_eq!(join(&base, "javascript:alert(1)"), "javascript:alert(1)");
    }
}
