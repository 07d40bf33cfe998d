//! x402 end to end: the real server, a loopback search source, and a loopback facilitator that checks signatures
//! itself and fails on command.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)]

mod common;

use std::time::Duration;

use common::pay::{paid_env, Facilitator, Mode, Payer, PAY_TO};
use common::upstream::{Answer, Upstream};
use common::{own_fixture, Reply, Server};
use serde_json::{json, Value};
use websearchd::codec::base64_decode;

struct World {
    source: Upstream,
    facilitator: Facilitator,
    server: Server,
}

fn source() -> Upstream {
    Upstream::start(|seen| match seen.path() {
        "/html/" => match seen.param("q").as_deref() {
            Some("fails") => Answer::html(500, "down"),
            Some("slow") => Answer::Delay(
                Duration::from_millis(1_500),
                Box::new(Answer::html(200, own_fixture("search/ddg_html_results.html"))),
            ),
            _ => Answer::html(200, own_fixture("search/ddg_html_results.html")),
        },
        _ => Answer::html(404, ""),
    })
}

fn env(source: &Upstream, facilitator: &Facilitator) -> Vec<(String, String)> {
    let mut vars = paid_env(source.url("/html/"), facilitator.url());
    vars.push(("WEBSEARCHD_FACILITATOR_TIMEOUT_MS".into(), "2000".into()));
    vars
}

/// Sends a paid search on a thread of its own; its answer does not matter (the server is killed under it).
fn pay_in_background(server: &Server, header: &str, query: &str) -> std::thread::JoinHandle<()> {
    let (addr, header, body) = (server.addr, header.to_owned(), format!(r#"{{"query":"{query}"}}"#));
    std::thread::spawn(move || {
        let _ = std::panic::catch_unwind(|| {
            let headers = [("Content-Type", "application/json"), ("PAYMENT-SIGNATURE", header.as_str())];
            common::request(addr, "POST", "/service", &headers, body.as_bytes())
        });
    })
}

fn world(extra: &[(&str, &str)]) -> World {
    let source = source();
    let facilitator = Facilitator::start();
    let mut vars = env(&source, &facilitator);
    vars.extend(extra.iter().map(|(k, v)| (k.to_string(), v.to_string())));
    let pairs = common::pairs(&vars);
    let server = Server::start(&pairs);
    World { source, facilitator, server }
}

fn search(server: &Server, query: &str, headers: &[(&str, &str)]) -> Reply {
    let mut h = vec![("Content-Type", "application/json")];
    h.extend_from_slice(headers);
    server.request("POST", "/service", &h, format!(r#"{{"query":"{query}"}}"#).as_bytes())
}

fn accepted(server: &Server) -> Value {
    let challenge = search(server, "terms", &[]);
    assert_eq!(challenge.status, 402);
    challenge.json()["accepts"][0].clone()
}

fn pay(w: &World, query: &str, payer: &Payer) -> Reply {
    let header = payer.v2_header(&accepted(&w.server));
    search(&w.server, query, &[("PAYMENT-SIGNATURE", &header)])
}

fn decode_header(value: &str) -> Value {
    serde_json::from_slice(&base64_decode(value).expect("base64")).expect("JSON")
}

#[test]
fn the_challenge() {
    let w = world(&[]);
    let r = search(&w.server, "q", &[]);
    assert_eq!(r.status, 402);
    let body = r.json();
    assert_eq!(body["x402Version"], 2);
    assert_eq!(body["resource"]["url"], "https://search.example/service");
    assert_eq!(body["resource"]["mimeType"], "application/json");
    let req = &body["accepts"][0];
    assert_eq!(req["scheme"], "exact");
    assert_eq!(req["network"], "eip155:8453");
    assert_eq!(req["amount"], "5000");
    assert_eq!(req["asset"], "0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913");
    assert_eq!(req["payTo"], PAY_TO);
    assert_eq!(req["extra"]["name"], "USD Coin");
    // The header carries the challenge (where x402 v2 clients read it, and copy the bazaar extension from); the body
    // is the same object without the extension, which would only be sent twice, and with words for people added.
    let header = decode_header(r.header("payment-required").unwrap());
    for (k, v) in header.as_object().unwrap() {
        if k != "extensions" {
            assert_eq!(&body[k], v, "{k}");
        }
    }
    assert_eq!(body.get("extensions"), None);
    assert_eq!(header["accepts"], body["accepts"]);
    assert_eq!(header["extensions"]["bazaar"]["info"]["input"]["method"], "POST");
    assert_eq!(header["extensions"]["bazaar"]["schema"]["$schema"], "https://json-schema.org/draft/2020-12/schema");
    assert_eq!(header["extensions"]["bazaar"]["info"]["input"]["body"]["query"], "rust async runtime");
    assert_eq!(r.header("access-control-allow-origin"), Some("*"));
    assert!(r.header("access-control-expose-headers").unwrap().contains("PAYMENT-REQUIRED"));
    assert_eq!(w.source.count("/html/"), 0, "no work before payment");
    // Validation comes before payment.
    let bad = w.server.post_json("/service", r#"{"query":""}"#);
    assert_eq!((bad.status, bad.error_code().as_str()), (400, "query_empty"));
    let health = w.server.get("/health").json();
    assert_eq!(health["mode"], "paid");
}

/// Bytes of a response's head as sent: the status line, every header line, the blank line.
fn head_bytes(r: &Reply) -> usize {
    let status = format!("HTTP/1.1 {} Payment Required\r\n", r.status).len();
    status + r.headers.iter().map(|(k, v)| k.len() + 2 + v.len() + 2).sum::<usize>() + 2
}

/// Issue 16: a 402's headers were 3.9 KB (PAYMENT-REQUIRED alone 3.4 KB), just under nginx's default 4 KB
/// `proxy_buffer_size`. Every 402, refusals and the notary's included, with trials announced, stays under half of
/// it.
#[test]
fn a_402s_headers_fit_well_inside_a_proxy_buffer() {
    const HEAD_BYTES_MAX: usize = 2_048;
    let w = world(&[("WEBSEARCHD_TRIAL_CALLS_PER_DAY", "2")]);
    for _ in 0..2 {
        assert_eq!(search(&w.server, "trial", &[]).status, 200);
    }
    let challenge = search(&w.server, "q", &[]);
    w.facilitator.set(Mode::VerifyInvalid);
    let rejected = pay(&w, "q", &Payer::new(90));
    let expired = pay_with(&w.server, &accepted(&w.server), &Payer { valid_before: 1_000, ..Payer::new(91) });
    let notary = w.server.request(
        "POST",
        "/notary/service",
        &[("Content-Type", "application/json")],
        br#"{"op":"notarize","hash":"9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"}"#,
    );
    for (what, r) in [("challenge", &challenge), ("rejected", &rejected), ("expired", &expired), ("notary", &notary)] {
        assert_eq!(r.status, 402, "{what}: {}", r.text());
        assert!(r.header("payment-required").is_some(), "{what}");
        let bytes = head_bytes(r);
        eprintln!("{what}: {bytes} header bytes");
        assert!(bytes < HEAD_BYTES_MAX, "{what}: {bytes} bytes of headers: {:?}", r.headers);
    }
}

#[test]
fn preflight() {
    let w = world(&[]);
    let r = w.server.request("OPTIONS", "/service", &[("Origin", "https://app.example")], b"");
    assert_eq!(r.status, 204);
    assert_eq!(r.header("access-control-allow-methods"), Some("POST, OPTIONS"));
    assert!(r.header("access-control-allow-headers").unwrap().contains("PAYMENT-SIGNATURE"));
    assert_eq!(r.header("access-control-allow-origin"), Some("*"));
}

#[test]
fn a_paid_search_end_to_end_v2_and_v1() {
    let w = world(&[]);
    let r = pay(&w, "rust", &Payer::new(1));
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(r.json()["results"][0]["url"], "https://www.rust-lang.org/");
    let settlement = decode_header(r.header("payment-response").expect("PAYMENT-RESPONSE"));
    assert_eq!(settlement["success"], true);
    assert_eq!(settlement["transaction"], "0xfeedbeef");
    let paths: Vec<String> = w.facilitator.upstream.seen().iter().map(|s| s.path().to_string()).collect();
    assert_eq!(paths, vec!["/verify", "/settle"]);

    let r = search(&w.server, "rust v1", &[("X-PAYMENT", &Payer::new(2).v1_header())]);
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(decode_header(r.header("x-payment-response").expect("X-PAYMENT-RESPONSE"))["success"], true);

    // The ledger has both: verified, settling (on disk before the facilitator is asked), settled.
    let out = std::process::Command::new(common::binary())
        .env_clear()
        .env("WEBSEARCHD_STATE_DIR", w.server.state_dir.path().join("data"))
        .arg("payments")
        .output()
        .unwrap();
    let lines: Vec<Value> =
        String::from_utf8_lossy(&out.stdout).lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    let events: Vec<&str> = lines.iter().map(|l| l["event"].as_str().unwrap()).collect();
    assert_eq!(events, vec!["verified", "settling", "settled", "verified", "settling", "settled"]);
    assert_eq!(lines[2]["tx"], "0xfeedbeef");
    // Times in RFC 3339 UTC, not epoch numbers (issue 16).
    for line in &lines {
        for (field, ms) in [("at", true), ("valid_before", false)] {
            let text = line[field].as_str().unwrap_or_else(|| panic!("{field} is not a string: {line}"));
            let parsed = websearchd::clock::parse_rfc3339_ms(text).unwrap_or_else(|| panic!("{field}: {text}"));
            assert!(text.ends_with('Z') && text.contains('.') == ms, "{field}: {text}");
            assert!(parsed > 1_600_000_000_000, "{field}: {text}");
        }
    }
    assert!(String::from_utf8_lossy(&out.stderr).contains("settled 10000 atomic USDC"));
}

#[test]
fn local_checks_refuse_before_the_facilitator() {
    let w = world(&[]);
    let accepted = accepted(&w.server);
    let cases = [
        (Payer { to: "0x1111111111111111111111111111111111111111".into(), ..Payer::new(3) }, "payment_pay_to_mismatch"),
        (Payer { value: 1, ..Payer::new(4) }, "payment_amount_mismatch"),
        (Payer { valid_before: 1_000, ..Payer::new(5) }, "payment_expired"),
    ];
    for (payer, code) in cases {
        let r = search(&w.server, "q", &[("PAYMENT-SIGNATURE", &payer.v2_header(&accepted))]);
        assert_eq!((r.status, r.json()["error"].as_str().unwrap()), (402, code));
        assert!(r.json()["accepts"].is_array(), "a refusal carries the terms again");
    }
    let r = search(&w.server, "q", &[("PAYMENT-SIGNATURE", "%%%")]);
    assert_eq!(r.json()["error"], "payment_malformed");
    assert!(w.facilitator.upstream.seen().is_empty());
    assert_eq!(w.source.count("/html/"), 0);
}

#[test]
fn facilitator_refusals_and_outages() {
    let w = world(&[]);
    w.facilitator.set(Mode::VerifyInvalid);
    let r = pay(&w, "q", &Payer::new(6));
    assert_eq!((r.status, r.json()["error"].as_str().unwrap()), (402, "payment_rejected"));
    assert!(r.json()["message"].as_str().unwrap().contains("insufficient_funds"));

    w.facilitator.set(Mode::Verify4xx);
    let r = pay(&w, "q", &Payer::new(16));
    assert_eq!((r.status, r.json()["error"].as_str().unwrap()), (402, "payment_rejected"));
    assert_eq!(r.header("x-payment-rejected-reason"), Some("invalid_exact_evm_payload_authorization_valid_before"));

    w.facilitator.set(Mode::Verify5xx);
    let r = pay(&w, "q", &Payer::new(7));
    assert_eq!((r.status, r.error_code().as_str()), (503, "facilitator_unavailable"));

    w.facilitator.set(Mode::VerifyHang);
    let started = std::time::Instant::now();
    let r = pay(&w, "q", &Payer::new(8));
    assert_eq!((r.status, r.error_code().as_str()), (503, "facilitator_unavailable"));
    assert!(started.elapsed() < Duration::from_secs(4));
    assert_eq!(w.source.count("/html/"), 0, "no work without a verified payment");

    // An authorization refused before the work can be used again once the facilitator is back.
    w.facilitator.set(Mode::Honest);
    assert_eq!(pay(&w, "q", &Payer::new(8)).status, 200);
}

#[test]
fn an_unreachable_facilitator_takes_nothing() {
    let source = source();
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", closed.local_addr().unwrap());
    drop(closed);
    let facilitator = Facilitator::start();
    let mut vars = env(&source, &facilitator);
    vars.retain(|(k, _)| k != "WEBSEARCHD_FACILITATOR_URL");
    vars.push(("WEBSEARCHD_FACILITATOR_URL".into(), url));
    let pairs = common::pairs(&vars);
    let server = Server::start(&pairs);
    let accepted = accepted(&server);
    let r = search(&server, "q", &[("PAYMENT-SIGNATURE", &Payer::new(9).v2_header(&accepted))]);
    assert_eq!((r.status, r.error_code().as_str()), (503, "facilitator_unavailable"));
    assert_eq!(r.header("retry-after"), Some("5"));
    assert_eq!(source.count("/html/"), 0);
}

#[test]
fn settlement_failures_withhold_the_result() {
    let w = world(&[]);
    w.facilitator.set(Mode::SettleFalse);
    let payer = Payer::new(10);
    let r = pay(&w, "q", &payer);
    assert_eq!((r.status, r.json()["error"].as_str().unwrap()), (402, "settlement_failed"));
    assert!(r.json().get("results").is_none(), "the result is withheld");
    // x402 v2 sends the failed settlement's response with the 402, in the header a settled one goes in.
    let settlement = decode_header(r.header("payment-response").expect("PAYMENT-RESPONSE on a failed settlement"));
    assert_eq!((&settlement["success"], &settlement["errorReason"]), (&json!(false), &json!("insufficient_funds")));
    assert_eq!(settlement["network"], accepted(&w.server)["network"]);
    assert!(settlement["payer"].as_str().unwrap().eq_ignore_ascii_case(&payer.from()), "{settlement}");

    w.facilitator.set(Mode::Settle5xx);
    let payer = Payer::new(11);
    let r = pay(&w, "q", &payer);
    assert_eq!((r.status, r.error_code().as_str()), (502, "settlement_unknown"));
    assert!(!r.text().contains("rust-lang.org"));
    // Never settled twice: the same authorization is refused from now on.
    w.facilitator.set(Mode::Honest);
    let r = pay(&w, "q", &payer);
    assert_eq!((r.status, r.json()["error"].as_str().unwrap()), (402, "payment_replayed"));
    assert_eq!(r.header("payment-response"), None, "nothing was settled");

    w.facilitator.set(Mode::SettleHang);
    let r = pay(&w, "q", &Payer::new(12));
    assert_eq!((r.status, r.error_code().as_str()), (502, "settlement_unknown"));

    w.facilitator.set(Mode::Settle4xx);
    let r = pay(&w, "q", &Payer::new(17));
    assert_eq!((r.status, r.json()["error"].as_str().unwrap()), (402, "settlement_failed"));
    assert!(r.json()["message"].as_str().unwrap().contains("invalid_payload"));

    let settles = w.facilitator.upstream.count("/settle");
    assert_eq!(settles, 4, "one settle call per payment");
}

#[test]
fn a_failed_search_is_not_settled() {
    let w = world(&[]);
    let payer = Payer::new(13);
    let r = pay(&w, "fails", &payer);
    assert_eq!((r.status, r.error_code().as_str()), (502, "all_sources_failed"));
    assert_eq!(w.facilitator.upstream.count("/settle"), 0);
    // The authorization was not spent: it pays for the next search.
    let r = pay(&w, "works", &payer);
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(w.facilitator.upstream.count("/settle"), 1);
}

#[test]
fn two_concurrent_requests_with_one_authorization() {
    let w = world(&[]);
    w.facilitator.set(Mode::VerifySlow);
    let header = Payer::new(14).v2_header(&accepted(&w.server));
    let addr = w.server.addr;
    let threads: Vec<_> = (0..2)
        .map(|i| {
            let header = header.clone();
            std::thread::spawn(move || {
                let body = format!(r#"{{"query":"concurrent {i}"}}"#);
                common::request(
                    addr,
                    "POST",
                    "/service",
                    &[("Content-Type", "application/json"), ("PAYMENT-SIGNATURE", &header)],
                    body.as_bytes(),
                )
            })
        })
        .collect();
    let replies: Vec<Reply> = threads.into_iter().map(|t| t.join().unwrap()).collect();
    let statuses: Vec<u16> = replies.iter().map(|r| r.status).collect();
    assert_eq!(statuses.iter().filter(|s| **s == 200).count(), 1, "{statuses:?}");
    let refused = replies.iter().find(|r| r.status == 402).expect("one refused");
    assert_eq!(refused.json()["error"], "payment_replayed");
    assert_eq!(w.facilitator.upstream.count("/settle"), 1);
}

#[test]
fn a_restart_between_verify_and_reuse() {
    let w = world(&[]);
    let payer = Payer::new(15);
    let header = payer.v2_header(&accepted(&w.server));
    // The search is slow: the server is killed after verification, before settlement.
    let inflight = pay_in_background(&w.server, &header, "slow");
    w.source.wait_for("/html/", 1);
    let state = w.server.kill_keep_state();
    let _ = inflight.join();

    let vars = env(&w.source, &w.facilitator);
    let pairs = common::pairs(&vars);
    let server = Server::start_in(state, &pairs, |c| c);
    let r = search(&server, "again", &[("PAYMENT-SIGNATURE", &header)]);
    assert_eq!((r.status, r.json()["error"].as_str().unwrap()), (402, "payment_replayed"));
    assert_eq!(w.facilitator.upstream.count("/settle"), 0);
}

#[test]
fn trial_calls_and_loopback() {
    let w = world(&[("WEBSEARCHD_TRIAL_CALLS_PER_DAY", "1")]);
    assert_eq!(search(&w.server, "free one", &[]).status, 200);
    let r = search(&w.server, "free two", &[]);
    assert_eq!(r.status, 402);
    assert_eq!(r.json()["trial"]["calls_per_day"], 1);

    let w = world(&[("WEBSEARCHD_FREE_LOOPBACK", "1")]);
    assert_eq!(search(&w.server, "local", &[]).status, 200);
    assert_eq!(search(&w.server, "local again", &[]).status, 200);
    assert!(w.facilitator.upstream.seen().is_empty());
}

#[test]
fn payments_off_refuses_a_public_address() {
    let out = std::process::Command::new(common::binary())
        .env_clear()
        .env("WEBSEARCHD_LISTEN", "0.0.0.0:0")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("WEBSEARCHD_PAY_TO") && err.contains("WEBSEARCHD_OPEN"), "{err}");
}

/// `websearchd payments` on a state directory: the records (stdout) and the summary (stderr).
fn payments_listing(state_dir: &std::path::Path) -> (Vec<Value>, String) {
    let out = std::process::Command::new(common::binary())
        .env_clear()
        .env("WEBSEARCHD_STATE_DIR", state_dir.join("data"))
        .arg("payments")
        .output()
        .unwrap();
    assert!(out.status.success());
    let records = String::from_utf8_lossy(&out.stdout).lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    (records, String::from_utf8_lossy(&out.stderr).into_owned())
}

fn events(records: &[Value]) -> Vec<&str> {
    records.iter().map(|r| r["event"].as_str().unwrap()).collect()
}

/// Issue 13, finding 6: a settlement answer that cannot be read was taken for a refusal (`failed`), the authorization
/// released, and the same payment verified and settled again. Only a well-formed refusal is a failure.
#[test]
fn an_unreadable_settlement_answer_is_unknown_and_never_settled_again() {
    use std::sync::{Arc, Mutex};
    let source = source();
    let settle = Arc::new(Mutex::new(Answer::json(200, "{}")));
    let facilitator = common::pay::facilitator_answering_settle(settle.clone());
    let vars = paid_env(source.url("/html/"), facilitator.url(""));
    let server = Server::start(&common::pairs(&vars));
    let accepted = accepted(&server);
    let unreadable = [
        Answer::html(200, "<html><body>OK</body></html>"),
        Answer::json(200, r#"{"success":"true","transaction":"0xfeedbeef","network":"eip155:8453"}"#),
        Answer::json(400, r#"{"error":"bad request"}"#),
        Answer::json(200, r#"{"success":false,"transaction":""}"#),
    ];
    for (i, answer) in unreadable.iter().enumerate() {
        *settle.lock().unwrap() = answer.clone();
        let header = Payer::new(40 + i as u8).v2_header(&accepted);
        let r = search(&server, "rust", &[("PAYMENT-SIGNATURE", &header)]);
        assert_eq!((r.status, r.error_code().as_str()), (502, "settlement_unknown"), "{answer:?}: {}", r.text());
        assert!(!r.text().contains("rust-lang.org"), "the result is withheld");
        // The authorization stays held: the same header is refused before the facilitator is asked again.
        *settle.lock().unwrap() = Answer::json(200, r#"{"success":true,"transaction":"0x2","network":"eip155:8453"}"#);
        let again = search(&server, "rust", &[("PAYMENT-SIGNATURE", &header)]);
        assert_eq!((again.status, again.json()["error"].as_str()), (402, Some("payment_replayed")), "{answer:?}");
        assert_eq!(facilitator.count("/settle"), i + 1, "{answer:?}: settled once only");
        assert_eq!(facilitator.count("/verify"), i + 1, "{answer:?}: verified once only");
    }
    // A well-formed refusal is still a failure, and frees the authorization.
    *settle.lock().unwrap() = Answer::json(400, r#"{"success":false,"errorReason":"invalid_payload"}"#);
    let r = pay_with(&server, &accepted, &Payer::new(50));
    assert_eq!((r.status, r.json()["error"].as_str()), (402, Some("settlement_failed")));
    let (records, _) = payments_listing(server.state_dir.path());
    let outcomes: Vec<&str> = events(&records).into_iter().filter(|e| !matches!(*e, "verified" | "settling")).collect();
    assert_eq!(outcomes, vec!["unknown", "unknown", "unknown", "unknown", "failed"]);
}

fn pay_with(server: &Server, accepted: &Value, payer: &Payer) -> Reply {
    search(server, "rust", &[("PAYMENT-SIGNATURE", &payer.v2_header(accepted))])
}

/// Issue 13, finding 7: nothing was recorded before `/settle`, so a kill -9 while the facilitator settled left
/// `verified` only and `websearchd payments` under-reported. Now `settling` is on disk first, and a start records
/// what it cannot resolve as `unknown` (held, counted, logged).
#[test]
fn kill_9_during_settlement_is_reported_and_the_payment_stays_held() {
    let w = world(&[("WEBSEARCHD_FACILITATOR_TIMEOUT_MS", "30000")]);
    w.facilitator.set(Mode::SettleHang);
    let payer = Payer::new(60);
    let header = payer.v2_header(&accepted(&w.server));
    let inflight = pay_in_background(&w.server, &header, "rust");
    w.facilitator.upstream.wait_for("/settle", 1);
    let state = w.server.kill_keep_state();
    let _ = inflight.join();

    let (records, summary) = payments_listing(state.path());
    assert_eq!(events(&records), vec!["verified", "settling"], "{summary}");
    assert!(summary.contains("1 payments by their last record: settling 1"), "{summary}");
    assert!(summary.contains(&format!("settling: payer {}", records[1]["payer"].as_str().unwrap())), "{summary}");

    w.facilitator.set(Mode::Honest);
    let vars = env(&w.source, &w.facilitator);
    let pairs = common::pairs(&vars);
    let server = Server::start_in(state, &pairs, |c| c);
    let log = server.log_text();
    assert!(log.contains("1 settlement(s) were in progress when the server stopped"), "{log}");
    let (records, summary) = payments_listing(server.state_dir.path());
    assert_eq!(events(&records), vec!["verified", "settling", "unknown"]);
    assert_eq!(records[2]["request_id"], records[1]["request_id"]);
    assert!(summary.contains("payments by their last record: unknown 1"), "{summary}");
    // Counted as unknown in the ledger summary of /core/state.
    let key = std::process::Command::new(common::binary())
        .env_clear()
        .env("WEBSEARCHD_STATE_DIR", server.state_dir.path().join("data"))
        .args(["apikey", "new"])
        .output()
        .unwrap();
    let key = String::from_utf8(key.stdout).unwrap().trim().to_owned();
    let state = server.request("GET", "/core/state", &[("X-WALLET", &key)], b"").json();
    assert_eq!(state["payments"]["ledger"]["unknown"], 1, "{state}");
    assert_eq!(state["payments"]["ledger"]["settling"], 1, "{state}");
    // The same payment is refused as a replay; the facilitator is not asked again.
    let r = search(&server, "again", &[("PAYMENT-SIGNATURE", &header)]);
    assert_eq!((r.status, r.json()["error"].as_str()), (402, Some("payment_replayed")));
    assert_eq!(w.facilitator.upstream.count("/settle"), 1);
    // A second start has nothing left to reconcile.
    let state = server.kill_keep_state();
    let server = Server::start_in(state, &pairs, |c| c);
    assert!(!server.log_text().contains("settlement(s) were in progress"));
    assert_eq!(events(&payments_listing(server.state_dir.path()).0).len(), 3);
}

/// Issue 18: a paid call waits for one disk sync, the `settling`'s; `verified` and `settled` are only written, and are
/// read back after the process is killed (the page cache keeps them; a power loss could lose them, see
/// `x402::ledger`).
#[test]
fn a_paid_call_waits_for_one_ledger_sync_and_its_unsynced_records_outlive_a_kill() {
    let w = world(&[]);
    let waits = |server: &Server| {
        let text = server.get("/metrics").text();
        let line =
            text.lines().find_map(|l| l.strip_prefix("websearchd_ledger_sync_seconds_count ")).map(str::to_owned);
        line.expect("websearchd_ledger_sync_seconds_count").parse::<u64>().unwrap()
    };
    assert_eq!(waits(&w.server), 0);
    assert_eq!(pay(&w, "one sync", &Payer::new(70)).status, 200);
    assert_eq!(waits(&w.server), 1, "only the `settling` waits for the disk");
    // The settled authorization is held by the replay guard until its validBefore (a gauge, issue 18).
    assert_eq!(w.server.metric("websearchd_replay_guard_held"), 1);
    assert_eq!(w.server.metric("websearchd_replay_guard_capacity"), 28_672);
    let state = w.server.kill_keep_state();
    let (records, summary) = payments_listing(state.path());
    assert_eq!(events(&records), vec!["verified", "settling", "settled"], "{summary}");
    let seqs: Vec<u64> = records.iter().map(|r| r["seq"].as_u64().unwrap()).collect();
    assert_eq!(seqs, [1, 2, 3]);
    let vars = env(&w.source, &w.facilitator);
    let server = Server::start_in(state, &common::pairs(&vars), |c| c);
    assert!(!server.log_text().contains("settlement(s) were in progress"));
    assert_eq!(events(&payments_listing(server.state_dir.path()).0).len(), 3);
}

/// Every metric family docs/operations.md documents under `GET /metrics` is exported after a paid call, and every
/// exported family is documented (the payment families were documented and never exported).
#[test]
fn metrics_are_exported_as_documented() {
    let w = world(&[]);
    assert_eq!(pay(&w, "metrics", &Payer::new(7)).status, 200);
    let page = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/docs/operations.md")).unwrap();
    let section = page.split("\n## Metrics: `GET /metrics`\n").nth(1).unwrap().split("\n#").next().unwrap();
    let documented: std::collections::BTreeSet<String> = section
        .split('`')
        .skip(1)
        .step_by(2)
        .filter(|s| s.starts_with("websearchd_"))
        // The shared store's families are exported only with WEBSEARCHD_REDIS_URL (tests/redis.rs reads them).
        .filter(|s| !s.starts_with("websearchd_store_"))
        .map(|s| s.split('{').next().unwrap().to_owned())
        .collect();
    let text = w.server.get("/metrics").text();
    let exported: std::collections::BTreeSet<String> = text
        .lines()
        .filter_map(|l| l.strip_prefix("# TYPE "))
        .filter_map(|l| l.split_whitespace().next())
        .map(str::to_owned)
        .collect();
    let missing: Vec<_> = documented.difference(&exported).collect();
    let undocumented: Vec<_> = exported.difference(&documented).collect();
    assert!(missing.is_empty(), "documented, not exported: {missing:?}");
    assert!(undocumented.is_empty(), "exported, not documented: {undocumented:?}");
}
