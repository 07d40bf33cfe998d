//! `/openapi.json` says what the running server does: every path and method it lists answers with a status it
//! documents (and an error code from the documented list), paths that are off are neither listed nor served, and
//! the discovery documents link it. tests/interop.rs validates it with openapi-spec-validator.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)]

mod common;

use common::pay::{paid_env, Facilitator};
use common::upstream::{Answer, Upstream};
use common::{own_fixture, pairs, Server};
use serde_json::{json, Value};

fn source() -> Upstream {
    Upstream::start(|_| Answer::html(200, own_fixture("search/ddg_html_results.html")))
}

/// A free server over a loopback source, with `extra` variables.
fn free_server(extra: &[(&str, &str)]) -> (Upstream, Server) {
    let source = source();
    let html = source.url("/html/");
    let mut env = vec![
        ("WEBSEARCHD_SOURCES", "ddg_html"),
        ("WEBSEARCHD_DDG_HTML_URL", html.as_str()),
        ("WEBSEARCHD_SOURCE_INTERVAL_MS", "0"),
    ];
    env.extend_from_slice(extra);
    let server = Server::start(&env);
    (source, server)
}

/// The path with its parameters filled in: a layer slug the document lists, receipt 1.
fn concrete(path: &str, op: &Value) -> String {
    let slug = op["parameters"].as_array().into_iter().flatten().find(|p| p["name"] == "slug");
    let slug = slug.and_then(|p| p["schema"]["enum"][0].as_str()).unwrap_or("none");
    path.replace("{slug}", slug).replace("{seq}", "1")
}

/// The error codes a documented response allows, if it lists them.
fn documented_codes(response: &Value) -> Option<Vec<String>> {
    let schema = &response["content"]["application/json"]["schema"];
    let codes = schema["allOf"][1]["properties"]["error"]["properties"]["code"]["enum"].as_array()?;
    Some(codes.iter().map(|c| c.as_str().unwrap().to_owned()).collect())
}

/// Calls every operation of the document (with its example body, and for a POST with `{}` too); returns what did
/// not answer as documented, and the number of calls made.
fn walk(server: &Server, doc: &Value) -> (Vec<String>, usize) {
    let mut wrong = Vec::new();
    let mut calls = 0;
    for (path, item) in doc["paths"].as_object().unwrap() {
        for (method, op) in item.as_object().unwrap() {
            let url = concrete(path, op);
            let example = &op["requestBody"]["content"]["application/json"]["example"];
            let bodies: Vec<Vec<u8>> = match method.as_str() {
                "post" => vec![serde_json::to_vec(example).unwrap(), b"{}".to_vec()],
                _ => vec![Vec::new()],
            };
            for body in bodies {
                calls += 1;
                let headers: &[(&str, &str)] =
                    if body.is_empty() { &[] } else { &[("Content-Type", "application/json")] };
                let reply = server.request(&method.to_uppercase(), &url, headers, &body);
                let said =
                    format!("{} {url} ({}) -> {}", method.to_uppercase(), String::from_utf8_lossy(&body), reply.status);
                let Some(response) = op["responses"].get(reply.status.to_string()) else {
                    wrong.push(format!("{said}: status not documented ({})", reply.text()));
                    continue;
                };
                if let Some(codes) = documented_codes(response) {
                    let code = reply.error_code();
                    if !codes.contains(&code) {
                        wrong.push(format!("{said}: code {code:?} not among {codes:?}"));
                    }
                }
                for (name, header) in response["headers"].as_object().into_iter().flatten() {
                    let required = header["required"] == true || name.starts_with("X-Signature");
                    if required && reply.header(name).is_none() {
                        wrong.push(format!("{said}: no {name} header"));
                    }
                }
                if reply.status == 402 {
                    let header = reply.header("PAYMENT-REQUIRED").unwrap_or("");
                    let decoded = websearchd::codec::base64_decode(header).unwrap_or_default();
                    let challenge: Value = serde_json::from_slice(&decoded).unwrap_or_default();
                    if challenge["x402Version"] != 2 || challenge["accepts"] != reply.json()["accepts"] {
                        wrong.push(format!("{said}: PAYMENT-REQUIRED is not the body's challenge"));
                    }
                }
            }
        }
    }
    (wrong, calls)
}

fn paths(doc: &Value) -> Vec<&str> {
    doc["paths"].as_object().unwrap().keys().map(String::as_str).collect()
}

#[test]
fn every_listed_path_of_a_free_instance_answers_as_documented() {
    let (_source, server) = free_server(&[]);
    let reply = server.get("/openapi.json");
    assert_eq!(reply.status, 200);
    assert!(reply.header("ETag").is_some());
    let doc = reply.json();
    assert_eq!(doc["openapi"], "3.1.0");
    let catalog = server.get("/catalog.json").json();
    assert_eq!(doc["servers"][0]["url"], catalog["service"], "the public URL, as the other documents say it");
    assert_eq!(
        paths(&doc),
        [
            "/",
            "/.well-known/agent-card.json",
            "/.well-known/jwks.json",
            "/agent-card.json",
            "/catalog.json",
            "/core/meshgraph",
            "/core/state",
            "/extract",
            "/health",
            "/llms.txt",
            "/map/",
            "/map/api/capa/{slug}",
            "/map/mapstate",
            "/mcp",
            "/metrics",
            "/notary/receipts/{seq}",
            "/notary/service",
            "/openapi.json",
            "/opensearch.xml",
            "/pubkey",
            "/search",
            "/service",
            "/tavily/extract",
            "/tavily/search",
        ]
    );
    // Free: no 402 anywhere, no payment headers, and the notary's GET (405 here) is not listed.
    let text = reply.text();
    for absent in ["\"402\"", "PAYMENT-SIGNATURE", "x-x402"] {
        assert!(!text.contains(absent), "{absent} in a free instance's document");
    }
    assert!(doc["paths"]["/notary/service"].get("get").is_none());
    let (wrong, calls) = walk(&server, &doc);
    assert!(wrong.is_empty(), "{wrong:#?}");
    assert_eq!(calls, 32, "every operation was called");

    // The discovery documents link it.
    let url = format!("{}/openapi.json", catalog["service"].as_str().unwrap());
    assert!(server.get("/llms.txt").text().contains(&format!("[OpenAPI]({url})")));
    assert_eq!(catalog["openapi"], url.as_str());
}

#[test]
fn a_paid_instance_documents_the_402_and_answers_it() {
    let (source, facilitator) = (source(), Facilitator::start());
    let env = paid_env(source.url("/html/"), facilitator.url());
    let server = Server::start(&pairs(&env));
    let doc = server.get("/openapi.json").json();
    let service = &doc["paths"]["/service"]["post"];
    let required = &service["responses"]["402"];
    assert_eq!(required["headers"]["PAYMENT-REQUIRED"]["required"], true);
    assert_eq!(required["content"]["application/json"]["schema"]["$ref"], "#/components/schemas/PaymentRequired");
    assert_eq!(service["x-x402"]["amount"], "5000");
    assert_eq!(service["x-x402"]["network"], "eip155:8453");
    let parameters: Vec<&str> =
        service["parameters"].as_array().unwrap().iter().map(|p| p["name"].as_str().unwrap()).collect();
    assert_eq!(parameters, ["X-Signed-Object", "PAYMENT-SIGNATURE", "X-PAYMENT"]);
    assert!(service["responses"]["200"]["headers"]["PAYMENT-RESPONSE"].is_object());
    assert_eq!(
        doc["paths"]["/notary/service"]["get"]["responses"]["402"]["headers"]["PAYMENT-REQUIRED"]["required"],
        true
    );
    let (wrong, calls) = walk(&server, &doc);
    assert!(wrong.is_empty(), "{wrong:#?}");
    assert_eq!(calls, 33, "the notary's GET too");
    assert_eq!(doc["paths"]["/mcp"]["post"]["x-x402"]["resource"], "https://search.example/mcp");
    // The reader's terms are one page's (a call pays them per URL).
    let reader = &doc["paths"]["/extract"]["post"]["x-x402"];
    assert_eq!((&reader["resource"], &reader["amount"]), (&"https://search.example/extract".into(), &"5000".into()));
    // The Tavily door is priced as the doors it stands for.
    let tavily = &doc["paths"]["/tavily/search"]["post"]["x-x402"];
    assert_eq!(tavily["resource"], "https://search.example/service");
    assert_eq!(doc["paths"]["/tavily/extract"]["post"]["x-x402"]["resource"], "https://search.example/extract");
    // The walk paid nothing: every paid call got the challenge.
    assert!(facilitator.upstream.seen().is_empty());
}

#[test]
fn paths_that_are_off_are_neither_listed_nor_served() {
    let (_source, server) = free_server(&[
        ("WEBSEARCHD_NOTARY_PATH", "off"),
        ("WEBSEARCHD_CORE_PATH", "off"),
        ("WEBSEARCHD_MAP_PATH", "off"),
        ("WEBSEARCHD_SEARXNG_API", "0"),
        ("WEBSEARCHD_TAVILY_API", "0"),
    ]);
    let doc = server.get("/openapi.json").json();
    let listed = paths(&doc);
    for off in [
        "/notary/service",
        "/notary/receipts/1",
        "/core/state",
        "/core/meshgraph",
        "/map/mapstate",
        "/search",
        "/opensearch.xml",
        "/tavily/search",
        "/tavily/extract",
        "/",
    ] {
        assert!(!listed.iter().any(|p| off.starts_with(p.split('{').next().unwrap())), "{off} listed: {listed:?}");
        assert_eq!(server.get(off).status, 404, "{off}");
    }
    assert_eq!(listed.len(), 12, "{listed:?}");
    let (wrong, _) = walk(&server, &doc);
    assert!(wrong.is_empty(), "{wrong:#?}");
    assert_eq!(json!(doc["components"]["securitySchemes"]["apiKey"]["name"]), json!("X-WALLET"));
}
