//! Issue 32: the SearXNG search API (`/search`, `/` with `q`) and the search page for people (`/` without `q`,
//! `format=html`), on recorded pages served from loopback. The JSON is SearXNG's, field by field; the requests that
//! LangChain's `SearxSearchWrapper`, Open WebUI and Perplexica send (from their source) are replayed as they send
//! them; every source failing is a 200 with every source in `unresponsive_engines`; every bad parameter a 400 with
//! its code; a paid instance serves the free-rule callers only. tests/interop.rs drives LangChain itself, and
//! tests/searx_page.rs the page in Chromium.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)]

mod common;

use common::pay::{paid_env, Facilitator};
use common::upstream::{Answer, Seen, Upstream};
use common::{own_fixture, pairs, Server};
use serde_json::{json, Value};

/// The recorded pages: DuckDuckGo's (two organic results and an ad), Brave's (20 results), and failures elsewhere.
fn pages(seen: &Seen) -> Answer {
    match seen.path() {
        "/html/" => Answer::html(200, own_fixture("search/ddg_html_results.html")),
        "/brave" => Answer::html(200, own_fixture("search/brave__rust-programming-language__20web_results.html")),
        "/lite/" => Answer::html(503, "down"),
        _ => Answer::html(404, "no"),
    }
}

fn start(up: &Upstream, sources: &str, extra: &[(&str, &str)]) -> Server {
    let mut env = common::sources_env(up, sources);
    env.push(("WEBSEARCHD_SOURCE_PAGES_MAX".into(), "1".into()));
    env.extend(extra.iter().map(|(k, v)| (k.to_string(), v.to_string())));
    Server::start(&pairs(&env))
}

/// `/service`'s results for the same search: what the door must give, in the same order.
fn service_results(server: &Server, query: &str, max_results: usize) -> Vec<Value> {
    let body = json!({ "query": query, "max_results": max_results }).to_string();
    let reply = server.post_json("/service", &body);
    assert_eq!(reply.status, 200, "{}", reply.text());
    reply.json()["results"].as_array().unwrap().clone()
}

#[test]
fn the_json_is_searxngs_field_by_field() {
    let up = Upstream::start(pages);
    let server = start(&up, "ddg_html", &[]);
    let reply = server.get("/search?q=rust+programming&format=json");
    assert_eq!(reply.status, 200, "{}", reply.text());
    assert!(reply.header("content-type").unwrap().starts_with("application/json"));
    let answer = reply.json();
    for (member, kind) in [
        ("query", "string"),
        ("number_of_results", "number"),
        ("results", "array"),
        ("answers", "array"),
        ("corrections", "array"),
        ("infoboxes", "array"),
        ("suggestions", "array"),
        ("unresponsive_engines", "array"),
    ] {
        let v = &answer[member];
        let ok = match kind {
            "string" => v.is_string(),
            "number" => v.is_u64(),
            _ => v.is_array(),
        };
        assert!(ok, "{member} is not a {kind}: {answer}");
    }
    assert_eq!(answer["query"], "rust programming");
    let expected = service_results(&server, "rust programming", 10);
    let results = answer["results"].as_array().unwrap();
    assert_eq!(results.len(), expected.len());
    assert_eq!(answer["number_of_results"], results.len());
    assert!(results.len() >= 2, "{answer}");
    for (i, (r, e)) in results.iter().zip(&expected).enumerate() {
        assert_eq!(r["url"], e["url"]);
        assert_eq!(r["title"], e["title"]);
        assert_eq!(r["content"], e["snippet"]);
        assert_eq!(r["engine"], "ddg_html");
        assert_eq!(r["engines"], json!(["ddg_html"]));
        assert_eq!(r["positions"], json!([i + 1]));
        assert_eq!(r["category"], "general");
        assert!(r["score"].as_f64().unwrap() > 0.0);
        let url = r["url"].as_str().unwrap();
        let parsed = r["parsed_url"].as_array().unwrap();
        assert_eq!(parsed.len(), 6);
        assert_eq!(
            format!("{}://{}{}", parsed[0].as_str().unwrap(), parsed[1].as_str().unwrap(), parsed[2].as_str().unwrap()),
            url.split(['?', '#']).next().unwrap()
        );
        if let Some(date) = e.get("published").and_then(Value::as_str) {
            assert_eq!(r["publishedDate"], format!("{date}T00:00:00"));
        } else {
            assert!(r.get("publishedDate").is_none());
        }
    }
    // Scores fall with the position (Open WebUI sorts by score).
    let scores: Vec<f64> = results.iter().map(|r| r["score"].as_f64().unwrap()).collect();
    assert!(scores.windows(2).all(|w| w[0] > w[1]), "{scores:?}");
    assert_eq!(answer["unresponsive_engines"], json!([]));
}

/// SearXNG's csv and rss formats of the same answer.
#[test]
fn csv_and_rss_carry_the_same_results() {
    let up = Upstream::start(pages);
    let server = start(&up, "ddg_html", &[]);
    let json = server.get("/search?q=rust&format=json").json();
    let results = json["results"].as_array().unwrap();
    let csv = server.get("/search?q=rust&format=csv");
    assert_eq!(csv.status, 200);
    assert!(csv.header("content-type").unwrap().starts_with("application/csv"));
    let text = csv.text();
    let rows: Vec<&str> = text.split("\r\n").filter(|r| !r.is_empty()).collect();
    assert_eq!(rows[0], "title,url,content,host,engine,score,type");
    assert_eq!(rows.len(), results.len() + 1, "{text}");
    for (row, r) in rows[1..].iter().zip(results) {
        let (title, url) = (r["title"].as_str().unwrap(), r["url"].as_str().unwrap());
        assert!(row.starts_with(&format!("{title},{url},")), "{row}");
        let host = r["parsed_url"][1].as_str().unwrap();
        let score = r["score"].as_f64().unwrap();
        assert!(row.ends_with(&format!(",{host},ddg_html,{score:?},result")), "{row}");
    }
    let rss = server.get("/search?q=rust&format=rss");
    assert_eq!(rss.status, 200);
    assert!(rss.header("content-type").unwrap().starts_with("application/rss+xml"));
    let xml = rss.text();
    assert!(xml.starts_with("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<rss version=\"2.0\""));
    assert_eq!(xml.matches("<item>").count(), results.len());
    for r in results {
        let link = r["url"].as_str().unwrap().replace('&', "&amp;");
        assert!(xml.contains(&format!("<link>{link}</link>")), "{xml}");
    }
    assert!(xml.contains(&format!("<opensearch:totalResults>{}</opensearch:totalResults>", results.len())));
}

#[test]
fn a_failed_source_is_never_a_silent_empty_list() {
    let up = Upstream::start(pages);
    // DuckDuckGo lite answers 503; Mojeek and Bing 404: every source fails.
    let server = start(&up, "ddg_lite,mojeek,bing", &[]);
    let reply = server.get("/search?q=anything&format=json");
    assert_eq!(reply.status, 200, "{}", reply.text());
    let answer = reply.json();
    assert_eq!(answer["results"], json!([]));
    assert_eq!(answer["number_of_results"], 0);
    let engines: Vec<&str> =
        answer["unresponsive_engines"].as_array().unwrap().iter().map(|p| p[0].as_str().unwrap()).collect();
    // Lite's 503 may be chance: it is asked once more, after the others (a 404 is not).
    assert_eq!(engines, ["ddg_lite", "mojeek", "bing", "ddg_lite"], "{answer}");
    // The page for people says the sources failed, not "No results." (issue 42, item 3).
    let page = server.get("/search?q=anything+at+all").text();
    assert!(page.contains("No source answered this search"), "{page}");
    assert!(!page.contains("No results."), "{page}");
    for pair in answer["unresponsive_engines"].as_array().unwrap() {
        assert_eq!(pair.as_array().unwrap().len(), 2);
        assert!(pair[1].as_str().unwrap().starts_with("failed: "), "{pair}");
    }

    // One source failing beside one answering: the results, and the failed one named.
    let server = start(&up, "ddg_lite,ddg_html", &[]);
    let answer = server.get("/search?q=rust&format=json").json();
    assert!(!answer["results"].as_array().unwrap().is_empty());
    assert_eq!(answer["unresponsive_engines"][0][0], "ddg_lite", "{answer}");
}

#[test]
fn pageno_two_is_results_eleven_to_twenty() {
    let up = Upstream::start(pages);
    let server = start(&up, "brave", &[]);
    let all = service_results(&server, "rust", 20);
    assert_eq!(all.len(), 20);
    let urls = |answer: &Value| -> Vec<Value> {
        answer["results"].as_array().unwrap().iter().map(|r| r["url"].clone()).collect()
    };
    let first = server.get("/search?q=rust&format=json&pageno=1").json();
    let second = server.get("/search?q=rust&format=json&pageno=2").json();
    let want = |range: std::ops::Range<usize>| all[range].iter().map(|r| r["url"].clone()).collect::<Vec<_>>();
    assert_eq!(urls(&first), want(0..10));
    assert_eq!(urls(&second), want(10..20));
    assert_eq!(second["results"][0]["positions"], json!([11]));
    // Past the last page: no results, and why.
    let third = server.get("/search?q=rust&format=json&pageno=3").json();
    assert_eq!(third["results"], json!([]));
    assert!(third["unresponsive_engines"][0][1].as_str().unwrap().contains("past the last"), "{third}");
}

#[test]
fn a_category_other_than_general_answers_no_results_and_says_so() {
    let up = Upstream::start(pages);
    let server = start(&up, "ddg_html,brave", &[]);
    let answer = server.get("/search?q=cats&format=json&categories=images").json();
    assert_eq!(answer["results"], json!([]));
    let pairs = answer["unresponsive_engines"].as_array().unwrap();
    let names: Vec<&str> = pairs.iter().map(|p| p[0].as_str().unwrap()).collect();
    assert_eq!(names, ["ddg_html", "brave"], "{answer}");
    assert!(pairs[0][1].as_str().unwrap().contains("images"));
    assert!(up.seen().is_empty(), "no source was asked");
    // general among others searches.
    let answer = server.get("/search?q=cats&format=json&categories=general,images").json();
    assert!(!answer["results"].as_array().unwrap().is_empty());
}

#[test]
fn engines_choose_the_sources_and_unknown_ones_are_ignored() {
    let up = Upstream::start(pages);
    let server = start(&up, "ddg_html,brave", &[]);
    let asked = |up: &Upstream| -> Vec<String> { up.seen().iter().map(|s| s.path().to_owned()).collect() };
    // One source by its name: only it is asked, and the other is not reported unresponsive.
    let answer = server.get("/search?q=rust&format=json&engines=brave").json();
    assert_eq!(asked(&up), ["/brave"]);
    assert!(answer["results"].as_array().unwrap().iter().all(|r| r["engine"] == "brave"), "{answer}");
    assert_eq!(answer["unresponsive_engines"], json!([]));
    let skipped = answer["sources"].as_array().unwrap().iter().find(|s| s["name"] == "ddg_html").unwrap().clone();
    assert_eq!((skipped["status"].as_str(), skipped["error"].as_str()), (Some("skipped"), Some("not_selected")));
    // A provider's name (SearXNG's "duckduckgo") names its sources; unknown names are ignored beside it.
    let answer = server.get("/search?q=rust&format=json&engines=google,duckduckgo").json();
    assert_eq!(asked(&up), ["/brave", "/html/"]);
    assert!(answer["results"].as_array().unwrap().iter().all(|r| r["engine"] == "ddg_html"), "{answer}");
    // Only unknown names: every source is asked (as with no engines).
    server.get("/search?q=cats&format=json&engines=google,qwant");
    assert_eq!(asked(&up), ["/brave", "/html/", "/html/", "/brave"]);
}

#[test]
fn the_controls_reach_the_sources() {
    let up = Upstream::start(pages);
    let server = start(&up, "ddg_html", &[]);
    let reply = server.get("/search?q=wetter&format=json&language=de-DE&time_range=week&safesearch=2");
    assert_eq!(reply.status, 200, "{}", reply.text());
    let seen = up.seen().into_iter().find(|s| s.path() == "/html/").unwrap();
    assert_eq!(seen.param("kl").as_deref(), Some("de-de"));
    assert_eq!(seen.param("df").as_deref(), Some("w"));
    assert_eq!(seen.param("kp").as_deref(), Some("1"));
}

#[test]
fn every_bad_parameter_is_a_400_with_a_code() {
    let up = Upstream::start(pages);
    let server = start(&up, "ddg_html", &[]);
    for (query, code) in [
        ("format=json", "query_missing"),
        ("q=&format=json", "query_empty"),
        ("q=%01&format=json", "query_invalid"),
        ("q=x&format=xml", "format_unsupported"),
        ("q=x&format=yaml", "format_unsupported"),
        ("q=x&format=json&pageno=0", "pageno_invalid"),
        ("q=x&format=json&pageno=-1", "pageno_invalid"),
        ("q=x&format=json&time_range=decade", "time_range_invalid"),
        ("q=x&format=json&safesearch=5", "safesearch_invalid"),
        ("q=x&format=json&language=xx", "language_invalid"),
    ] {
        let reply = server.get(&format!("/search?{query}"));
        assert_eq!((reply.status, reply.error_code()), (400, code.to_owned()), "{query}: {}", reply.text());
    }
    let long = format!("/search?q={}&format=json", "a".repeat(401));
    assert_eq!(server.get(&long).error_code(), "query_too_long");
    let many = format!("/search?q=x&format=json{}", "&a=1".repeat(64));
    assert_eq!(server.get(&many).error_code(), "too_many_parameters");
    let reply = server.request("POST", "/search", &[("Content-Type", "application/json")], b"{\"q\":\"x\"}");
    assert_eq!((reply.status, reply.error_code()), (415, "unsupported_media_type".to_owned()));
    // On the page, a bad parameter is said on the page.
    let reply = server.get("/search?q=x&time_range=decade");
    assert_eq!(reply.status, 400);
    assert!(reply.text().contains("time_range_invalid"));
    assert!(up.seen().is_empty(), "no source was asked for a bad call");
}

/// A client's request as it sends it: method, target, headers, body.
type Replayed = (&'static str, &'static str, &'static [(&'static str, &'static str)], &'static [u8]);

/// The exact requests three clients send (their public source), replayed: each gets SearXNG's JSON with the
/// recorded results.
#[test]
fn the_requests_of_langchain_open_webui_and_perplexica_are_served() {
    let up = Upstream::start(pages);
    let server = start(&up, "ddg_html", &[]);
    let expected = service_results(&server, "rust programming", 10);
    let want: Vec<&Value> = expected.iter().map(|r| &r["url"]).collect();
    let clients: [Replayed; 4] = [
        // langchain_community.utilities.searx_search.SearxSearchWrapper(searx_host=...).results(q): requests.get of
        // the host as given, params {"language": "en", "format": "json", "q": q}.
        ("GET", "/?language=en&format=json&q=rust+programming", &[("User-Agent", "python-requests/2.32.3")], b""),
        // Open WebUI's search_searxng: GET of the configured query URL with its params and headers.
        (
            "GET",
            "/search?q=rust+programming&format=json&pageno=1&safesearch=1&language=en-US&time_range=&categories=&theme=simple&image_proxy=0",
            &[
                ("User-Agent", "Cakumi (https://github.com/open-webui/open-webui) RAG Bot"),
                ("Accept", "text/html"),
                ("Accept-Encoding", "gzip, deflate"),
                ("Accept-Language", "en-US,en;q=0.5"),
            ],
            b"",
        ),
        // Perplexica's searchSearxng: `${url}/search?format=json` then q and its options appended.
        ("GET", "/search?format=json&q=rust+programming&engines=bing%2Cgoogle&language=en&pageno=1", &[], b""),
        // SearXNG's own API by form (several MCP wrappers POST).
        (
            "POST",
            "/search",
            &[("Content-Type", "application/x-www-form-urlencoded")],
            b"q=rust+programming&format=json&language=all",
        ),
    ];
    for (method, target, headers, body) in clients {
        let reply = server.request(method, target, headers, body);
        assert_eq!(reply.status, 200, "{target}: {}", reply.text());
        let answer = reply.json();
        let got: Vec<&Value> = answer["results"].as_array().unwrap().iter().map(|r| &r["url"]).collect();
        assert_eq!(got, want, "{target}");
    }
}

#[test]
fn the_page_shows_the_results_escaped_with_a_strict_csp() {
    // A result title with markup and quotes: shown as text.
    let hostile = r#"<script>alert("x")</script> & 'quoted'"#;
    let up = Upstream::start(move |seen| match seen.path() {
        "/html/" => {
            let page = String::from_utf8(own_fixture("search/ddg_html_results.html")).unwrap();
            let escaped =
                hostile.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;").replace('"', "&quot;");
            Answer::html(200, page.replace(">The Rust Programming Language<", &format!(">{escaped}<")))
        }
        _ => Answer::html(503, "down"),
    });
    let server = start(&up, "ddg_html,ddg_lite", &[]);
    let home = server.get("/");
    assert_eq!(home.status, 200);
    let csp = home.header("content-security-policy").unwrap();
    assert!(csp.starts_with("default-src 'none'; style-src 'sha256-"), "{csp}");
    assert!(!csp.contains("script-src"));
    let text = home.text();
    assert!(text.contains("<form class=\"search\" method=\"get\" action=\"/search\""));
    assert!(text.contains("href=\"/opensearch.xml\""));
    assert!(text.contains("href=\"/map/\""), "the map is on: linked");
    assert!(!text.contains("<script"));

    let reply = server.get("/search?q=rust&time_range=year");
    assert_eq!(reply.status, 200, "{}", reply.text());
    assert!(reply.header("content-security-policy").is_some());
    let page = reply.text();
    assert!(!page.contains("<script>alert"), "{page}");
    assert!(page.contains("&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt; &amp; &#39;quoted&#39;"), "{page}");
    assert!(page.contains("href=\"https://www.rust-lang.org/\""));
    assert!(page.contains("<option value=\"year\" selected>"));
    assert!(page.contains("<td>ddg_lite</td><td>failed</td>"), "the failed source is listed: {page}");
    assert!(page.contains("<td>ddg_html</td><td>answered</td>"), "{page}");

    let xml = server.get("/opensearch.xml");
    assert_eq!(xml.status, 200);
    assert!(xml.header("content-type").unwrap().starts_with("application/opensearchdescription+xml"));
    assert!(xml.text().contains("/search?q={searchTerms}\""));
}

#[test]
fn a_paid_instance_serves_the_free_rule_callers_only() {
    let (up, facilitator) = (Upstream::start(pages), Facilitator::start());
    let env = paid_env(up.url("/html/"), facilitator.url());
    let server = Server::start(&pairs(&env));
    let reply = server.get("/search?q=rust&format=json");
    assert_eq!(reply.status, 402, "{}", reply.text());
    let body = reply.json();
    assert_eq!(body["error"], "door_not_payable", "{body}");
    assert!(body["message"].as_str().unwrap().contains("/service"));
    assert!(body["accepts"].is_array());
    let page = server.get("/search?q=rust");
    assert_eq!(page.status, 402);
    assert!(page.text().contains("x402"));
    assert_eq!(server.get("/").status, 200, "the home page is for everyone");
    // Validation comes first: a bad parameter is a 400, not a payment asked for.
    let bad = server.get("/search?q=rust&format=json&pageno=0");
    assert_eq!((bad.status, bad.error_code()), (400, "pageno_invalid".to_owned()));
    assert!(up.seen().is_empty(), "nothing was searched");

    let mut env = env;
    env.push(("WEBSEARCHD_FREE_LOOPBACK".into(), "1".into()));
    let server = Server::start(&pairs(&env));
    let reply = server.get("/search?q=rust&format=json");
    assert_eq!(reply.status, 200, "{}", reply.text());
    assert!(!reply.json()["results"].as_array().unwrap().is_empty());
    assert!(facilitator.upstream.seen().is_empty());
}

#[test]
fn a_call_that_searches_nothing_uses_up_no_trial() {
    let (up, facilitator) = (Upstream::start(pages), Facilitator::start());
    let mut env = paid_env(up.url("/html/"), facilitator.url());
    env.push(("WEBSEARCHD_TRIAL_CALLS_PER_DAY".into(), "1".into()));
    let server = Server::start(&pairs(&env));
    // Another category and a page past the last search nothing: answered (200) before the gate, trial kept.
    for path in
        ["/search?q=cats&format=json&categories=images", "/search?q=cats&format=json&pageno=9", "/?q=cats&pageno=3"]
    {
        let reply = server.get(path);
        assert_eq!(reply.status, 200, "{path}: {}", reply.text());
    }
    assert!(up.seen().is_empty(), "nothing was searched");
    let reply = server.get("/search?q=rust&format=json");
    assert_eq!(reply.status, 200, "the one trial call is left: {}", reply.text());
    assert!(!reply.json()["results"].as_array().unwrap().is_empty());
    assert_eq!(server.get("/search?q=rust&format=json").status, 402, "and it is used up");
}

/// The home page as a browser receives it, head and all, from the largest one an instance serves (every source
/// named, payments on), is within `PAGE_BYTES_MAX`.
#[test]
fn the_home_page_as_sent_is_within_its_budget() {
    use std::io::{Read, Write};
    use websearchd::search::sources::Kind;
    let (up, facilitator) = (Upstream::start(pages), Facilitator::start());
    let every: Vec<&str> = Kind::ALL.iter().map(|k| k.name()).collect();
    let mut env = paid_env(up.url("/html/"), facilitator.url());
    env.retain(|(k, _)| k != "WEBSEARCHD_SOURCES");
    env.extend(common::sources_env(&up, &every.join(",")));
    let server = Server::start(&pairs(&env));
    let mut stream = std::net::TcpStream::connect(server.addr).unwrap();
    stream.write_all(b"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n").unwrap();
    let mut sent = Vec::new();
    stream.read_to_end(&mut sent).unwrap();
    let text = String::from_utf8_lossy(&sent);
    assert!(text.starts_with("HTTP/1.1 200"), "{text}");
    for name in &every {
        assert!(text.contains(name), "the page names {name}");
    }
    assert!(text.contains("paid per call"), "the paid instance's sentence is in");
    let max = websearchd::searx::page::PAGE_BYTES_MAX;
    assert!(sent.len() <= max, "the home page is {} bytes as sent, over its budget of {max}", sent.len());
}

#[test]
fn the_variable_turns_the_door_off() {
    let up = Upstream::start(pages);
    let server = start(&up, "ddg_html", &[("WEBSEARCHD_SEARXNG_API", "0")]);
    for path in ["/", "/search?q=rust&format=json", "/?q=rust&format=json", "/opensearch.xml"] {
        assert_eq!(server.get(path).status, 404, "{path}");
    }
}

/// The page says "No results." when a source said so.
#[test]
fn the_page_says_no_results_only_when_a_source_said_so() {
    let up = Upstream::start(|_| Answer::html(200, common::own_fixture("search/ddg_html_no_results.html")));
    let server = start(&up, "ddg_html", &[]);
    let page = server.get("/search?q=nothing+matches").text();
    assert!(page.contains("<p>No results.</p>"), "{page}");
    assert!(!page.contains("No source answered"), "{page}");
}

/// Whether `text` holds a character XML 1.0 does not allow (C0 controls but tab, line feed and carriage return;
/// U+FFFE, U+FFFF).
fn has_not_xml(text: &str) -> bool {
    text.chars().any(|c| matches!(c, '\0'..='\u{8}' | '\u{b}' | '\u{c}' | '\u{e}'..='\u{1f}' | '\u{fffe}' | '\u{ffff}'))
}

/// Issue 41, item 2: a source's result (and a source's reason for failing) holding characters XML 1.0 does not
/// allow cannot break a feed: the RSS parses with a real XML parser (Python's), and the JSON, the CSV, `/service`
/// and the page carry none of them.
#[test]
fn a_hostile_result_cannot_break_a_feed() {
    let up = Upstream::start(|seen| {
        let query = seen.param("q").unwrap_or_default();
        let body = if query == "wall" {
            json!({ "results": [], "unresponsive_engines": [["bad\u{0}engine", "down\u{7}\u{ffff}now"]] })
        } else {
            json!({ "results": [{
                "title": "Ti\u{0}tle\u{1}\u{8}\u{b}\u{c}\u{e}\u{1f}\u{fffe}\u{ffff} here",
                "url": "https://example.com/a\u{1}b",
                "content": "snip\u{0}pet\u{1f} and\u{ffff} more",
            }] })
        };
        Answer::json(200, body.to_string())
    });
    let server = start(&up, "searxng", &[]);
    let rss = server.get("/search?q=hostile&format=rss");
    assert_eq!(rss.status, 200, "{}", rss.text());
    let xml = rss.text();
    assert!(xml.contains("<title>Title here</title>"), "{xml:?}");
    assert!(xml.contains("<link>https://example.com/a%01b</link>"), "{xml:?}");
    let dir = common::tempdir::TempDir::new("rss");
    let path = dir.path().join("feed.xml");
    std::fs::write(&path, &xml).unwrap();
    let parsed = std::process::Command::new("python3")
        .args([
            "-c",
            "import sys, xml.etree.ElementTree as E; print(len(E.parse(sys.argv[1]).findall('./channel/item')))",
        ])
        .arg(&path)
        .output();
    match parsed {
        Ok(out) => {
            assert!(out.status.success(), "the RSS does not parse: {}\n{xml:?}", String::from_utf8_lossy(&out.stderr));
            assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "1");
        }
        Err(e) => common::skip_for(&format!("python3 cannot run ({e}): the RSS is not parsed")),
    }
    for target in ["/search?q=hostile&format=json", "/search?q=hostile&format=csv", "/search?q=hostile"] {
        let text = server.get(target).text();
        assert!(text.contains("Title here"), "{target}: {text:?}");
        assert!(!has_not_xml(&text), "{target}: {text:?}");
    }
    let service = server.post_json("/service", r#"{"query":"hostile"}"#);
    let answer = service.json();
    assert_eq!(answer["results"][0]["title"], "Title here");
    assert_eq!(answer["results"][0]["snippet"], "snippet and more");
    assert_eq!(answer["results"][0]["url"], "https://example.com/a%01b");
    // A source's reason for failing quotes what it said: cleaned too.
    for target in ["/search?q=wall&format=json", "/search?q=wall"] {
        let text = server.get(target).text();
        assert!(text.contains("badengine"), "{target}: {text:?}");
        assert!(!has_not_xml(&text), "{target}: {text:?}");
    }
}

/// Issue 41, item 3: a cell a spreadsheet would read as a formula (one starting with `=`, `+`, `-`, `@`, a tab or a
/// carriage return) is written with a leading `'` (OWASP's rule); the JSON keeps the title as the source gave it.
#[test]
fn csv_cells_that_spreadsheets_would_run_are_neutralised() {
    let titles = ["=cmd|' /C calc'!A0", "+HYPERLINK(\"https://evil.example/\",\"x\")", "-2+3", "@SUM(A1)"];
    let up = Upstream::start(move |_| {
        let results: Vec<Value> = titles
            .iter()
            .enumerate()
            .map(|(i, t)| json!({ "title": t, "url": format!("https://example.com/{i}"), "content": "=1+1" }))
            .collect();
        Answer::json(200, json!({ "results": results }).to_string())
    });
    let server = start(&up, "searxng", &[]);
    let json = server.get("/search?q=formulas&format=json").json();
    assert_eq!(json["results"][0]["title"], titles[0]);
    let text = server.get("/search?q=formulas&format=csv").text();
    let rows: Vec<&str> = text.split("\r\n").filter(|r| !r.is_empty()).collect();
    assert_eq!(rows.len(), titles.len() + 1, "{text}");
    assert!(rows[1].starts_with("'=cmd|' /C calc'!A0,https://example.com/0,'=1+1,"), "{}", rows[1]);
    assert!(rows[2].starts_with("\"'+HYPERLINK(\"\"https://evil.example/\"\",\"\"x\"\")\","), "{}", rows[2]);
    assert!(rows[3].starts_with("'-2+3,"), "{}", rows[3]);
    assert!(rows[4].starts_with("'@SUM(A1),"), "{}", rows[4]);
    for row in &rows[1..] {
        for cell in row.split(',') {
            assert!(!cell.starts_with(['=', '+', '-', '@', '\t', '\r']), "{row}");
        }
    }
}

/// Issue 41, item 7: a HEAD that would search is answered 405 (`Allow: GET, POST, OPTIONS`) without searching: its
/// answer would have no body, and a search costs the sources a request and the caller a trial. HEAD of the home page
/// and of a call that searches nothing are answered as GET is.
#[test]
fn a_head_with_a_query_runs_no_search() {
    let up = Upstream::start(pages);
    let server = start(&up, "ddg_html", &[]);
    for target in ["/search?q=rust", "/search?q=rust&format=json", "/?q=rust&format=rss"] {
        let head = server.request("HEAD", target, &[], b"");
        assert_eq!(head.status, 405, "{target}");
        assert_eq!(head.header("allow"), Some("GET, POST, OPTIONS"), "{target}");
        assert!(head.body.is_empty());
    }
    assert_eq!(up.count("/html/"), 0, "no source was asked");
    assert_eq!(server.request("HEAD", "/", &[], b"").status, 200);
    assert_eq!(server.request("HEAD", "/search?q=rust&categories=images", &[], b"").status, 200);
    assert_eq!(server.request("HEAD", "/search?q=rust&time_range=never", &[], b"").status, 400, "validated first");
    assert_eq!(server.get("/search?q=rust&format=json").status, 200);
    assert_eq!(up.count("/html/"), 1);
}
