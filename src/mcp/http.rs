//! MCP over Streamable HTTP at the server's `/mcp`, paid per tool call with x402.
//!
//! The transport is MCP's Streamable HTTP (revision 2026-07-28, and 2025-11-25 / 2025-06-18 for clients of the
//! `initialize` era): one JSON-RPC message per POST, every request answered with one `application/json` message
//! (no SSE: every answer is one message), a notification with 202. No sessions: a handshake-era request names its
//! version in `MCP-Protocol-Version`, a 2026-07-28 request carries it in `params._meta` and the header must agree
//! (as must `Mcp-Method` and `Mcp-Name`); `Mcp-Session-Id` is neither minted nor read. A browser `Origin` must be
//! the public URL's, a loopback one or a configured one (DNS-rebinding guard). The messages themselves are
//! `Session`'s, as over stdio.
//!
//! Payment follows the x402 MCP transport (x402 v2, `specs/transports-v2/mcp.md`): `initialize`, `server/discover`
//! and `tools/list` are free; a `tools/call` is read first (bad arguments cost nothing), then its payment in
//! `params._meta["x402/payment"]` goes through the gate (`Gate::admit_call`: local checks, replay guard,
//! facilitator, ledger), then `Gate::serve` runs the tool, signs the answer and settles the payment; the
//! settlement travels in the result's `_meta["x402/payment-response"]`. Payment required (none, refused, or a
//! settlement that failed: the answer is then withheld) is a tool result with `isError` and the `PaymentRequired`
//! object as its structured content and text, or the `payment_required` result of the `org.x402/payment` extension
//! for a client that advertises it.

use serde_json::{Map, Value};

use super::tools::{failed, Job, Parts};
use super::{
    RpcError, Session, ToolResult, Tools, HANDSHAKE_VERSIONS, INVALID_REQUEST, META_PROTOCOL_VERSION, METHOD_NOT_FOUND,
    MODERN_VERSIONS, PARSE_ERROR, UNSUPPORTED_PROTOCOL_VERSION,
};
use crate::http::{Request, Response};
use crate::x402::{Admission, Call, Carried, Gate, Refusal, Resource, Unserved};

/// Where a client puts its payment, and where the settlement comes back (x402 MCP transport).
pub const PAYMENT_META: &str = "x402/payment";
pub const PAYMENT_RESPONSE_META: &str = "x402/payment-response";

/// MCP's code for request headers that do not match the body (2026-07-28).
pub const HEADER_MISMATCH: i64 = -32_020;

/// What `/mcp` answers a preflight with: the headers MCP clients send.
pub const ALLOW_HEADERS: &str = "Content-Type, Accept, MCP-Protocol-Version, Mcp-Method, Mcp-Name, Mcp-Session-Id, \
                                 Last-Event-ID";

/// What the door runs on, borrowed from the server.
pub struct Door<'a> {
    pub parts: Parts<'a>,
    pub gate: &'a Gate,
    /// What `tools/list` answers.
    pub definitions: &'a [Value],
    /// The resource each paid tool's challenge names, by tool.
    pub resources: &'a [(&'static str, Resource)],
    /// `Origin`s allowed besides loopback ones: the public URL's and the configured ones (`*`: every origin).
    pub origins: &'a Origins,
}

/// A paid call's payer and whether it was served, for the server's record of its callers.
pub type Payer = Option<(String, bool)>;

/// Answers one request to `/mcp` (any method), and says who paid, if someone did.
pub fn handle(door: &Door<'_>, req: &Request) -> (Response, Payer) {
    if let Err(e) = check_origin(req, door.origins) {
        return (rpc_error(403, &e), None);
    }
    match req.method() {
        "POST" => post(door, req),
        "OPTIONS" => (preflight(), None),
        // No standalone SSE stream and no sessions to end (2026-07-28 answers both with 405; earlier revisions
        // allow it).
        _ => {
            let e = RpcError::new(
                INVALID_REQUEST,
                format!("method {} is not allowed at /mcp; POST a message", req.method()),
            );
            (rpc_error(405, &e).header("Allow", "POST, OPTIONS"), None)
        }
    }
}

fn post(door: &Door<'_>, req: &Request) -> (Response, Payer) {
    if let Err(e) = req.require_json() {
        return (rpc_error(e.status, &RpcError::new(INVALID_REQUEST, e.message)), None);
    }
    let message = match super::parse(req.body()) {
        Ok(m) => m,
        Err(e) => return (rpc_error(400, &e), None),
    };
    let modern = version_in_body(&message).is_some();
    let handshake = match era_of(req, &message, modern) {
        Ok(h) => h,
        Err(e) => return (rpc_error(400, &e), None),
    };
    let tools = Paid { door, req, payer: std::cell::RefCell::new(None) };
    let answer = Session::stateless(&tools, handshake, door.gate.terms().is_some()).handle_value(message);
    let payer = tools.payer.into_inner();
    let Some(answer) = answer else {
        // A notification, or a response to a request this server never sends.
        return (Response::new(202, "application/json", Vec::new()), payer);
    };
    let status = match answer.pointer("/error/code").and_then(Value::as_i64) {
        Some(PARSE_ERROR | INVALID_REQUEST | UNSUPPORTED_PROTOCOL_VERSION | HEADER_MISMATCH) => 400,
        Some(METHOD_NOT_FOUND) if modern => 404,
        _ => 200,
    };
    (Response::json(status, &answer), payer)
}

/// The handshake-era version a request is served under (`None`: a 2026-07-28 request, an `initialize`, or a message
/// that is not a request), after the headers are checked against the body.
fn era_of(req: &Request, message: &Value, modern: bool) -> Result<Option<&'static str>, RpcError> {
    let (Some(method), Some(_)) = (message.get("method").and_then(Value::as_str), message.get("id")) else {
        // Notifications and responses carry no version requirement; the session answers what is malformed.
        return Ok(None);
    };
    let header = req.header("mcp-protocol-version");
    if modern {
        let in_body = version_in_body(message).and_then(Value::as_str);
        if header.is_none() || in_body != header {
            return Err(mismatch("MCP-Protocol-Version", header, in_body));
        }
        if req.header("mcp-method") != Some(method) {
            return Err(mismatch("Mcp-Method", req.header("mcp-method"), Some(method)));
        }
        if matches!(method, "tools/call" | "resources/read" | "prompts/get") {
            let key = if method == "resources/read" { "uri" } else { "name" };
            let in_body = message.pointer(&format!("/params/{key}")).and_then(Value::as_str);
            let named = req.header("mcp-name").map(decode_header_value);
            if named.as_ref().and_then(|n| n.as_deref()) != in_body || in_body.is_none() {
                return Err(mismatch("Mcp-Name", req.header("mcp-name"), in_body));
            }
        }
        return Ok(None);
    }
    if method == "initialize" {
        return Ok(None);
    }
    match header {
        Some(v) => match HANDSHAKE_VERSIONS.iter().find(|h| **h == v) {
            Some(version) => Ok(Some(version)),
            // A 2026-07-28 header on a body without the envelope.
            None if MODERN_VERSIONS.contains(&v) => {
                Err(mismatch("MCP-Protocol-Version", Some(v), None))
            }
            None => Err(super::unsupported_version(v)),
        },
        // 2026-07-28's Server Validation: a missing MCP-Protocol-Version is a HeaderMismatch (this server does not
        // serve the revisions before 2025-06-18 that had no header).
        None => Err(RpcError::new(
            HEADER_MISMATCH,
            format!(
                "a request needs the MCP-Protocol-Version header (after initialize) or params._meta[{META_PROTOCOL_VERSION:?}]"
            ),
        )),
    }
}

/// The 2026-07-28 envelope's protocol version, if the message has one.
fn version_in_body(message: &Value) -> Option<&Value> {
    message.get("params")?.get("_meta")?.get(META_PROTOCOL_VERSION)
}

fn mismatch(header: &str, sent: Option<&str>, body: Option<&str>) -> RpcError {
    RpcError::new(HEADER_MISMATCH, format!("Header mismatch: {header} is {sent:?} but the request body says {body:?}"))
}

/// A header value as MCP encodes it: plain, or `=?base64?<standard base64 of UTF-8>?=`; `None` if the encoding is
/// broken.
pub fn decode_header_value(value: &str) -> Option<String> {
    match value.strip_prefix("=?base64?").and_then(|v| v.strip_suffix("?=")) {
        Some(encoded) => String::from_utf8(crate::codec::base64_decode(encoded)?).ok(),
        None => Some(value.to_owned()),
    }
}

/// A request with no `Origin` (not a browser's) or one allowed origin may go on. A browser sends one `Origin`; a
/// request with several is refused, since which of them would be checked is a guess another reader could make
/// differently (only the first was read), and so is one that is not UTF-8.
fn check_origin(req: &Request, allowed: &Origins) -> Result<(), RpcError> {
    let mut origins = req.headers().iter().filter(|(name, _)| name.eq_ignore_ascii_case("origin"));
    let Some((_, first)) = origins.next() else { return Ok(()) };
    if origins.next().is_some() {
        return Err(RpcError::new(INVALID_REQUEST, "a request may carry one Origin header, not several"));
    }
    let Ok(origin) = std::str::from_utf8(first) else {
        return Err(RpcError::new(INVALID_REQUEST, "the Origin header is not UTF-8"));
    };
    let origin = origin.trim();
    if origin_allowed(origin, allowed) {
        Ok(())
    } else {
        Err(RpcError::new(INVALID_REQUEST, format!("Origin {origin:?} may not call this endpoint")))
    }
}

/// The origins `/mcp` allows besides loopback ones, as compared: as a browser serializes them
/// (`urls::serialized_origin`: lowercase, the host as a browser reads it, without a scheme's default port, so a
/// public URL written `https://host:443` is the origin `https://host`). Made once, with the door.
#[derive(Debug, Clone, Default)]
pub struct Origins(Vec<String>);

impl Origins {
    pub fn new(list: impl IntoIterator<Item = String>) -> Origins {
        Origins(list.into_iter().map(|o| if o == "*" { o } else { comparable(&o) }).collect())
    }
}

/// An origin as compared: an http(s) one as a browser serializes it, another (an extension's `chrome-extension://id`)
/// lowercase, as written.
fn comparable(origin: &str) -> String {
    crate::urls::serialized_origin(origin).unwrap_or_else(|| origin.to_ascii_lowercase())
}

/// Whether a browser `Origin` may call: a listed one (or `*`), or a loopback one (a page the user serves on this
/// machine; a rebinding attacker's page keeps its own origin). Origins are compared as browsers serialize them.
pub fn origin_allowed(origin: &str, allowed: &Origins) -> bool {
    if allowed.0.iter().any(|a| a == "*") {
        return true;
    }
    // An origin is `scheme://host[:port]` alone.
    let alone = origin.split_once("://").is_some_and(|(_, rest)| !rest.contains(['/', '\\', '?', '#', '@']));
    let compared = comparable(origin);
    alone
        && (allowed.0.contains(&compared)
            || crate::urls::host(&compared).is_some_and(|h| matches!(h.as_str(), "localhost" | "127.0.0.1" | "[::1]")))
}

fn rpc_error(status: u16, e: &RpcError) -> Response {
    Response::json(status, &e.to_json(&Value::Null))
}

fn preflight() -> Response {
    Response::new(204, "text/plain", Vec::new())
        .header("Access-Control-Allow-Methods", "POST, OPTIONS")
        .header("Access-Control-Allow-Headers", ALLOW_HEADERS)
        .header("Access-Control-Max-Age", "86400")
}

/// The tools of one request, behind the gate.
struct Paid<'d, 'a> {
    door: &'d Door<'a>,
    req: &'d Request,
    payer: std::cell::RefCell<Payer>,
}

impl Paid<'_, '_> {
    fn resource(&self, tool: &str) -> Option<&Resource> {
        self.door.resources.iter().find(|(t, _)| *t == tool).map(|(_, r)| r)
    }

    /// A refused call: payment required (the tool-result binding; `Session` turns it into the extension's result
    /// for a client that asks; a failed settlement's response in `_meta` with either), or the error, with
    /// `Retry-After` as `retry_after_s` (a tool result has no headers).
    fn refused(&self, refusal: Refusal, resource: &Resource) -> ToolResult {
        match refusal {
            Refusal::Challenge { terms, error, settlement, .. } => {
                let required = self.door.gate.payment_required(&terms, resource, error.as_ref());
                let mut result = ToolResult::payment_required(required);
                if let Some(settlement) = settlement {
                    result.meta.insert(PAYMENT_RESPONSE_META.into(), settlement.response);
                }
                result
            }
            Refusal::Error(e) => {
                let after = e.headers.iter().find(|(n, _)| *n == "Retry-After").map(|(_, s)| s.parse().unwrap_or(0u64));
                failed(&match after {
                    Some(seconds) => e.detail("retry_after_s", seconds),
                    None => e,
                })
            }
        }
    }
}

impl Tools for Paid<'_, '_> {
    fn list(&self) -> Vec<Value> {
        self.door.definitions.to_vec()
    }

    fn call(&self, name: &str, arguments: &Map<String, Value>, meta: &Map<String, Value>) -> Option<ToolResult> {
        let job = match Job::parse(name, arguments)? {
            Ok(job) => job,
            Err(e) => return Some(failed(&e)),
        };
        let Some(resource) = self.resource(job.tool()) else {
            return Some(failed(&crate::error::ApiError::internal()));
        };
        // A search that extracts several pages, when the operator prices the pages past the first.
        let config = self.door.parts.config;
        let pages = if let Job::Search(search) = &job { search.extract } else { 0 };
        let priced = resource.for_pages(config.price_atomic, config.extract_page_price_atomic, pages);
        let resource = priced.as_ref().unwrap_or(resource);
        let gate = self.door.gate;
        let call = Call {
            payment: meta.get(PAYMENT_META).map(Carried::Object),
            client: self.req.client,
            request_id: &self.req.request_id,
        };
        let admission = match gate.admit_call(&call, resource) {
            Ok(a) => a,
            Err(refusal) => return Some(self.refused(refusal, resource)),
        };
        let payer = match &admission {
            Admission::Paid(pending) => Some(pending.payer()),
            Admission::Free(_) => None,
        };
        let parts = &self.door.parts;
        let served = gate.serve(admission, resource, || {
            parts
                .run(&job, (crate::http::client_addr::key(self.req.client.ip), &self.req.request_id))
                .map(|a| parts.signed(a))
        });
        *self.payer.borrow_mut() = payer.map(|p| (p, served.is_ok()));
        Some(match served {
            Ok((mut result, settlement)) => {
                if let Some(settlement) = settlement {
                    result.meta.insert(PAYMENT_RESPONSE_META.into(), settlement.response);
                }
                result
            }
            Err(Unserved::Failed(e)) => failed(&e),
            Err(Unserved::Withheld(refusal)) => self.refused(*refusal, resource),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn origins() {
        let listed = Origins::new(["https://search.example".to_owned()]);
        for ok in [
            "https://search.example",
            "HTTPS://Search.Example",
            "http://localhost:6274",
            "http://127.0.0.1",
            "http://[::1]:8080",
            "https://localhost",
            // Issue 33, finding 9: a default port is no port.
            "https://search.example:443",
            "http://localhost:80",
        ] {
            assert!(origin_allowed(ok, &listed), "{ok}");
        }
        // A public URL written with its default port matches what browsers send, which has none.
        let written = Origins::new(["https://search.example:443".to_owned(), "http://plain.example:80".to_owned()]);
        for ok in ["https://search.example", "http://plain.example", "https://search.example:443"] {
            assert!(origin_allowed(ok, &written), "{ok}");
        }
        for refused in ["http://search.example", "https://plain.example", "https://search.example:4430"] {
            assert!(!origin_allowed(refused, &written), "{refused}");
        }
        for refused in [
            "https://evil.example",
            "http://localhost.evil.example",
            "http://127.0.0.1.nip.io",
            "http://localhost:x",
            "null",
            "file://",
            "http://[::1]x",
            "https://search.example:444",
        ] {
            assert!(!origin_allowed(refused, &listed), "{refused}");
        }
        // Issue 41: hosts as a browser reads them; an origin of another scheme as written.
        let idn = Origins::new(["https://Bücher.example".to_owned(), "chrome-extension://AbC".to_owned()]);
        for ok in [
            "https://xn--bcher-kva.example",
            "https://BÜCHER.example:443",
            "chrome-extension://abc",
            "http://127.1:8080",
            "http://ｌocalhost",
        ] {
            assert!(origin_allowed(ok, &idn), "{ok}");
        }
        for refused in [
            "https://bucher.example",
            "chrome-extension://abd",
            "https://xn--bcher-kva.example/x",
            "http://u@localhost",
        ] {
            assert!(!origin_allowed(refused, &idn), "{refused}");
        }
        assert!(origin_allowed("https://anything.example", &Origins::new(["*".to_owned()])));
        assert!(origin_allowed("https://anything.example", &Origins::new(["HTTPS://Anything.Example:443".to_owned()])));
    }

    /// The doc of `check_origin` says a non-UTF-8 `Origin` is refused; it was read lossily, so with `*` allowed it
    /// passed.
    #[test]
    fn an_origin_that_is_not_utf8_is_refused() {
        let request = |origin: &[u8]| {
            let wire =
                [&b"POST /mcp HTTP/1.1\r\nHost: a\r\nOrigin: "[..], origin, b"\r\nContent-Length: 0\r\n\r\n"].concat();
            let peer: std::net::SocketAddr = "192.0.2.7:40000".parse().unwrap();
            let client = crate::http::client_addr::Client { ip: peer.ip(), local: false };
            let id = crate::http::RequestId::from_bits(1);
            Request::from_wire(wire, peer, client, id).unwrap()
        };
        let every = Origins::new(["*".to_owned()]);
        assert!(check_origin(&request(b"https://a.example"), &every).is_ok());
        let refused = check_origin(&request(b"https://\xffa.example"), &every).unwrap_err();
        assert!(refused.message.contains("not UTF-8"), "{}", refused.message);
    }

    #[test]
    fn header_values_decode() {
        assert_eq!(decode_header_value("web_search").as_deref(), Some("web_search"));
        assert_eq!(decode_header_value("=?base64?SGVsbG8sIOS4lueVjA==?=").as_deref(), Some("Hello, 世界"));
        assert_eq!(decode_header_value("=?base64?!!?="), None);
        assert_eq!(decode_header_value("=?base64?/w==?="), None, "not UTF-8");
    }
}
