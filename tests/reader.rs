//! The reader door, `POST /extract` (issue 39, part 3): pages in the order asked, each its own outcome (a refusal of
//! the SSRF guard is a page's status, not the call's), signed as `/service` is; bad bodies are 400s before payment;
//! a paid call is priced per URL.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)]

mod common;

use common::upstream::{Answer, Upstream};
use common::{own_fixture, Server};
use serde_json::{json, Value};

/// A loopback site serving the article fixture, and a server allowed to fetch it (with `extra` variables).
fn world(extra: &[(&str, &str)]) -> (Upstream, Server, String) {
    let site = Upstream::start(|seen| match seen.path() {
        "/article" => Answer::html(200, own_fixture("extract_article.html")),
        _ => Answer::html(404, ""),
    });
    let allow = format!("127.0.0.1:{}", site.addr.port());
    let mut env = vec![("WEBSEARCHD_FETCH_ALLOW", allow.as_str()), ("WEBSEARCHD_PUBLIC_URL", "https://search.example")];
    env.extend_from_slice(extra);
    let server = Server::start(&env);
    let article = site.url("/article");
    (site, server, article)
}

#[test]
fn two_urls_one_refused_give_two_pages_in_order_signed() {
    let (site, server, article) = world(&[]);
    // Loopback on a port the allowlist does not name: the guard refuses it.
    let refused = "http://127.0.0.1:9/private";
    let body = json!({ "urls": [refused, article], "query": "crashes per month", "tokens": 100 });
    let r = server.post_json("/extract", &body.to_string());
    assert_eq!(r.status, 200, "{}", r.text());
    let a = r.json();
    assert_eq!(a["request_id"].as_str(), r.header("x-request-id"));
    assert!(a["issued_at"].as_str().unwrap().ends_with('Z'), "{a}");
    let pages = a["pages"].as_array().unwrap();
    assert_eq!(pages.len(), 2, "{a}");

    let no = &pages[0];
    assert_eq!((no["url"].as_str(), no["status"].as_str()), (Some(refused), Some("port_refused")), "{no}");
    assert!(no["error"].as_str().unwrap().contains("port 9"), "{no}");
    assert!(no.get("markdown").is_none(), "{no}");

    let ok = &pages[1];
    assert_eq!(ok["status"], "ok", "{ok}");
    assert_eq!((ok["url"].as_str(), ok["final_url"].as_str()), (Some(article.as_str()), Some(article.as_str())));
    assert_eq!(ok["title"], "Rust at the Edge");
    let md = ok["markdown"].as_str().unwrap();
    assert!(md.starts_with("# Rust at the Edge"), "{md}");
    assert!(md.contains("| Crashes per month | 40 | 4 |"), "the query's row is kept: {md}");
    assert_eq!((&ok["cut"], &ok["truncated"]), (&"query".into(), &true.into()), "{ok}");
    assert!(ok["tokens"].as_u64().unwrap() <= 100);
    assert_eq!(ok["content_sha256"], websearchd::sign::sha256_hex(md.as_bytes()));
    assert_eq!(site.count("/article"), 1);

    // Signed as `/service` is: with the result key, over exactly the bytes sent.
    let keys = websearchd::sign::keys_from_jwks(&server.get("/.well-known/jwks.json").json());
    let verified = websearchd::sign::verify_answer(&r.body, |n| r.header(n).map(str::to_owned), &keys).unwrap();
    assert_eq!(Some(verified.kid.as_str()), a["kid"].as_str());
    assert_eq!(r.header("x-signed-object"), Some("raw"));
    let mut forged = r.body.clone();
    let at = forged.iter().position(|b| *b == b'#').unwrap();
    forged[at] = b'=';
    assert!(websearchd::sign::verify_answer(&forged, |n| r.header(n).map(str::to_owned), &keys).is_err());

    // The same URL twice is two pages (the second from the cache); the door answers POST only.
    let twice = server.post_json("/extract", &json!({ "urls": [article, article] }).to_string()).json();
    let statuses: Vec<&Value> = twice["pages"].as_array().unwrap().iter().map(|p| &p["status"]).collect();
    assert_eq!(statuses, [&Value::from("ok"), &Value::from("ok")], "{twice}");
    assert_eq!(twice["pages"][0]["cut"], "none");
    let get = server.get("/extract");
    assert_eq!((get.status, get.header("allow")), (405, Some("POST, OPTIONS")));
}

/// Every bad body is a 400 with its code and field, before payment is asked for and before any page is fetched.
#[test]
fn bad_bodies_are_400s_before_payment() {
    let facilitator = common::pay::Facilitator::start();
    let site = Upstream::start(|_| Answer::html(200, own_fixture("extract_article.html")));
    let mut env = common::pay::paid_env(site.url("/html/"), facilitator.url());
    env.push(("WEBSEARCHD_FETCH_ALLOW".into(), format!("127.0.0.1:{}", site.addr.port())));
    let server = Server::start(&common::pairs(&env));
    let url = site.url("/a");
    for (body, code, field) in [
        ("{".to_owned(), "invalid_json", None),
        ("[1]".to_owned(), "body_not_object", None),
        (json!({}).to_string(), "urls_missing", Some("urls")),
        (json!({ "urls": url }).to_string(), "urls_not_array", Some("urls")),
        (json!({ "urls": [] }).to_string(), "urls_empty", Some("urls")),
        (json!({ "urls": vec![url.clone(); 6] }).to_string(), "urls_too_many", Some("urls")),
        (json!({ "urls": [url, 7] }).to_string(), "url_not_string", Some("urls[1]")),
        (json!({ "urls": ["no url"] }).to_string(), "url_invalid", Some("urls[0]")),
        (json!({ "urls": [url], "tokens": 9_000 }).to_string(), "tokens_out_of_range", Some("tokens")),
        (json!({ "urls": [url], "query": ["q"] }).to_string(), "query_not_string", Some("query")),
    ] {
        let r = server.post_json("/extract", &body);
        assert_eq!((r.status, r.error_code().as_str()), (400, code), "{body}: {}", r.text());
        assert_eq!(r.json()["error"]["field"].as_str(), field, "{body}");
        assert!(r.header("payment-required").is_none(), "{body}");
    }
    let r = server.request("POST", "/extract", &[("Content-Type", "text/plain")], br#"{"urls":["http://a/"]}"#);
    assert_eq!(r.status, 415, "{}", r.text());
    assert_eq!(site.count("/a"), 0, "no page was fetched");
    assert!(facilitator.upstream.seen().is_empty(), "the facilitator was not asked");
}

/// A paid instance asks for one page's price per URL: by default the search's, else `WEBSEARCHD_EXTRACT_PRICE_ATOMIC`.
#[test]
fn a_paid_call_is_priced_per_url() {
    let facilitator = common::pay::Facilitator::start();
    let up = Upstream::start(|_| Answer::html(404, ""));
    let amount = |server: &Server, urls: &[&str]| {
        let r = server.post_json("/extract", &json!({ "urls": urls }).to_string());
        assert_eq!(r.status, 402, "{}", r.text());
        let challenge = r.json();
        assert_eq!(challenge["resource"]["url"], "https://search.example/extract", "{challenge}");
        challenge["accepts"][0]["amount"].as_str().unwrap().to_owned()
    };
    let (a, b) = ("https://a.example/", "https://b.example/");
    let server = Server::start(&common::pairs(&common::pay::paid_env(up.url("/html/"), facilitator.url())));
    assert_eq!((amount(&server, &[a]), amount(&server, &[a, b])), ("5000".into(), "10000".into()));
    drop(server);
    let mut env = common::pay::paid_env(up.url("/html/"), facilitator.url());
    env.push(("WEBSEARCHD_EXTRACT_PRICE_ATOMIC".into(), "700".into()));
    let server = Server::start(&common::pairs(&env));
    assert_eq!((amount(&server, &[a]), amount(&server, &[a, b, a])), ("700".into(), "2100".into()));
    // The search's price is its own.
    let r = server.post_json("/service", r#"{"query":"q"}"#);
    assert_eq!(r.json()["accepts"][0]["amount"], "5000");
}

/// Paid end to end: the payment of the two-URL total is taken and settled; one URL's price for two URLs is refused
/// before any page is fetched; the loopback free rule lets a local call through as on `/service`.
#[test]
fn a_paid_call_for_two_urls_pays_their_total() {
    let facilitator = common::pay::Facilitator::start();
    let site = Upstream::start(|_| Answer::html(200, own_fixture("extract_article.html")));
    let mut env = common::pay::paid_env(site.url("/html/"), facilitator.url());
    env.push(("WEBSEARCHD_FETCH_ALLOW".into(), format!("127.0.0.1:{}", site.addr.port())));
    let server = Server::start(&common::pairs(&env));
    let body = json!({ "urls": [site.url("/a"), site.url("/b")] }).to_string();
    let challenge = server.post_json("/extract", &body);
    assert_eq!(challenge.status, 402, "{}", challenge.text());
    let accepted = challenge.json()["accepts"][0].clone();
    assert_eq!(accepted["amount"], "10000");
    let paid = |payer: &common::pay::Payer| {
        let header = payer.v2_header(&accepted);
        let headers = [("Content-Type", "application/json"), ("PAYMENT-SIGNATURE", header.as_str())];
        server.request("POST", "/extract", &headers, body.as_bytes())
    };

    let short = paid(&common::pay::Payer::new(1));
    assert_eq!((short.status, &short.json()["error"]), (402, &json!("payment_amount_mismatch")), "{}", short.text());
    assert_eq!(site.count("/a") + site.count("/b"), 0, "no page fetched before payment");

    let payer = common::pay::Payer { value: 10_000, ..common::pay::Payer::new(2) };
    let r = paid(&payer);
    assert_eq!(r.status, 200, "{}", r.text());
    assert!(r.header("payment-response").is_some());
    let statuses: Vec<Value> = r.json()["pages"].as_array().unwrap().iter().map(|p| p["status"].clone()).collect();
    assert_eq!(statuses, [json!("ok"), json!("ok")]);
    let paths: Vec<String> = facilitator.upstream.seen().iter().map(|s| s.path().to_string()).collect();
    assert_eq!(paths, ["/verify", "/settle"]);
    drop(server);

    env.push(("WEBSEARCHD_FREE_LOOPBACK".into(), "1".into()));
    let server = Server::start(&common::pairs(&env));
    let r = server.post_json("/extract", &body);
    assert_eq!(r.status, 200, "{}", r.text());
    assert!(r.header("payment-response").is_none());
}
