//! Issue 40: the Tavily door (`POST /tavily/search`, `POST /tavily/extract`) over recorded pages on loopback: Tavily's
//! shapes member by member, the controls reaching the source as `/service`'s do, pages and the extractive answer
//! drawn from what the pages say, refused URLs in `failed_results`, errors in Tavily's `{"detail": {"error"}}`, a
//! failed search a 502 naming its sources, signed answers, and who may call a paid instance. tests/interop.rs drives
//! the door with tavily-python and LangChain's tools.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)]

mod common;

use common::pay::{paid_env, Facilitator, Payer};
use common::upstream::{Answer, Upstream};
use common::{own_fixture, pairs, results_pointing_at, Server};
use serde_json::{json, Value};

/// A loopback world: DuckDuckGo's recorded results with the top one pointed at a loopback article, the article, and
/// a server allowed to fetch it (with `extra` variables).
fn world(extra: &[(&str, &str)]) -> (World, Server) {
    let site = Upstream::start(|seen| match seen.path() {
        "/article" => Answer::html(200, own_fixture("extract_article.html")),
        _ => Answer::html(404, "no"),
    });
    let results = results_pointing_at(&site.url("/article"));
    let up = Upstream::start(move |seen| match seen.path() {
        "/html/" => Answer::html(200, results.clone()),
        _ => Answer::html(404, "no"),
    });
    let mut env = common::sources_env(&up, "ddg_html");
    env.push(("WEBSEARCHD_FETCH_ALLOW".into(), format!("127.0.0.1:{}", site.addr.port())));
    env.extend(extra.iter().map(|(k, v)| (k.to_string(), v.to_string())));
    let server = Server::start(&pairs(&env));
    (World { site, search: up }, server)
}

/// The loopback upstreams: the page site and the search source.
struct World {
    site: Upstream,
    search: Upstream,
}

fn post(server: &Server, path: &str, body: &Value) -> common::Reply {
    server.post_json(path, &body.to_string())
}

/// Every word of `text` (letters and digits) is a word of `source`.
fn words_within(text: &str, source: &str) -> Result<(), String> {
    let words = |s: &str| -> Vec<String> {
        s.split(|c: char| !c.is_alphanumeric()).filter(|w| !w.is_empty()).map(str::to_lowercase).collect()
    };
    let known: std::collections::HashSet<String> = words(source).into_iter().collect();
    match words(text).into_iter().find(|w| !known.contains(w)) {
        None => Ok(()),
        Some(w) => Err(format!("{w:?} is not on the page")),
    }
}

#[test]
fn a_search_is_tavilys_answer_in_the_sources_order_signed() {
    let (up, server) = world(&[]);
    let expected = post(&server, "/service", &json!({ "query": "crashes per month", "max_results": 5 })).json();
    let expected = expected["results"].as_array().unwrap().clone();
    assert_eq!(expected.len(), 2);
    let r = post(
        &server,
        "/tavily/search",
        &json!({ "query": "crashes per month", "search_depth": "advanced", "chunks_per_source": 2,
                 "include_raw_content": "markdown", "include_answer": true, "include_images": true,
                 "include_favicon": true, "include_usage": true }),
    );
    assert_eq!(r.status, 200, "{}", r.text());
    let a = r.json();
    assert_eq!(a["query"], "crashes per month");
    assert_eq!((&a["images"], &a["follow_up_questions"]), (&json!([]), &Value::Null));
    assert!(a["response_time"].as_f64().unwrap() >= 0.0, "{a}");
    assert_eq!(a["request_id"].as_str(), r.header("x-request-id"));
    assert_eq!(a["usage"], json!({ "credits": 2 }));
    assert_eq!(a["sources"][0]["name"], "ddg_html", "our per-source report rides along");
    let results = a["results"].as_array().unwrap();
    assert_eq!(results.len(), expected.len());
    let mut last = 1.1;
    for (got, want) in results.iter().zip(&expected) {
        assert_eq!((&got["title"], &got["url"]), (&want["title"], &want["url"]), "the source's order");
        let score = got["score"].as_f64().unwrap();
        assert!(score > 0.0 && score <= 1.0 && score < last, "{a}");
        last = score;
        assert_eq!(got["favicon"], Value::Null);
    }
    // The top result is the article: its raw content is the page, its content the page's passages about the query.
    let page = results[0]["raw_content"].as_str().unwrap();
    assert!(page.starts_with("# Rust at the Edge"), "{page}");
    let content = results[0]["content"].as_str().unwrap();
    let chunks: Vec<&str> = content.split(" [...] ").collect();
    assert!(!chunks.is_empty() && chunks.len() <= 2, "{content}");
    // Text, as Tavily's content is: the page's own passages, its markdown marks left out.
    let text = websearchd::tavily::plain(page);
    for chunk in &chunks {
        assert!(text.contains(chunk), "a passage of the page as it stands: {chunk}");
    }
    assert!(content.to_lowercase().contains("crashes"), "{content}");
    // The second result's page is not one the guard lets the server fetch: its snippet, no raw content.
    assert_eq!(results[1]["raw_content"], Value::Null);
    assert_eq!(results[1]["content"], expected[1]["snippet"]);
    // The answer quotes the page and nothing else.
    let answer = a["answer"].as_str().unwrap();
    words_within(answer, page).unwrap();
    assert_eq!(up.site.count("/article"), 1);

    // Signed as `/service` is.
    let keys = websearchd::sign::keys_from_jwks(&server.get("/.well-known/jwks.json").json());
    let verified = websearchd::sign::verify_answer(&r.body, |n| r.header(n).map(str::to_owned), &keys).unwrap();
    assert_eq!(Some(verified.kid.as_str()), a["kid"].as_str());

    // Basic: the snippets, no page read; `max_results: 0` gives no results; `text` is the page's text.
    let basic = post(&server, "/tavily/search", &json!({ "query": "crashes per month", "max_results": 1 })).json();
    assert_eq!(basic["results"].as_array().unwrap().len(), 1);
    assert_eq!((&basic["results"][0]["content"], &basic["answer"]), (&expected[0]["snippet"], &Value::Null));
    assert_eq!(basic["results"][0]["raw_content"], Value::Null);
    let none = post(&server, "/tavily/search", &json!({ "query": "crashes per month", "max_results": 0 })).json();
    assert_eq!(none["results"], json!([]));
    let text = post(&server, "/tavily/search", &json!({ "query": "crashes", "include_raw_content": "text" })).json();
    let text = text["results"][0]["raw_content"].as_str().unwrap();
    assert!(text.starts_with("Rust at the Edge") && !text.contains("](") && !text.contains("**"), "{text}");
    assert_eq!(up.site.count("/article"), 1, "pages come from the extraction cache");
}

/// The controls reach the source as `/service`'s do: the same request for the same controls.
#[test]
fn controls_reach_the_source_as_services_do() {
    let (up, server) = world(&[("WEBSEARCHD_CACHE_TTL_S", "0")]);
    let asked = |path: &str, body: Value| {
        let before = up.search.count("/html/");
        assert_eq!(post(&server, path, &body).status, 200);
        let seen = up.search.seen().into_iter().filter(|s| s.path() == "/html/").nth(before).unwrap();
        (seen.target.clone(), String::from_utf8_lossy(&seen.body).into_owned())
    };
    let service = asked(
        "/service",
        json!({ "query": "rust", "time_range": "week", "region": "de-de", "include_domains": ["rust-lang.org"],
                "exclude_domains": ["example.com"] }),
    );
    let tavily = asked(
        "/tavily/search",
        json!({ "query": "rust", "time_range": "w", "country": "germany", "include_domains": ["rust-lang.org"],
                "exclude_domains": ["example.com"] }),
    );
    assert_eq!(tavily, service);
    assert!(
        service.1.contains("df=w") && service.1.contains("kl=de-de") && service.1.contains("site%3Arust-lang.org"),
        "{service:?}"
    );
    // News over the last 7 days is a week's search; days: 1 a day's.
    let news = asked("/tavily/search", json!({ "query": "rust", "topic": "news" }));
    assert!(news.1.contains("df=w"), "{news:?}");
    let day = asked("/tavily/search", json!({ "query": "rust", "topic": "news", "days": 1 }));
    assert!(day.1.contains("df=d"), "{day:?}");
    // prefer: no filter asked of the source, every result kept.
    let prefer = post(
        &server,
        "/tavily/search",
        &json!({ "query": "rust", "include_domains": ["nowhere.example"], "include_domains_mode": "prefer" }),
    );
    assert_eq!(prefer.json()["results"].as_array().unwrap().len(), 2, "{}", prefer.text());
}

#[test]
fn errors_are_tavilys_shape_and_a_failed_search_is_a_502_naming_its_sources() {
    let (_up, server) = world(&[]);
    for (body, status, code, field) in [
        (json!({}), 400, "query_missing", Some("query")),
        (json!({ "query": "q", "search_depth": "deep" }), 400, "field_invalid", Some("search_depth")),
        (json!({ "query": "q", "end_date": "2001-01-01" }), 400, "field_not_honoured", Some("end_date")),
        (json!({ "query": "q", "colour": "blue" }), 400, "field_unknown", Some("colour")),
    ] {
        let r = post(&server, "/tavily/search", &body);
        assert_eq!(r.status, status, "{body}: {}", r.text());
        let detail = &r.json()["detail"];
        assert!(detail["error"].as_str().unwrap().len() > 10, "{detail}");
        assert_eq!((detail["code"].as_str(), detail["field"].as_str()), (Some(code), field), "{body}");
    }
    let r = server.request("POST", "/tavily/search", &[("Content-Type", "text/plain")], b"{}");
    assert_eq!((r.status, r.json()["detail"]["code"].as_str()), (415, Some("unsupported_media_type")));
    let r = server.get("/tavily/search");
    assert_eq!((r.status, r.header("allow")), (405, Some("POST, OPTIONS")));
    assert_eq!(r.json()["detail"]["code"], "method_not_allowed", "Tavily's shape on its paths");
    assert_eq!(post(&server, "/tavily/crawl", &json!({})).json()["detail"]["code"], "not_found");

    let down = Upstream::start(|_| Answer::html(503, "down"));
    let server = Server::start(&pairs(&common::sources_env(&down, "ddg_html,ddg_lite")));
    let r = post(&server, "/tavily/search", &json!({ "query": "rust" }));
    assert_eq!(r.status, 502, "{}", r.text());
    let error = r.json()["detail"]["error"].as_str().unwrap().to_owned();
    assert!(error.contains("ddg_html") && error.contains("ddg_lite"), "{error}");
    assert_eq!(error.matches("ddg_html").count(), 1, "each named once: {error}");

    let off = Server::start(&[("WEBSEARCHD_TAVILY_API", "0")]);
    assert_eq!(post(&off, "/tavily/search", &json!({ "query": "rust" })).status, 404);
}

#[test]
fn extract_reads_pages_and_names_the_refused() {
    let (up, server) = world(&[]);
    let article = up.site.url("/article");
    let refused = "http://127.0.0.1:9/private";
    let r = post(&server, "/tavily/extract", &json!({ "urls": [refused, article], "timeout": 30 }));
    assert_eq!(r.status, 200, "{}", r.text());
    let a = r.json();
    assert_eq!(a["results"].as_array().unwrap().len(), 1, "{a}");
    assert_eq!((&a["results"][0]["url"], &a["results"][0]["images"]), (&json!(article), &json!([])));
    let page = a["results"][0]["raw_content"].as_str().unwrap();
    assert!(page.starts_with("# Rust at the Edge"), "{page}");
    assert_eq!(a["failed_results"][0]["url"], refused);
    assert!(a["failed_results"][0]["error"].as_str().unwrap().starts_with("port_refused"), "{a}");
    assert_eq!(a["request_id"].as_str(), r.header("x-request-id"));

    // A string URL; the passages about a query, as text.
    let q = json!({ "urls": article, "query": "crashes per month", "chunks_per_source": 1, "format": "text" });
    let one = post(&server, "/tavily/extract", &q).json();
    let chunk = one["results"][0]["raw_content"].as_str().unwrap();
    assert!(!chunk.contains(" [...] ") && chunk.to_lowercase().contains("crashes"), "{chunk}");
    words_within(chunk, page).unwrap();
    let r = post(&server, "/tavily/extract", &json!({ "urls": vec![article.clone(); 21] }));
    assert_eq!((r.status, r.json()["detail"]["code"].as_str()), (400, Some("urls_too_many")));
}

/// A paid instance: an operator's key is free (and counted), a payment pays, anyone else gets 401 in Tavily's shape.
#[test]
fn a_paid_instance_answers_keys_and_payments_and_refuses_the_rest() {
    let facilitator = Facilitator::start();
    let source = Upstream::start(|_| Answer::html(200, own_fixture("search/ddg_html_results.html")));
    let key = format!("wsk_{}", "k".repeat(43));
    let (_keys, keys_var) = common::api_keys_file(&key);
    let mut env = paid_env(source.url("/html/"), facilitator.url());
    env.push(keys_var.clone());
    let server = Server::start(&pairs(&env));
    let body = json!({ "query": "rust" }).to_string();
    let call = |auth: Option<&str>, payment: Option<&str>| {
        let mut headers = vec![("Content-Type", "application/json")];
        if let Some(a) = auth {
            headers.push(("Authorization", a));
        }
        if let Some(p) = payment {
            headers.push(("PAYMENT-SIGNATURE", p));
        }
        server.request("POST", "/tavily/search", &headers, body.as_bytes())
    };
    for (auth, code) in [(None, "payment_required"), (Some("Bearer tvly-not-ours"), "api_key_invalid")] {
        let r = call(auth, None);
        assert_eq!(r.status, 401, "{}", r.text());
        assert_eq!(r.header("www-authenticate"), Some("Bearer realm=\"websearchd\""));
        let detail = &r.json()["detail"];
        assert_eq!(detail["code"], code);
        assert!(detail["error"].as_str().unwrap().contains("websearchd apikey new"), "{detail}");
        assert_eq!(
            detail["x402"]["accepts"][0]["payTo"].as_str().map(str::to_lowercase),
            Some(common::pay::PAY_TO.to_lowercase())
        );
    }
    assert!(source.seen().is_empty(), "nothing searched for a refused caller");

    // A key that is not ours does not stop a caller the free rules admit, nor count as an attempt against it.
    let mut free = env.clone();
    free.push(("WEBSEARCHD_FREE_LOOPBACK".into(), "1".into()));
    let local = Server::start(&pairs(&free));
    for _ in 0..12 {
        let headers = [("Content-Type", "application/json"), ("Authorization", "Bearer tvly-anything")];
        let r = local.request("POST", "/tavily/search", &headers, body.as_bytes());
        assert_eq!(r.status, 200, "{}", r.text());
    }
    drop(local);

    let bearer = format!("Bearer {key}");
    let r = call(Some(&bearer), None);
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(r.json()["results"].as_array().unwrap().len(), 2);
    let id = websearchd::apikeys::key_id(&key);
    assert_eq!(server.metric(&format!("websearchd_tavily_key_calls_total{{key=\"{id}\"}}")), 1);
    // An agent's key (`apikey new --agent`) opens the door, not the operator's view.
    let agent = format!("wsa_{}", "a".repeat(43));
    std::fs::write(&keys_var.1, format!("{key}\n{agent} # an agent\n")).unwrap();
    let r = call(Some(&format!("Bearer {agent}")), None);
    assert_eq!(r.status, 200, "{}", r.text());
    let state = server.request("GET", "/core/state", &[("X-WALLET", agent.as_str())], b"");
    assert_eq!((state.status, state.error_code().as_str()), (403, "api_key_scope"), "{}", state.text());
    assert_eq!(server.request("GET", "/core/state", &[("X-WALLET", key.as_str())], b"").status, 200);
    // Older clients send the key in the body.
    let in_body = server.post_json("/tavily/search", &json!({ "query": "rust", "api_key": key }).to_string());
    assert_eq!(in_body.status, 200, "{}", in_body.text());
    assert_eq!(server.metric(&format!("websearchd_tavily_key_calls_total{{key=\"{id}\"}}")), 2);

    let refused = call(None, None).json();
    let accepted = refused["detail"]["x402"]["accepts"][0].clone();
    let header = Payer::new(3).v2_header(&accepted);
    let r = call(None, Some(&header));
    assert_eq!(r.status, 200, "{}", r.text());
    assert!(r.header("payment-response").is_some());
}
