//! Issue 41, item 6: other web origins and a free loopback instance. A page on another site (or a DNS-rebinding name
//! that resolves to 127.0.0.1) cannot use a free instance through its visitor's browser: a foreign `Origin` or
//! `Host` is refused with 403 on every door, before any source is asked; a client without an `Origin` (a program)
//! and the instance's own page are answered; `WEBSEARCHD_ALLOWED_ORIGINS` allows a browser tool; a paid instance
//! answers every origin, but the loopback rule's free calls are checked.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)]

mod common;

use common::pay::{paid_env, Facilitator};
use common::upstream::{Answer, Upstream};
use common::{own_fixture, pairs, Server};
use serde_json::Value;

fn source() -> Upstream {
    Upstream::start(|_| Answer::html(200, own_fixture("search/ddg_html_results.html")))
}

fn free(source: &Upstream, extra: &[(&str, &str)]) -> Server {
    let mut env = common::sources_env(source, "ddg_html");
    env.push(("WEBSEARCHD_CACHE_TTL_S".into(), "0".into()));
    env.extend(extra.iter().map(|(k, v)| (k.to_string(), v.to_string())));
    Server::start(&pairs(&env))
}

/// Each door's call, as a browser page would send it: (method, path, body).
const DOORS: [(&str, &str, &str); 6] = [
    ("POST", "/service", r#"{"query":"rust"}"#),
    ("GET", "/search?q=rust&format=json", ""),
    ("POST", "/extract", r#"{"urls":["https://a.example/"]}"#),
    ("POST", "/tavily/search", r#"{"query":"rust"}"#),
    ("POST", "/mcp", r#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#),
    (
        "POST",
        "/notary/service",
        r#"{"op":"notarize","hash":"0000000000000000000000000000000000000000000000000000000000000000"}"#,
    ),
];

fn call(server: &Server, (method, path, body): (&str, &str, &str), headers: &[(&str, &str)]) -> common::Reply {
    let mut h = vec![("Content-Type", "application/json")];
    h.extend_from_slice(headers);
    server.request(method, path, &h, body.as_bytes())
}

/// The stable code of a 403, in whichever shape the door answers (Tavily's `detail`, ours `error`).
fn code(reply: &common::Reply) -> String {
    let v: Value = serde_json::from_slice(&reply.body).unwrap_or_default();
    v["error"]["code"].as_str().or(v["detail"]["code"].as_str()).unwrap_or("").to_owned()
}

#[test]
fn a_free_instance_refuses_other_origins_and_names_on_every_door() {
    let up = source();
    let server = free(&up, &[]);
    let own_host = server.addr.to_string();
    let own_origin = format!("http://{own_host}");
    for door in DOORS {
        let r = call(&server, door, &[("Origin", "https://evil.example")]);
        // `/mcp` says it in JSON-RPC (its own Origin rule, MCP's).
        let refused = if door.1 == "/mcp" { "" } else { "origin_refused" };
        assert_eq!((r.status, code(&r).as_str()), (403, refused), "{door:?}: {}", r.text());
        assert_eq!(r.header("access-control-allow-origin"), Some("*"), "the browser may read the refusal");
        let rebound = format!("evil.example:{}", server.addr.port());
        let r = call(&server, door, &[("Host", rebound.as_str())]);
        assert_eq!((r.status, code(&r).as_str()), (403, "host_refused"), "{door:?}: {}", r.text());
        // A program (no Origin), and the instance's own page.
        let r = call(&server, door, &[]);
        assert!(r.status != 403, "{door:?}: {}", r.text());
        let r = call(&server, door, &[("Origin", own_origin.as_str())]);
        assert!(r.status != 403, "{door:?}: {}", r.text());
    }
    // Two answered calls of each of the three search doors: the refused ones asked nothing.
    assert_eq!(up.count("/html/"), 6, "only the answered calls searched");
    // What is not a door is public: health, the documents, the search page's home for a rebound name.
    let rebound = format!("evil.example:{}", server.addr.port());
    assert_eq!(server.request("GET", "/health", &[("Host", rebound.as_str())], b"").status, 200);
    assert_eq!(server.request("GET", "/llms.txt", &[("Origin", "https://evil.example")], b"").status, 200);
    // A preflight from another site gets the refusal too.
    let r = server.request("OPTIONS", "/service", &[("Origin", "https://evil.example")], b"");
    assert_eq!(r.status, 403, "{}", r.text());
}

#[test]
fn an_allowed_origin_is_answered_and_a_paid_instance_answers_every_origin() {
    let up = source();
    let server = free(&up, &[("WEBSEARCHD_ALLOWED_ORIGINS", "https://tool.example")]);
    let r = call(&server, DOORS[0], &[("Origin", "https://tool.example")]);
    assert_eq!(r.status, 200, "{}", r.text());
    let r = call(&server, DOORS[0], &[("Origin", "https://other.example")]);
    assert_eq!(r.status, 403);
    drop(server);

    let facilitator = Facilitator::start();
    let env = paid_env(up.url("/html/"), facilitator.url());
    let server = Server::start(&pairs(&env));
    let r = call(&server, DOORS[0], &[("Origin", "https://evil.example")]);
    assert_eq!(r.status, 402, "payment is the gate: {}", r.text());
    assert_eq!(r.header("access-control-allow-origin"), Some("*"));
    drop(server);
    // The loopback rule's free calls are the instance's own: checked as on a free instance.
    let mut env = env;
    env.push(("WEBSEARCHD_FREE_LOOPBACK".into(), "1".into()));
    let server = Server::start(&pairs(&env));
    let r = call(&server, DOORS[0], &[("Origin", "https://evil.example")]);
    assert_eq!((r.status, code(&r).as_str()), (403, "origin_refused"), "{}", r.text());
    assert_eq!(call(&server, DOORS[0], &[]).status, 200);
}
