//! Responses as values, and their serialisation to HTTP/1.1 bytes. The server adds the framing headers
//! (`Content-Length`, `Connection`, `Date`, `X-Request-Id`); handlers set the rest.

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

    pub fn header(mut self, name: impl Into<String>, value: impl Into<String>) -> Response {
        self.headers.push((name.into(), value.into()));
        self
    }

    pub fn header_value(&self, name: &str) -> Option<&str> {
        self.headers.iter().find(|(n, _)| n.eq_ignore_ascii_case(name)).map(|(_, v)| v.as_str())
    }

    /// The bytes on the wire. `head_only` answers a HEAD request: the same headers, no body.
    pub fn to_bytes(&self, request_id: &str, keep_alive: bool, head_only: bool, date: &str) -> Vec<u8> {
        let mut out = Vec::with_capacity(256 + self.body.len());
        out.extend_from_slice(format!("HTTP/1.1 {} {}\r\n", self.status, reason(self.status)).as_bytes());
        for (name, value) in &self.headers {
            // A handler cannot split the response: CR and LF never reach the wire inside a header.
            if !value.contains(['\r', '\n']) && !name.contains(['\r', '\n', ':']) {
                out.extend_from_slice(format!("{name}: {value}\r\n").as_bytes());
            }
        }
        let connection = if keep_alive { "keep-alive" } else { "close" };
        out.extend_from_slice(
            format!(
                "Content-Length: {}\r\nConnection: {connection}\r\nDate: {date}\r\nX-Request-Id: {request_id}\r\n\r\n",
                self.body.len()
            )
            .as_bytes(),
        );
        if !head_only {
            out.extend_from_slice(&self.body);
        }
        out
    }
}

pub fn reason(status: u16) -> &'static str {
    match status {
        100 => "Continue",
        200 => "OK",
        204 => "No Content",
        304 => "Not Modified",
        400 => "Bad Request",
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
}
