//! Search end to end: the real server against loopback upstreams that serve recorded and hand-written pages, and
//! fail in the ways real sources fail.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)]

mod common;

use std::time::{Duration, Instant};

use common::upstream::{Answer, Seen, Upstream};
use common::{own_fixture, shared_fixture, sources_env as env_for, Server};
use serde_json::Value;

fn start(up: &Upstream, sources: &str, extra: &[(&str, &str)]) -> Server {
    let mut env = env_for(up, sources);
    env.extend(extra.iter().map(|(k, v)| (k.to_string(), v.to_string())));
    let pairs: Vec<(&str, &str)> = env.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
    Server::start(&pairs)
}

fn search(server: &Server, query: &str) -> common::Reply {
    server.post_json("/service", &serde_json::json!({ "query": query, "max_results": 20 }).to_string())
}

/// The upstream that serves the hand-written pages: each source's results.
fn happy(seen: &Seen) -> Answer {
    match seen.path() {
        "/html/" => Answer::html(200, own_fixture("search/ddg_html_results.html")),
        "/lite/" => Answer::html(200, own_fixture("search/ddg_lite_results.html")),
        "/searx/search" => Answer::json(200, own_fixture("search/searxng_results.json")),
        "/mojeek" => Answer::html(200, own_fixture("search/mojeek_results.html")),
        _ => Answer::html(404, "no"),
    }
}

fn statuses(answer: &Value) -> Vec<(String, String)> {
    answer["sources"]
        .as_array()
        .expect("sources")
        .iter()
        .map(|s| (s["name"].as_str().unwrap().to_string(), s["status"].as_str().unwrap().to_string()))
        .collect()
}

fn pair(a: &str, b: &str) -> (String, String) {
    (a.to_string(), b.to_string())
}

#[test]
fn each_source_alone() {
    let up = Upstream::start(happy);
    let cases = [
        ("ddg_html", "Rust & Cargo: a language", "https://www.rust-lang.org/"),
        ("ddg_lite", "Cat Ba & Island", "https://example.org/cat-ba"),
        ("searxng", "Rust Programming Language", "https://www.rust-lang.org/"),
        ("mojeek", "The Modern JavaScript Tutorial", "https://javascript.info/"),
    ];
    for (source, title, url) in cases {
        let server = start(&up, source, &[]);
        let reply = search(&server, &format!("rust {source}"));
        assert_eq!(reply.status, 200, "{source}: {}", reply.text());
        let a = reply.json();
        assert_eq!(a["results"][0]["title"], title, "{source}");
        assert_eq!(a["results"][0]["url"], url, "{source}");
        assert_eq!(a["results"][0]["position"], 1);
        assert_eq!(a["results"][0]["source"], source);
        assert_eq!(statuses(&a), vec![pair(source, "ok")]);
        assert_eq!(a["cached"], false);
        assert_eq!(a["query"], format!("rust {source}"));
        assert_eq!(a["request_id"].as_str(), reply.header("x-request-id"));
        assert!(a["issued_at"].as_str().unwrap().ends_with('Z'));
    }
    // The DuckDuckGo requests look like a browser's form submission.
    let html = up.seen().into_iter().find(|s| s.path() == "/html/").expect("a ddg_html request");
    assert_eq!(html.method, "POST");
    assert_eq!(html.param("q").as_deref(), Some("rust ddg_html"));
    assert_eq!(html.param("kl").as_deref(), Some("wt-wt"));
    assert!(html.header("user-agent").unwrap().starts_with("Mozilla/5.0"));
    assert_eq!(html.header("content-type"), Some("application/x-www-form-urlencoded"));
    assert!(html.header("referer").is_some());
    let searx = up.seen().into_iter().find(|s| s.path() == "/searx/search").expect("a searxng request");
    assert_eq!(searx.param("format").as_deref(), Some("json"));
    assert_eq!(searx.param("q").as_deref(), Some("rust searxng"));
}

#[test]
fn results_are_capped_deduplicated_and_dated() {
    let up = Upstream::start(|seen| match seen.path() {
        "/html/" => {
            let page = String::from_utf8(own_fixture("search/ddg_html_results.html")).unwrap();
            // The same destination twice (once wrapped by DuckDuckGo, once direct with a fragment).
            Answer::html(200, page.replace("https://doc.rust-lang.org/book/", "https://rust-lang.org/#top"))
        }
        _ => Answer::html(404, ""),
    });
    let server = start(&up, "ddg_html", &[]);
    let a = search(&server, "dedupe").json();
    assert_eq!(a["results"].as_array().unwrap().len(), 1, "{a}");
    assert_eq!(a["results"][0]["published"], "2025-06-23");
    let one = server.post_json("/service", r#"{"query":"cap","max_results":1}"#).json();
    assert_eq!(one["results"].as_array().unwrap().len(), 1);
}

#[test]
fn html_blocked_then_lite_answers_and_the_breaker_skips_html() {
    let up = Upstream::start(|seen| match seen.path() {
        "/html/" => Answer::html(202, own_fixture("search/ddg_anomaly.html")),
        _ => happy(seen),
    });
    let server = start(&up, "ddg_html,ddg_lite", &[]);
    let a = search(&server, "blocked first").json();
    assert_eq!(statuses(&a), vec![pair("ddg_html", "failed"), pair("ddg_lite", "ok")]);
    assert_eq!(a["sources"][0]["error"], "blocked");
    assert_eq!(a["results"][0]["source"], "ddg_lite");

    // The next search does not ask the blocked source at all, and reports it last (healthy endpoints go first).
    let a = search(&server, "blocked second").json();
    assert_eq!(statuses(&a), vec![pair("ddg_lite", "ok"), pair("ddg_html", "skipped")]);
    assert_eq!(a["sources"][1]["error"], "cooling_down");
    // A wall backs off 3 s by default (2.4 to 3.6 with the jitter), less the time since it.
    let retry = a["sources"][1]["retry_in_s"].as_u64().unwrap();
    assert!((1..=4).contains(&retry), "{retry}");
    assert_eq!(up.count("/html/"), 1);
    let health = server.get("/health").json();
    assert_eq!(health["sources"][0]["breaker"], "open");
    assert_eq!(health["sources"][0]["failures_in_a_row"], 1);
    assert_eq!(health["sources"][1]["failures_in_a_row"], 0);
    let metrics = server.get("/metrics").text();
    assert!(metrics.contains("websearchd_source_blocks_total{source=\"ddg_html\""), "{metrics}");
}

#[test]
fn recorded_anomaly_and_recorded_lite_page() {
    let (Some(anomaly), Some(lite)) = (
        shared_fixture("search/ddg_lite__catba__202_anomaly_challenge.html"),
        shared_fixture("search/ddg_lite__catba__200_results_with_ads.html"),
    ) else {
        return;
    };
    let up = Upstream::start(move |seen| match seen.path() {
        "/html/" => Answer::html(202, anomaly.clone()),
        "/lite/" => Answer::html(200, lite.clone()),
        _ => Answer::html(404, ""),
    });
    let server = start(&up, "ddg_html,ddg_lite", &[]);
    let a = search(&server, "Cat Ba Island Vietnam").json();
    assert_eq!(statuses(&a), vec![pair("ddg_html", "failed"), pair("ddg_lite", "ok")]);
    assert_eq!(a["results"].as_array().unwrap().len(), 10);
    assert_eq!(a["results"][0]["url"], "https://vietnamtravel.com/cat-ba-island/");
    assert!(a["results"].as_array().unwrap().iter().all(|r| !r["url"].as_str().unwrap().contains("duckduckgo.com")));
}

#[test]
fn all_failing_is_a_502_with_the_report() {
    let up = Upstream::start(|seen| match seen.path() {
        "/html/" => Answer::html(500, "oops"),
        "/lite/" => Answer::html(200, own_fixture("search/changed_markup.html")),
        "/searx/search" => Answer::json(200, own_fixture("search/searxng_unresponsive.json")),
        _ => Answer::Reset,
    });
    let server = start(&up, "ddg_html,ddg_lite,searxng,mojeek", &[]);
    let r = search(&server, "nothing works");
    assert_eq!((r.status, r.error_code().as_str()), (502, "all_sources_failed"), "{}", r.text());
    let report = &r.json()["error"]["sources"];
    let errors: Vec<&str> = report.as_array().unwrap().iter().map(|s| s["error"].as_str().unwrap()).collect();
    // The 500 and the reset may be chance: each is asked once more, after the others; the rest are not.
    assert_eq!(errors, vec!["http_status", "unparseable", "blocked", "connect", "http_status", "connect"]);
    assert!(report.as_array().unwrap().iter().all(|s| s["status"] == "failed"));
}

#[test]
fn genuine_no_results_is_an_empty_answer() {
    let up = Upstream::start(|seen| match seen.path() {
        "/html/" => Answer::html(200, own_fixture("search/ddg_html_no_results.html")),
        _ => Answer::html(500, ""),
    });
    let server = start(&up, "ddg_html,ddg_lite", &[]);
    let r = search(&server, "zzqqxx");
    assert_eq!(r.status, 200);
    let a = r.json();
    assert_eq!(a["results"], serde_json::json!([]));
    assert_eq!(statuses(&a), vec![pair("ddg_html", "empty")], "lite is not asked after a genuine empty answer");
    assert_eq!(up.count("/lite/"), 0);
}

#[test]
fn a_hanging_upstream_times_out_and_the_next_answers() {
    let up = Upstream::start(|seen| match seen.path() {
        "/html/" => Answer::Hang(Duration::from_secs(5)),
        _ => happy(seen),
    });
    let server = start(&up, "ddg_html,ddg_lite", &[("WEBSEARCHD_SOURCE_TIMEOUT_MS", "400")]);
    let started = Instant::now();
    let a = search(&server, "hang").json();
    let took = started.elapsed();
    assert_eq!(statuses(&a), vec![pair("ddg_html", "failed"), pair("ddg_lite", "ok")]);
    assert_eq!(a["sources"][0]["error"], "timeout");
    assert!(took < Duration::from_secs(3), "the timeout did not hold: {took:?}");
    assert!(a["sources"][0]["elapsed_ms"].as_u64().unwrap() >= 400);
}

#[test]
fn garbage_and_oversized_bodies_fail_cleanly() {
    let big = vec![b'x'; 20_000];
    let up = Upstream::start(move |seen| match seen.path() {
        "/html/" => Answer::Garbage(b"\x00\x01 this is not HTTP \xff\r\n\r\n".to_vec()),
        "/lite/" => Answer::html(200, big.clone()),
        "/mojeek" => happy(seen),
        _ => Answer::html(404, ""),
    });
    let server = start(&up, "ddg_html,ddg_lite,mojeek", &[("WEBSEARCHD_SOURCE_BODY_BYTES_MAX", "8192")]);
    let a = search(&server, "garbage").json();
    assert_eq!(statuses(&a), vec![pair("ddg_html", "failed"), pair("ddg_lite", "failed"), pair("mojeek", "ok")]);
    assert_eq!(a["sources"][0]["error"], "protocol");
    assert_eq!(a["sources"][1]["error"], "too_large");
}

#[test]
fn cache_hit() {
    let up = Upstream::start(happy);
    let server = start(&up, "ddg_html", &[]);
    let first = search(&server, "Cache Me").json();
    assert_eq!(first["cached"], false);
    let second = search(&server, "cache   me").json();
    assert_eq!(second["cached"], true);
    assert!(second["age_s"].as_u64().is_some());
    assert_eq!(second["results"], first["results"]);
    assert_ne!(second["request_id"], first["request_id"]);
    assert_eq!(up.count("/html/"), 1);
    let metrics = server.get("/metrics").text();
    assert!(metrics.contains("websearchd_cache_hits_total 1"), "{metrics}");
}

#[test]
fn all_skipped_is_a_503_with_retry_after() {
    let up = Upstream::start(happy);
    let env =
        [("WEBSEARCHD_SOURCE_INTERVAL_MS", "60000"), ("WEBSEARCHD_SOURCE_BURST", "1"), ("WEBSEARCHD_CACHE_TTL_S", "0")];
    let server = start(&up, "ddg_html", &env);
    assert_eq!(search(&server, "one").status, 200);
    let r = search(&server, "two");
    assert_eq!((r.status, r.error_code().as_str()), (503, "all_sources_skipped"), "{}", r.text());
    let retry: u64 = r.header("retry-after").unwrap().parse().unwrap();
    assert!((50..=60).contains(&retry), "{retry}");
    assert_eq!(r.json()["error"]["sources"][0]["error"], "not_ready");
}

#[test]
fn searxng_without_instances_is_reported_not_configured() {
    let up = Upstream::start(|_| Answer::html(500, ""));
    let server = start(&up, "ddg_html,searxng", &[("WEBSEARCHD_SEARXNG_URLS", " ")]);
    let r = search(&server, "q");
    assert_eq!(r.status, 502);
    let report = r.json()["error"]["sources"].clone();
    let searxng = report.as_array().unwrap().iter().find(|s| s["name"] == "searxng").expect("searxng reported");
    assert_eq!((searxng["status"].as_str(), searxng["error"].as_str()), (Some("skipped"), Some("not_configured")));
}

/// Every recorded DuckDuckGo HTML page, served by the upstream, comes out of `/service` as its organic results.
#[test]
fn recorded_html_pages_end_to_end() {
    let Some(page) = shared_fixture("search/ddg_html_GET__indexeddb-wrapper-javascript-typescript-idb-localf.html")
    else {
        return;
    };
    let up = Upstream::start(move |_| Answer::html(200, page.clone()));
    let server = start(&up, "ddg_html", &[]);
    let a = search(&server, "indexeddb wrapper").json();
    assert_eq!(a["results"].as_array().unwrap().len(), 10);
    assert_eq!(a["results"][0]["url"], "https://github.com/dexie/Dexie.js/");
}

/// With one worker and a queue of one, a third request arriving while both are taken gets 503 at once.
#[test]
fn full_queue_is_a_503_with_retry_after() {
    let up = Upstream::start(|seen| match seen.param("q").as_deref() {
        // Long enough that both other requests arrive while the worker is busy, on a loaded machine too.
        Some("slow") => Answer::Delay(Duration::from_secs(5), Box::new(happy(seen))),
        _ => happy(seen),
    });
    let server = start(
        &up,
        "ddg_html",
        &[("WEBSEARCHD_WORKERS", "1"), ("WEBSEARCHD_QUEUE_DEPTH", "1"), ("WEBSEARCHD_SOURCE_TIMEOUT_MS", "15000")],
    );
    let addr = server.addr;
    let slow = std::thread::spawn(move || {
        let r =
            common::request(addr, "POST", "/service", &[("Content-Type", "application/json")], br#"{"query":"slow"}"#);
        (r, Instant::now())
    });
    up.wait_for("/html/", 1);
    // The worker is busy: of two more requests, one waits in the queue and the other is refused at once.
    let started = Instant::now();
    let others: Vec<_> = ["b", "c"]
        .into_iter()
        .map(|q| {
            std::thread::spawn(move || {
                let body = format!(r#"{{"query":"{q}"}}"#);
                let r =
                    common::request(addr, "POST", "/service", &[("Content-Type", "application/json")], body.as_bytes());
                (r, Instant::now())
            })
        })
        .collect();
    let replies: Vec<_> = others.into_iter().map(|t| t.join().unwrap()).collect();
    let refused: Vec<_> = replies.iter().filter(|(r, _)| r.status == 503).collect();
    assert_eq!(refused.len(), 1, "{:?}", replies.iter().map(|(r, _)| r.status).collect::<Vec<_>>());
    let (r, at) = refused[0];
    assert_eq!(r.error_code(), "overloaded");
    assert_eq!(r.header("retry-after"), Some("1"));
    // "At once": before the busy worker is free, not after a wait in the queue.
    let (slow, slow_done) = slow.join().unwrap();
    assert!(*at < slow_done, "the refusal waited for the worker ({:?} after the others were sent)", *at - started);
    assert_eq!(slow.status, 200);
    assert!(replies.iter().any(|(r, _)| r.status == 200));
}

/// SIGTERM while a search is in flight: the search is answered, then the process exits 0.
#[test]
fn sigterm_finishes_the_request_in_flight() {
    let up = Upstream::start(|seen| Answer::Delay(Duration::from_millis(800), Box::new(happy(seen))));
    let mut server = start(&up, "ddg_html", &[]);
    let addr = server.addr;
    let inflight = std::thread::spawn(move || {
        common::request(addr, "POST", "/service", &[("Content-Type", "application/json")], br#"{"query":"inflight"}"#)
    });
    up.wait_for("/html/", 1);
    server.signal("TERM");
    let reply = inflight.join().unwrap();
    assert_eq!(reply.status, 200, "{}", reply.text());
    assert_eq!(reply.json()["results"][0]["url"], "https://www.rust-lang.org/");
    let status = server.child.wait().expect("exit");
    assert_eq!(status.code(), Some(0));
    // The log is read by a thread of its own: wait for the line rather than read what has arrived so far.
    let log = server.log_with("SIGTERM received");
    assert!(log.contains("SIGTERM received"), "{log}");
}

#[test]
fn the_search_command_uses_the_same_pipeline() {
    let up = Upstream::start(happy);
    let out = std::process::Command::new(common::binary())
        .env_clear()
        .envs(env_for(&up, "ddg_lite"))
        .args(["search", "cat", "ba", "--max-results", "1"])
        .output()
        .expect("run");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let a: Value = serde_json::from_slice(&out.stdout).expect("JSON");
    assert_eq!(a["query"], "cat ba");
    assert_eq!(a["results"].as_array().unwrap().len(), 1);
    assert_eq!(a["results"][0]["source"], "ddg_lite");

    let down = Upstream::start(|_| Answer::html(500, ""));
    let out = std::process::Command::new(common::binary())
        .env_clear()
        .envs(env_for(&down, "ddg_lite"))
        .args(["search", "x"])
        .output()
        .expect("run");
    assert_eq!(out.status.code(), Some(1));
    let e: Value = serde_json::from_slice(&out.stdout).expect("JSON");
    assert_eq!(e["error"]["code"], "all_sources_failed");
}

// Issue 15: more providers, health order, filling max_results.

/// Both DuckDuckGo endpoints blocked: the search falls through to Bing and Mojeek (recorded pages), merges their
/// results up to `max_results: 20`, and reports every endpoint it asked, pages included.
#[test]
fn blocked_duckduckgo_falls_through_to_the_next_providers_and_fills_twenty() {
    let Some(mojeek) = shared_fixture("search/mojeek__javascript-tutorial__playwright-prettier__2026-04.html") else {
        return;
    };
    let up = Upstream::start(move |seen| match seen.path() {
        "/html/" | "/lite/" => Answer::html(202, own_fixture("search/ddg_anomaly.html")),
        "/bing" => Answer::html(200, own_fixture("search/bing__does-caffeine-affect-sleep__10results.html")),
        "/mojeek" => Answer::html(200, mojeek.clone()),
        _ => Answer::html(404, "no"),
    });
    let server = start(&up, "ddg_html,ddg_lite,bing,mojeek,wikipedia", &[]);
    let a = search(&server, "fall through").json();
    let results = a["results"].as_array().unwrap();
    assert_eq!(results.len(), 20, "{a}");
    assert!(results[..10].iter().all(|r| r["source"] == "bing"));
    assert!(results[10..].iter().all(|r| r["source"] == "mojeek"));
    assert_eq!(results[0]["url"], "https://www.sleepfoundation.org/nutrition/caffeine-and-sleep");
    assert_eq!(results[10]["url"], "https://javascript.info/");
    assert_eq!(results[19]["position"], 20);
    // Bing's full first page made us ask its second (the loopback serves the same page: all duplicates).
    assert_eq!(
        statuses(&a),
        vec![
            pair("ddg_html", "failed"),
            pair("ddg_lite", "failed"),
            pair("bing", "ok"),
            pair("bing", "ok"),
            pair("mojeek", "ok"),
        ]
    );
    assert_eq!(a["sources"][0]["error"], "blocked");
    assert_eq!(a["sources"][3]["page"], 2);
    let page2 = up.seen().into_iter().filter(|s| s.path() == "/bing").nth(1).expect("a second bing request");
    assert_eq!(page2.param("first").as_deref(), Some("11"));
    assert_eq!(up.count("/w/api.php"), 0, "twenty results were held before Wikipedia's turn");
}

/// A blocked provider is backed off and asked last (reported skipped, cooling down) whatever the rotation says; when
/// its back-off ends it is half-open, and one trial request closes it again.
#[test]
fn a_blocked_provider_goes_last_until_its_trial_answers() {
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::Arc;
    let blocking = Arc::new(AtomicBool::new(true));
    let b = blocking.clone();
    let up = Upstream::start(move |seen| match seen.path() {
        "/bing" if b.load(Ordering::SeqCst) => Answer::html(429, "slow down"),
        "/bing" => Answer::html(200, own_fixture("search/bing__does-caffeine-affect-sleep__10results.html")),
        _ => happy(seen),
    });
    let server =
        start(&up, "bing,mojeek", &[("WEBSEARCHD_SOURCE_ORDER", "rotate"), ("WEBSEARCHD_BREAKER_COOLDOWN_MS", "5000")]);
    let ask = |q: &str| server.post_json("/service", &serde_json::json!({ "query": q }).to_string()).json();
    // Turn 0: Bing first in the rotation; it blocks, Mojeek answers.
    let a = ask("health 0");
    assert_eq!(statuses(&a), vec![pair("bing", "failed"), pair("mojeek", "ok")]);
    // Turns 1 and 2: Bing backing off is asked last, even on its own turn (2).
    for q in ["health 1", "health 2"] {
        let a = ask(q);
        assert_eq!(statuses(&a), vec![pair("mojeek", "ok"), pair("bing", "skipped")], "{q}");
        assert_eq!(a["sources"][1]["error"], "cooling_down");
    }
    blocking.store(false, Ordering::SeqCst);
    // Wait for the back-off's end as /health reports it (reading /health does not move the rotation). Five seconds
    // (4 to 6 with the jitter) leave room for a stalled machine between the block and turn 2.
    let deadline = std::time::Instant::now() + Duration::from_secs(15);
    let bing = || {
        let health = server.get("/health").json();
        let sources = health["sources"].as_array().cloned().unwrap_or_default();
        sources.into_iter().find(|s| s["name"] == "bing").unwrap_or_default()
    };
    while bing()["breaker"] != "half_open" && std::time::Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(100));
    }
    assert_eq!(bing()["breaker"], "half_open", "the back-off ended: the next request is a trial");
    assert_eq!(bing()["failures_in_a_row"], 1);
    // Turn 3: the healthy provider first, then Bing's trial, which answers and closes it.
    let a = ask("health 3");
    assert_eq!(statuses(&a), vec![pair("mojeek", "ok"), pair("bing", "ok")]);
    assert_eq!((bing()["breaker"].as_str(), bing()["failures_in_a_row"].as_u64()), (Some("closed"), Some(0)));
    assert_eq!(up.count("/bing"), 2, "one wall, one trial");
}

/// Pacing is per provider, a token bucket: after html is bot-walled, lite is asked in the same search with the
/// provider's burst, not skipped for its interval; with the burst spent the next search finds both endpoints not
/// ready (html also backing off).
#[test]
fn two_endpoints_of_one_provider_share_its_pacing() {
    let up = Upstream::start(|seen| match seen.path() {
        "/html/" => Answer::html(202, own_fixture("search/ddg_anomaly.html")),
        _ => happy(seen),
    });
    let env = [("WEBSEARCHD_PROVIDER_INTERVALS_MS", "duckduckgo=60000"), ("WEBSEARCHD_SOURCE_BURST", "2")];
    let server = start(&up, "ddg_html,ddg_lite,mojeek", &env);
    let t0 = Instant::now();
    let a = search(&server, "paced").json();
    assert_eq!(statuses(&a), vec![pair("ddg_html", "failed"), pair("ddg_lite", "ok"), pair("mojeek", "ok")]);
    assert_eq!(a["results"][0]["source"], "ddg_lite");
    assert!(t0.elapsed() < Duration::from_secs(10), "lite took the burst, not the minute: {:?}", t0.elapsed());
    let lite = up.seen().into_iter().find(|s| s.path() == "/lite/").expect("lite asked");
    assert_eq!(lite.param("q").as_deref(), Some("paced"));
    // The next search: the burst is spent, both endpoints wait for the provider's next slot.
    let a = search(&server, "paced again").json();
    let ddg: Vec<(String, u64)> = a["sources"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|s| s["name"].as_str().unwrap().starts_with("ddg"))
        .map(|s| (s["error"].as_str().unwrap_or("").to_string(), s["retry_in_s"].as_u64().unwrap_or(0)))
        .collect();
    assert_eq!(ddg.len(), 2, "{a}");
    assert!(ddg.iter().any(|(e, s)| e == "not_ready" && (50..=60).contains(s)), "lite waits the interval: {a}");
    assert!(ddg.iter().all(|(e, _)| e == "not_ready" || e == "cooling_down"), "{a}");
    assert_eq!(up.count("/lite/"), 1);
}

/// Wikipedia's API is asked with its own parameters and an identifying User-Agent; links follow the endpoint.
#[test]
fn wikipedia_answers_with_article_links() {
    let Some(page) = shared_fixture("search/wikipedia_api_list-search__caffeine-sleep.json") else { return };
    let up = Upstream::start(move |seen| match seen.path() {
        "/w/api.php" => Answer::json(200, page.clone()),
        _ => Answer::html(404, ""),
    });
    let server = start(&up, "wikipedia", &[]);
    let a = search(&server, "caffeine sleep").json();
    assert_eq!(a["results"][0]["url"], up.url("/wiki/Caffeine-induced_sleep_disorder"));
    assert_eq!(a["results"][0]["source"], "wikipedia");
    let seen = up.seen().into_iter().next().unwrap();
    assert_eq!(seen.param("list").as_deref(), Some("search"));
    assert_eq!(seen.param("srsearch").as_deref(), Some("caffeine sleep"));
    assert!(seen.header("user-agent").unwrap().starts_with("websearchd/"));
}

/// SearXNG instances are independent third parties: each keeps its own interval, so a second instance is asked
/// when the first fails, even right after it.
#[test]
fn searxng_instances_keep_their_own_intervals() {
    let up = Upstream::start(|seen| match seen.path() {
        "/a/search" => Answer::html(500, "down"),
        "/b/search" => Answer::json(200, own_fixture("search/searxng_results.json")),
        _ => Answer::html(404, ""),
    });
    let urls = format!("{},{}", up.url("/a"), up.url("/b"));
    let server =
        start(&up, "searxng", &[("WEBSEARCHD_SEARXNG_URLS", &urls), ("WEBSEARCHD_SOURCE_INTERVAL_MS", "60000")]);
    let a = search(&server, "two instances").json();
    assert_eq!(statuses(&a), vec![pair("searxng", "failed"), pair("searxng", "ok")], "{a}");
    assert!(!a["results"].as_array().unwrap().is_empty());
}

/// One provider's "no results" says nothing of the others': the search goes on (only that provider's other
/// endpoints are not asked).
#[test]
fn one_providers_empty_answer_does_not_end_the_search() {
    let up = Upstream::start(|seen| match seen.path() {
        "/html/" => Answer::html(200, own_fixture("search/ddg_html_no_results.html")),
        _ => happy(seen),
    });
    let server = start(&up, "ddg_html,ddg_lite,mojeek", &[]);
    let a = search(&server, "niche").json();
    assert_eq!(statuses(&a), vec![pair("ddg_html", "empty"), pair("mojeek", "ok")], "{a}");
    assert_eq!(up.count("/lite/"), 0, "DuckDuckGo said it has nothing: its other endpoint is not asked");
    assert!(a["results"].as_array().unwrap().iter().all(|r| r["source"] == "mojeek"));
}

/// The upstream of a two-page DuckDuckGo search: the first recorded page (with its next-page form), and, for the
/// post of that form (`s=10`), another recorded page of ten results.
fn ddg_two_pages() -> Option<Upstream> {
    let first = shared_fixture("search/ddg_html__eino__results_with_nextpage_form.html")?;
    let second = shared_fixture("search/ddg_html_GET__client-side-graph-database-javascript-typescript-b.html")?;
    Some(Upstream::start(move |seen| match (seen.path(), seen.param("s").as_deref()) {
        ("/html/", Some("10")) => Answer::html(200, second.clone()),
        ("/html/", _) => Answer::html(200, first.clone()),
        _ => Answer::html(404, "no"),
    }))
}

/// `max_results: 20` takes DuckDuckGo's second page by posting the first page's next-page form as it was.
#[test]
fn duckduckgo_html_second_page_by_its_form() {
    let Some(up) = ddg_two_pages() else { return };
    let server = start(&up, "ddg_html,mojeek", &[]);
    let a = search(&server, "eino").json();
    let results = a["results"].as_array().unwrap();
    assert_eq!(results.len(), 20, "{a}");
    assert!(results.iter().all(|r| r["source"] == "ddg_html"));
    assert_eq!(results[0]["url"], "https://github.com/cloudwego/eino");
    assert_eq!(results[10]["url"], "https://github.com/nxpatterns/gitnexus");
    assert_eq!(statuses(&a), vec![pair("ddg_html", "ok"), pair("ddg_html", "ok")]);
    assert_eq!(a["sources"][1]["page"], 2);
    let seen = up.seen();
    assert_eq!(seen.len(), 2);
    let second = &seen[1];
    assert_eq!(second.method, "POST");
    for (k, v) in
        [("q", "eino"), ("s", "10"), ("dc", "11"), ("v", "l"), ("o", "json"), ("api", "d.js"), ("kl", "wt-wt")]
    {
        assert_eq!(second.param(k).as_deref(), Some(v), "{k}");
    }
    assert_eq!(second.param("vqd").as_deref(), Some("4-167208798460794982980732831674372650598"));
    assert_eq!(up.count("/mojeek"), 0);
}

/// A next page takes its provider's next slot when it comes within a short gap (here the burst's second request, at
/// once), and counts against the provider: the next search finds DuckDuckGo not ready. Without a slot that soon,
/// the search keeps its first page.
#[test]
fn a_next_page_takes_the_providers_slot_within_a_short_gap() {
    let Some(up) = ddg_two_pages() else { return };
    let paced = [("WEBSEARCHD_PROVIDER_INTERVALS_MS", "duckduckgo=20000"), ("WEBSEARCHD_SOURCE_BURST", "2")];
    let server = start(&up, "ddg_html", &paced);
    let started = Instant::now();
    let a = search(&server, "eino").json();
    assert_eq!(a["results"].as_array().unwrap().len(), 20, "{a}");
    assert!(started.elapsed() < Duration::from_secs(10), "not the provider's interval: {:?}", started.elapsed());
    let r = search(&server, "eino again");
    assert_eq!((r.status, r.error_code().as_str()), (503, "all_sources_skipped"), "{}", r.text());
    let retry: u64 = r.header("retry-after").unwrap().parse().unwrap();
    assert!((10..=20).contains(&retry), "{retry}");

    let one = [("WEBSEARCHD_PROVIDER_INTERVALS_MS", "duckduckgo=20000"), ("WEBSEARCHD_SOURCE_BURST", "1")];
    let server = start(&up, "ddg_html", &one);
    let a = search(&server, "eino once").json();
    assert_eq!(a["results"].as_array().unwrap().len(), 10, "{a}");
    assert_eq!(statuses(&a), vec![pair("ddg_html", "ok")]);
}

/// Each request's timeout ends at the search's deadline: a source that hangs cannot hold the search past it.
#[test]
fn the_deadline_bounds_each_request() {
    let up = Upstream::start(|seen| match seen.path() {
        "/html/" => Answer::Hang(Duration::from_secs(6)),
        _ => happy(seen),
    });
    let server = start(
        &up,
        "ddg_html,mojeek",
        &[("WEBSEARCHD_SOURCE_TIMEOUT_MS", "30000"), ("WEBSEARCHD_SEARCH_DEADLINE_MS", "1000")],
    );
    let started = Instant::now();
    let r = search(&server, "hang past the deadline");
    let took = started.elapsed();
    assert!(took < Duration::from_secs(5), "the request outlived the deadline: {took:?}");
    assert_eq!(r.status, 502, "{}", r.text());
    let report = &r.json()["error"]["sources"];
    assert_eq!(report[0]["error"], "timeout", "{report}");
    assert_eq!((report[1]["status"].as_str(), report[1]["error"].as_str()), (Some("skipped"), Some("deadline")));
}

/// Issue 38: a search waits for a paced provider's next slot instead of skipping it (a self-hoster's one SearXNG
/// answers searches sent back to back), and the source says how long it waited.
#[test]
fn a_paced_provider_is_waited_for_not_skipped() {
    let up = Upstream::start(happy);
    let env = [("WEBSEARCHD_PROVIDER_INTERVALS_MS", "searxng=1500"), ("WEBSEARCHD_SOURCE_BURST", "1")];
    let server = start(&up, "searxng", &env);
    let started = Instant::now();
    let answers: Vec<Value> = (0..3).map(|i| search(&server, &format!("paced {i}")).json()).collect();
    for a in &answers {
        assert_eq!(statuses(a), vec![pair("searxng", "ok")], "{a}");
    }
    assert!(answers[0]["sources"][0].get("waited_ms").is_none(), "the first goes at once");
    for a in &answers[1..] {
        let waited = a["sources"][0]["waited_ms"].as_u64().unwrap_or(0);
        assert!((1..=1_600).contains(&waited), "waited for the slot: {a}");
    }
    assert!(started.elapsed() >= Duration::from_millis(2_900), "{:?}", started.elapsed());
    assert!(server.metric("websearchd_search_waits_total") >= 2);
    // SearXNG's own default interval (250 ms, with the burst of 3) takes searches sent back to back.
    let server = start(&up, "searxng", &[("WEBSEARCHD_SOURCE_INTERVAL_MS", "2000")]);
    for i in 0..8 {
        let r = search(&server, &format!("back to back {i}"));
        assert_eq!(r.status, 200, "{}", r.text());
    }
}

/// At most `workers - 1` searches wait for a slot at once (each holds a worker): with two workers, a second search
/// that would wait while one does is answered 503 at once, saying when the provider is ready.
#[test]
fn waiting_searches_are_bounded() {
    let up = Upstream::start(happy);
    let env =
        [("WEBSEARCHD_SOURCE_INTERVAL_MS", "3000"), ("WEBSEARCHD_SOURCE_BURST", "1"), ("WEBSEARCHD_WORKERS", "2")];
    let server = start(&up, "ddg_html", &env);
    assert_eq!(search(&server, "first").status, 200);
    let replies: Vec<common::Reply> = std::thread::scope(|s| {
        let asks: Vec<_> = ["second", "third"].map(|q| s.spawn(|| search(&server, q))).into_iter().collect();
        asks.into_iter().map(|h| h.join().unwrap()).collect()
    });
    let mut statuses: Vec<u16> = replies.iter().map(|r| r.status).collect();
    statuses.sort_unstable();
    assert_eq!(statuses, [200, 503], "{:?}", replies.iter().map(|r| r.text()).collect::<Vec<_>>());
    let waited = replies.iter().find(|r| r.status == 200).unwrap().json();
    assert!(waited["sources"][0]["waited_ms"].as_u64().unwrap() >= 1_000, "{waited}");
    let refused = replies.iter().find(|r| r.status == 503).unwrap();
    assert_eq!(refused.error_code(), "all_sources_skipped");
    assert_eq!(refused.json()["error"]["sources"][0]["error"], "not_ready");
    assert_eq!(up.count("/html/"), 2);
}

/// A walled provider is asked about once per back-off (its trial), not once per search, while another provider
/// answers every search; a provider's `Retry-After` is kept when longer than the back-off.
#[test]
fn a_walled_provider_is_asked_once_per_back_off() {
    let up = Upstream::start(|seen| match seen.path() {
        "/html/" => Answer::html(202, own_fixture("search/ddg_anomaly.html")),
        "/bing" => {
            Answer::WithHeaders(Box::new(Answer::html(429, "slow down")), vec![("Retry-After".into(), "120".into())])
        }
        _ => happy(seen),
    });
    let server = start(&up, "ddg_html,bing,mojeek", &[("WEBSEARCHD_BREAKER_COOLDOWN_MS", "1000")]);
    let started = Instant::now();
    let mut n = 0;
    while started.elapsed() < Duration::from_secs(5) {
        let r = search(&server, &format!("walled {n}"));
        assert_eq!(r.status, 200, "{}", r.text());
        n += 1;
        std::thread::sleep(Duration::from_millis(100));
    }
    // Back-offs of 1, 2 and 4 s (80% to 120%): the first request, the trials after about 1 and 3 s, perhaps the one
    // after about 7; never one a search.
    assert!(n >= 5, "{n}");
    assert!((2..=4).contains(&up.count("/html/")), "{} requests to a walled DuckDuckGo", up.count("/html/"));
    assert_eq!(up.count("/bing"), 1, "Retry-After: 120 kept");
    let health = server.get("/health").json();
    let bing = health["sources"].as_array().unwrap().iter().find(|s| s["name"] == "bing").unwrap().clone();
    assert!(bing["open_for_s"].as_u64().unwrap() >= 110, "{bing}");
}

/// A source whose first request fails by chance (a 503: no back-off earned) is asked once more in the same search,
/// after the others; a wall is not asked again.
#[test]
fn a_failure_by_chance_is_asked_again_once_a_wall_is_not() {
    use std::sync::atomic::{AtomicUsize, Ordering};
    let asked = std::sync::Arc::new(AtomicUsize::new(0));
    let counter = asked.clone();
    let up = Upstream::start(move |seen| match seen.path() {
        "/html/" if counter.fetch_add(1, Ordering::SeqCst) == 0 => Answer::html(503, "busy"),
        "/lite/" => Answer::html(202, own_fixture("search/ddg_anomaly.html")),
        _ => happy(seen),
    });
    let server = start(&up, "ddg_html", &[]);
    let a = search(&server, "again").json();
    assert_eq!(statuses(&a), vec![pair("ddg_html", "failed"), pair("ddg_html", "ok")], "{a}");
    assert_eq!(a["sources"][0]["error"], "http_status");
    let server = start(&up, "ddg_lite", &[]);
    let r = search(&server, "walled");
    assert_eq!((r.status, r.error_code().as_str()), (502, "all_sources_failed"), "{}", r.text());
    assert_eq!(up.count("/lite/"), 1, "a wall is not asked again in the same search");
}
