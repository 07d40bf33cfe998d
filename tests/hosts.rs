//! Issue 41, item 1: a host is judged as a browser judges it. The domain filters of `/service` leave out the
//! look-alikes a browser opens as the excluded host (compatibility forms, numeric IPv4 forms), read from a loopback
//! source's answer; the fetch guard of the reader door `/extract` and of MCP's `extract_page` judges the address a
//! browser would connect to, and the request goes to that address.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)]

mod common;

use common::upstream::{Answer, Upstream};
use common::{own_fixture, searxng_answer, Server};
use serde_json::{json, Value};

/// The look-alikes of evil.com and of 127.0.0.1, each with a path of its own (so that none is taken for
/// another as the same result).
const LOOK_ALIKES: [(&str, &str); 7] = [
    ("https://𝐞𝐯𝐢𝐥.com/1", "evil.com"),
    ("https://ⓔⓥⓘⓛ.com/2", "evil.com"),
    ("https://eviⅼ.com/3", "evil.com"),
    ("https://evil.cℴm/4", "evil.com"),
    ("http://2130706433/5", "127.0.0.1"),
    ("http://0x7f.1/6", "127.0.0.1"),
    ("http://127.1/7", "127.0.0.1"),
];

fn result_urls(answer: &Value) -> Vec<String> {
    answer["results"].as_array().unwrap().iter().map(|r| r["url"].as_str().unwrap().to_owned()).collect()
}

#[test]
fn excluded_hosts_are_excluded_in_every_notation_a_browser_reads() {
    let mut urls: Vec<&str> = LOOK_ALIKES.iter().map(|(u, _)| *u).collect();
    urls.extend(["https://good.example/a", "http://127.0.0.2/b", "https://notevil.com/c"]);
    let answer = searxng_answer(&urls);
    let source = Upstream::start(move |_| Answer::json(200, answer.clone()));
    let searx = source.url("/searx");
    let server = Server::start(&[
        ("WEBSEARCHD_SOURCES", "searxng"),
        ("WEBSEARCHD_SEARXNG_URLS", &searx),
        ("WEBSEARCHD_SOURCE_INTERVAL_MS", "0"),
    ]);
    let ask = |exclude: &[&str]| {
        let body = json!({ "query": "q", "max_results": 20, "exclude_domains": exclude });
        let reply = server.post_json("/service", &body.to_string());
        assert_eq!(reply.status, 200, "{}", reply.text());
        reply.json()
    };
    // Unfiltered, every result is there: the look-alikes are results like any other.
    let all = result_urls(&ask(&[]));
    assert_eq!(all.len(), urls.len(), "{all:?}");

    for excluded in ["evil.com", "127.0.0.1"] {
        let a = ask(&[excluded]);
        let kept = result_urls(&a);
        let expected: Vec<&str> =
            urls.iter().copied().filter(|u| !LOOK_ALIKES.iter().any(|(l, host)| l == u && *host == excluded)).collect();
        assert_eq!(kept, expected, "exclude_domains [{excluded}]: {a}");
        assert_eq!(a["sources"][0]["removed"].as_u64(), Some(4 - u64::from(excluded == "127.0.0.1")), "{a}");
    }
    // An excluded name written as a look-alike is the same name.
    assert_eq!(
        result_urls(&ask(&["ⓔⓥⓘⓛ.com", "0x7f.0.0.1"])),
        ["https://good.example/a", "http://127.0.0.2/b", "https://notevil.com/c"]
    );
}

/// The reader door and the site it is allowed to fetch (127.0.0.1 on the site's port).
fn reader_world() -> (Upstream, Server, u16) {
    let site = Upstream::start(|seen| match seen.path() {
        "/article" => Answer::html(200, own_fixture("extract_article.html")),
        _ => Answer::html(404, ""),
    });
    let port = site.addr.port();
    let allow = format!("127.0.0.1:{port}");
    let server = Server::start(&[("WEBSEARCHD_FETCH_ALLOW", allow.as_str())]);
    (site, server, port)
}

#[test]
fn the_guard_judges_the_address_a_browser_connects_to() {
    let (site, server, port) = reader_world();
    // Loopback in notations a browser reads as 127.0.0.1, on port 80 (not allowlisted): each refused as 127.0.0.1.
    let refused = [
        "http://2130706433/a",
        "http://0x7f.1/a",
        "http://127.1/a",
        "http://0177.0.0.1/a",
        "http://１２７.０.０.１/a",
        "http://127.0.0.%31/a",
        "http://0/a",
        "http://[::ffff:7f00:1]/a",
    ];
    for urls in refused.chunks(4) {
        let r = server.post_json("/extract", &json!({ "urls": urls }).to_string());
        assert_eq!(r.status, 200, "{}", r.text());
        for (url, page) in urls.iter().zip(r.json()["pages"].as_array().unwrap()) {
            assert_eq!(page["status"], "address_refused", "{url}: {page}");
            let error = page["error"].as_str().unwrap();
            assert!(
                ["127.0.0.1, in the loopback", "this-network", "IPv4-mapped"].iter().any(|e| error.contains(e)),
                "{url}: {page}"
            );
        }
    }
    assert_eq!(site.seen().len(), 0, "nothing reached the site");

    // On the allowlisted port, the same notations reach the site the guard judged: the request goes to 127.0.0.1.
    let allowed: Vec<String> =
        ["2130706433", "0x7f.1", "１２７.０.０.１"].iter().map(|h| format!("http://{h}:{port}/article")).collect();
    let r = server.post_json("/extract", &json!({ "urls": allowed }).to_string());
    for (url, page) in allowed.iter().zip(r.json()["pages"].as_array().unwrap()) {
        assert_eq!(page["status"], "ok", "{url}: {page}");
        assert_eq!(page["final_url"], format!("http://127.0.0.1:{port}/article"), "{url}: {page}");
    }
    assert_eq!(site.count("/article"), 3, "each reached the site");
}

/// MCP's `extract_page` on the HTTP door goes through the same guard.
#[test]
fn extract_page_judges_the_address_a_browser_connects_to() {
    let (site, server, _) = reader_world();
    let version = "2026-07-28";
    for (id, url) in ["http://2130706433/a", "http://１２７.０.０.１/a", "http://127.0.0.%31/a"].into_iter().enumerate()
    {
        let meta = json!({ "io.modelcontextprotocol/protocolVersion": version, "io.modelcontextprotocol/clientCapabilities": {} });
        let message = json!({ "jsonrpc": "2.0", "id": id, "method": "tools/call",
            "params": { "name": "extract_page", "arguments": { "url": url }, "_meta": meta } });
        let headers = [
            ("Content-Type", "application/json"),
            ("MCP-Protocol-Version", version),
            ("Mcp-Method", "tools/call"),
            ("Mcp-Name", "extract_page"),
        ];
        let reply = server.request("POST", "/mcp", &headers, message.to_string().as_bytes());
        assert_eq!(reply.status, 200, "{}", reply.text());
        let answer = reply.json();
        assert_eq!(answer["result"]["structuredContent"]["error"]["code"], "address_refused", "{url}: {answer}");
    }
    assert_eq!(site.seen().len(), 0);
}
