//! `/mcp`: MCP over Streamable HTTP on the running server, paid per tool call with x402 (the x402 MCP transport),
//! against a loopback search source and the loopback facilitator: the refusals, the paid call and its settlement,
//! replays, the facilitator's failures, and bad input of every kind (tests/interop.rs drives it with the official
//! clients).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)]

mod common;

use common::pay::{paid_env, Facilitator, Mode, Payer, PAY_TO};
use common::upstream::{Answer, Upstream};
use common::{own_fixture, Reply, Server};
use serde_json::{json, Value};

const VERSION: &str = "2026-07-28";

struct World {
    source: Upstream,
    facilitator: Facilitator,
    server: Server,
}

fn world(extra: &[(&str, &str)]) -> World {
    let source = Upstream::start(|_| Answer::html(200, own_fixture("search/ddg_html_results.html")));
    let facilitator = Facilitator::start();
    let mut vars = paid_env(source.url("/html/"), facilitator.url());
    vars.push(("WEBSEARCHD_FACILITATOR_TIMEOUT_MS".into(), "2000".into()));
    vars.extend(extra.iter().map(|(k, v)| (k.to_string(), v.to_string())));
    let server = Server::start(&common::pairs(&vars));
    World { source, facilitator, server }
}

/// The 2026-07-28 envelope, with the client's capabilities.
fn meta(capabilities: Value) -> Value {
    json!({
        "io.modelcontextprotocol/protocolVersion": VERSION,
        "io.modelcontextprotocol/clientCapabilities": capabilities,
        "io.modelcontextprotocol/clientInfo": { "name": "test", "version": "1" },
    })
}

/// POSTs a message with exactly these headers (besides Content-Type).
fn post(server: &Server, message: &Value, headers: &[(&str, &str)]) -> Reply {
    let mut h = vec![("Content-Type", "application/json")];
    h.extend_from_slice(headers);
    server.request("POST", "/mcp", &h, message.to_string().as_bytes())
}

/// A 2026-07-28 request as a conforming client sends it: the envelope in `_meta` (with `extra` added to it), and the
/// headers mirroring the body.
fn modern(server: &Server, method: &str, mut params: Value, extra_meta: Value) -> Reply {
    let mut m = meta(json!({}));
    for (k, v) in extra_meta.as_object().unwrap() {
        m[k] = v.clone();
    }
    params["_meta"] = m;
    let message = json!({ "jsonrpc": "2.0", "id": 1, "method": method, "params": params });
    let name = params["name"].as_str().map(str::to_owned);
    let mut headers = vec![("MCP-Protocol-Version", VERSION), ("Mcp-Method", method)];
    if let Some(name) = &name {
        headers.push(("Mcp-Name", name));
    }
    post(server, &message, &headers)
}

fn call(server: &Server, arguments: Value, extra_meta: Value) -> Reply {
    modern(server, "tools/call", json!({ "name": "web_search", "arguments": arguments }), extra_meta)
}

fn search(server: &Server, payment: Option<Value>) -> Reply {
    let extra = payment.map_or(json!({}), |p| json!({ "x402/payment": p }));
    call(server, json!({ "query": "rust", "max_results": 5 }), extra)
}

/// The requirement a client accepts, from an unpaid call's refusal.
fn accepted(server: &Server) -> Value {
    search(server, None).json()["result"]["structuredContent"]["accepts"][0].clone()
}

#[track_caller]
fn check_rpc_error(reply: &Reply, status: u16, code: i64) {
    assert_eq!(reply.status, status, "{}", reply.text());
    let body = reply.json();
    assert_eq!(body["error"]["code"], code, "{body}");
    assert_eq!(body["jsonrpc"], "2.0");
}

#[test]
fn an_unpaid_call_is_refused_with_the_payment_requirements_and_nothing_runs() {
    let w = world(&[]);
    let r = search(&w.server, None);
    assert_eq!(r.status, 200);
    let result = &r.json()["result"];
    assert_eq!(result["isError"], true);
    assert_eq!(result["resultType"], "complete", "2026-07-28 results say so");
    let required = &result["structuredContent"];
    assert_eq!(required["x402Version"], 2);
    assert_eq!(required["resource"]["url"], "https://search.example/mcp");
    assert_eq!(required["accepts"][0]["payTo"], PAY_TO);
    assert_eq!(required["accepts"][0]["amount"], "5000");
    assert_eq!(required["accepts"][0]["network"], "eip155:8453");
    let text: Value = serde_json::from_str(result["content"][0]["text"].as_str().unwrap()).unwrap();
    assert_eq!(&text, required, "content[0].text is the same PaymentRequired");
    // A client that advertises the x402 extension gets its result type instead.
    let ext = meta(json!({ "extensions": { "org.x402/payment": {} } }));
    let r = call(
        &w.server,
        json!({ "query": "rust" }),
        json!({ "io.modelcontextprotocol/clientCapabilities": ext["io.modelcontextprotocol/clientCapabilities"] }),
    );
    let result = &r.json()["result"];
    assert_eq!(result["resultType"], "payment_required", "{result}");
    assert_eq!(result["paymentRequired"]["accepts"][0]["payTo"], PAY_TO);
    assert!(result.get("content").is_none());
    // Bad arguments are refused before payment is asked for.
    let bad = call(&w.server, json!({ "query": "  " }), json!({}));
    let result = &bad.json()["result"];
    assert_eq!(
        (result["isError"].as_bool(), result["structuredContent"]["error"]["code"].as_str()),
        (Some(true), Some("query_empty"))
    );
    assert_eq!(w.source.count("/html/"), 0, "no work before payment");
    assert!(w.facilitator.upstream.seen().is_empty());
    assert_eq!(w.server.metric("websearchd_payment_challenges_total"), 2);
}

#[test]
fn discovery_and_listing_are_free_and_advertise_the_extension() {
    let w = world(&[]);
    let discover = modern(&w.server, "server/discover", json!({}), json!({})).json();
    assert_eq!(discover["result"]["capabilities"]["extensions"]["org.x402/payment"], json!({}));
    assert_eq!(discover["result"]["supportedVersions"], json!([VERSION]));
    let list = modern(&w.server, "tools/list", json!({}), json!({})).json();
    let names: Vec<&str> =
        list["result"]["tools"].as_array().unwrap().iter().map(|t| t["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["web_search", "extract_page"]);
    // The handshake era: initialize, the initialized notification (202), then requests naming the version.
    let init = json!({ "jsonrpc": "2.0", "id": 0, "method": "initialize", "params": { "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": { "name": "t", "version": "1" } } });
    let r = post(&w.server, &init, &[]);
    assert_eq!(r.json()["result"]["protocolVersion"], "2025-11-25");
    assert!(r.header("mcp-session-id").is_none(), "no sessions are minted");
    let note = post(
        &w.server,
        &json!({ "jsonrpc": "2.0", "method": "notifications/initialized" }),
        &[("MCP-Protocol-Version", "2025-11-25")],
    );
    assert_eq!((note.status, note.body.len()), (202, 0));
    let list = json!({ "jsonrpc": "2.0", "id": 2, "method": "tools/list" });
    let r = post(&w.server, &list, &[("MCP-Protocol-Version", "2025-11-25"), ("Mcp-Session-Id", "ignored")]);
    assert_eq!(r.json()["result"]["tools"].as_array().unwrap().len(), 2);
    assert!(w.facilitator.upstream.seen().is_empty(), "nothing free asks the facilitator");
    // The catalogue and the guide list the door with its terms.
    let catalog = w.server.get("/catalog.json").json();
    let op = catalog["operations"].as_array().unwrap().iter().find(|o| o["id"] == "mcp").expect("listed").clone();
    assert_eq!((op["method"].as_str(), op["url"].as_str()), (Some("POST"), Some("https://search.example/mcp")));
    assert_eq!(op["payment"]["resource"], "https://search.example/mcp");
    assert_eq!(op["payment"]["amount"], "5000");
    assert!(w.server.get("/llms.txt").text().contains("[MCP](https://search.example/mcp)"));
}

#[test]
fn a_paid_call_is_verified_served_and_settled_and_its_replay_refused() {
    let w = world(&[]);
    let payment = Payer::new(1).v2_payload(&accepted(&w.server));
    let r = search(&w.server, Some(payment.clone()));
    let result = &r.json()["result"];
    assert_eq!(result["isError"], false, "{result}");
    assert_eq!(result["structuredContent"]["results"].as_array().unwrap().len(), 2);
    let settlement = &result["_meta"]["x402/payment-response"];
    assert_eq!(settlement["success"], true);
    assert_eq!(settlement["transaction"], "0xfeedbeef");
    assert_eq!(settlement["network"], "eip155:8453");
    assert_eq!(settlement["payer"].as_str().unwrap().to_lowercase(), Payer::new(1).from());
    assert_eq!(result["_meta"]["io.modelcontextprotocol/serverInfo"]["name"], "websearchd");
    let paths: Vec<String> = w.facilitator.upstream.seen().iter().map(|s| s.path().to_string()).collect();
    assert_eq!(paths, ["/verify", "/settle"], "verify, then the work, then settle");
    // The same payment again is refused before the facilitator or the source is asked.
    let again = search(&w.server, Some(payment));
    let result = &again.json()["result"];
    assert_eq!(result["isError"], true);
    assert_eq!(result["structuredContent"]["error"], "payment_replayed");
    assert!(result["structuredContent"]["message"].as_str().unwrap().contains("already"));
    assert_eq!(w.facilitator.upstream.seen().len(), 2);
    assert_eq!(w.source.count("/html/"), 1);
    assert_eq!(w.server.metric("websearchd_payments_settled_total"), 1);
    assert_eq!(w.server.metric(r#"websearchd_payments_refused_total{reason="payment_replayed"}"#), 1);
    // Requests are counted once answered, so the last may land a moment after its answer.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
    while w.server.metric(r#"websearchd_http_requests_total{route="mcp",status="200"}"#) < 3 {
        assert!(std::time::Instant::now() < deadline, "three /mcp requests counted under their own route");
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    // The ledger records the payment against /mcp.
    let ledger = std::fs::read_to_string(w.server.state_dir.path().join("data/payments.journal")).unwrap();
    assert!(ledger.contains("https://search.example/mcp") && ledger.contains("settled"), "{ledger}");
}

#[test]
fn refused_payments_and_facilitator_failures() {
    let w = world(&[]);
    let accepted = accepted(&w.server);
    let code = |r: &Reply| r.json()["result"]["structuredContent"]["error"].clone();
    // Not an object, a bad signature, the facilitator's refusal: payment required again, with the reason.
    assert_eq!(code(&search(&w.server, Some(json!("a string")))), "payment_malformed");
    let mut tampered = Payer::new(2).v2_payload(&accepted);
    tampered["payload"]["authorization"]["value"] = json!("4999");
    assert_eq!(code(&search(&w.server, Some(tampered))), "payment_amount_mismatch");
    w.facilitator.set(Mode::VerifyInvalid);
    let r = search(&w.server, Some(Payer::new(3).v2_payload(&accepted)));
    assert_eq!(code(&r), "payment_rejected");
    assert!(r.json()["result"]["structuredContent"]["message"].as_str().unwrap().contains("insufficient_funds"));
    // A settlement that fails withholds the answer: payment required, no results.
    w.facilitator.set(Mode::SettleFalse);
    let r = search(&w.server, Some(Payer::new(4).v2_payload(&accepted)));
    let result = &r.json()["result"];
    assert_eq!(result["structuredContent"]["error"], "settlement_failed", "{result}");
    assert!(result["structuredContent"].get("results").is_none() && !r.text().contains("\"results\""));
    // With the failed settlement's response in `_meta`, as a settled one; the same for a client of the extension.
    let failed_settlement = |result: &Value| {
        let settlement = &result["_meta"]["x402/payment-response"];
        assert_eq!((&settlement["success"], &settlement["errorReason"]), (&json!(false), &json!("insufficient_funds")));
        assert_eq!(settlement["network"], "eip155:8453", "{result}");
    };
    failed_settlement(result);
    let ext = meta(json!({ "extensions": { "org.x402/payment": {} } }));
    let extra = json!({
        "x402/payment": Payer::new(6).v2_payload(&accepted),
        "io.modelcontextprotocol/clientCapabilities": ext["io.modelcontextprotocol/clientCapabilities"],
    });
    let r = call(&w.server, json!({ "query": "rust", "max_results": 5 }), extra);
    let result = &r.json()["result"];
    assert_eq!(result["resultType"], "payment_required", "{result}");
    assert_eq!(result["paymentRequired"]["error"], "settlement_failed", "{result}");
    failed_settlement(result);
    // The facilitator down: a tool error that says when to come back, nothing taken.
    w.facilitator.set(Mode::Verify5xx);
    let r = search(&w.server, Some(Payer::new(5).v2_payload(&accepted)));
    let result = &r.json()["result"];
    assert_eq!(result["isError"], true);
    assert_eq!(result["structuredContent"]["error"]["code"], "facilitator_unavailable");
    assert_eq!(result["structuredContent"]["error"]["retry_after_s"], 5);
    assert_eq!(w.source.count("/html/"), 2, "only the calls whose settlement failed ran");
}

#[test]
fn bad_messages_get_the_json_rpc_error_they_should() {
    let w = world(&[("WEBSEARCHD_MCP_ORIGINS", "https://app.example")]);
    let s = &w.server;
    let raw = |body: &[u8], headers: &[(&str, &str)]| s.request("POST", "/mcp", headers, body);
    let json_type = ("Content-Type", "application/json");
    check_rpc_error(&raw(b"{not json", &[json_type]), 400, -32_700);
    check_rpc_error(&raw(b"[]", &[json_type]), 400, -32_600);
    check_rpc_error(&raw(b"{}", &[("Content-Type", "text/plain")]), 415, -32_600);
    check_rpc_error(&raw(b"{}", &[]), 415, -32_600);
    // Headers that disagree with the body, or are missing.
    let list = json!({ "jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": { "_meta": meta(json!({})) } });
    check_rpc_error(&post(s, &list, &[("MCP-Protocol-Version", VERSION)]), 400, -32_020);
    check_rpc_error(&post(s, &list, &[("MCP-Protocol-Version", VERSION), ("Mcp-Method", "tools/call")]), 400, -32_020);
    check_rpc_error(
        &post(s, &list, &[("MCP-Protocol-Version", "2025-11-25"), ("Mcp-Method", "tools/list")]),
        400,
        -32_020,
    );
    let call = json!({ "jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": { "name": "web_search", "arguments": {}, "_meta": meta(json!({})) } });
    let headers = [("MCP-Protocol-Version", VERSION), ("Mcp-Method", "tools/call")];
    check_rpc_error(&post(s, &call, &headers), 400, -32_020);
    check_rpc_error(&post(s, &call, &[headers[0], headers[1], ("Mcp-Name", "extract_page")]), 400, -32_020);
    let encoded = post(s, &call, &[headers[0], headers[1], ("Mcp-Name", "=?base64?d2ViX3NlYXJjaA==?=")]);
    assert_eq!(encoded.json()["result"]["isError"], true, "a base64 Mcp-Name is decoded: {}", encoded.text());
    // Versions: an unknown one in the envelope, an unknown one in the header, none at all.
    let mut old = list.clone();
    old["params"]["_meta"]["io.modelcontextprotocol/protocolVersion"] = json!("2099-01-01");
    let r = post(s, &old, &[("MCP-Protocol-Version", "2099-01-01"), ("Mcp-Method", "tools/list")]);
    check_rpc_error(&r, 400, -32_022);
    assert!(r.json()["error"]["data"]["supported"].as_array().unwrap().contains(&json!(VERSION)));
    let bare = json!({ "jsonrpc": "2.0", "id": 1, "method": "tools/list" });
    check_rpc_error(&post(s, &bare, &[("MCP-Protocol-Version", "2024-11-05")]), 400, -32_022);
    check_rpc_error(&post(s, &bare, &[]), 400, -32_020);
    // An unknown method: 404 in 2026-07-28; an unknown tool: invalid params.
    check_rpc_error(&modern(s, "resources/list", json!({}), json!({})), 404, -32_601);
    let r = modern(s, "tools/call", json!({ "name": "nope", "arguments": {} }), json!({}));
    check_rpc_error(&r, 200, -32_602);
    // Other methods, origins, sizes.
    let get = s.request("GET", "/mcp", &[("Accept", "text/event-stream")], b"");
    assert_eq!((get.status, get.header("allow")), (405, Some("POST, OPTIONS")));
    assert_eq!(s.request("DELETE", "/mcp", &[("Mcp-Session-Id", "x")], b"").status, 405);
    let evil = [json_type, ("Origin", "https://evil.example")];
    check_rpc_error(&s.request("POST", "/mcp", &evil, list.to_string().as_bytes()), 403, -32_600);
    for origin in ["https://search.example", "https://app.example", "http://localhost:6274"] {
        let h = [json_type, ("Origin", origin), ("MCP-Protocol-Version", VERSION), ("Mcp-Method", "tools/list")];
        assert_eq!(s.request("POST", "/mcp", &h, list.to_string().as_bytes()).status, 200, "{origin}");
    }
    let preflight = s.request("OPTIONS", "/mcp", &[("Origin", "http://localhost:6274")], b"");
    assert_eq!(preflight.status, 204);
    assert!(preflight.header("access-control-allow-headers").unwrap().contains("Mcp-Method"));
    let big = format!(r#"{{"jsonrpc":"2.0","id":1,"method":"tools/list","pad":"{}"}}"#, "x".repeat(20_000));
    assert_eq!(raw(big.as_bytes(), &[json_type]).status, 413);
    assert_eq!(w.source.count("/html/"), 0);
}

/// A public URL with a path (behind a proxy): its own origin (scheme and host, without the path) may still call.
#[test]
fn a_public_url_with_a_path_keeps_its_own_origin() {
    let w = world(&[("WEBSEARCHD_PUBLIC_URL", "https://search.example/websearch")]);
    let list = json!({ "jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": { "_meta": meta(json!({})) } });
    let headers =
        [("Origin", "https://search.example"), ("MCP-Protocol-Version", VERSION), ("Mcp-Method", "tools/list")];
    let r = post(&w.server, &list, &headers);
    assert_eq!(r.status, 200, "{}", r.text());
    let other = [("Origin", "https://other.example"), headers[1], headers[2]];
    check_rpc_error(&post(&w.server, &list, &other), 403, -32_600);
}

/// Issue 33, finding 9: a public URL (or a listed origin) written with its scheme's default port never matched what
/// browsers send, which has none; and of two `Origin` headers only the first was read, so an allowed one could
/// carry any other past the check. Default ports are compared away, and a request with two origins is refused.
#[test]
fn default_ports_are_no_ports_and_two_origins_are_refused() {
    let w = world(&[
        ("WEBSEARCHD_PUBLIC_URL", "https://search.example:443"),
        ("WEBSEARCHD_MCP_ORIGINS", "http://app.example:80"),
    ]);
    let list = json!({ "jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": { "_meta": meta(json!({})) } });
    let with = |origins: &[&'static str]| {
        let mut headers = vec![("MCP-Protocol-Version", VERSION), ("Mcp-Method", "tools/list")];
        headers.extend(origins.iter().map(|o| ("Origin", *o)));
        post(&w.server, &list, &headers)
    };
    for origin in ["https://search.example", "https://search.example:443", "http://app.example", "http://localhost"] {
        let r = with(&[origin]);
        assert_eq!(r.status, 200, "{origin}: {}", r.text());
    }
    for origin in ["http://search.example", "https://search.example:8443", "https://app.example"] {
        check_rpc_error(&with(&[origin]), 403, -32_600);
    }
    for two in [["https://search.example", "https://evil.example"], ["https://search.example"; 2]] {
        let r = with(&two);
        check_rpc_error(&r, 403, -32_600);
        assert!(r.json()["error"]["message"].as_str().unwrap().contains("one Origin"), "{}", r.text());
    }
    assert_eq!(w.source.count("/html/"), 0);
}
