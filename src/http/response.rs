//! Responses as values, and their serialisation to HTTP/1.1 bytes. The server adds the framing headers
//! (`Content-Length`, `Connection`, `Date`, `X-Request-Id`); handlers set the rest.

use std::io::{self, IoSlice, Write};
use std::sync::Arc;

use serde_json::Value;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Response {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl Response {
    pub fn new(status: u16, content_type: &str, body: impl Into<Vec<u8>>) -> Response {
        Response { status, headers: vec![("Content-Type".into(), content_type.into())], body: body.into() }
    }

    /// A JSON body, compact, with a trailing newline so that `curl` output ends cleanly.
    pub fn json(status: u16, value: &Value) -> Response {
        let mut body = serde_json::to_vec(value).unwrap_or_else(|_| b"{}".to_vec());
        body.push(b'\n');
        Response::new(status, "application/json", body).header("Cache-Control", "no-store")
    }

    /// Sets a header, in place of any of the same name (ASCII case-insensitive): a handler's `Cache-Control` replaces
    /// the `no-store` of `Response::json`, where the two lines would combine into one list and `no-store` would win
    /// (the map state and the notary's receipts were sent both, so no cache kept them).
    pub fn header(mut self, name: impl Into<String>, value: impl Into<String>) -> Response {
        let name = name.into();
        self.headers.retain(|(n, _)| !n.eq_ignore_ascii_case(&name));
        self.headers.push((name, value.into()));
        self
    }

    pub fn header_value(&self, name: &str) -> Option<&str> {
        self.headers.iter().find(|(n, _)| n.eq_ignore_ascii_case(name)).map(|(_, v)| v.as_str())
    }

    /// The bytes on the wire. `head_only` answers a HEAD request: the same headers, no body.
    pub fn to_bytes(&self, request_id: &str, keep_alive: bool, head_only: bool, date: &str) -> Vec<u8> {
        let mut out = Vec::with_capacity(FRAMING_BYTES_MAX + 64 * self.headers.len() + self.body.len());
        write_head(&mut out, self.status, &self.headers, self.body.len());
        let _ = write_framing(&mut out, request_id, keep_alive, date);
        if !head_only && has_content(self.status) {
            out.extend_from_slice(&self.body);
        }
        out
    }
}

/// A response that depends on the configuration only (a 402 challenge, a discovery document, a preflight), rendered
/// once: its status line, headers and `Content-Length` as bytes, and its body. Each use splices in what differs per
/// request (`Connection`, `Date`, `X-Request-Id`); nothing is serialised again.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Prepared {
    status: u16,
    head: Box<[u8]>,
    body: Box<[u8]>,
}

impl Prepared {
    pub fn new(response: &Response) -> Prepared {
        let mut head = Vec::with_capacity(64 * (1 + response.headers.len()));
        write_head(&mut head, response.status, &response.headers, response.body.len());
        Prepared { status: response.status, head: head.into(), body: response.body.clone().into() }
    }

    pub fn status(&self) -> u16 {
        self.status
    }

    pub fn body(&self) -> &[u8] {
        &self.body
    }

    /// The bytes on the wire, as `Response::to_bytes` makes them.
    pub fn to_bytes(&self, request_id: &str, keep_alive: bool, head_only: bool, date: &str) -> Vec<u8> {
        let mut out = Vec::with_capacity(self.head.len() + FRAMING_BYTES_MAX + self.body.len());
        out.extend_from_slice(&self.head);
        let _ = write_framing(&mut out, request_id, keep_alive, date);
        if !head_only && has_content(self.status) {
            out.extend_from_slice(&self.body);
        }
        out
    }
}

/// The response's body is moved, not copied (a map layer's document is megabytes).
impl From<Response> for Prepared {
    fn from(response: Response) -> Prepared {
        let mut head = Vec::with_capacity(64 * (1 + response.headers.len()));
        write_head(&mut head, response.status, &response.headers, response.body.len());
        Prepared { status: response.status, head: head.into(), body: response.body.into() }
    }
}

/// What a handler answers: a response built for this request, or one rendered once and shared.
#[derive(Debug, Clone)]
pub enum Reply {
    Built(Response),
    Prepared(Arc<Prepared>),
}

impl Reply {
    pub fn status(&self) -> u16 {
        match self {
            Reply::Built(r) => r.status,
            Reply::Prepared(p) => p.status,
        }
    }

    pub fn to_bytes(&self, request_id: &str, keep_alive: bool, head_only: bool, date: &str) -> Vec<u8> {
        match self {
            Reply::Built(r) => r.to_bytes(request_id, keep_alive, head_only, date),
            Reply::Prepared(p) => p.to_bytes(request_id, keep_alive, head_only, date),
        }
    }
}

impl Reply {
    /// Writes the answer to a non-blocking `stream`: `Ok(None)` when it took all of it; `Ok(Some(unsent))` when it
    /// would block, with what it did not take. A prepared answer goes from its rendered bytes in vectored writes, with
    /// the framing headers on the stack: nothing is allocated or copied unless the socket does not take it all, and
    /// then only the rest of its head: the rest of its body stays shared (`Unsent`).
    pub(crate) fn write_nonblocking(
        &self,
        stream: &mut impl Write,
        request_id: &str,
        keep_alive: bool,
        head_only: bool,
        date: &str,
    ) -> io::Result<Option<Unsent>> {
        let mut framing = [0u8; FRAMING_BYTES_MAX];
        let framing_len = {
            let mut cursor: &mut [u8] = &mut framing;
            let fits = write_framing(&mut cursor, request_id, keep_alive, date).is_ok();
            fits.then(|| FRAMING_BYTES_MAX - cursor.len())
        };
        let (Reply::Prepared(p), Some(framing_len)) = (self, framing_len) else {
            let owned = self.to_bytes(request_id, keep_alive, head_only, date);
            let mut unsent = Unsent { owned, shared: None, written: 0 };
            return Ok((!unsent.write_nonblocking(stream)?).then_some(unsent));
        };
        let framing = framing.get(..framing_len).unwrap_or_default();
        let body: &[u8] = if !head_only && has_content(p.status) { &p.body } else { &[] };
        let mut parts = [IoSlice::new(&p.head), IoSlice::new(framing), IoSlice::new(body)];
        let mut parts = &mut parts[..];
        let mut sent = 0;
        while parts.iter().any(|part| !part.is_empty()) {
            match stream.write_vectored(parts) {
                Ok(0) => return Err(io::ErrorKind::WriteZero.into()),
                Ok(n) => {
                    sent += n;
                    IoSlice::advance_slices(&mut parts, n);
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                    let mut owned = [&p.head[..], framing].concat();
                    let head_sent = sent.min(owned.len());
                    owned.drain(..head_sent);
                    let shared = (!body.is_empty()).then(|| (p.clone(), sent - head_sent));
                    return Ok(Some(Unsent { owned, shared, written: 0 }));
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
        Ok(None)
    }
}

/// What the socket did not take of an answer, for the reactor to write as the client reads: owned bytes (the rest of
/// a built answer, or of a prepared one's head), then the rest of a prepared answer's body from `shared`'s offset,
/// shared with every other reader of it (a slow reader of a map layer's megabytes holds a reference, not a copy).
#[derive(Debug)]
pub(crate) struct Unsent {
    owned: Vec<u8>,
    shared: Option<(Arc<Prepared>, usize)>,
    /// Bytes of `owned`, then of the shared rest, written since.
    written: usize,
}

impl Unsent {
    /// The bytes this answer had left when it was handed over, owned or shared (what `WRITE_PENDING_BYTES_MAX`
    /// counts, as if each were a copy: the bound holds whoever shares them); the same until it is all written.
    pub(crate) fn held(&self) -> usize {
        self.owned.len() + self.shared_rest().len()
    }

    fn shared_rest(&self) -> &[u8] {
        self.shared.as_ref().and_then(|(p, from)| p.body.get(*from..)).unwrap_or_default()
    }

    /// What is left to write, in order.
    pub(crate) fn rest(&self) -> [&[u8]; 2] {
        let shared = self.shared_rest();
        match self.written.checked_sub(self.owned.len()) {
            None => [self.owned.get(self.written..).unwrap_or_default(), shared],
            Some(past) => [&[], shared.get(past..).unwrap_or_default()],
        }
    }

    /// Writes what a non-blocking `stream` takes of the rest; `Ok(true)` when all of it is written.
    pub(crate) fn write_nonblocking(&mut self, stream: &mut impl Write) -> io::Result<bool> {
        loop {
            let n = match self.rest() {
                [[], []] => return Ok(true),
                [[], part] | [part, _] => stream.write(part),
            };
            match n {
                Ok(0) => return Err(io::ErrorKind::WriteZero.into()),
                Ok(n) => self.written += n,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(false),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
    }
}

impl From<Response> for Reply {
    fn from(response: Response) -> Reply {
        Reply::Built(response)
    }
}

impl From<Arc<Prepared>> for Reply {
    fn from(prepared: Arc<Prepared>) -> Reply {
        Reply::Prepared(prepared)
    }
}

/// Bytes of the framing headers the server adds, with the blank line, at most (111 with a 32-digit request id and an
/// IMF-fixdate): the room a prepared answer's have on the stack, and what a serialised answer reserves for them.
const FRAMING_BYTES_MAX: usize = 160;

/// Whether an answer with this status has content, and so `Content-Length` (RFC 9110 6.4.1, 8.6): a 1xx or a 204
/// must not send it, and a 304's would have to be the length of the 200 it stands for.
fn has_content(status: u16) -> bool {
    !matches!(status, 100..=199 | 204 | 304)
}

/// The status line, the handler's headers and `Content-Length`.
fn write_head(out: &mut Vec<u8>, status: u16, headers: &[(String, String)], body_bytes: usize) {
    out.extend_from_slice(b"HTTP/1.1 ");
    push_decimal(out, u64::from(status));
    out.push(b' ');
    out.extend_from_slice(reason(status).as_bytes());
    out.extend_from_slice(b"\r\n");
    for (name, value) in headers {
        // A handler cannot split the response: CR and LF never reach the wire inside a header.
        if !value.contains(['\r', '\n']) && !name.contains(['\r', '\n', ':']) {
            out.extend_from_slice(name.as_bytes());
            out.extend_from_slice(b": ");
            out.extend_from_slice(value.as_bytes());
            out.extend_from_slice(b"\r\n");
        }
    }
    if has_content(status) {
        out.extend_from_slice(b"Content-Length: ");
        push_decimal(out, body_bytes as u64);
        out.extend_from_slice(b"\r\n");
    }
}

/// The per-request part of a head: `Connection`, `Date`, `X-Request-Id` and the blank line.
/// An error only when `out` has no room for them (a buffer on the stack).
fn write_framing(out: &mut impl Write, request_id: &str, keep_alive: bool, date: &str) -> io::Result<()> {
    out.write_all(if keep_alive { b"Connection: keep-alive\r\nDate: " } else { b"Connection: close\r\nDate: " })?;
    out.write_all(date.as_bytes())?;
    out.write_all(b"\r\nX-Request-Id: ")?;
    out.write_all(request_id.as_bytes())?;
    out.write_all(b"\r\n\r\n")
}

/// `n` in decimal, without the formatting machinery.
fn push_decimal(out: &mut Vec<u8>, mut n: u64) {
    let mut digits = [0u8; 20];
    let mut at = digits.len();
    loop {
        at -= 1;
        if let Some(d) = digits.get_mut(at) {
            *d = b'0' + (n % 10) as u8;
        }
        n /= 10;
        if n == 0 || at == 0 {
            break;
        }
    }
    out.extend_from_slice(digits.get(at..).unwrap_or_default());
}

pub fn reason(status: u16) -> &'static str {
    match status {
        100 => "Continue",
        200 => "OK",
        204 => "No Content",
        304 => "Not Modified",
        308 => "Permanent Redirect",
        400 => "Bad Request",
        401 => "Unauthorized",
        402 => "Payment Required",
        403 => "Forbidden",
        404 => "Not Found",
        405 => "Method Not Allowed",
        408 => "Request Timeout",
        409 => "Conflict",
        411 => "Length Required",
        413 => "Content Too Large",
        415 => "Unsupported Media Type",
        429 => "Too Many Requests",
        431 => "Request Header Fields Too Large",
        500 => "Internal Server Error",
        502 => "Bad Gateway",
        503 => "Service Unavailable",
        504 => "Gateway Timeout",
        _ => "",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_header_replaces_one_of_the_same_name() {
        let r = Response::json(200, &Value::Null).header("cache-control", "public, max-age=5");
        let values: Vec<&str> = r
            .headers
            .iter()
            .filter(|(n, _)| n.eq_ignore_ascii_case("Cache-Control"))
            .map(|(_, v)| v.as_str())
            .collect();
        assert_eq!(values, ["public, max-age=5"]);
        assert_eq!(r.header_value("Content-Type"), Some("application/json"));
    }

    #[test]
    fn serialises_with_framing_headers() {
        let r = Response::new(200, "text/plain", "hi").header("X-Evil", "a\r\nSet-Cookie: x");
        let bytes = r.to_bytes("rid1", true, false, "Thu, 01 Jan 1970 00:00:00 GMT");
        let text = String::from_utf8(bytes).expect("utf8");
        assert_eq!(
            text,
            "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 2\r\nConnection: keep-alive\r\n\
             Date: Thu, 01 Jan 1970 00:00:00 GMT\r\nX-Request-Id: rid1\r\n\r\nhi"
        );
        let head = r.to_bytes("rid1", false, true, "d");
        assert!(String::from_utf8(head)
            .expect("utf8")
            .ends_with("Connection: close\r\nDate: d\r\nX-Request-Id: rid1\r\n\r\n"));
    }

    /// A 204 and a 304 have no content: no `Content-Length` (a 204 must not send one, and a 304's would be the
    /// 200's length), and nothing after the head, prepared or built.
    #[test]
    fn no_content_answers_send_no_length() {
        for status in [204, 304] {
            let r = Response::new(status, "text/plain", "stray");
            for bytes in [r.to_bytes("a", true, false, "d"), Prepared::new(&r).to_bytes("a", true, false, "d")] {
                let text = String::from_utf8(bytes).expect("utf8");
                assert!(!text.to_ascii_lowercase().contains("content-length"), "{text}");
                assert!(text.ends_with("X-Request-Id: a\r\n\r\n"), "{text}");
            }
        }
        let redirect = Response::new(308, "text/plain", Vec::new()).to_bytes("a", true, false, "d");
        assert!(String::from_utf8(redirect).expect("utf8").contains("\r\nContent-Length: 0\r\n"));
    }

    /// A prepared response is the built one, byte for byte, whatever is spliced in.
    #[test]
    fn prepared_equals_built() {
        let body = vec![b'x'; 12_345];
        let r = Response::new(402, "application/json", body).header("PAYMENT-REQUIRED", "abc");
        let p = Prepared::new(&r);
        for (id, keep, head_only, date) in
            [("a", true, false, "Thu, 01 Jan 1970 00:00:00 GMT"), ("0123456789abcdef", false, true, "d")]
        {
            assert_eq!(p.to_bytes(id, keep, head_only, date), r.to_bytes(id, keep, head_only, date));
        }
        assert!(String::from_utf8_lossy(&p.to_bytes("a", true, true, "d")).contains("\r\nContent-Length: 12345\r\n"));
        assert_eq!(Reply::from(Arc::new(p)).status(), 402);
    }

    /// A socket that takes `room` bytes, then would block.
    struct Full {
        taken: Vec<u8>,
        room: usize,
    }

    impl Write for Full {
        fn write(&mut self, bytes: &[u8]) -> io::Result<usize> {
            let n = bytes.len().min(self.room - self.taken.len());
            if n == 0 {
                return Err(io::ErrorKind::WouldBlock.into());
            }
            self.taken.extend_from_slice(&bytes[..n]);
            Ok(n)
        }

        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    /// A prepared answer the socket does not take whole: what it took and what is handed back are the answer.
    #[test]
    fn a_prepared_answer_cut_by_a_full_socket_is_handed_back_whole() {
        let r = Response::new(402, "application/json", vec![b'x'; 5_000]).header("PAYMENT-REQUIRED", "abc");
        let wire = r.to_bytes("a", true, false, "d");
        let reply = Reply::Prepared(Arc::new(Prepared::new(&r)));
        for room in [0, 1, 40, wire.len() - 4_000, wire.len() - 1] {
            let mut socket = Full { taken: Vec::new(), room };
            let mut unsent = reply.write_nonblocking(&mut socket, "a", true, false, "d").unwrap().unwrap();
            assert_eq!([&socket.taken[..], &unsent.rest().concat()].concat(), wire, "room {room}");
            assert_eq!(socket.taken.len() + unsent.held(), wire.len(), "room {room}");
            // The rest of the body is the prepared answer's own bytes, not a copy; the rest of the head is owned.
            let body_rest = unsent.shared_rest().as_ptr_range();
            let Reply::Prepared(p) = &reply else { unreachable!() };
            assert!(p.body.as_ptr_range().end == body_rest.end && unsent.owned.len() < 200, "room {room}");
            // Written on as the client reads, a few bytes at a time: the answer, whole.
            for step in [7, 1_000, usize::MAX] {
                socket.room = socket.taken.len().saturating_add(step).min(wire.len());
                let done = unsent.write_nonblocking(&mut socket).unwrap();
                assert_eq!(done, socket.taken.len() == wire.len(), "room {room}");
            }
            assert_eq!(socket.taken, wire, "room {room}");
            assert_eq!(unsent.rest(), [&[] as &[u8], &[]]);
        }
        let mut socket = Full { taken: Vec::new(), room: wire.len() };
        assert!(reply.write_nonblocking(&mut socket, "a", true, false, "d").unwrap().is_none());
    }

    #[test]
    fn decimals() {
        for n in [0, 7, 10, 99, 100, 12_345, u64::MAX] {
            let mut out = Vec::new();
            push_decimal(&mut out, n);
            assert_eq!(out, n.to_string().as_bytes());
        }
    }

    /// Every status the application answers with has its reason phrase (the map's `<map>` redirect is a 308).
    #[test]
    fn statuses_sent_have_their_reason_phrase() {
        for status in [200, 204, 304, 308, 400, 402, 404, 405, 413, 429, 500, 502, 503, 504] {
            assert!(!reason(status).is_empty(), "{status}");
        }
    }
}
