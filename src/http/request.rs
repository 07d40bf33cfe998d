//! Request heads off the wire: a pure function over the bytes received so far, built on `httparse`. Incomplete input
//! is an ordinary answer (`Ok(None)`), never an error; every limit is checked here, before anything is allocated
//! for the body.

use std::net::SocketAddr;

/// A parsed request line and headers, with the framing decisions already made.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Head {
    pub method: String,
    /// The path of the request target, without the query; absolute-form targets are reduced to it.
    pub path: String,
    pub query: Option<String>,
    /// 0 for HTTP/1.0, 1 for HTTP/1.1.
    pub version_minor: u8,
    /// Names lowercased, values as sent.
    pub headers: Vec<(String, Vec<u8>)>,
    /// Bytes of the request line and headers, including the blank line.
    pub head_bytes: usize,
    pub content_length: usize,
    pub keep_alive: bool,
    pub expect_continue: bool,
}

/// Why a request head is refused. Each maps to one status and stable code in `into_api_error`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HeadError {
    /// Not HTTP/1.x syntax.
    Malformed(&'static str),
    /// The request line and headers exceed `header_bytes_max`.
    HeadTooLarge { limit: usize },
    /// More header fields than `headers_max`.
    TooManyHeaders { limit: usize },
    /// `Transfer-Encoding` bodies are not accepted: the body must be sent with `Content-Length`.
    LengthRequired,
    /// The declared body exceeds the limit.
    BodyTooLarge { limit: usize },
}

impl HeadError {
    pub fn into_api_error(self) -> crate::error::ApiError {
        use crate::error::ApiError;
        match self {
            HeadError::Malformed(what) => {
                ApiError::bad_request("bad_request", format!("malformed HTTP request: {what}"))
            }
            HeadError::HeadTooLarge { limit } => {
                ApiError::new(431, "headers_too_large", format!("the request line and headers exceed {limit} bytes"))
            }
            HeadError::TooManyHeaders { limit } => {
                ApiError::new(431, "too_many_headers", format!("the request has more than {limit} header fields"))
            }
            HeadError::LengthRequired => ApiError::new(
                411,
                "length_required",
                "send the request body with a Content-Length header (Transfer-Encoding is not accepted)",
            ),
            HeadError::BodyTooLarge { limit } => {
                ApiError::new(413, "body_too_large", format!("the request body exceeds {limit} bytes"))
            }
        }
    }
}

/// Header slots kept on the stack while parsing (the default `WEBSEARCHD_HEADERS_MAX`); a larger limit takes them from
/// the heap.
const HEADER_SLOTS_STACK: usize = 64;

/// Whether parsing the head at the start of `buf` can tell more than it did when `scanned` bytes of it were there
/// (and it said "more bytes are needed"): on the first look (a malformed start is refused at once), once the bytes
/// after `scanned` bring an empty line (`\n\n` or `\n\r\n`, the ends httparse accepts), or once the head is past
/// `header_bytes_max`. Asking only then keeps a head that arrives a byte at a time linear to read: the parser starts
/// again from the first byte every time it is asked.
pub fn head_may_be_complete(buf: &[u8], scanned: usize, header_bytes_max: usize) -> bool {
    if scanned == 0 || buf.len() > header_bytes_max {
        return true;
    }
    let new = buf.get(scanned.saturating_sub(2)..).unwrap_or_default();
    new.windows(2).any(|w| w == b"\n\n") || new.windows(3).any(|w| w == b"\n\r\n")
}

/// Parses the head at the start of `buf`. `Ok(None)`: more bytes are needed.
pub fn parse_head(
    buf: &[u8],
    header_bytes_max: usize,
    headers_max: usize,
    body_bytes_max: usize,
) -> Result<Option<Head>, HeadError> {
    // On the stack up to the default limit: no allocation for the slots of a request being parsed.
    let mut stack = [httparse::EMPTY_HEADER; HEADER_SLOTS_STACK];
    let mut heap = Vec::new();
    let slots = match stack.get_mut(..headers_max) {
        Some(slots) => slots,
        None => {
            heap.resize(headers_max, httparse::EMPTY_HEADER);
            &mut heap[..]
        }
    };
    let mut req = httparse::Request::new(slots);
    let head_bytes = match req.parse(buf) {
        Ok(httparse::Status::Complete(n)) => n,
        Ok(httparse::Status::Partial) => {
            if buf.len() > header_bytes_max {
                return Err(HeadError::HeadTooLarge { limit: header_bytes_max });
            }
            return Ok(None);
        }
        Err(httparse::Error::TooManyHeaders) => return Err(HeadError::TooManyHeaders { limit: headers_max }),
        Err(e) => return Err(HeadError::Malformed(error_text(e))),
    };
    if head_bytes > header_bytes_max {
        return Err(HeadError::HeadTooLarge { limit: header_bytes_max });
    }
    let method = req.method.ok_or(HeadError::Malformed("no method"))?.to_owned();
    let target = req.path.ok_or(HeadError::Malformed("no request target"))?;
    let version_minor = req.version.ok_or(HeadError::Malformed("no version"))?;
    let (path, query) = split_target(target)?;

    let mut headers = Vec::with_capacity(req.headers.len());
    let mut content_length: Option<usize> = None;
    let mut connection_close = false;
    let mut connection_keep_alive = false;
    let mut expect_continue = false;
    for h in req.headers.iter() {
        let name = h.name.to_ascii_lowercase();
        match name.as_str() {
            "content-length" => {
                let n = parse_content_length(h.value)?;
                if content_length.is_some_and(|m| m != n) {
                    return Err(HeadError::Malformed("conflicting Content-Length headers"));
                }
                content_length = Some(n);
            }
            "transfer-encoding" => return Err(HeadError::LengthRequired),
            "connection" => {
                for token in h.value.split(|&b| b == b',') {
                    let token = token.trim_ascii();
                    connection_close |= token.eq_ignore_ascii_case(b"close");
                    connection_keep_alive |= token.eq_ignore_ascii_case(b"keep-alive");
                }
            }
            "expect" => {
                if h.value.trim_ascii().eq_ignore_ascii_case(b"100-continue") {
                    expect_continue = true;
                } else {
                    return Err(HeadError::Malformed("unsupported Expect header"));
                }
            }
            _ => {}
        }
        headers.push((name, h.value.to_vec()));
    }
    let content_length = content_length.unwrap_or(0);
    if content_length > body_bytes_max {
        return Err(HeadError::BodyTooLarge { limit: body_bytes_max });
    }
    let keep_alive = if version_minor == 1 { !connection_close } else { connection_keep_alive && !connection_close };
    Ok(Some(Head {
        method,
        path,
        query,
        version_minor,
        headers,
        head_bytes,
        content_length,
        keep_alive,
        expect_continue: expect_continue && version_minor == 1 && content_length > 0,
    }))
}

fn error_text(e: httparse::Error) -> &'static str {
    match e {
        httparse::Error::HeaderName => "invalid header name",
        httparse::Error::HeaderValue => "invalid header value",
        httparse::Error::NewLine => "invalid line ending",
        httparse::Error::Status => "invalid status",
        httparse::Error::Token => "invalid token in the request line",
        httparse::Error::TooManyHeaders => "too many headers",
        httparse::Error::Version => "unsupported HTTP version",
    }
}

fn parse_content_length(value: &[u8]) -> Result<usize, HeadError> {
    let value = value.trim_ascii();
    if value.is_empty() || value.len() > 18 || !value.iter().all(u8::is_ascii_digit) {
        return Err(HeadError::Malformed("invalid Content-Length"));
    }
    Ok(value.iter().fold(0usize, |n, d| n * 10 + usize::from(d - b'0')))
}

/// Splits an origin-form (`/p?q`), absolute-form (`http://h/p?q`) or asterisk-form (`*`) target.
fn split_target(target: &str) -> Result<(String, Option<String>), HeadError> {
    let rest = if target.starts_with('/') || target == "*" {
        target
    } else if let Some(after) = target.strip_prefix("http://").or_else(|| target.strip_prefix("https://")) {
        after.find('/').map_or("/", |i| &after[i..])
    } else {
        return Err(HeadError::Malformed("request target must be a path"));
    };
    let rest = rest.split('#').next().unwrap_or(rest);
    Ok(match rest.split_once('?') {
        Some((path, query)) => (path.to_owned(), Some(query.to_owned())),
        None => (rest.to_owned(), None),
    })
}

/// A complete request, as handlers see it.
#[derive(Debug, Clone)]
pub struct Request {
    pub method: String,
    pub path: String,
    pub query: Option<String>,
    pub headers: Vec<(String, Vec<u8>)>,
    pub body: Vec<u8>,
    pub peer: SocketAddr,
    /// The client as far as the server can tell: the peer, or the address a trusted proxy forwarded.
    pub client: super::client_addr::Client,
    /// Assigned by the server; echoed in `X-Request-Id`.
    pub request_id: String,
}

impl Request {
    /// The first value of a header, by case-insensitive name, if it is UTF-8.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .and_then(|(_, v)| std::str::from_utf8(v).ok())
            .map(str::trim)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The head parser is asked again only when new bytes may end the head, wherever the bytes were split.
    #[test]
    fn a_head_is_parsed_again_only_when_its_end_may_have_come() {
        let head = b"GET /a HTTP/1.1\r\nHost: h\r\nX-Long: aaaaaaaa\r\n\r\n";
        for end in [&b"\r\n\r\n"[..], b"\n\n", b"\n\r\n"] {
            let whole = [&head[..head.len() - 4], end].concat();
            // The end arrives in the new bytes, wherever the earlier look stopped (the end itself split included).
            for scanned in 1..whole.len() {
                assert!(head_may_be_complete(&whole, scanned, 1_024), "{end:?} after {scanned}");
            }
            // Before the end has come, no look asks again.
            for seen in 2..whole.len() {
                for scanned in 1..seen {
                    assert!(!head_may_be_complete(&whole[..seen], scanned, 1_024), "{end:?}: {seen} after {scanned}");
                }
            }
        }
        assert!(head_may_be_complete(b"GE", 0, 1_024), "the first look always asks");
        assert!(head_may_be_complete(&[b'a'; 1_025], 1_024, 1_024), "past the cap: asked, to refuse it");
        assert!(!head_may_be_complete(&[b'a'; 1_024], 1_000, 1_024));
    }

    fn parse(raw: &str) -> Result<Option<Head>, HeadError> {
        parse_head(raw.as_bytes(), 1_024, 8, 100)
    }

    #[track_caller]
    fn check_err(raw: &str, expected: HeadError) {
        assert_eq!(parse(raw), Err(expected));
    }

    #[test]
    fn complete_post() {
        let raw =
            "POST /service?x=1 HTTP/1.1\r\nHost: a\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}";
        let head = parse(raw).expect("ok").expect("complete");
        assert_eq!(head.method, "POST");
        assert_eq!(head.path, "/service");
        assert_eq!(head.query.as_deref(), Some("x=1"));
        assert_eq!(head.content_length, 2);
        assert_eq!(head.head_bytes, raw.len() - 2);
        assert!(head.keep_alive);
        assert_eq!(head.headers[1], ("content-type".to_string(), b"application/json".to_vec()));
    }

    #[test]
    fn incomplete_is_not_an_error() {
        let raw = "GET /health HTTP/1.1\r\nHost: a\r\n\r\n";
        for end in 0..raw.len() {
            assert_eq!(parse(&raw[..end]), Ok(None), "prefix of {end} bytes");
        }
    }

    #[test]
    fn keep_alive_rules() {
        let ka = |raw: &str| parse(raw).expect("ok").expect("complete").keep_alive;
        assert!(ka("GET / HTTP/1.1\r\n\r\n"));
        assert!(!ka("GET / HTTP/1.1\r\nConnection: close\r\n\r\n"));
        assert!(!ka("GET / HTTP/1.0\r\n\r\n"));
        assert!(ka("GET / HTTP/1.0\r\nConnection: Keep-Alive\r\n\r\n"));
    }

    #[test]
    fn targets() {
        let path = |raw: &str| parse(raw).expect("ok").expect("complete").path;
        assert_eq!(path("GET http://example.com/health?x HTTP/1.1\r\n\r\n"), "/health");
        assert_eq!(path("GET http://example.com HTTP/1.1\r\n\r\n"), "/");
        assert_eq!(path("OPTIONS * HTTP/1.1\r\n\r\n"), "*");
        check_err("GET health HTTP/1.1\r\n\r\n", HeadError::Malformed("request target must be a path"));
    }

    #[test]
    fn refusals() {
        check_err("GET / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n", HeadError::LengthRequired);
        check_err("POST / HTTP/1.1\r\nContent-Length: 101\r\n\r\n", HeadError::BodyTooLarge { limit: 100 });
        check_err("POST / HTTP/1.1\r\nContent-Length: -1\r\n\r\n", HeadError::Malformed("invalid Content-Length"));
        check_err(
            "POST / HTTP/1.1\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n",
            HeadError::Malformed("conflicting Content-Length headers"),
        );
        check_err(
            "POST / HTTP/1.1\r\nContent-Length: 99999999999999999999\r\n\r\n",
            HeadError::Malformed("invalid Content-Length"),
        );
        check_err("GET / HTTP/1.1\r\nExpect: magic\r\n\r\n", HeadError::Malformed("unsupported Expect header"));
        check_err("GET / HTTP/2.0\r\n\r\n", HeadError::Malformed("unsupported HTTP version"));
        let many: String = (0..9).map(|i| format!("X-{i}: v\r\n")).collect();
        check_err(&format!("GET / HTTP/1.1\r\n{many}\r\n"), HeadError::TooManyHeaders { limit: 8 });
        let long = format!("GET /{} HTTP/1.1\r\n", "a".repeat(1_100));
        check_err(&long, HeadError::HeadTooLarge { limit: 1_024 });
    }

    #[test]
    fn expect_continue_only_with_a_body() {
        let head = parse("POST / HTTP/1.1\r\nExpect: 100-continue\r\nContent-Length: 5\r\n\r\n").expect("ok");
        assert!(head.expect("complete").expect_continue);
        let head = parse("GET / HTTP/1.1\r\nExpect: 100-continue\r\n\r\n").expect("ok");
        assert!(!head.expect("complete").expect_continue);
    }
}
