//! Issue 31: search the way agents ask. The controls (`time_range`, `region`, `safesearch`, `include_domains`,
//! `exclude_domains`) reach each provider in its own parameters, read here from the loopback upstream's request log;
//! a provider that cannot honour a control is reported and never asked; the domain filters hold on recorded pages;
//! `extract: k` fetches the first k results' pages side by side; the cache key holds every control.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)]

mod common;

use std::time::{Duration, Instant};

use common::upstream::{Answer, Seen, Upstream};
use common::{own_fixture, searxng_answer, shared_fixture, Server};
use serde_json::{json, Value};

/// Every provider's own recorded (or hand-written) results page.
fn pages(seen: &Seen) -> Answer {
    match seen.path() {
        "/html/" => Answer::html(200, own_fixture("search/ddg_html_results.html")),
        "/lite/" => Answer::html(200, own_fixture("search/ddg_lite_results.html")),
        "/searx/search" => Answer::json(200, own_fixture("search/searxng_results.json")),
        "/mojeek" => Answer::html(200, own_fixture("search/mojeek_results.html")),
        "/bing" => Answer::html(200, own_fixture("search/bing__does-caffeine-affect-sleep__10results.html")),
        "/brave" => Answer::html(200, own_fixture("search/brave__rust-programming-language__20web_results.html")),
        "/w/api.php" => Answer::json(200, own_fixture("search/wikipedia__meaning__2results.json")),
        _ => Answer::html(404, "no"),
    }
}

fn start(up: &Upstream, sources: &str, extra: &[(&str, &str)]) -> Server {
    let mut env = common::sources_env(up, sources);
    env.push(("WEBSEARCHD_SOURCE_PAGES_MAX".into(), "1".into()));
    env.extend(extra.iter().map(|(k, v)| (k.to_string(), v.to_string())));
    Server::start(&common::pairs(&env))
}

fn ask(server: &Server, body: Value) -> Value {
    let reply = server.post_json("/service", &body.to_string());
    assert_eq!(reply.status, 200, "{}", reply.text());
    reply.json()
}

/// The one request the upstream saw at `path`.
fn seen_at(up: &Upstream, path: &str) -> Seen {
    let all: Vec<Seen> = up.seen().into_iter().filter(|s| s.path() == path).collect();
    assert_eq!(all.len(), 1, "one request to {path}");
    all.into_iter().next().unwrap()
}

/// A cookie of the request, by name.
fn cookie(seen: &Seen, name: &str) -> Option<String> {
    seen.header("cookie")?.split("; ").find_map(|c| c.strip_prefix(&format!("{name}=")).map(str::to_owned))
}

#[test]
fn each_provider_receives_each_control_in_its_own_parameters() {
    let body = json!({
        "query": "caffeine",
        "time_range": "week",
        "region": "de-de",
        "safesearch": "strict",
        "exclude_domains": ["pinterest.com"],
    });
    // Each provider alone, on a server of its own (a fresh upstream log per provider).
    let check = |source: &str, path: &str, expect: &dyn Fn(&Seen)| {
        let up = Upstream::start(pages);
        let server = start(&up, source, &[]);
        let a = ask(&server, body.clone());
        assert_eq!(a["sources"][0]["status"], "ok", "{source}: {a}");
        let seen = seen_at(&up, path);
        assert_eq!(seen.param("q").as_deref(), Some("caffeine -site:pinterest.com"), "{source}: the operator in q");
        if source != "searxng" {
            // The pages are asked for in the region's language (SearXNG takes it as `language`).
            assert_eq!(seen.header("accept-language"), Some("de-DE,de;q=0.9,en;q=0.5"), "{source}");
        }
        expect(&seen);
    };
    check("ddg_html", "/html/", &|s| {
        assert_eq!(s.method, "POST");
        assert_eq!(
            (s.param("kl"), s.param("df"), s.param("kp")),
            (Some("de-de".into()), Some("w".into()), Some("1".into()))
        );
    });
    check("ddg_lite", "/lite/", &|s| {
        assert_eq!(
            (s.param("kl"), s.param("df"), s.param("kp")),
            (Some("de-de".into()), Some("w".into()), Some("1".into()))
        );
    });
    check("searxng", "/searx/search", &|s| {
        assert_eq!(s.param("time_range").as_deref(), Some("week"));
        assert_eq!(s.param("language").as_deref(), Some("de-DE"));
        assert_eq!(s.param("safesearch").as_deref(), Some("2"));
        assert_eq!(s.param("format").as_deref(), Some("json"));
    });
    check("brave", "/brave", &|s| {
        assert_eq!(s.param("tf").as_deref(), Some("pw"));
        assert_eq!(cookie(s, "country").as_deref(), Some("de"));
        assert_eq!(cookie(s, "safesearch").as_deref(), Some("strict"));
    });
    check("bing", "/bing", &|s| {
        assert_eq!(s.param("filters").as_deref(), Some("ex1:\"ez2\""));
        assert_eq!((s.param("cc"), s.param("setlang")), (Some("DE".into()), Some("de".into())));
        assert_eq!(s.param("adlt").as_deref(), Some("strict"));
    });
    check("mojeek", "/mojeek", &|s| {
        let since = s.param("since").expect("since");
        assert!(since.len() == 8 && since.bytes().all(|b| b.is_ascii_digit()) && since.starts_with("20"), "{since}");
        assert_eq!((s.param("reg"), s.param("lb")), (Some("de".into()), Some("de".into())));
        assert_eq!(s.param("safe").as_deref(), Some("1"));
    });
}

/// The defaults of the configuration reach the providers when a call names no control.
#[test]
fn the_configured_defaults_are_sent_when_a_call_names_none() {
    let up = Upstream::start(pages);
    let server = start(&up, "searxng", &[("WEBSEARCHD_REGION", "fr-fr"), ("WEBSEARCHD_SAFESEARCH", "off")]);
    ask(&server, json!({ "query": "defaults" }));
    let s = seen_at(&up, "/searx/search");
    assert_eq!((s.param("language"), s.param("safesearch")), (Some("fr-FR".into()), Some("0".into())));
    assert_eq!(s.param("time_range"), None);
    assert_eq!(s.param("q").as_deref(), Some("defaults"));
}

/// Wikipedia has no time filter, no strict safe search, and (at a mirror's URL) one language: for a search that
/// needs one of them it is not asked, and says which control.
#[test]
fn a_provider_that_cannot_honour_a_control_is_reported_and_not_asked() {
    let up = Upstream::start(pages);
    let server = start(&up, "wikipedia,mojeek", &[]);
    for (control, body) in [
        ("time_range", json!({ "query": "meaning", "time_range": "day" })),
        ("safesearch", json!({ "query": "meaning", "safesearch": "strict" })),
        ("region", json!({ "query": "meaning", "region": "de-de" })),
        ("include_domains", json!({ "query": "meaning", "include_domains": ["python.org"] })),
    ] {
        let a = ask(&server, body);
        let wiki = a["sources"].as_array().unwrap().iter().find(|s| s["name"] == "wikipedia").unwrap();
        assert_eq!(
            (wiki["name"].as_str(), wiki["status"].as_str(), wiki["error"].as_str(), wiki["control"].as_str()),
            (Some("wikipedia"), Some("skipped"), Some("unsupported_control"), Some(control)),
            "{a}"
        );
        assert_eq!(a["sources"][0]["name"], "mojeek", "{a}");
    }
    assert_eq!(up.count("/w/api.php"), 0, "never asked");
    // Without such a control it is asked, with the results of its own language.
    let only_wiki = start(&up, "wikipedia", &[]);
    let a = ask(&only_wiki, json!({ "query": "meaning", "safesearch": "off" }));
    assert_eq!((a["sources"][0]["name"].as_str(), a["sources"][0]["status"].as_str()), (Some("wikipedia"), Some("ok")));
    assert_eq!(up.count("/w/api.php"), 1);
    // Only sources that cannot honour the search: none answers, and the call says so (not a payment's worth).
    let r = only_wiki.post_json("/service", &json!({ "query": "meaning", "time_range": "year" }).to_string());
    assert_eq!((r.status, r.error_code().as_str()), (422, "controls_unsupported"), "{}", r.text());
    assert_eq!(r.json()["error"]["sources"][0]["control"], "time_range");
}

#[test]
fn domain_filters_hold_on_the_results() {
    let up = Upstream::start(pages);
    let server = start(&up, "bing", &[]);
    // One included domain: sent as `site:`, and enforced (the recorded page answers the unfiltered query).
    let a = ask(&server, json!({ "query": "caffeine sleep", "include_domains": ["SleepFoundation.org"] }));
    let urls: Vec<&str> = a["results"].as_array().unwrap().iter().map(|r| r["url"].as_str().unwrap()).collect();
    assert_eq!(urls, ["https://www.sleepfoundation.org/nutrition/caffeine-and-sleep"], "{a}");
    assert_eq!(a["sources"][0]["removed"], 9, "{a}");
    let q = up.seen().last().unwrap().param("q").unwrap();
    assert_eq!(q, "caffeine sleep site:sleepfoundation.org");
    // Excluded domains cover their subdomains.
    let a = ask(
        &server,
        json!({ "query": "caffeine", "max_results": 20, "exclude_domains": ["sleepfoundation.org", "nih.gov"] }),
    );
    let urls: Vec<&str> = a["results"].as_array().unwrap().iter().map(|r| r["url"].as_str().unwrap()).collect();
    assert!(!urls.is_empty());
    assert!(urls.iter().all(|u| !u.contains("sleepfoundation.org") && !u.contains("nih.gov")), "{urls:?}");
    assert_eq!(a["sources"][0]["removed"].as_u64(), Some(10 - urls.len() as u64), "{a}");
    // Everything filtered out is an empty answer whose report says why, not a failure.
    let a = ask(&server, json!({ "query": "caffeine", "include_domains": ["example.net"] }));
    assert_eq!(a["results"], json!([]));
    assert_eq!((a["sources"][0]["status"].as_str(), a["sources"][0]["removed"].as_u64()), (Some("ok"), Some(10)));
}

/// The real recorded DuckDuckGo page (30 results): included domains keep only their hosts, in the page's order.
#[test]
fn domain_filters_on_a_recorded_duckduckgo_page() {
    let Some(page) = shared_fixture("search/ddg_html_2020__antani__30results_with_ad.html") else { return };
    let up = Upstream::start(move |_| Answer::html(200, page.clone()));
    let server = start(&up, "ddg_html", &[]);
    let all = ask(&server, json!({ "query": "antani", "max_results": 20 }));
    let all: Vec<String> =
        all["results"].as_array().unwrap().iter().map(|r| r["url"].as_str().unwrap().to_owned()).collect();
    let host = |u: &str| u.split('/').nth(2).unwrap_or("").to_owned();
    let first_host = host(&all[0]);
    let a = ask(&server, json!({ "query": "antani", "max_results": 20, "exclude_domains": [first_host] }));
    let kept: Vec<&str> = a["results"].as_array().unwrap().iter().map(|r| r["url"].as_str().unwrap()).collect();
    let expected: Vec<&str> = all.iter().map(String::as_str).filter(|u| host(u) != first_host).collect();
    assert!(!expected.is_empty() && kept.len() >= expected.len(), "{kept:?}");
    assert_eq!(kept.get(..expected.len()).unwrap(), expected, "the others, in order");
    assert!(kept.iter().all(|u| host(u) != first_host));
    assert!(a["sources"][0]["removed"].as_u64().unwrap() >= 1, "{a}");
}

fn article(n: &str) -> Vec<u8> {
    let body = format!("The article {n} says something worth reading about extraction. ").repeat(20);
    format!("<html><head><title>Article {n}</title></head><body><article><h1>Article {n}</h1><p>{body}</p></article></body></html>")
        .into_bytes()
}

/// A site of pages `/a`, `/b`, ... each answering after `delay` (the one at `slow`, if any, after `slow_delay`).
fn site(delay: Duration, slow: Option<(&'static str, Duration)>) -> Upstream {
    Upstream::start(move |seen| {
        let name = seen.path().trim_start_matches('/').to_owned();
        let wait = match slow {
            Some((path, d)) if seen.path() == path => d,
            _ => delay,
        };
        Answer::Delay(wait, Box::new(Answer::html(200, article(&name))))
    })
}

fn extract_server(site: &Upstream, pages: &[&str], extra: &[(&str, &str)]) -> (Server, Upstream) {
    let urls: Vec<String> = pages.iter().map(|p| site.url(p)).collect();
    let answer = searxng_answer(&urls);
    let source = Upstream::start(move |_| Answer::json(200, answer.clone()));
    let allow = format!("127.0.0.1:{}", site.addr.port());
    let mut env = vec![
        ("WEBSEARCHD_SOURCES", "searxng"),
        ("WEBSEARCHD_FETCH_ALLOW", allow.as_str()),
        ("WEBSEARCHD_SOURCE_INTERVAL_MS", "0"),
    ];
    env.extend_from_slice(extra);
    let url = source.url("/searx");
    env.push(("WEBSEARCHD_SEARXNG_URLS", &url));
    (Server::start(&env), source)
}

#[test]
fn extract_three_pages_side_by_side() {
    let site = site(Duration::from_secs(1), None);
    let (server, _source) = extract_server(&site, &["/a", "/b", "/c", "/d"], &[]);
    let t0 = Instant::now();
    let a = ask(&server, json!({ "query": "three pages", "extract": 3 }));
    let took = t0.elapsed();
    // Three pages of one second each, side by side: about one second, where one after the other is three.
    assert!(took < Duration::from_millis(2_500), "{took:?}");
    for (i, name) in ["a", "b", "c"].iter().enumerate() {
        let e = &a["results"][i]["extract"];
        assert_eq!(e["status"], "ok", "{a}");
        assert!(e["markdown"].as_str().unwrap().contains(&format!("The article {name} says")), "{e}");
        assert_eq!(e["final_url"], site.url(&format!("/{name}")));
        assert_eq!(e["title"], format!("Article {name}"));
        assert!(e["tokens"].as_u64().unwrap() > 0 && e["truncated"] == false, "{e}");
    }
    assert!(a["results"][3].get("extract").is_none(), "only the first three");
    assert_eq!(a["answer_extract"], a["results"][0]["extract"]["markdown"], "the top page, as before");
    assert_eq!(a["extract"]["status"], "ok");
    assert_eq!(site.count("/d"), 0);
    eprintln!("extract: 3 pages of 1 s each answered in {took:?}");
}

/// A page slower than the call's deadline is a timeout; the others' pages arrive with the answer at the deadline.
#[test]
fn a_slow_page_does_not_hold_the_others() {
    let site = site(Duration::ZERO, Some(("/b", Duration::from_secs(8))));
    let (server, _source) = extract_server(&site, &["/a", "/b", "/c"], &[("WEBSEARCHD_FETCH_TIMEOUT_MS", "1500")]);
    let t0 = Instant::now();
    let a = ask(&server, json!({ "query": "one slow page", "extract": 3 }));
    let took = t0.elapsed();
    assert!(took < Duration::from_secs(6), "answered at the deadline, not after the slow page: {took:?}");
    assert_eq!(a["results"][0]["extract"]["status"], "ok", "{a}");
    assert_eq!(a["results"][1]["extract"]["status"], "timeout", "{a}");
    assert_eq!(a["results"][2]["extract"]["status"], "ok", "{a}");
}

#[test]
fn the_cache_key_holds_every_control() {
    let up = Upstream::start(pages);
    let server = start(&up, "searxng", &[]);
    let base = json!({ "query": "cached" });
    let first = ask(&server, base.clone());
    assert_eq!(first["cached"], false);
    assert_eq!(ask(&server, base.clone())["cached"], true, "the same call is cached");
    let variants = [
        ("time_range", json!("day")),
        ("region", json!("de-de")),
        ("safesearch", json!("off")),
        ("include_domains", json!(["rust-lang.org"])),
        ("exclude_domains", json!(["rust-lang.org"])),
    ];
    for (n, (field, value)) in variants.iter().enumerate() {
        let mut body = base.clone();
        body[field] = value.clone();
        let a = ask(&server, body);
        assert_eq!(a["cached"], false, "{field} is in the key");
        assert_eq!(up.count("/searx/search"), n + 2);
    }
}

/// The price stays one call's unless the operator prices the pages past the first; a malformed control is a 400
/// before any payment is asked for, and before any source is.
#[test]
fn extra_pages_are_priced_only_when_the_operator_says_so() {
    let facilitator = common::pay::Facilitator::start();
    let up = Upstream::start(pages);
    let mut env = common::pay::paid_env(up.url("/html/"), facilitator.url());
    env.push(("WEBSEARCHD_EXTRACT_PAGE_PRICE_ATOMIC".into(), "1000".into()));
    let server = Server::start(&common::pairs(&env));
    let amount = |body: Value| {
        let r = server.post_json("/service", &body.to_string());
        assert_eq!(r.status, 402, "{}", r.text());
        r.json()["accepts"][0]["amount"].as_str().unwrap().to_owned()
    };
    assert_eq!(amount(json!({ "query": "q" })), "5000");
    assert_eq!(amount(json!({ "query": "q", "extract": true })), "5000");
    assert_eq!(amount(json!({ "query": "q", "extract": 3 })), "7000");
    for (body, code) in [
        (json!({ "query": "q", "time_range": "x" }), "time_range_invalid"),
        (json!({ "query": "q", "include_domains": ["a.com/b"] }), "include_domains_path"),
        (json!({ "query": "q", "extract": 9 }), "extract_out_of_range"),
    ] {
        let r = server.post_json("/service", &body.to_string());
        assert_eq!((r.status, r.error_code().as_str()), (400, code), "{}", r.text());
        assert_eq!(
            r.json()["error"]["field"],
            body.as_object().unwrap().keys().find(|k| *k != "query").unwrap().as_str()
        );
    }
    assert_eq!(up.count("/html/"), 0, "no source was asked");
    // Without a price per page, extract: 5 costs one call.
    let plain = Server::start(&common::pairs(&common::pay::paid_env(up.url("/html/"), facilitator.url())));
    let r = plain.post_json("/service", &json!({ "query": "q", "extract": 5 }).to_string());
    assert_eq!(r.json()["accepts"][0]["amount"], "5000");
}

/// Peak resident memory of the whole server while every worker extracts five hostile pages (issue 31's bound).
const PEAK_RSS_BYTES_MAX: u64 = 64 << 20;

/// Pages built to cost the extractor the most within the body cap (3 MiB): one-letter paragraphs, table rows, deep
/// nesting, links, one long word.
fn hostile(name: &str) -> Vec<u8> {
    match name {
        "paragraphs" => b"<p>a".repeat(700_000),
        "rows" => [b"<table>".to_vec(), b"<tr><td>a</td>".repeat(200_000)].concat(),
        "nesting" => [b"<div>".repeat(500_000), b"deep".to_vec()].concat(),
        "links" => b"<li><a href=/x>x</a>".repeat(140_000),
        _ => [b"<p>".to_vec(), b"a".repeat(3_000_000)].concat(),
    }
}

/// The site of the five hostile pages, and a server on four workers whose source's results are them (with `more`
/// variables): every call extracts its pages again (a kept extraction would make "at once" one extraction and hits),
/// and memory, not time, is what the tests bound (a loaded machine runs a debug build slowly).
fn hostile_world(more: &[(&str, &str)]) -> (Upstream, Server, Upstream, Vec<String>) {
    const NAMES: [&str; 5] = ["paragraphs", "rows", "nesting", "links", "word"];
    let site = Upstream::start(|seen| Answer::html(200, hostile(seen.path().trim_start_matches('/'))));
    let pages: Vec<String> = NAMES.iter().map(|n| format!("/{n}")).collect();
    let paths: Vec<&str> = pages.iter().map(String::as_str).collect();
    let mut extra =
        vec![("WEBSEARCHD_WORKERS", "4"), ("WEBSEARCHD_CACHE_TTL_S", "0"), ("WEBSEARCHD_FETCH_TIMEOUT_MS", "60000")];
    extra.extend_from_slice(more);
    let (server, source) = extract_server(&site, &paths, &extra);
    let urls = pages.iter().map(|p| site.url(p)).collect();
    (site, server, source, urls)
}

#[test]
fn every_worker_extracting_five_hostile_pages_stays_within_64_mb() {
    let (_site, server, _source, _urls) = hostile_world(&[]);
    let idle = server.status_bytes("VmHWM:");
    let addr = server.addr;
    let calls: Vec<_> = (0..4)
        .map(|i| {
            std::thread::spawn(move || {
                let body = json!({ "query": format!("hostile {i}"), "extract": 5, "extract_tokens": 8000 });
                common::request(
                    addr,
                    "POST",
                    "/service",
                    &[("Content-Type", "application/json")],
                    body.to_string().as_bytes(),
                )
            })
        })
        .collect();
    let mut largest = 0;
    for call in calls {
        let reply = call.join().unwrap();
        assert_eq!(reply.status, 200, "{}", reply.text());
        largest = largest.max(reply.text().len());
        let a = reply.json();
        let results = a["results"].as_array().unwrap();
        assert_eq!(results.len(), 5);
        // Every page is answered: the paragraphs, rows and links with their text, the nesting and the one long word
        // with it or as "empty" (nothing the extractor keeps).
        for r in results {
            let (status, url) = (r["extract"]["status"].as_str().unwrap(), r["url"].as_str().unwrap());
            let may_be_empty = url.ends_with("/nesting") || url.ends_with("/word");
            assert!(status == "ok" || (status == "empty" && may_be_empty), "{r}");
        }
    }
    let peak = server.status_bytes("VmHWM:");
    eprintln!(
        "extract: 5 on 4 workers, hostile pages: idle {:.1} MB, peak {:.1} MB, largest answer {} bytes",
        idle as f64 / 1e6,
        peak as f64 / 1e6,
        largest
    );
    assert!(peak < PEAK_RSS_BYTES_MAX, "peak RSS {peak} bytes");
    // Five pages, each within its markdown bound, and the top one again in answer_extract.
    let answer_max = 6 * websearchd::page::EXTRACT_PAGE_BYTES_MAX + 64 * 1_024;
    assert!(largest < answer_max, "{largest}");
}

/// Issue 41, item 8: the doors added since (the reader, Tavily's search and extract) under the same hostile pages:
/// four callers from four addresses each reading the five pages through each door at once, on four workers.
#[test]
fn the_reader_and_tavily_doors_reading_hostile_pages_stay_within_64_mb() {
    let more = [("WEBSEARCHD_SEARCH_DEADLINE_MS", "60000"), ("WEBSEARCHD_TRUSTED_PROXIES", "127.0.0.1")];
    let (_site, server, _source, urls) = hostile_world(&more);
    let idle = server.status_bytes("VmHWM:");
    let bodies = [
        ("/extract", json!({ "urls": urls, "tokens": 8000, "query": "a" })),
        ("/tavily/extract", json!({ "urls": urls, "format": "text", "query": "a x deep", "chunks_per_source": 5 })),
        (
            "/tavily/search",
            json!({ "query": "hostile a", "search_depth": "advanced", "include_raw_content": true,
                                   "include_answer": true, "max_results": 5 }),
        ),
    ];
    let addr = server.addr;
    let calls: Vec<_> = (0..4)
        .flat_map(|i| bodies.clone().into_iter().map(move |(path, body)| (i, path, body)))
        .map(|(i, path, body)| {
            std::thread::spawn(move || {
                let client = format!("192.0.2.{}", i + 1);
                let headers = [("Content-Type", "application/json"), ("X-Forwarded-For", client.as_str())];
                (path, common::request(addr, "POST", path, &headers, body.to_string().as_bytes()))
            })
        })
        .collect();
    let mut largest = 0;
    for call in calls {
        let (path, reply) = call.join().unwrap();
        assert_eq!(reply.status, 200, "{path}: {}", reply.text());
        largest = largest.max(reply.body.len());
    }
    let peak = server.status_bytes("VmHWM:");
    eprintln!(
        "reader and Tavily doors, 4 callers x 3 doors x 5 hostile pages on 4 workers: idle {:.1} MB, peak {:.1} MB, \
         largest answer {} bytes",
        idle as f64 / 1e6,
        peak as f64 / 1e6,
        largest
    );
    assert!(peak < PEAK_RSS_BYTES_MAX, "peak RSS {peak} bytes");
    // Five pages, each within its markdown bound (a Tavily search's raw content and its passages).
    assert!(largest < 11 * websearchd::page::EXTRACT_PAGE_BYTES_MAX, "{largest}");
}
