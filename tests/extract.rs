//! `extract: true` end to end: a loopback search source whose top result is a loopback page (allowlisted), and the
//! `websearchd extract` command.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)]

mod common;

use common::upstream::{Answer, Upstream};
use common::{own_fixture, results_pointing_at, Server};

/// A loopback site serving the article fixture, a loopback source whose top result it is, and a server using both
/// (with `extra` variables); the article's URL.
fn article_world(extra: &[(&str, &str)]) -> (Upstream, Upstream, Server, String) {
    let site = Upstream::start(|seen| match seen.path() {
        "/article" => Answer::html(200, own_fixture("extract_article.html")),
        _ => Answer::html(404, ""),
    });
    let article = site.url("/article");
    let results = results_pointing_at(&article);
    let source = Upstream::start(move |_| Answer::html(200, results.clone()));
    let (html, allow) = (source.url("/html/"), format!("127.0.0.1:{}", site.addr.port()));
    let mut env = vec![
        ("WEBSEARCHD_SOURCES", "ddg_html"),
        ("WEBSEARCHD_DDG_HTML_URL", html.as_str()),
        ("WEBSEARCHD_FETCH_ALLOW", allow.as_str()),
        ("WEBSEARCHD_SOURCE_INTERVAL_MS", "0"),
    ];
    env.extend_from_slice(extra);
    let server = Server::start(&env);
    (site, source, server, article)
}

#[test]
fn service_returns_the_top_pages_main_content() {
    let (_site, _source, server, article) = article_world(&[]);
    let r = server.post_json("/service", r#"{"query":"rust edge","extract":true}"#);
    assert_eq!(r.status, 200, "{}", r.text());
    let a = r.json();
    assert_eq!(a["results"][0]["url"], article.as_str());
    let md = a["answer_extract"].as_str().expect("answer_extract");
    assert!(md.starts_with("# Rust at the Edge\n\nWe moved our edge proxies"), "{md}");
    for part in [
        "## Why we moved",
        "*real*",
        "- Fewer crashes",
        "```\nfn main()",
        "| Metric | Before | After |",
        "> The best code",
    ] {
        assert!(md.contains(part), "{part:?} missing from:\n{md}");
    }
    for junk in ["Home", "Tweet", "Great post", "Popular", "Copyright"] {
        assert!(!md.contains(junk), "{junk:?} leaked into:\n{md}");
    }
    let e = &a["extract"];
    assert_eq!(e["status"], "ok");
    assert_eq!(e["title"], "Rust at the Edge");
    assert_eq!(e["truncated"], false);
    assert_eq!(e["cut"], "none");
    assert_eq!(e["content_sha256"], websearchd::sign::sha256_hex(md.as_bytes()));

    // A small budget cuts and says so: for a query the page has no word of, at a block boundary (its head).
    let r = server.post_json("/service", r#"{"query":"zebra","extract":true,"extract_tokens":100}"#).json();
    assert_eq!((&r["extract"]["truncated"], &r["extract"]["cut"]), (&true.into(), &"head".into()), "{r}");
    assert!(r["extract"]["tokens"].as_u64().unwrap() <= 100);
    assert!(md.starts_with(r["answer_extract"].as_str().unwrap()));
}

/// Issue 39: a page over its budget keeps what the search asked about (the title, the lead, the table row the
/// query names with its header and heading, a marker where text was left out), in every door that has a query.
#[test]
fn a_cut_page_keeps_what_the_search_asked_about() {
    let (_site, _source, server, _) = article_world(&[]);
    let body = r#"{"query":"crashes per month","extract":2,"extract_tokens":100}"#;
    let a = server.post_json("/service", body).json();
    let md = a["answer_extract"].as_str().unwrap();
    assert!(md.starts_with("# Rust at the Edge\n\nWe moved our edge proxies"), "{md}");
    assert!(md.contains("| Metric | Before | After |\n| --- | --- | --- |\n| Crashes per month | 40 | 4 |"), "{md}");
    assert!(md.contains("\n\n[…]\n\n"), "{md}");
    assert_eq!((&a["extract"]["cut"], &a["results"][0]["extract"]["cut"]), (&"query".into(), &"query".into()));
    assert!(a["extract"]["tokens"].as_u64().unwrap() <= 100);

    // The command line: `--query`.
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/fixtures/extract_article.html");
    let out = std::process::Command::new(common::binary())
        .env_clear()
        .args(["extract", "--file", path, "--tokens", "100", "--query", "crashes per month"])
        .output()
        .unwrap();
    assert!(out.status.success());
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim_end(), md);
    assert!(String::from_utf8_lossy(&out.stderr).contains("the passages most relevant to the query"));
}

#[test]
fn a_refused_page_leaves_the_search_answer_intact() {
    let site = Upstream::start(|_| Answer::html(200, own_fixture("extract_article.html")));
    let results = results_pointing_at(&site.url("/article"));
    let source = Upstream::start(move |_| Answer::html(200, results.clone()));
    let html = source.url("/html/");
    // No allowlist: the loopback page is refused by the SSRF guard.
    let server = Server::start(&[("WEBSEARCHD_SOURCES", "ddg_html"), ("WEBSEARCHD_DDG_HTML_URL", &html)]);
    let a = server.post_json("/service", r#"{"query":"rust edge","extract":true}"#).json();
    assert_eq!(a["results"].as_array().unwrap().len(), 2);
    assert!(a.get("answer_extract").is_none());
    assert_eq!(a["extract"]["status"], "port_refused");
    assert_eq!(site.count("/article"), 0);
}

#[test]
fn the_extract_command() {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/fixtures/extract_article.html");
    let out =
        std::process::Command::new(common::binary()).env_clear().args(["extract", "--file", path]).output().unwrap();
    assert!(out.status.success());
    let md = String::from_utf8_lossy(&out.stdout);
    assert!(md.starts_with("# Rust at the Edge"), "{md}");
    let out = std::process::Command::new(common::binary())
        .env_clear()
        .args(["extract", "http://169.254.169.254/latest/meta-data/"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("address_refused"));
}

#[test]
fn an_extraction_is_cached_by_url() {
    let (site, _source, server, _) = article_world(&[]);
    // Two queries (two search-cache misses) whose top result is the same page, and a repeat (a search-cache hit):
    // the page is fetched once, and each budget is applied to the kept extract.
    let first = server.post_json("/service", r#"{"query":"rust edge","extract":true}"#).json();
    let second = server.post_json("/service", r#"{"query":"edge rust","extract":true,"extract_tokens":100}"#).json();
    let third = server.post_json("/service", r#"{"query":"rust edge","extract":true}"#).json();
    assert_eq!(site.count("/article"), 1);
    assert_eq!(first["answer_extract"], third["answer_extract"]);
    assert_eq!(second["extract"]["truncated"], true);
    assert!(second["extract"]["tokens"].as_u64().unwrap() <= 100);

    // The search cache's TTL is the extraction cache's: zero turns both off.
    let (site, _source, server, _) = article_world(&[("WEBSEARCHD_CACHE_TTL_S", "0")]);
    for _ in 0..2 {
        let a = server.post_json("/service", r#"{"query":"rust edge","extract":true}"#).json();
        assert_eq!(a["extract"]["status"], "ok");
    }
    assert_eq!(site.count("/article"), 2);
}
