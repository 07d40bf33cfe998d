//! Request heads off the wire: a pure function over the bytes received so far, built on `httparse`. Incomplete input
//! is an ordinary answer (`Ok(None)`), never an error; every limit is checked here, before anything is allocated
//! for the body.
//!
//! Parsing allocates nothing: a `Head` is offsets into the bytes it was parsed from (the method, the target, each
//! header field's name and value, in a fixed array of `HEADERS_CAP` slots), and a `Request` keeps those bytes (the
//! connection's input buffer, lent to it) and reads its parts through them.

use std::mem::MaybeUninit;
use std::net::SocketAddr;

use super::client_addr::Client;

/// Header fields a head may carry at most, whatever the configuration (`WEBSEARCHD_HEADERS_MAX` goes up to it): the
/// parser's slots and the head's spans are arrays of this size, on the stack or inside the request.
pub const HEADERS_CAP: usize = 256;
/// The longest head, whatever the configuration (`WEBSEARCHD_HEADER_BYTES_MAX` goes up to it): an offset into a head
/// and a length within one fit in a `u16`.
pub const HEAD_BYTES_CAP: usize = 65_536;

/// A part of a head: `len` bytes from `start`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
struct Span {
    start: u16,
    len: u16,
}

impl Span {
    /// The span of `part`, a slice of `base` (as httparse returns them).
    fn of(base: &[u8], part: &[u8]) -> Result<Span, HeadError> {
        if part.is_empty() {
            // An empty part need not point into `base`.
            return Ok(Span::default());
        }
        let start = (part.as_ptr() as usize).wrapping_sub(base.as_ptr() as usize);
        let too_large = HeadError::HeadTooLarge { limit: HEAD_BYTES_CAP };
        Ok(Span {
            start: u16::try_from(start).map_err(|_| too_large.clone())?,
            len: u16::try_from(part.len()).map_err(|_| too_large)?,
        })
    }

    fn get(self, bytes: &[u8]) -> &[u8] {
        let start = usize::from(self.start);
        bytes.get(start..start + usize::from(self.len)).unwrap_or_default()
    }

    /// As text: the parts a `Span` is made of are ASCII tokens or, for a target, checked by httparse (no control
    /// characters, no spaces), so this is only `""` for bytes httparse let through that are not UTF-8.
    fn str(self, bytes: &[u8]) -> &str {
        std::str::from_utf8(self.get(bytes)).unwrap_or_default()
    }
}

/// One header field: its name as sent and its value (without the surrounding whitespace).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
struct Field {
    name: Span,
    value: Span,
}

/// What the server needs to frame a request, before its body has come.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Framing {
    /// Bytes of the request line and headers, including the blank line.
    pub head_bytes: usize,
    pub content_length: usize,
    pub keep_alive: bool,
    pub expect_continue: bool,
}

impl Framing {
    /// Bytes of the whole request, head and body.
    pub fn total_bytes(&self) -> usize {
        self.head_bytes + self.content_length
    }
}

/// A parsed request line and headers, as offsets into the bytes parsed, with the framing decisions already made.
#[derive(Clone, PartialEq, Eq)]
pub struct Head {
    method: Span,
    /// The path of the request target, without the query; absolute-form targets are reduced to it.
    path: Span,
    query: Option<Span>,
    /// 0 for HTTP/1.0, 1 for HTTP/1.1.
    pub version_minor: u8,
    fields: [Field; HEADERS_CAP],
    fields_len: u16,
    pub framing: Framing,
}

impl std::fmt::Debug for Head {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Head")
            .field("method", &self.method)
            .field("path", &self.path)
            .field("query", &self.query)
            .field("version_minor", &self.version_minor)
            .field("fields", &self.fields())
            .field("framing", &self.framing)
            .finish()
    }
}

impl Head {
    fn fields(&self) -> &[Field] {
        self.fields.get(..usize::from(self.fields_len)).unwrap_or_default()
    }

    /// The method, from the bytes this head was parsed from.
    pub fn method<'a>(&self, bytes: &'a [u8]) -> &'a str {
        self.method.str(bytes)
    }

    pub fn path<'a>(&self, bytes: &'a [u8]) -> &'a str {
        self.path.str(bytes)
    }

    pub fn query<'a>(&self, bytes: &'a [u8]) -> Option<&'a str> {
        self.query.map(|q| q.str(bytes))
    }

    /// The header fields, from the bytes this head was parsed from.
    pub fn headers<'a>(&'a self, bytes: &'a [u8]) -> Headers<'a> {
        Headers { bytes, fields: self.fields() }
    }
}

/// The header fields of a head, in the order sent: names as sent (compare them ignoring ASCII case), values as sent
/// without the surrounding whitespace.
#[derive(Debug, Clone, Copy)]
pub struct Headers<'a> {
    bytes: &'a [u8],
    fields: &'a [Field],
}

impl<'a> Headers<'a> {
    pub fn iter(&self) -> impl DoubleEndedIterator<Item = (&'a str, &'a [u8])> + ExactSizeIterator + 'a {
        let bytes = self.bytes;
        self.fields.iter().map(move |f| (f.name.str(bytes), f.value.get(bytes)))
    }

    pub fn len(&self) -> usize {
        self.fields.len()
    }

    pub fn is_empty(&self) -> bool {
        self.fields.is_empty()
    }

    /// The first value of a header, by case-insensitive name, if it is UTF-8, trimmed.
    pub fn get(&self, name: &str) -> Option<&'a str> {
        self.iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .and_then(|(_, v)| std::str::from_utf8(v).ok())
            .map(str::trim)
    }
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

/// Parses the head at the start of `buf`. `Ok(None)`: more bytes are needed. Allocates nothing: the parser's slots
/// are on the stack and the head is offsets into `buf`.
pub fn parse_head(
    buf: &[u8],
    header_bytes_max: usize,
    headers_max: usize,
    body_bytes_max: usize,
) -> Result<Option<Head>, HeadError> {
    let header_bytes_max = header_bytes_max.min(HEAD_BYTES_CAP);
    let headers_max = headers_max.min(HEADERS_CAP);
    let mut slots = [const { MaybeUninit::<httparse::Header<'_>>::uninit() }; HEADERS_CAP];
    let slots = slots.get_mut(..headers_max).unwrap_or_default();
    let mut req = httparse::Request::new(&mut []);
    let head_bytes = match req.parse_with_uninit_headers(buf, slots) {
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
    let method = req.method.ok_or(HeadError::Malformed("no method"))?;
    let target = req.path.ok_or(HeadError::Malformed("no request target"))?;
    let version_minor = req.version.ok_or(HeadError::Malformed("no version"))?;
    let (path, query) = split_target(target)?;

    let mut fields = [Field::default(); HEADERS_CAP];
    let mut content_length: Option<u64> = None;
    let mut connection_close = false;
    let mut connection_keep_alive = false;
    let mut expect_continue = false;
    for (slot, h) in fields.iter_mut().zip(req.headers.iter()) {
        let name = h.name;
        if name.eq_ignore_ascii_case("content-length") {
            let n = parse_content_length(h.value)?;
            if content_length.is_some_and(|m| m != n) {
                return Err(HeadError::Malformed("conflicting Content-Length headers"));
            }
            content_length = Some(n);
        } else if name.eq_ignore_ascii_case("transfer-encoding") {
            return Err(HeadError::LengthRequired);
        } else if name.eq_ignore_ascii_case("connection") {
            for token in h.value.split(|&b| b == b',') {
                let token = token.trim_ascii();
                connection_close |= token.eq_ignore_ascii_case(b"close");
                connection_keep_alive |= token.eq_ignore_ascii_case(b"keep-alive");
            }
        } else if name.eq_ignore_ascii_case("expect") {
            if h.value.trim_ascii().eq_ignore_ascii_case(b"100-continue") {
                expect_continue = true;
            } else {
                return Err(HeadError::Malformed("unsupported Expect header"));
            }
        }
        *slot = Field { name: Span::of(buf, name.as_bytes())?, value: Span::of(buf, h.value)? };
    }
    let content_length = usize::try_from(content_length.unwrap_or(0))
        .ok()
        .filter(|&n| n <= body_bytes_max)
        .ok_or(HeadError::BodyTooLarge { limit: body_bytes_max })?;
    let keep_alive = if version_minor == 1 { !connection_close } else { connection_keep_alive && !connection_close };
    Ok(Some(Head {
        method: Span::of(buf, method.as_bytes())?,
        path: Span::of(buf, path.as_bytes())?,
        query: query.map(|q| Span::of(buf, q.as_bytes())).transpose()?,
        version_minor,
        fields,
        fields_len: u16::try_from(req.headers.len()).map_err(|_| HeadError::TooManyHeaders { limit: headers_max })?,
        framing: Framing {
            head_bytes,
            content_length,
            keep_alive,
            expect_continue: expect_continue && version_minor == 1 && content_length > 0,
        },
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

/// Digits of a `Content-Length` at most: any such number fits in a `u64` (a `usize` has 32 bits on armv7, where a
/// longer length wrapped to a small one and the rest of its body was read as the next request).
const CONTENT_LENGTH_DIGITS_MAX: usize = 18;

fn parse_content_length(value: &[u8]) -> Result<u64, HeadError> {
    let value = value.trim_ascii();
    if value.is_empty() || value.len() > CONTENT_LENGTH_DIGITS_MAX || !value.iter().all(u8::is_ascii_digit) {
        return Err(HeadError::Malformed("invalid Content-Length"));
    }
    Ok(value.iter().fold(0u64, |n, d| n * 10 + u64::from(d - b'0')))
}

/// Splits an origin-form (`/p?q`), absolute-form (`http://h/p?q`) or asterisk-form (`*`) target into slices of it.
fn split_target(target: &str) -> Result<(&str, Option<&str>), HeadError> {
    let rest = if target.starts_with('/') || target == "*" {
        target
    } else if let Some(scheme) = ["http://", "https://"].into_iter().find(|s| target.starts_with(s)) {
        let after = target.get(scheme.len()..).unwrap_or_default();
        // Without a path the path is `/`: the scheme's last slash, so that the path stays a slice of the target.
        after.find('/').map_or_else(|| target.get(scheme.len() - 1..scheme.len()).unwrap_or("/"), |i| &after[i..])
    } else {
        return Err(HeadError::Malformed("request target must be a path"));
    };
    let rest = rest.split('#').next().unwrap_or(rest);
    Ok(match rest.split_once('?') {
        Some((path, query)) => (path, Some(query)),
        None => (rest, None),
    })
}

/// A complete request, as handlers see it: the bytes it came in (the connection's input buffer, lent to it: this
/// request's head and body first, then whatever the client pipelined behind it) and its head as offsets into them.
#[derive(Debug, Clone)]
pub struct Request {
    input: Vec<u8>,
    head: Head,
    pub peer: SocketAddr,
    /// The client as far as the server can tell: the peer, or the address a trusted proxy forwarded.
    pub client: Client,
    /// Assigned by the server; echoed in `X-Request-Id`.
    pub request_id: RequestId,
}

impl Request {
    /// The media type the body is declared as: `Content-Type` without its parameters (`charset=utf-8`), trimmed;
    /// compare it ASCII case-insensitively.
    pub fn media_type(&self) -> Option<&str> {
        self.header("content-type").map(|v| v.split(';').next().unwrap_or("").trim())
    }

    /// 415 unless the body is declared as `application/json` (parameters such as `charset=utf-8` are fine).
    pub fn require_json(&self) -> Result<(), crate::error::ApiError> {
        use crate::error::ApiError;
        match self.media_type() {
            Some(t) if t.eq_ignore_ascii_case("application/json") => Ok(()),
            Some(t) => Err(ApiError::new(
                415,
                "unsupported_media_type",
                format!("Content-Type must be application/json, not {t:?}"),
            )),
            None => Err(ApiError::new(415, "unsupported_media_type", "Content-Type: application/json is required")),
        }
    }

    /// A request whose head was parsed from the start of `input`, which holds its body whole.
    pub(crate) fn new(input: Vec<u8>, head: Head, peer: SocketAddr, client: Client, request_id: RequestId) -> Request {
        Request { input, head, peer, client, request_id }
    }

    /// A request from its bytes on the wire, head and body (one a test hands the application directly), parsed with
    /// the widest limits.
    pub fn from_wire(
        input: Vec<u8>,
        peer: SocketAddr,
        client: Client,
        request_id: RequestId,
    ) -> Result<Request, HeadError> {
        let head = parse_head(&input, HEAD_BYTES_CAP, HEADERS_CAP, input.len())?
            .ok_or(HeadError::Malformed("incomplete request head"))?;
        if input.len() < head.framing.total_bytes() {
            return Err(HeadError::Malformed("incomplete request body"));
        }
        Ok(Request::new(input, head, peer, client, request_id))
    }

    pub fn method(&self) -> &str {
        self.head.method(&self.input)
    }

    /// The path of the request target, without the query.
    pub fn path(&self) -> &str {
        self.head.path(&self.input)
    }

    pub fn query(&self) -> Option<&str> {
        self.head.query(&self.input)
    }

    pub fn headers(&self) -> Headers<'_> {
        self.head.headers(&self.input)
    }

    /// The first value of a header, by case-insensitive name, if it is UTF-8, trimmed.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers().get(name)
    }

    pub fn body(&self) -> &[u8] {
        self.input.get(self.head.framing.head_bytes..self.head.framing.total_bytes()).unwrap_or_default()
    }

    pub fn framing(&self) -> Framing {
        self.head.framing
    }

    /// Whether the client sent bytes after this request (pipelined).
    pub(crate) fn more_input(&self) -> bool {
        self.input.len() > self.head.framing.total_bytes()
    }

    /// The input buffer back, without this request's bytes: what the client sent after it (capacity kept, so that the
    /// connection's next reads allocate nothing).
    pub(crate) fn into_rest(self) -> Vec<u8> {
        let mut input = self.input;
        input.drain(..self.head.framing.total_bytes().min(input.len()));
        input
    }
}

/// A request id: 32 lowercase hex digits, kept inline (no allocation per request).
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct RequestId([u8; 32]);

impl RequestId {
    /// From 128 bits.
    pub fn from_bits(bits: u128) -> RequestId {
        let mut id = [b'0'; 32];
        for (i, digit) in id.iter_mut().enumerate() {
            let nibble = (bits >> (4 * (31 - i))) as u8 & 0xf;
            *digit = if nibble < 10 { b'0' + nibble } else { b'a' + nibble - 10 };
        }
        RequestId(id)
    }

    pub fn as_str(&self) -> &str {
        std::str::from_utf8(&self.0).unwrap_or_default()
    }
}

impl std::ops::Deref for RequestId {
    type Target = str;
    fn deref(&self) -> &str {
        self.as_str()
    }
}

impl std::fmt::Display for RequestId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl std::fmt::Debug for RequestId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        std::fmt::Debug::fmt(self.as_str(), f)
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
        let bytes = raw.as_bytes();
        assert_eq!(head.method(bytes), "POST");
        assert_eq!(head.path(bytes), "/service");
        assert_eq!(head.query(bytes), Some("x=1"));
        assert_eq!(head.framing.content_length, 2);
        assert_eq!(head.framing.head_bytes, raw.len() - 2);
        assert!(head.framing.keep_alive);
        assert_eq!(head.headers(bytes).iter().nth(1), Some(("Content-Type", &b"application/json"[..])));
        assert_eq!(head.headers(bytes).get("content-TYPE"), Some("application/json"));
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
        let ka = |raw: &str| parse(raw).expect("ok").expect("complete").framing.keep_alive;
        assert!(ka("GET / HTTP/1.1\r\n\r\n"));
        assert!(!ka("GET / HTTP/1.1\r\nConnection: close\r\n\r\n"));
        assert!(!ka("GET / HTTP/1.0\r\n\r\n"));
        assert!(ka("GET / HTTP/1.0\r\nConnection: Keep-Alive\r\n\r\n"));
    }

    #[test]
    fn targets() {
        let path = |raw: &str| parse(raw).expect("ok").expect("complete").path(raw.as_bytes()).to_owned();
        assert_eq!(path("GET http://example.com/health?x HTTP/1.1\r\n\r\n"), "/health");
        assert_eq!(path("GET http://example.com HTTP/1.1\r\n\r\n"), "/");
        assert_eq!(path("GET https://example.com?q HTTP/1.1\r\n\r\n"), "/");
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
        // Past a 32-bit usize (armv7): too large, not wrapped to 2.
        check_err("POST / HTTP/1.1\r\nContent-Length: 4294967298\r\n\r\n", HeadError::BodyTooLarge { limit: 100 });
        assert_eq!(parse_content_length(b"999999999999999999"), Ok(999_999_999_999_999_999));
        check_err("GET / HTTP/1.1\r\nExpect: magic\r\n\r\n", HeadError::Malformed("unsupported Expect header"));
        check_err("GET / HTTP/2.0\r\n\r\n", HeadError::Malformed("unsupported HTTP version"));
        let many: String = (0..9).map(|i| format!("X-{i}: v\r\n")).collect();
        check_err(&format!("GET / HTTP/1.1\r\n{many}\r\n"), HeadError::TooManyHeaders { limit: 8 });
        let long = format!("GET /{} HTTP/1.1\r\n", "a".repeat(1_100));
        check_err(&long, HeadError::HeadTooLarge { limit: 1_024 });
    }

    /// A request reads its parts from the input it was lent, and gives back what the client sent after it.
    #[test]
    fn a_request_is_its_bytes() {
        let first = "POST /s?q=1 HTTP/1.1\r\nHost: a\r\nX-A: 1\r\nx-a: 2\r\nContent-Length: 3\r\n\r\nabc";
        let next = "GET /next HTTP/1.1\r\n\r\n";
        let peer: SocketAddr = "192.0.2.1:1".parse().expect("addr");
        let client = Client { ip: peer.ip(), local: false };
        let id = RequestId::from_bits(0xfedc_ba98_7654_3210_0123_4567_89ab_cdef);
        let request = Request::from_wire(format!("{first}{next}").into_bytes(), peer, client, id).expect("request");
        assert_eq!((request.method(), request.path(), request.query()), ("POST", "/s", Some("q=1")));
        assert_eq!(request.body(), b"abc");
        assert_eq!(request.header("x-a"), Some("1"));
        assert_eq!(request.headers().iter().filter(|(n, _)| n.eq_ignore_ascii_case("X-A")).count(), 2);
        assert_eq!(request.request_id.as_str(), "fedcba98765432100123456789abcdef");
        assert!(request.more_input());
        assert_eq!(request.into_rest(), next.as_bytes());
        let cut = Request::from_wire(first.as_bytes()[..first.len() - 1].to_vec(), peer, client, id);
        assert_eq!(cut.map(|r| r.body().len()), Err(HeadError::Malformed("incomplete request body")));
    }

    #[test]
    fn expect_continue_only_with_a_body() {
        let head = parse("POST / HTTP/1.1\r\nExpect: 100-continue\r\nContent-Length: 5\r\n\r\n").expect("ok");
        assert!(head.expect("complete").framing.expect_continue);
        let head = parse("GET / HTTP/1.1\r\nExpect: 100-continue\r\n\r\n").expect("ok");
        assert!(!head.expect("complete").framing.expect_continue);
    }
}
