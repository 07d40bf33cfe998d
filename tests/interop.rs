//! Interop with the official clients, run from Python in the venv that `.ci/run` makes (`WEBSEARCHD_PYTHON`, or
//! `.venv/bin/python`). Without that interpreter the tests print a notice and skip.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)]

mod common;

use std::path::PathBuf;

use common::pay::{paid_env, Facilitator, Payer, PAY_TO};
use common::upstream::{Answer, Upstream};
use common::{own_fixture, Server};
use serde_json::Value;

/// The venv's Python, if there is one with the interop packages.
fn python() -> Option<PathBuf> {
    let candidate = std::env::var_os("WEBSEARCHD_PYTHON")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/.venv/bin/python")));
    if candidate.exists() {
        Some(candidate)
    } else if std::env::var_os("WEBSEARCHD_REQUIRE_INTEROP").is_some() {
        panic!("WEBSEARCHD_REQUIRE_INTEROP is set but there is no interop Python at {}", candidate.display());
    } else {
        eprintln!(
            "notice: no interop Python at {} (run .ci/run or set WEBSEARCHD_PYTHON); skipping",
            candidate.display()
        );
        None
    }
}

/// Runs `tests/interop/<script>` with `args`; its standard output, once it has exited 0.
fn run_script(python: &std::path::Path, script: &str, args: &[&str]) -> String {
    let path = format!("{}/tests/interop/{script}", env!("CARGO_MANIFEST_DIR"));
    let out = std::process::Command::new(python).arg(path).args(args).output().expect("run python");
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(out.status.success(), "{script} failed: {stdout}\n{}", String::from_utf8_lossy(&out.stderr));
    stdout
}

#[test]
fn the_official_x402_python_client_pays_end_to_end() {
    let Some(python) = python() else { return };
    let source = Upstream::start(|_| Answer::html(200, own_fixture("search/ddg_html_results.html")));
    let facilitator = Facilitator::start();
    let server = Server::start(&common::pairs(&paid_env(source.url("/html/"), facilitator.url())));
    let stdout = run_script(&python, "x402_client.py", &[&format!("http://{}/service", server.addr)]);
    let seen: Value = serde_json::from_str(stdout.lines().last().unwrap()).unwrap();
    assert_eq!(seen["status"], 200);
    assert_eq!(seen["results"], 2);
    assert_eq!(seen["settlement"]["success"], true);
    assert_eq!(seen["settlement"]["transaction"], "0xfeedbeef");
    // The facilitator saw the client's own payer address (recovered from its signature) and both calls.
    let paths: Vec<String> = facilitator.upstream.seen().iter().map(|s| s.path().to_string()).collect();
    assert_eq!(paths, vec!["/verify", "/settle"]);
    let verify: Value = serde_json::from_slice(&facilitator.upstream.seen()[0].body).unwrap();
    let from = verify["paymentPayload"]["payload"]["authorization"]["from"].as_str().unwrap().to_lowercase();
    assert_eq!(from, seen["payer"].as_str().unwrap().to_lowercase());
}

/// The reader door (`POST /extract`) paid by the official x402 client: the challenge of two URLs (one a loopback page
/// the server may fetch, one its guard refuses) asks twice a page's price, the client pays it, and the answer has
/// both pages in order.
#[test]
fn the_official_x402_python_client_pays_the_reader_per_url() {
    let Some(python) = python() else { return };
    let site = Upstream::start(|_| Answer::html(200, own_fixture("extract_article.html")));
    let facilitator = Facilitator::start();
    let mut env = paid_env(site.url("/html/"), facilitator.url());
    env.push(("WEBSEARCHD_FETCH_ALLOW".into(), format!("127.0.0.1:{}", site.addr.port())));
    env.push(("WEBSEARCHD_EXTRACT_PRICE_ATOMIC".into(), "1500".into()));
    let server = Server::start(&common::pairs(&env));
    let body = serde_json::json!({ "urls": [site.url("/article"), "http://10.0.0.1/"], "query": "crashes" });
    let url = format!("http://{}/extract", server.addr);
    let stdout = run_script(&python, "x402_client.py", &[&url, &body.to_string()]);
    let seen: Value = serde_json::from_str(stdout.lines().last().unwrap()).unwrap();
    assert_eq!(seen["status"], 200, "{seen}");
    assert_eq!(seen["pages"], serde_json::json!(["ok", "address_refused"]), "{seen}");
    assert_eq!(seen["settlement"]["success"], true, "{seen}");
    let verify: Value = serde_json::from_slice(&facilitator.upstream.seen()[0].body).unwrap();
    assert_eq!(verify["paymentPayload"]["payload"]["authorization"]["value"], "3000", "{verify}");
}

/// The card (with and without the x402 extension), the JWS, signed answers and llms.txt, checked by the official
/// A2A SDK, jwcrypto, pyca cryptography and llms-txt (tests/interop/verify_documents.py).
#[test]
fn discovery_documents_verify_with_standard_tools() {
    let Some(python) = python() else { return };
    let source = Upstream::start(|_| Answer::html(200, own_fixture("search/ddg_html_results.html")));
    let html = source.url("/html/");
    let common = [
        ("WEBSEARCHD_SOURCES", "ddg_html"),
        ("WEBSEARCHD_DDG_HTML_URL", html.as_str()),
        ("WEBSEARCHD_SOURCE_INTERVAL_MS", "0"),
    ];
    // A paid instance names a facilitator (the default serves testnets only, and is not on loopback).
    let facilitator = Facilitator::start();
    let facilitator_url = facilitator.url();
    let paid = [
        ("WEBSEARCHD_PAY_TO", PAY_TO),
        ("WEBSEARCHD_FACILITATOR_URL", facilitator_url.as_str()),
        ("WEBSEARCHD_FREE_LOOPBACK", "1"),
        ("WEBSEARCHD_TRIAL_CALLS_PER_DAY", "3"),
    ];
    for extra in [&[][..], &paid[..]] {
        let env: Vec<(&str, &str)> = common.iter().chain(extra.iter()).copied().collect();
        let server = Server::start(&env);
        let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/interop/verify_documents.py");
        let out = std::process::Command::new(&python)
            .arg(script)
            .arg(format!("http://{}", server.addr))
            .output()
            .expect("run python");
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(out.status.success(), "{stdout}\n{}", String::from_utf8_lossy(&out.stderr));
        for line in [
            "a2a-sdk: agent card signature valid",
            "jwcrypto",
            "cryptography: answer signature valid (sha256-hex)",
            "llms-txt: parsed",
        ] {
            assert!(stdout.contains(line), "{line} missing from:\n{stdout}");
        }
        if !extra.is_empty() {
            let card = server.get("/agent-card.json").json();
            let ext = &card["capabilities"]["extensions"][1];
            assert_eq!(ext["uri"], "https://github.com/google-a2a/a2a-x402/v0.1");
            assert_eq!(ext["params"]["amount"], "5000");
        }
    }
}

/// The official MCP Python SDK client starts `websearchd mcp` over stdio (both the 2026-07-28 discovery and the
/// `initialize` handshake), lists the tools and calls them against loopback sources; the search results equal
/// `/service`'s for the same query, and the answers' signatures verify with the service's key set.
#[test]
fn the_official_mcp_python_client_searches_over_stdio() {
    let Some(python) = python() else { return };
    let site = Upstream::start(|seen| match seen.path() {
        "/article" => Answer::html(200, own_fixture("extract_article.html")),
        _ => Answer::html(404, ""),
    });
    let article = site.url("/article");
    let results = common::results_pointing_at(&article);
    let source = Upstream::start(move |_| Answer::html(200, results.clone()));
    let (html, allow) = (source.url("/html/"), format!("127.0.0.1:{}", site.addr.port()));
    let env = [
        ("WEBSEARCHD_SOURCES", "ddg_html"),
        ("WEBSEARCHD_DDG_HTML_URL", html.as_str()),
        ("WEBSEARCHD_FETCH_ALLOW", allow.as_str()),
        ("WEBSEARCHD_SOURCE_INTERVAL_MS", "0"),
    ];
    let server = Server::start(&env);
    let query = "rust at the edge";
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/interop/mcp_client.py");
    // The MCP server signs with the same keys as the HTTP server: one state directory.
    let state = server.state_dir.path().join("data");
    let out = std::process::Command::new(python)
        .arg(script)
        .args([common::binary(), query, &article, "http://127.0.0.1:80/private"])
        .envs(env)
        .env("WEBSEARCHD_STATE_DIR", &state)
        .env("WEBSEARCHD_MAP_LAYERS", "none")
        .output()
        .expect("run python");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "client failed: {stdout}\n{}", String::from_utf8_lossy(&out.stderr));

    let service = server.post_json("/service", &format!(r#"{{"query":"{query}","max_results":5}}"#)).json();
    let jwks = server.get("/.well-known/jwks.json").json();
    let keys = websearchd::sign::keys_from_jwks(&jwks);
    let verify = |text: &str, signature: &Value| websearchd::mcp::tools::verify(text, signature, &keys);
    let seen: Vec<Value> = stdout.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    let protocols: Vec<&str> = seen.iter().map(|s| s["protocol"].as_str().unwrap()).collect();
    assert_eq!(protocols, ["2026-07-28", "2025-11-25"], "auto discovers, legacy shakes hands");
    for s in &seen {
        assert_eq!(s["server"], "websearchd");
        let search = &s["search"];
        assert_eq!(search["query"], service["query"]);
        assert_eq!(search["results"], service["results"], "mode {}", s["mode"]);
        assert_eq!(search["results"].as_array().unwrap().len(), 2);
        assert_eq!(search["kid"], service["kid"]);
        // The text block is the signed answer; the structured content is the same answer and its signature.
        let text = s["search_text"].as_str().unwrap();
        verify(text, &search["signature"]).expect("the search answer verifies");
        let mut unsigned = search.clone();
        unsigned.as_object_mut().unwrap().remove("signature");
        assert_eq!(serde_json::from_str::<Value>(text).unwrap(), unsigned);
        let tampered = text.replacen("rust", "rusT", 1);
        assert!(verify(&tampered, &search["signature"]).is_err());

        let extract = &s["extract"];
        assert_eq!(extract["final_url"], article.as_str());
        assert_eq!(extract["title"], "Rust at the Edge");
        assert!(extract["markdown"].as_str().unwrap().starts_with("# Rust at the Edge"), "{extract}");
        verify(s["extract_text"].as_str().unwrap(), &extract["signature"]).expect("the extract verifies");
        assert_eq!(extract["cut"], "none");
        // The `query` argument (issue 39): the page over its budget keeps the table row asked about.
        let focused = &s["focused"];
        assert_eq!(focused["cut"], "query", "{focused}");
        assert!(focused["tokens"].as_u64().unwrap() <= 100, "{focused}");
        let md = focused["markdown"].as_str().unwrap();
        assert!(md.starts_with("# Rust at the Edge") && md.contains("| Crashes per month | 40 | 4 |"), "{md}");
        // The same SSRF guard as the server: a loopback address that is not allowed is refused.
        assert_eq!(s["refused"]["error"]["code"], "address_refused", "{}", s["refused"]);
        assert_eq!(s["bad"]["error"]["code"], "query_empty");
        // Issue 31's controls through the SDK (which checks the answer against the tool's outputSchema): the
        // excluded domain's result is removed, the one page left is extracted into its result.
        let controlled = &s["controlled"];
        let results = controlled["results"].as_array().unwrap();
        assert_eq!(results.len(), 1, "{controlled}");
        assert_eq!(results[0]["url"], article.as_str());
        assert_eq!(results[0]["extract"]["status"], "ok", "{controlled}");
        assert_eq!(results[0]["extract"]["title"], "Rust at the Edge");
        assert_eq!(controlled["sources"][0]["removed"], 1);
        assert_eq!(s["bad_control"]["error"]["code"], "time_range_invalid", "{}", s["bad_control"]);
    }
    // Each control reached DuckDuckGo in its own form fields.
    let asked = source.seen().into_iter().find(|r| r.param("q").is_some_and(|q| q.contains("controls"))).unwrap();
    assert_eq!(asked.param("q").as_deref(), Some("rust at the edge controls -site:doc.rust-lang.org"));
    assert_eq!(
        (asked.param("kl"), asked.param("df"), asked.param("kp")),
        (Some("de-de".into()), Some("w".into()), Some("1".into()))
    );
}

/// The official MCP Python SDK over Streamable HTTP at `/mcp`, paying with the official x402 MCP client
/// (tests/interop/mcp_http_client.py): refused with the payment requirements, paid (verify, work, settle, the
/// settlement in the result's `_meta`) with results equal to `/service`'s, and the same payment replayed is refused.
#[test]
fn the_official_mcp_client_pays_over_streamable_http() {
    let Some(python) = python() else { return };
    let source = Upstream::start(|_| Answer::html(200, own_fixture("search/ddg_html_results.html")));
    let facilitator = Facilitator::start();
    let server = Server::start(&common::pairs(&paid_env(source.url("/html/"), facilitator.url())));
    let query = "rust at the edge";
    let stdout = run_script(&python, "mcp_http_client.py", &[&format!("http://{}/mcp", server.addr), query]);
    let seen: Value = serde_json::from_str(stdout.lines().last().unwrap()).unwrap();
    assert_eq!(seen["protocol"], "2025-11-25", "{seen}");
    assert_eq!(seen["tools"], serde_json::json!(["extract_page", "web_search"]));

    // Refused with the requirements, as the x402 MCP transport says: a tool error whose structured content is
    // PaymentRequired and whose text is the same object.
    let unpaid = &seen["unpaid"];
    assert_eq!(unpaid["isError"], true);
    let required = &unpaid["structuredContent"];
    assert_eq!(required["x402Version"], 2);
    assert_eq!(required["accepts"][0]["payTo"], PAY_TO);
    assert_eq!(required["accepts"][0]["amount"], "5000");
    assert_eq!(required["resource"]["url"], "https://search.example/mcp");
    let text: Value = serde_json::from_str(unpaid["content"][0]["text"].as_str().unwrap()).unwrap();
    assert_eq!(&text, required);

    // Paid: the answer equals /service's and its signature verifies; the settlement names the client's payer.
    let paid = &seen["paid"];
    assert_eq!((paid["payment_made"].as_bool(), paid["is_error"].as_bool()), (Some(true), Some(false)), "{paid}");
    let settlement = &paid["settlement"];
    assert_eq!(settlement["success"], true);
    assert_eq!(settlement["transaction"], "0xfeedbeef");
    assert_eq!(settlement["payer"].as_str().unwrap().to_lowercase(), seen["payer"].as_str().unwrap().to_lowercase());
    let jwks = server.get("/.well-known/jwks.json").json();
    let keys = websearchd::sign::keys_from_jwks(&jwks);
    let answer = &paid["structured"];
    websearchd::mcp::tools::verify(paid["text"].as_str().unwrap(), &answer["signature"], &keys)
        .expect("the paid answer verifies");
    assert_eq!(answer["results"].as_array().unwrap().len(), 2);

    // The same payment again: refused before any work, and the facilitator was asked once to verify and settle.
    let replayed = &seen["replayed"];
    assert_eq!(replayed["isError"], true);
    assert_eq!(replayed["structuredContent"]["error"], "payment_replayed", "{replayed}");
    let paths: Vec<String> = facilitator.upstream.seen().iter().map(|s| s.path().to_string()).collect();
    assert_eq!(
        paths,
        vec!["/verify", "/settle", "/verify", "/settle"],
        "one payment per paid call, none for the replay"
    );
    assert_eq!(source.count("/html/"), 2, "the paid searches only");

    // The SDK's default connection (2026-07-28: discover, headers mirroring the body) pays the same way.
    let modern = &seen["modern"];
    assert_eq!((modern["protocol"].as_str(), modern["payment_made"].as_bool()), (Some("2026-07-28"), Some(true)));
    let result = &modern["result"];
    assert_eq!(
        (result["isError"].as_bool(), result["resultType"].as_str()),
        (Some(false), Some("complete")),
        "{result}"
    );
    assert_eq!(result["_meta"]["x402/payment-response"]["success"], true);
    assert_eq!(result["_meta"]["io.modelcontextprotocol/serverInfo"]["name"], "websearchd");

    // `/service`, paid the same price, answers the same results.
    let (json, body) = (("Content-Type", "application/json"), format!(r#"{{"query":"{query}","max_results":5}}"#));
    let challenge = server.request("POST", "/service", &[json], body.as_bytes());
    let header = Payer::new(7).v2_header(&challenge.json()["accepts"][0]);
    let service = server.request("POST", "/service", &[json, ("PAYMENT-SIGNATURE", &header)], body.as_bytes());
    assert_eq!(service.status, 200);
    assert_eq!(answer["query"], service.json()["query"]);
    assert_eq!(answer["results"], service.json()["results"]);
    let state = server.get("/metrics").text();
    assert!(state.contains("websearchd_payments_settled_total 3"), "{state}");
    assert!(state.contains(r#"websearchd_payments_refused_total{reason="payment_replayed"} 1"#), "{state}");
}

/// `/openapi.json` of a free and of a paid instance passes openapi-spec-validator (tests/openapi.rs calls every
/// path it lists).
#[test]
fn the_openapi_document_passes_openapi_spec_validator() {
    let Some(python) = python() else { return };
    let source = Upstream::start(|_| Answer::html(200, own_fixture("search/ddg_html_results.html")));
    let facilitator = Facilitator::start();
    let html = source.url("/html/");
    let free = Server::start(&[("WEBSEARCHD_SOURCES", "ddg_html"), ("WEBSEARCHD_DDG_HTML_URL", &html)]);
    let paid = Server::start(&common::pairs(&paid_env(html.clone(), facilitator.url())));
    let stdout = run_script(
        &python,
        "validate_openapi.py",
        &[&format!("http://{}", free.addr), &format!("http://{}", paid.addr)],
    );
    assert_eq!(stdout.matches("openapi-spec-validator: valid OpenAPI 3.1.0").count(), 2, "{stdout}");
}

/// What the A2A card says is what is served, checked with the official A2A SDK on a free and a paid instance: the
/// card resolves and verifies, advertises no A2A binding (none is served: `message:send` is 404), and its
/// websearch skill's plain HTTP call answers (200 free; 402 with the card's x402 terms when paid).
#[test]
fn the_a2a_card_says_only_what_is_served() {
    let Some(python) = python() else { return };
    let source = Upstream::start(|_| Answer::html(200, own_fixture("search/ddg_html_results.html")));
    let facilitator = Facilitator::start();
    let (html, fac) = (source.url("/html/"), facilitator.url());
    let common = [("WEBSEARCHD_SOURCES", "ddg_html"), ("WEBSEARCHD_DDG_HTML_URL", html.as_str())];
    let paid = [("WEBSEARCHD_PAY_TO", PAY_TO), ("WEBSEARCHD_FACILITATOR_URL", fac.as_str())];
    for (extra, said) in [(&[][..], "free call answered 200"), (&paid[..], "402 with the card's x402 terms")] {
        let env: Vec<(&str, &str)> = common.iter().chain(extra.iter()).copied().collect();
        let server = Server::start(&env);
        let stdout = run_script(&python, "a2a_card.py", &[&format!("http://{}", server.addr)]);
        assert!(stdout.contains("no A2A transport advertised"), "{stdout}");
        assert!(stdout.contains(said), "{stdout}");
    }
}

/// Issue 32: LangChain's `SearxSearchWrapper(searx_host="http://127.0.0.1:PORT")` and its `SearxSearchResults` tool,
/// pointed at websearchd over recorded pages: `results()` gives the recorded results in order (title, link,
/// snippet), `run()` their text.
#[test]
fn langchains_searx_wrapper_searches_through_the_searxng_door() {
    let Some(python) = python() else { return };
    let source = Upstream::start(|_| Answer::html(200, own_fixture("search/ddg_html_results.html")));
    let html = source.url("/html/");
    let server = Server::start(&[
        ("WEBSEARCHD_SOURCES", "ddg_html"),
        ("WEBSEARCHD_DDG_HTML_URL", html.as_str()),
        ("WEBSEARCHD_SOURCE_INTERVAL_MS", "0"),
    ]);
    let body = serde_json::json!({ "query": "rust programming", "max_results": 10 }).to_string();
    let expected = server.post_json("/service", &body).json()["results"].as_array().unwrap().clone();
    assert!(expected.len() >= 2);
    let stdout = run_script(&python, "searx_langchain.py", &[&format!("http://{}", server.addr), "rust programming"]);
    let seen: Value = serde_json::from_str(stdout.lines().last().unwrap()).unwrap();
    let results = seen["results"].as_array().unwrap();
    assert_eq!(results.len(), expected.len(), "{seen}");
    for (got, want) in results.iter().zip(&expected) {
        assert_eq!(got["title"], want["title"]);
        assert_eq!(got["link"], want["url"]);
        assert_eq!(got["snippet"], want["snippet"]);
        assert_eq!(got["engines"], serde_json::json!(["ddg_html"]));
        assert_eq!(got["category"], "general");
    }
    let snippets: Vec<&str> = expected.iter().map(|r| r["snippet"].as_str().unwrap()).collect();
    assert_eq!(seen["run"], snippets.join("\n\n"));
    let tool = seen["tool"].as_str().unwrap();
    assert!(tool.contains(expected[0]["url"].as_str().unwrap()), "{tool}");
}

/// Issue 40: Tavily's own clients pointed at the Tavily door (`api_base_url = http://HOST:PORT/tavily`) over recorded
/// pages: tavily-python's `search()` with each field and `extract()`, keyless as well as with a key, and LangChain's
/// `TavilySearch` and `TavilyExtract`; on a paid instance an unknown key is the SDK's `InvalidAPIKeyError` and the
/// operator's key gets results.
#[test]
fn tavilys_clients_search_and_extract_through_the_tavily_door() {
    let Some(python) = python() else { return };
    let site = Upstream::start(|seen| match seen.path() {
        "/article" => Answer::html(200, own_fixture("extract_article.html")),
        _ => Answer::html(404, "no"),
    });
    let article = site.url("/article");
    let results = common::results_pointing_at(&article);
    let source = Upstream::start(move |_| Answer::html(200, results.clone()));
    let mut env = common::sources_env(&source, "ddg_html");
    env.push(("WEBSEARCHD_FETCH_ALLOW".into(), format!("127.0.0.1:{}", site.addr.port())));
    let server = Server::start(&common::pairs(&env));
    let expected = server.post_json("/service", r#"{"query":"crashes per month"}"#).json()["results"].clone();
    let base = format!("http://{}/tavily", server.addr);
    let refused = "http://127.0.0.1:9/private";
    let every_field = serde_json::json!({
        "query": "crashes per month", "search_depth": "advanced", "topic": "general", "time_range": "year",
        "max_results": 5, "include_domains": ["127.0.0.1", "rust-lang.org"], "exclude_domains": ["example.com"],
        "include_answer": true, "include_raw_content": "markdown", "include_images": true, "country": "germany",
        "include_favicon": true, "include_usage": true, "auto_parameters": true, "timeout": 30,
        "chunks_per_source": 2,
    });
    let plan = serde_json::json!({ "base": base, "key": null, "calls": [
        { "kind": "search", "args": { "query": "crashes per month" } },
        { "kind": "search", "args": every_field },
        { "kind": "search", "args": { "query": "crashes per month", "days": 0 } },
        { "kind": "extract", "args": { "urls": [article, refused], "format": "text" } },
        { "kind": "lc_search", "args": { "query": "crashes per month" }, "tool": { "max_results": 2 } },
        { "kind": "lc_extract", "args": { "urls": [article] } },
        { "kind": "search", "args": { "query": "\"reliable software\" crashes", "topic": "news", "days": 3650,
          "start_date": "2020-01-01", "exact_match": true, "include_domains": ["127.0.0.1"],
          "include_domains_mode": "prefer", "max_age_hours": 24, "language": "en", "include_answer": "advanced",
          "fetch_timeout": 5 } },
        { "kind": "search", "args": { "query": "crashes per month", "end_date": "2000-01-01" } },
        { "kind": "extract", "args": { "urls": [article, "not a url"], "query": "crashes per month",
          "chunks_per_source": 1 } },
    ]});
    let stdout = run_script(&python, "tavily_clients.py", &[&plan.to_string()]);
    let out: Value = serde_json::from_str(stdout.lines().last().unwrap()).unwrap();

    // search(): the source's results in its order, with titles, content and numeric scores.
    let plain = &out[0]["ok"];
    let got = plain["results"].as_array().unwrap_or_else(|| panic!("{out}"));
    assert_eq!(got.len(), expected.as_array().unwrap().len(), "{plain}");
    for (g, want) in got.iter().zip(expected.as_array().unwrap()) {
        assert_eq!((&g["title"], &g["url"], &g["content"]), (&want["title"], &want["url"], &want["snippet"]));
        assert!(g["score"].as_f64().is_some_and(|s| s > 0.0 && s <= 1.0), "{g}");
    }
    // Every field: the page, its passages, an answer from its words, usage, the parameters used.
    let full = &out[1]["ok"];
    let top = &full["results"][0];
    let page = top["raw_content"].as_str().unwrap_or_else(|| panic!("{out}"));
    assert!(page.starts_with("# Rust at the Edge"), "{page}");
    let text = websearchd::tavily::plain(page);
    for chunk in top["content"].as_str().unwrap().split(" [...] ") {
        assert!(text.contains(chunk), "the page's own text: {chunk}");
    }
    let answer = full["answer"].as_str().unwrap();
    assert!(page.contains(answer), "the answer is the page's own words: {answer}");
    assert_eq!((&full["usage"]["credits"], &full["auto_parameters"]["search_depth"]), (&2.into(), &"advanced".into()));
    // A field that cannot be honoured is the SDK's BadRequestError naming it.
    assert_eq!(out[2]["error"], "BadRequestError", "{out}");
    assert!(out[2]["message"].as_str().unwrap().contains("days"), "{out}");
    // extract(): the page as text, the refused URL in failed_results.
    let extracted = &out[3]["ok"];
    assert_eq!(extracted["results"][0]["url"], article, "{extracted}");
    assert!(extracted["results"][0]["raw_content"].as_str().unwrap().starts_with("Rust at the Edge"));
    assert_eq!(extracted["failed_results"][0]["url"], refused, "{extracted}");
    // LangChain's tools return results.
    let lc = &out[4]["ok"];
    assert_eq!(lc["results"].as_array().map(Vec::len), Some(2), "{out}");
    assert_eq!(lc["results"][0]["url"], expected[0]["url"]);
    let lc_extract = &out[5]["ok"];
    assert!(lc_extract["results"][0]["raw_content"].as_str().is_some_and(|p| p.starts_with("# Rust")), "{out}");
    // The rest of the fields: the dated article (2025) kept by the news window from 2020, the quoted phrase in its
    // snippet, the preferred domain first; an answer from the page's words.
    let news = &out[6]["ok"];
    assert_eq!(news["results"][0]["url"], article, "{out}");
    assert!(page.contains(news["answer"].as_str().unwrap_or("none")), "{news}");
    assert_eq!(out[7]["error"], "BadRequestError", "{out}");
    assert!(out[7]["message"].as_str().unwrap().contains("end_date"), "{out}");
    // A string that is not a URL is a failed result beside the page read.
    let mixed = &out[8]["ok"];
    assert_eq!(mixed["failed_results"][0]["url"], "not a url", "{mixed}");
    assert!(mixed["results"][0]["raw_content"].as_str().unwrap().to_lowercase().contains("crashes"), "{mixed}");
    drop(server);

    // A paid instance: an unknown key is refused as Tavily refuses one, the operator's key is served.
    let facilitator = Facilitator::start();
    let key = format!("wsk_{}", "t".repeat(43));
    let (_keys, keys_var) = common::api_keys_file(&key);
    let mut env = paid_env(source.url("/html/"), facilitator.url());
    env.push(keys_var);
    let server = Server::start(&common::pairs(&env));
    let base = format!("http://{}/tavily", server.addr);
    let search = serde_json::json!({ "kind": "search", "args": { "query": "crashes per month" } });
    let run = |key: &str| {
        let plan = serde_json::json!({ "base": base, "key": key, "calls": [search] });
        let stdout = run_script(&python, "tavily_clients.py", &[&plan.to_string()]);
        serde_json::from_str::<Value>(stdout.lines().last().unwrap()).unwrap()[0].clone()
    };
    let unknown = run("tvly-not-issued-here");
    assert_eq!(unknown["error"], "InvalidAPIKeyError", "{unknown}");
    assert!(unknown["message"].as_str().unwrap().contains("websearchd apikey new"), "{unknown}");
    let ours = run(&key);
    assert_eq!(ours["ok"]["results"].as_array().map(Vec::len), Some(2), "{ours}");
}
