//! `websearchd mcp`: the JSON-RPC framing and the protocol over the real binary's stdin and stdout, with bad input of
//! every kind (no Python needed; tests/interop.rs drives it with the official MCP client).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)]

mod common;

use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use common::upstream::{Answer, Upstream};
use common::{own_fixture, tempdir::TempDir};
use serde_json::{json, Value};

/// How long one answer may take (a search against loopback takes milliseconds).
const ANSWER_TIMEOUT: Duration = Duration::from_secs(20);

/// The 2026-07-28 envelope every modern request carries.
fn meta() -> Value {
    json!({ "io.modelcontextprotocol/protocolVersion": "2026-07-28", "io.modelcontextprotocol/clientCapabilities": {} })
}

/// `websearchd mcp` with a loopback search source, its stdin, and its stdout's lines as they come.
struct Mcp {
    child: Child,
    stdin: Option<ChildStdin>,
    lines: mpsc::Receiver<String>,
    _source: Upstream,
    _state: TempDir,
}

impl Mcp {
    fn start() -> Mcp {
        let source = Upstream::start(|_| Answer::html(200, own_fixture("search/ddg_html_results.html")));
        let state = TempDir::new("mcp");
        let mut child = Command::new(common::binary())
            .arg("mcp")
            .env_clear()
            .env("WEBSEARCHD_STATE_DIR", state.path().join("data"))
            .env("WEBSEARCHD_SOURCES", "ddg_html")
            .env("WEBSEARCHD_DDG_HTML_URL", source.url("/html/"))
            .env("WEBSEARCHD_SOURCE_INTERVAL_MS", "0")
            .env("WEBSEARCHD_MAP_LAYERS", "none")
            .env("WEBSEARCHD_LOG", "warn")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("spawn websearchd mcp");
        let stdout = child.stdout.take().unwrap();
        let (tx, lines) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        Mcp { stdin: child.stdin.take(), child, lines, _source: source, _state: state }
    }

    fn send_raw(&mut self, bytes: &[u8]) {
        let stdin = self.stdin.as_mut().unwrap();
        stdin.write_all(bytes).unwrap();
        stdin.flush().unwrap();
    }

    fn send(&mut self, message: &Value) {
        let mut line = serde_json::to_vec(message).unwrap();
        line.push(b'\n');
        self.send_raw(&line);
    }

    /// The next answer line, parsed; it must be one JSON object on one line.
    fn answer(&self) -> Value {
        let line = self.lines.recv_timeout(ANSWER_TIMEOUT).expect("an answer in time");
        serde_json::from_str(&line).unwrap_or_else(|e| panic!("answer not JSON ({e}): {line}"))
    }

    fn call(&mut self, message: Value) -> Value {
        self.send(&message);
        self.answer()
    }

    /// A modern request: the method with `params` and the envelope.
    fn request(&mut self, id: u64, method: &str, mut params: Value) -> Value {
        params["_meta"] = meta();
        self.call(json!({ "jsonrpc": "2.0", "id": id, "method": method, "params": params }))
    }
}

impl Drop for Mcp {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[track_caller]
fn check_error(answer: &Value, id: Value, code: i64) {
    assert_eq!(answer["jsonrpc"], "2.0", "{answer}");
    assert_eq!(answer["id"], id, "{answer}");
    assert_eq!(answer["error"]["code"], code, "{answer}");
    assert!(answer["error"]["message"].as_str().is_some_and(|m| !m.is_empty()), "{answer}");
    assert!(answer.get("result").is_none(), "{answer}");
}

#[test]
fn bad_messages_get_the_standard_json_rpc_errors() {
    let mut mcp = Mcp::start();
    let cases: &[(&[u8], Value, i64)] = &[
        (b"{not json\n", Value::Null, -32_700),
        (b"\xff\xfe{}\n", Value::Null, -32_700),
        (b"[{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}]\n", Value::Null, -32_600),
        (b"42\n", Value::Null, -32_600),
        (b"{\"id\":3,\"method\":\"ping\"}\n", json!(3), -32_600),
        (b"{\"jsonrpc\":\"1.0\",\"id\":\"a\",\"method\":\"ping\"}\n", json!("a"), -32_600),
        (b"{\"jsonrpc\":\"2.0\",\"id\":{\"x\":1},\"method\":\"ping\"}\n", Value::Null, -32_600),
        (b"{\"jsonrpc\":\"2.0\",\"id\":1.5,\"method\":\"ping\"}\n", Value::Null, -32_600),
        (b"{\"jsonrpc\":\"2.0\",\"id\":null,\"method\":\"ping\"}\n", Value::Null, -32_600),
        (b"{\"jsonrpc\":\"2.0\",\"id\":4,\"method\":7}\n", json!(4), -32_600),
        (b"{\"jsonrpc\":\"2.0\",\"id\":5,\"method\":\"tools/list\",\"params\":[1]}\n", json!(5), -32_602),
        // Neither the 2026-07-28 envelope nor an initialize before it.
        (b"{\"jsonrpc\":\"2.0\",\"id\":6,\"method\":\"tools/list\"}\n", json!(6), -32_602),
    ];
    for (line, id, code) in cases {
        let answer = {
            mcp.send_raw(line);
            mcp.answer()
        };
        check_error(&answer, id.clone(), *code);
    }
    check_error(&mcp.request(7, "resources/list", json!({})), json!(7), -32_601);
    check_error(&mcp.request(8, "tools/call", json!({ "name": "no_such_tool" })), json!(8), -32_602);
    check_error(&mcp.request(9, "tools/call", json!({ "arguments": {} })), json!(9), -32_602);
    check_error(&mcp.request(10, "tools/call", json!({ "name": "web_search", "arguments": "q" })), json!(10), -32_602);
    // A version this server does not serve: -32022 naming the ones it does.
    let mut old = meta();
    old["io.modelcontextprotocol/protocolVersion"] = json!("2099-01-01");
    let answer =
        mcp.call(json!({ "jsonrpc": "2.0", "id": 11, "method": "server/discover", "params": { "_meta": old } }));
    check_error(&answer, json!(11), -32_022);
    assert_eq!(answer["error"]["data"]["requested"], "2099-01-01");
    assert_eq!(answer["error"]["data"]["supported"][0], "2026-07-28");
    // The process is still serving after all that.
    let answer = mcp.request(12, "tools/list", json!({}));
    assert_eq!(answer["result"]["tools"].as_array().unwrap().len(), 2, "{answer}");
}

#[test]
fn a_line_over_the_limit_is_refused_and_the_next_one_served() {
    let mut mcp = Mcp::start();
    let query = "q".repeat(websearchd::mcp::LINE_BYTES_MAX);
    let long = json!({ "jsonrpc": "2.0", "id": 1, "method": "tools/call",
                       "params": { "name": "web_search", "arguments": { "query": query }, "_meta": meta() } });
    let answer = mcp.call(long);
    check_error(&answer, Value::Null, -32_600);
    assert!(answer["error"]["message"].as_str().unwrap().contains("65536"), "{answer}");
    let answer = mcp.request(2, "tools/list", json!({}));
    assert_eq!(answer["id"], 2, "{answer}");
    assert!(answer["result"]["tools"].is_array(), "{answer}");
}

/// Issue 33, finding 10: a client that ends its lines with CRLF may send a message of `LINE_BYTES_MAX` bytes, as one
/// ending them with LF may: the CR is not part of the message. One byte more is refused either way.
#[test]
fn a_message_at_the_limit_ended_by_crlf_is_served() {
    let mut mcp = Mcp::start();
    // A `tools/list` of `LINE_BYTES_MAX + extra` bytes.
    let sized = |extra: usize| {
        let mut message = json!({ "jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": { "_meta": meta() } });
        message["pad"] = json!("");
        let pad = websearchd::mcp::LINE_BYTES_MAX - message.to_string().len() + extra;
        message["pad"] = json!("p".repeat(pad));
        let line = message.to_string();
        assert_eq!(line.len(), websearchd::mcp::LINE_BYTES_MAX + extra);
        line
    };
    for ending in ["\n", "\r\n"] {
        mcp.send_raw(format!("{}{ending}", sized(0)).as_bytes());
        let answer = mcp.answer();
        assert!(answer["result"]["tools"].is_array(), "{ending:?}: {answer}");
        mcp.send_raw(format!("{}{ending}", sized(1)).as_bytes());
        check_error(&mcp.answer(), Value::Null, -32_600);
    }
}

#[test]
fn notifications_and_blank_lines_get_no_answer() {
    let mut mcp = Mcp::start();
    mcp.send_raw(b"\n   \r\n");
    mcp.send(&json!({ "jsonrpc": "2.0", "method": "notifications/initialized" }));
    mcp.send(&json!({ "jsonrpc": "2.0", "method": "notifications/cancelled", "params": { "requestId": 1 } }));
    mcp.send(&json!({ "jsonrpc": "2.0", "method": "no/such/notification", "params": 5 }));
    // A response to a request the server never made is dropped too.
    mcp.send(&json!({ "jsonrpc": "2.0", "id": 99, "result": {} }));
    // The first answer to come is the request's: nothing was answered before it.
    let answer = mcp.request(1, "server/discover", json!({}));
    assert_eq!(answer["id"], 1, "{answer}");
    let result = &answer["result"];
    assert_eq!(result["supportedVersions"], json!(["2026-07-28"]));
    assert_eq!(result["capabilities"]["tools"], json!({}));
    assert_eq!(result["resultType"], "complete");
    assert_eq!(result["_meta"]["io.modelcontextprotocol/serverInfo"]["name"], "websearchd");
}

#[test]
fn the_handshake_era_negotiates_and_then_serves_without_the_envelope() {
    let mut mcp = Mcp::start();
    check_error(
        &mcp.call(json!({ "jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {} })),
        json!(1),
        -32_602,
    );
    let init = |version: &str| {
        json!({ "jsonrpc": "2.0", "id": "init", "method": "initialize",
                "params": { "protocolVersion": version, "capabilities": {}, "clientInfo": { "name": "t", "version": "1" } } })
    };
    let answer = mcp.call(init("2024-11-05"));
    assert_eq!(answer["result"]["protocolVersion"], "2025-11-25", "an older version gets the newest: {answer}");
    let answer = mcp.call(init("2025-06-18"));
    assert_eq!(answer["result"]["protocolVersion"], "2025-06-18", "{answer}");
    assert_eq!(answer["result"]["serverInfo"]["name"], "websearchd");
    mcp.send(&json!({ "jsonrpc": "2.0", "method": "notifications/initialized" }));
    let answer = mcp.call(json!({ "jsonrpc": "2.0", "id": 2, "method": "ping" }));
    assert_eq!(answer["result"], json!({}), "{answer}");
    let answer = mcp.call(json!({ "jsonrpc": "2.0", "id": 3, "method": "tools/list" }));
    let tools = answer["result"]["tools"].as_array().unwrap();
    let names: Vec<&str> = tools.iter().map(|t| t["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["web_search", "extract_page"]);
    for t in tools {
        assert_eq!(t["inputSchema"]["type"], "object");
        assert_eq!(t["outputSchema"]["type"], "object");
        assert!(t["outputSchema"]["required"].as_array().unwrap().contains(&json!("signature")));
    }
    // Handshake-era results carry no 2026-07-28 members.
    assert!(answer["result"].get("resultType").is_none(), "{answer}");
}

#[test]
fn web_search_answers_signed_results_and_tool_errors_as_results() {
    let mut mcp = Mcp::start();
    let answer = mcp.request(
        1,
        "tools/call",
        json!({ "name": "web_search", "arguments": { "query": "rust", "max_results": 1 } }),
    );
    let result = &answer["result"];
    assert_eq!(result["isError"], false, "{answer}");
    assert_eq!(result["resultType"], "complete");
    let structured = &result["structuredContent"];
    assert_eq!(structured["results"].as_array().unwrap().len(), 1);
    assert_eq!(structured["results"][0]["url"], "https://www.rust-lang.org/");
    assert_eq!(structured["sources"][0]["name"], "ddg_html");
    assert_eq!(structured["signature"]["kid"], structured["kid"]);
    let text = result["content"][0]["text"].as_str().unwrap();
    assert!(text.ends_with('\n'), "the text is the body /service would send");
    let body: Value = serde_json::from_str(text).unwrap();
    assert_eq!(body["request_id"], structured["request_id"]);
    assert!(body.get("signature").is_none());
    // The signature is over exactly that text, by the result key the server made in its state directory.
    let paths = websearchd::sign::keys::KeyPaths::new(&mcp._state.path().join("data"), None, None);
    let keys = websearchd::sign::keys_from_jwks(&websearchd::sign::Keyring::load_or_create(&paths).unwrap().jwks());
    let verify = |text: &str| websearchd::mcp::tools::verify(text, &structured["signature"], &keys);
    verify(text).expect("the signature verifies over the text");
    assert!(verify(&text.replacen("rust", "Rust", 1)).is_err());

    // Wrong arguments are the tool's error, with the HTTP door's stable code, for the model to correct.
    let answer =
        mcp.request(2, "tools/call", json!({ "name": "web_search", "arguments": { "query": "q", "max_results": 99 } }));
    assert_eq!(answer["result"]["isError"], true, "{answer}");
    assert_eq!(answer["result"]["structuredContent"]["error"]["code"], "max_results_out_of_range");
    let answer = mcp.request(3, "tools/call", json!({ "name": "extract_page", "arguments": { "url": 5 } }));
    assert_eq!(answer["result"]["structuredContent"]["error"]["code"], "url_not_string", "{answer}");
    let arguments = json!({ "url": "http://a.example/", "query": ["tides"] });
    let answer = mcp.request(3, "tools/call", json!({ "name": "extract_page", "arguments": arguments }));
    assert_eq!(answer["result"]["structuredContent"]["error"]["code"], "query_not_string", "{answer}");
    let answer =
        mcp.request(4, "tools/call", json!({ "name": "extract_page", "arguments": { "url": "http://10.0.0.1/" } }));
    assert_eq!(answer["result"]["structuredContent"]["error"]["code"], "address_refused", "{answer}");
    let answer =
        mcp.request(5, "tools/call", json!({ "name": "extract_page", "arguments": { "url": "file:///etc/passwd" } }));
    assert_eq!(answer["result"]["structuredContent"]["error"]["code"], "scheme_refused", "{answer}");
}

/// Issue 34: `websearchd verify --mcp FILE` checks a tool result as a client saved it, with no headers written by
/// hand: the whole JSON-RPC response, its `result` alone, or the server-sent event of the HTTP door carrying it.
#[test]
fn verify_checks_a_saved_tool_result() {
    let mut mcp = Mcp::start();
    let answer = mcp.request(
        1,
        "tools/call",
        json!({ "name": "web_search", "arguments": { "query": "rust", "max_results": 1 } }),
    );
    assert_eq!(answer["result"]["isError"], false, "{answer}");
    let error = mcp.request(2, "tools/call", json!({ "name": "web_search", "arguments": { "query": 5 } }));
    let dir = mcp._state.path();
    let verify = |name: &str, content: String| {
        let file = dir.join(name);
        std::fs::write(&file, content).unwrap();
        Command::new(common::binary())
            .env_clear()
            .env("WEBSEARCHD_STATE_DIR", dir.join("data"))
            .args(["verify", "--mcp"])
            .arg(&file)
            .output()
            .unwrap()
    };
    let response = serde_json::to_string(&answer).unwrap();
    let result = serde_json::to_string_pretty(&answer["result"]).unwrap();
    let events = format!("event: message\ndata: {response}\n\n");
    for (name, content) in [("response.json", response.clone()), ("result.json", result), ("events.txt", events)] {
        let out = verify(name, content);
        let said = String::from_utf8_lossy(&out.stdout);
        assert!(out.status.success(), "{name}: {said}{}", String::from_utf8_lossy(&out.stderr));
        assert!(said.starts_with("ok: signed by result-"), "{name}: {said}");
    }
    let tampered = response.replacen("rust-lang", "rust-1ang", 1);
    assert_ne!(tampered, response);
    let out = verify("tampered.json", tampered);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stdout).starts_with("not valid"));
    let out = verify("error.json", error.to_string());
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stdout).contains("errors are not signed"), "{:?}", out);
}

#[test]
fn the_server_ends_when_its_input_ends() {
    let mut mcp = Mcp::start();
    assert_eq!(mcp.request(1, "tools/list", json!({}))["id"], 1);
    drop(mcp.stdin.take());
    let deadline = std::time::Instant::now() + ANSWER_TIMEOUT;
    let status = loop {
        if let Some(status) = mcp.child.try_wait().unwrap() {
            break status;
        }
        assert!(std::time::Instant::now() < deadline, "still running after its input ended");
        std::thread::sleep(Duration::from_millis(20));
    };
    assert!(status.success(), "{status:?}");
}
