//! The Model Context Protocol door: JSON-RPC 2.0 messages, one per line, over stdin and stdout (`websearchd mcp`,
//! the way desktop agents and IDEs start local tools). This module is the protocol: framing with a bounded line
//! reader, the JSON-RPC envelope, version negotiation and the methods; what the tools do is `tools`, which calls
//! the same pipeline as `/service` (`app::search_answer`), without payment and without a listening socket.
//!
//! The same protocol is served over Streamable HTTP at the server's `/mcp`, paid per tool call with x402 (`http`).
//!
//! Versions: the stateless revision 2026-07-28 (every request carries its version and the client's capabilities in
//! `params._meta`; `server/discover` advertises the server) and, for clients of the handshake era, `initialize` with
//! 2025-11-25 or 2025-06-18. Requests are answered one at a time, in order; notifications get no answer.

pub mod http;
pub mod tools;

use std::io::{self, BufRead, Write};

use serde_json::{json, Map, Value};

/// Longest message line read, newline excluded; a longer line is skipped to its end and answered with
/// `INVALID_REQUEST` (tool arguments are a query of at most 400 characters or a URL).
pub const LINE_BYTES_MAX: usize = 65_536;

/// Revisions with the per-request envelope (`params._meta`), newest last.
pub const MODERN_VERSIONS: [&str; 1] = ["2026-07-28"];
/// Revisions reached through the `initialize` handshake, newest last; the first with structured tool output
/// (`outputSchema`, `structuredContent`) is 2025-06-18.
pub const HANDSHAKE_VERSIONS: [&str; 2] = ["2025-06-18", "2025-11-25"];

/// The reserved `_meta` keys of 2026-07-28.
pub const META_PROTOCOL_VERSION: &str = "io.modelcontextprotocol/protocolVersion";
const META_CLIENT_CAPABILITIES: &str = "io.modelcontextprotocol/clientCapabilities";
const META_SERVER_INFO: &str = "io.modelcontextprotocol/serverInfo";

/// The x402 MCP extension (`org.x402/payment`): a client that advertises it gets a `payment_required` result
/// instead of a tool error when a call must be paid.
pub const X402_EXTENSION: &str = "org.x402/payment";

/// JSON-RPC 2.0 error codes, and MCP's code for a version it does not serve.
pub const PARSE_ERROR: i64 = -32_700;
pub const INVALID_REQUEST: i64 = -32_600;
pub const METHOD_NOT_FOUND: i64 = -32_601;
pub const INVALID_PARAMS: i64 = -32_602;
pub const UNSUPPORTED_PROTOCOL_VERSION: i64 = -32_022;

const INSTRUCTIONS: &str = "web_search finds ranked organic results (title, url, snippet) from live public sources, \
with every source's outcome, narrowed by time_range, region, safesearch, include_domains and exclude_domains, and with \
extract: true the top page as markdown (extract: k, the first k results' pages); extract_page fetches one public page \
and returns its main content as markdown. Answers are signed with Ed25519 (structuredContent.signature, over the \
exact text of the first content block).";

/// A tool's outcome: its structured content and the text block that carries it (the signed bytes, for answers).
#[derive(Debug, Clone, PartialEq)]
pub struct ToolResult {
    pub structured: Value,
    pub text: String,
    pub is_error: bool,
    /// The call must be paid: `structured` is the x402 `PaymentRequired` object (and `text` its JSON).
    pub payment_required: bool,
    /// Entries for the result's `_meta` (the x402 settlement).
    pub meta: Map<String, Value>,
}

impl ToolResult {
    pub fn new(structured: Value, text: String, is_error: bool) -> ToolResult {
        ToolResult { structured, text, is_error, payment_required: false, meta: Map::new() }
    }

    /// The x402 tool-result binding's refusal: `PaymentRequired` as the structured content and as the text.
    pub fn payment_required(required: Value) -> ToolResult {
        let text = required.to_string();
        ToolResult { structured: required, text, is_error: true, payment_required: true, meta: Map::new() }
    }
}

/// What the server offers; `tools::Toolbox` is the real one.
pub trait Tools {
    /// The tool definitions (`name`, `description`, `inputSchema`, `outputSchema`, ...).
    fn list(&self) -> Vec<Value>;
    /// Runs a tool (`meta`: the request's `params._meta`, which carries a payment); `None` when there is no tool by
    /// that name.
    fn call(&self, name: &str, arguments: &Map<String, Value>, meta: &Map<String, Value>) -> Option<ToolResult>;
}

/// A JSON-RPC error answer.
#[derive(Debug, Clone, PartialEq)]
pub struct RpcError {
    pub code: i64,
    pub message: String,
    pub data: Option<Value>,
}

impl RpcError {
    pub fn new(code: i64, message: impl Into<String>) -> RpcError {
        RpcError { code, message: message.into(), data: None }
    }

    pub fn to_json(&self, id: &Value) -> Value {
        let mut error = json!({ "code": self.code, "message": self.message });
        if let (Some(data), Some(map)) = (&self.data, error.as_object_mut()) {
            map.insert("data".into(), data.clone());
        }
        json!({ "jsonrpc": "2.0", "id": id, "error": error })
    }
}

/// The protocol revision a request is served under.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Era {
    /// 2026-07-28: results carry `resultType` and the server's identity in `_meta`.
    Modern,
    Handshake,
}

/// One connection (stdio), or one request (HTTP): what the `initialize` handshake agreed, if a handshake-era client
/// made one.
pub struct Session<'a, T: Tools> {
    tools: &'a T,
    handshake: Option<&'static str>,
    /// The door takes x402 payments: `server/discover` advertises the x402 extension.
    paid: bool,
}

impl<'a, T: Tools> Session<'a, T> {
    pub fn new(tools: &'a T) -> Session<'a, T> {
        Session { tools, handshake: None, paid: false }
    }

    /// A request of a stateless door: `handshake` is the handshake-era version the request names (HTTP's
    /// `MCP-Protocol-Version`), if it names one; `paid` says whether the door takes x402 payments.
    pub fn stateless(tools: &'a T, handshake: Option<&'static str>, paid: bool) -> Session<'a, T> {
        Session { tools, handshake, paid }
    }

    /// The answer to one message line (without its newline), or `None` for a notification or a response.
    pub fn handle(&mut self, line: &[u8]) -> Option<Value> {
        match parse(line) {
            Ok(message) => self.handle_value(message),
            Err(e) => Some(e.to_json(&Value::Null)),
        }
    }

    /// The answer to one parsed message, or `None` for a notification or a response.
    pub fn handle_value(&mut self, message: Value) -> Option<Value> {
        let Value::Object(message) = message else {
            let why = if message.is_array() { "batches are not supported" } else { "a message is a JSON object" };
            return Some(RpcError::new(INVALID_REQUEST, why).to_json(&Value::Null));
        };
        // An id that is not a string or an integer cannot be echoed: the error goes to id null.
        let id = match message.get("id") {
            None => None,
            Some(id @ Value::String(_)) => Some(id.clone()),
            Some(id @ Value::Number(n)) if n.is_i64() || n.is_u64() => Some(id.clone()),
            Some(_) => {
                let e = RpcError::new(INVALID_REQUEST, "id must be a string or an integer");
                return Some(e.to_json(&Value::Null));
            }
        };
        let answer = |result: Result<Value, RpcError>, id: &Value| match result {
            Ok(result) => json!({ "jsonrpc": "2.0", "id": id, "result": result }),
            Err(e) => e.to_json(id),
        };
        if message.get("jsonrpc").and_then(Value::as_str) != Some("2.0") {
            let e = RpcError::new(INVALID_REQUEST, "jsonrpc must be \"2.0\"");
            return Some(e.to_json(id.as_ref().unwrap_or(&Value::Null)));
        }
        let method = match message.get("method") {
            Some(Value::String(m)) => m.as_str(),
            // A response to a request of ours: this server sends none, so there is nothing to match it with.
            None if id.is_some() && (message.contains_key("result") || message.contains_key("error")) => return None,
            _ => {
                let e = RpcError::new(INVALID_REQUEST, "method must be a string");
                return Some(e.to_json(id.as_ref().unwrap_or(&Value::Null)));
            }
        };
        let empty = Map::new();
        let params = match message.get("params") {
            None | Some(Value::Null) => Ok(&empty),
            Some(Value::Object(p)) => Ok(p),
            Some(_) => Err(RpcError::new(INVALID_PARAMS, "params must be an object")),
        };
        // Notifications (initialized, cancelled, ...) need nothing from this server.
        let id = id?;
        Some(answer(params.and_then(|p| self.request(method, p)), &id))
    }

    fn request(&mut self, method: &str, params: &Map<String, Value>) -> Result<Value, RpcError> {
        match method {
            "initialize" => return self.initialize(params),
            "server/discover" => {
                modern_envelope(params)?;
                return Ok(finish(discover(self.paid), Era::Modern));
            }
            _ => {}
        }
        let era = if params.get("_meta").and_then(|m| m.get(META_PROTOCOL_VERSION)).is_some() {
            modern_envelope(params)?;
            Era::Modern
        } else if self.handshake.is_some() {
            Era::Handshake
        } else {
            return Err(RpcError::new(
                INVALID_PARAMS,
                format!(
                    "params._meta must carry {META_PROTOCOL_VERSION:?} and {META_CLIENT_CAPABILITIES:?} \
                     (protocol {}), or the connection must begin with initialize",
                    MODERN_VERSIONS.join(", ")
                ),
            ));
        };
        let result = match method {
            "ping" => json!({}),
            "tools/list" => {
                let mut list = json!({ "tools": self.tools.list() });
                if let (Era::Modern, Some(map)) = (era, list.as_object_mut()) {
                    // The tool set is fixed for the life of the process, but a client need not keep it.
                    map.insert("ttlMs".into(), 0.into());
                    map.insert("cacheScope".into(), "private".into());
                }
                list
            }
            "tools/call" => self.call(params, era)?,
            _ => return Err(RpcError::new(METHOD_NOT_FOUND, format!("no method {method:?}"))),
        };
        Ok(finish(result, era))
    }

    /// The handshake: the client's version if served, else the newest handshake version (the client then decides).
    fn initialize(&mut self, params: &Map<String, Value>) -> Result<Value, RpcError> {
        let Some(asked) = params.get("protocolVersion").and_then(Value::as_str) else {
            return Err(RpcError::new(INVALID_PARAMS, "initialize needs protocolVersion (a string)"));
        };
        let newest = HANDSHAKE_VERSIONS.last().copied().unwrap_or_default();
        let version = HANDSHAKE_VERSIONS.iter().copied().find(|v| *v == asked).unwrap_or(newest);
        self.handshake = Some(version);
        Ok(json!({
            "protocolVersion": version,
            "capabilities": { "tools": {} },
            "serverInfo": server_info(),
            "instructions": INSTRUCTIONS,
        }))
    }

    fn call(&self, params: &Map<String, Value>, era: Era) -> Result<Value, RpcError> {
        let Some(name) = params.get("name").and_then(Value::as_str) else {
            return Err(RpcError::new(INVALID_PARAMS, "tools/call needs name (a string)"));
        };
        let empty = Map::new();
        let arguments = match params.get("arguments") {
            None | Some(Value::Null) => &empty,
            Some(Value::Object(a)) => a,
            Some(_) => return Err(RpcError::new(INVALID_PARAMS, "arguments must be an object")),
        };
        let meta = params.get("_meta").and_then(Value::as_object).unwrap_or(&empty);
        let Some(result) = self.tools.call(name, arguments, meta) else {
            return Err(RpcError::new(INVALID_PARAMS, format!("no tool {name:?}")));
        };
        // The x402 extension binding, for a client that advertises it (a 2026-07-28 request); the tool-result binding
        // for every other.
        let advertised = meta
            .get(META_CLIENT_CAPABILITIES)
            .and_then(|c| c.get("extensions"))
            .and_then(|e| e.get(X402_EXTENSION))
            .is_some();
        let mut answer = if result.payment_required && era == Era::Modern && self.paid && advertised {
            json!({ "resultType": "payment_required", "paymentRequired": result.structured })
        } else {
            json!({
                "content": [{ "type": "text", "text": result.text }],
                "structuredContent": result.structured,
                "isError": result.is_error,
            })
        };
        if let (false, Some(map)) = (result.meta.is_empty(), answer.as_object_mut()) {
            map.insert("_meta".into(), Value::Object(result.meta));
        }
        Ok(answer)
    }
}

/// Checks the 2026-07-28 envelope: `_meta` with the version (one this server serves) and the client's capabilities.
fn modern_envelope(params: &Map<String, Value>) -> Result<(), RpcError> {
    let meta = params.get("_meta").and_then(Value::as_object);
    let (Some(version), Some(_)) =
        (meta.and_then(|m| m.get(META_PROTOCOL_VERSION)), meta.and_then(|m| m.get(META_CLIENT_CAPABILITIES)))
    else {
        return Err(RpcError::new(
            INVALID_PARAMS,
            format!("params._meta must carry {META_PROTOCOL_VERSION:?} and {META_CLIENT_CAPABILITIES:?}"),
        ));
    };
    let Some(version) = version.as_str() else {
        return Err(RpcError::new(INVALID_PARAMS, format!("{META_PROTOCOL_VERSION:?} must be a string")));
    };
    if MODERN_VERSIONS.contains(&version) {
        return Ok(());
    }
    Err(unsupported_version(version))
}

/// Every protocol version served, newest first.
pub fn supported_versions() -> Vec<&'static str> {
    MODERN_VERSIONS.iter().chain(HANDSHAKE_VERSIONS.iter().rev()).copied().collect()
}

/// The answer to a request in a version this server does not serve: the ones it does.
pub fn unsupported_version(requested: &str) -> RpcError {
    RpcError {
        code: UNSUPPORTED_PROTOCOL_VERSION,
        message: "Unsupported protocol version".into(),
        data: Some(json!({ "supported": supported_versions(), "requested": requested })),
    }
}

fn server_info() -> Value {
    json!({
        "name": "websearchd",
        "title": "websearchd web search",
        "version": env!("CARGO_PKG_VERSION"),
        "description": "Web search and page extraction for agents, answers signed with Ed25519.",
    })
}

fn discover(paid: bool) -> Value {
    let capabilities =
        if paid { json!({ "tools": {}, "extensions": { X402_EXTENSION: {} } }) } else { json!({ "tools": {} }) };
    json!({
        "supportedVersions": MODERN_VERSIONS,
        "capabilities": capabilities,
        "instructions": INSTRUCTIONS,
        "ttlMs": 0,
        "cacheScope": "private",
    })
}

/// A 2026-07-28 result says it is complete (unless it already says otherwise) and who answered.
fn finish(mut result: Value, era: Era) -> Value {
    if let (Era::Modern, Some(map)) = (era, result.as_object_mut()) {
        map.entry("resultType").or_insert_with(|| "complete".into());
        let meta = map.entry("_meta").or_insert_with(|| json!({}));
        if let Some(meta) = meta.as_object_mut() {
            meta.insert(META_SERVER_INFO.into(), server_info());
        }
    }
    result
}

/// One message's bytes as JSON.
pub fn parse(bytes: &[u8]) -> Result<Value, RpcError> {
    serde_json::from_slice(bytes).map_err(|e| RpcError::new(PARSE_ERROR, format!("not JSON: {e}")))
}

/// One line of input.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Line {
    /// A line is in the buffer (newline and a trailing `\r` removed).
    Message,
    /// The line was longer than the limit; it was read to its end and dropped.
    TooLong,
    End,
}

/// Reads the next line into `buf`, holding at most `max_bytes` of it: a longer line is consumed to its newline
/// without being kept. The last line may end without a newline. A line ended by CRLF is the line without its CR,
/// so the CR does not count against `max_bytes` (the buffer holds one byte more until the newline says whether the
/// last was the CR).
pub fn next_line(input: &mut impl BufRead, buf: &mut Vec<u8>, max_bytes: usize) -> io::Result<Line> {
    buf.clear();
    let mut too_long = false;
    let mut seen = false;
    loop {
        let chunk = match input.fill_buf() {
            Ok(c) => c,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        if chunk.is_empty() {
            too_long |= buf.len() > max_bytes;
            return Ok(match (seen, too_long) {
                (false, _) => Line::End,
                (true, true) => Line::TooLong,
                (true, false) => Line::Message,
            });
        }
        seen = true;
        let newline = chunk.iter().position(|b| *b == b'\n');
        let take = newline.unwrap_or(chunk.len());
        if !too_long {
            // One byte past the limit is held for now: it may be the CR of a CRLF.
            if buf.len() + take > max_bytes.saturating_add(1) {
                too_long = true;
                buf.clear();
            } else {
                buf.extend_from_slice(chunk.get(..take).unwrap_or_default());
            }
        }
        input.consume(take + usize::from(newline.is_some()));
        if newline.is_some() {
            if buf.last() == Some(&b'\r') {
                buf.pop();
            }
            too_long |= buf.len() > max_bytes;
            if too_long {
                buf.clear();
            }
            return Ok(if too_long { Line::TooLong } else { Line::Message });
        }
    }
}

/// Serves one client until its input ends: each line is a message, each answer one line of compact JSON.
pub fn serve(tools: &impl Tools, mut input: impl BufRead, mut output: impl Write) -> io::Result<()> {
    let mut session = Session::new(tools);
    let mut buf = Vec::new();
    loop {
        let answer = match next_line(&mut input, &mut buf, LINE_BYTES_MAX)? {
            Line::End => return Ok(()),
            Line::TooLong => Some(
                RpcError::new(INVALID_REQUEST, format!("the message is longer than {LINE_BYTES_MAX} bytes"))
                    .to_json(&Value::Null),
            ),
            Line::Message if buf.iter().all(u8::is_ascii_whitespace) => None,
            Line::Message => session.handle(&buf),
        };
        if let Some(answer) = answer {
            // Compact JSON escapes every newline inside strings: one message is one line.
            let mut bytes = serde_json::to_vec(&answer).unwrap_or_default();
            bytes.push(b'\n');
            output.write_all(&bytes)?;
            output.flush()?;
        }
    }
}

#[cfg(test)]
mod tests;
