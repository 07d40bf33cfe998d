//! The notary end to end (the real server, the loopback facilitator): the paid flow and a trial, every bad input,
//! receipts and their chain verified, restarts, a torn journal tail, and a SIGKILL while clients notarise. Then the
//! key-protected core endpoints.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)]

mod common;

use std::sync::{Arc, Mutex};

use common::pay::{Facilitator, Payer, PAY_TO};
use common::{Reply, Server};
use serde_json::{json, Value};
use websearchd::codec::base64_decode;
use websearchd::notary::{check_links, verify_record, GENESIS};
use websearchd::sign::keys_from_jwks;

fn hash(n: u32) -> String {
    websearchd::sign::sha256_hex(format!("document {n}").as_bytes())
}

fn notarize(server: &Server, hash: &str, headers: &[(&str, &str)]) -> Reply {
    let mut h = vec![("Content-Type", "application/json")];
    h.extend_from_slice(headers);
    server.request("POST", "/notary/service", &h, json!({"op": "notarize", "hash": hash}).to_string().as_bytes())
}

fn paid_env(facilitator: &Facilitator) -> Vec<(String, String)> {
    vec![
        ("WEBSEARCHD_PAY_TO".into(), PAY_TO.into()),
        ("WEBSEARCHD_PUBLIC_URL".into(), "https://search.example".into()),
        ("WEBSEARCHD_FACILITATOR_URL".into(), facilitator.url()),
        ("WEBSEARCHD_NOTARY_PRICE_ATOMIC".into(), "7000".into()),
    ]
}

fn start(vars: &[(String, String)]) -> Server {
    let pairs: Vec<(&str, &str)> = vars.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
    Server::start(&pairs)
}

fn jwks(server: &Server) -> Vec<websearchd::sign::PublicKey> {
    keys_from_jwks(&server.get("/.well-known/jwks.json").json())
}

#[test]
fn paid_notarisation_end_to_end() {
    let facilitator = Facilitator::start();
    let server = start(&paid_env(&facilitator));
    // A GET and an unpaid POST get the challenge, at the notary's own price and resource.
    for r in [server.get("/notary/service"), notarize(&server, &hash(1), &[])] {
        assert_eq!(r.status, 402, "{}", r.text());
        let body = r.json();
        assert_eq!(body["x402Version"], 2);
        assert_eq!(body["resource"]["url"], "https://search.example/notary/service");
        assert_eq!(body["accepts"][0]["amount"], "7000");
        assert_eq!(body["accepts"][0]["payTo"], PAY_TO);
        let header = r.header("payment-required").expect("PAYMENT-REQUIRED");
        let header: Value = serde_json::from_slice(&base64_decode(header).expect("base64")).expect("JSON");
        assert_eq!(header["extensions"]["bazaar"]["info"]["input"]["body"]["op"], "notarize");
    }
    // Search keeps its own price.
    let search = server.post_json("/service", r#"{"query":"x"}"#);
    assert_eq!(search.json()["accepts"][0]["amount"], "5000");
    assert!(facilitator.upstream.seen().is_empty(), "no facilitator call before a payment");

    let accepted = notarize(&server, &hash(1), &[]).json()["accepts"][0].clone();
    // The search price is not enough for a notarisation.
    let cheap = Payer::new(1);
    let r = notarize(&server, &hash(1), &[("PAYMENT-SIGNATURE", &cheap.v2_header(&accepted))]);
    assert_eq!(r.status, 402);
    let mut payer = Payer::new(2);
    payer.value = 7_000;
    let r = notarize(&server, &hash(1), &[("PAYMENT-SIGNATURE", &payer.v2_header(&accepted))]);
    assert_eq!(r.status, 200, "{}", r.text());
    let settlement: Value =
        serde_json::from_slice(&base64_decode(r.header("payment-response").unwrap()).unwrap()).unwrap();
    assert_eq!(settlement["success"], true);
    let record = r.json();
    let receipt = &record["receipt"];
    assert_eq!(receipt["type"], "notary-receipt");
    assert_eq!(receipt["v"], 1);
    assert_eq!(receipt["issuer"], "https://search.example/notary");
    assert_eq!(receipt["alg"], "Ed25519");
    assert_eq!(receipt["hash_alg"], "sha256");
    assert_eq!(receipt["hash"], hash(1));
    assert_eq!(receipt["seq"], 1);
    assert_eq!(receipt["prev"], GENESIS);
    assert!(receipt["ts"].as_str().unwrap().ends_with('Z') && receipt["ts"].as_str().unwrap().contains('.'));
    let keys = jwks(&server);
    assert_eq!(verify_record(&record, &keys), Ok(1));
    // The response is signed like every answer, and the body's kid is the signing key.
    let verified = websearchd::sign::verify_answer(&r.body, |n| r.header(n).map(str::to_owned), &keys).unwrap();
    assert_eq!(verified.kid, receipt["kid"].as_str().unwrap());
    // A tampered receipt fails.
    let mut forged = record.clone();
    forged["receipt"]["hash"] = Value::from(hash(2));
    assert!(verify_record(&forged, &keys).is_err());
    // The same authorization cannot pay twice.
    let again = notarize(&server, &hash(3), &[("PAYMENT-SIGNATURE", &payer.v2_header(&accepted))]);
    assert_eq!(again.status, 402);
    assert_eq!(again.json()["error"], "payment_replayed");
    // Stored and public.
    let stored = server.get("/notary/receipts/1");
    assert_eq!(stored.status, 200);
    assert_eq!(stored.json(), record);
    assert_eq!(
        stored.headers_named("cache-control"),
        ["public, max-age=31536000, immutable"],
        "a receipt never changes"
    );
}

#[test]
fn bad_requests_are_refused_before_payment() {
    let facilitator = Facilitator::start();
    let server = start(&paid_env(&facilitator));
    let h = "a".repeat(64);
    let cases: Vec<(String, &str)> = vec![
        ("{".into(), "invalid_json"),
        ("[]".into(), "invalid_request"),
        (json!({"hash": h}).to_string(), "op_missing"),
        (json!({"op": "timestamp", "hash": h}).to_string(), "op_unknown"),
        (json!({"op": true, "hash": h}).to_string(), "op_invalid"),
        (json!({"op": "notarize"}).to_string(), "hash_missing"),
        (json!({"op": "notarize", "hash": h.to_uppercase()}).to_string(), "hash_invalid"),
        (json!({"op": "notarize", "hash": &h[..63]}).to_string(), "hash_invalid"),
        (json!({"op": "notarize", "hash": format!("{h}0")}).to_string(), "hash_invalid"),
        (json!({"op": "notarize", "hash": 12}).to_string(), "hash_invalid"),
        (json!({"op": "notarize", "hash": h, "note": "x"}).to_string(), "unknown_field"),
    ];
    for (body, code) in cases {
        let r = server.request("POST", "/notary/service", &[("Content-Type", "application/json")], body.as_bytes());
        assert_eq!((r.status, r.error_code().as_str()), (400, code), "{body}");
    }
    let r = server.request("POST", "/notary/service", &[("Content-Type", "text/plain")], b"x");
    assert_eq!(r.status, 415);
    let r = server.request("DELETE", "/notary/service", &[], b"");
    assert_eq!(r.status, 405);
    for (path, status, code) in [
        ("/notary/receipts/abc", 400, "seq_invalid"),
        ("/notary/receipts/0", 400, "seq_invalid"),
        ("/notary/receipts/01", 400, "seq_invalid"),
        ("/notary/receipts/1", 404, "receipt_not_found"),
        ("/notary/receipts/99999999999999999999999", 400, "seq_invalid"),
        ("/notary/other", 404, "not_found"),
    ] {
        let r = server.get(path);
        assert_eq!((r.status, r.error_code().as_str()), (status, code), "{path}");
    }
    assert!(facilitator.upstream.seen().is_empty());
}

#[test]
fn a_trial_chains_receipts_and_the_chain_verifies() {
    let facilitator = Facilitator::start();
    let mut vars = paid_env(&facilitator);
    vars.push(("WEBSEARCHD_TRIAL_CALLS_PER_DAY".into(), "4".into()));
    let server = start(&vars);
    let challenge = server.get("/notary/service").json();
    assert_eq!(challenge["trial"]["calls_per_day"], 4);
    let records: Vec<Value> = (1..=4)
        .map(|n| {
            let r = notarize(&server, &hash(n), &[]);
            assert_eq!(r.status, 200, "{}", r.text());
            r.json()
        })
        .collect();
    assert_eq!(notarize(&server, &hash(5), &[]).status, 402, "the trial is spent");
    let receipts: Vec<Value> = records.iter().map(|r| r["receipt"].clone()).collect();
    let head = check_links(&receipts).unwrap();
    assert_eq!(head, records[3]["receipt_sha256"].as_str().unwrap());
    let keys = jwks(&server);
    for (i, r) in records.iter().enumerate() {
        assert_eq!(verify_record(r, &keys), Ok(i as u64 + 1));
        assert_eq!(server.get(&format!("/notary/receipts/{}", i + 1)).json(), *r);
    }
    // Swapping two receipts breaks the chain where it happened.
    let mut swapped = receipts.clone();
    swapped.swap(1, 2);
    assert!(check_links(&swapped).is_err());
    // The verify command checks files of receipts against the published keys.
    let dir = server.state_dir.path();
    std::fs::write(dir.join("jwks.json"), server.get("/.well-known/jwks.json").text()).unwrap();
    std::fs::write(dir.join("receipts.json"), Value::Array(records.clone()).to_string()).unwrap();
    let verify = |file: &str| {
        std::process::Command::new(common::binary())
            .env_clear()
            .args(["verify", "--receipts"])
            .arg(dir.join(file))
            .arg("--jwks")
            .arg(dir.join("jwks.json"))
            .output()
            .unwrap()
    };
    let out = verify("receipts.json");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stdout));
    assert!(String::from_utf8_lossy(&out.stdout).contains("4 receipt(s), seq 1 to 4"));
    // The journal itself is accepted too.
    let journal = server.state_dir.path().join("data/notary.journal");
    std::fs::copy(&journal, dir.join("journal")).unwrap();
    assert!(verify("journal").status.success());
    // Receipts 1, 2 and 4: the gap is reported, the links present verify.
    let partial: Vec<Value> = [0, 1, 3].iter().map(|&i| records[i].clone()).collect();
    std::fs::write(dir.join("partial.json"), Value::Array(partial).to_string()).unwrap();
    let out = verify("partial.json");
    assert!(out.status.success());
    assert!(String::from_utf8_lossy(&out.stdout).contains("not given: 3..3"));
    // A changed hash or a broken link fails.
    let mut tampered = records.clone();
    tampered[2]["receipt"]["hash"] = Value::from(hash(9));
    std::fs::write(dir.join("tampered.json"), Value::Array(tampered).to_string()).unwrap();
    let out = verify("tampered.json");
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stdout).contains("receipt 3"));
}

fn free_server(state: Option<common::tempdir::TempDir>) -> Server {
    let env = [("WEBSEARCHD_SOURCES", "ddg_html")];
    match state {
        Some(dir) => Server::start_in(dir, &env, |c| c),
        None => Server::start(&env),
    }
}

#[test]
fn a_restart_continues_the_chain_and_a_torn_tail_is_cut() {
    let server = free_server(None);
    let first: Vec<Value> = (1..=3).map(|n| notarize(&server, &hash(n), &[]).json()).collect();
    assert_eq!(first[2]["receipt"]["seq"], 3);
    let state = server.kill_keep_state();
    let server = free_server(Some(state));
    let next = notarize(&server, &hash(4), &[]).json();
    assert_eq!(next["receipt"]["seq"], 4);
    assert_eq!(next["receipt"]["prev"], first[2]["receipt_sha256"]);
    // A power cut in the middle of a write: half a record at the end of the journal.
    let state = server.kill_keep_state();
    let journal = state.path().join("data/notary.journal");
    let mut bytes = std::fs::read(&journal).unwrap();
    let whole = bytes.len();
    bytes.extend_from_slice(b"1a2b3c4d {\"receipt\":{\"v\":1,\"type\":\"notary-rec");
    std::fs::write(&journal, &bytes).unwrap();
    let server = free_server(Some(state));
    assert!(server.log_text().contains("incomplete"), "{}", server.log_text());
    assert_eq!(std::fs::metadata(&journal).unwrap().len() as usize, whole, "the torn tail is cut");
    let after = notarize(&server, &hash(5), &[]).json();
    assert_eq!(after["receipt"]["seq"], 5);
    assert_eq!(after["receipt"]["prev"], next["receipt_sha256"]);
    let opened = websearchd::journal::Journal::read(&journal).unwrap();
    let receipts: Vec<Value> = opened.records.iter().map(|r| r["receipt"].clone()).collect();
    assert_eq!(receipts.len(), 5);
    check_links(&receipts).unwrap();
    // A journal damaged before its end stops the start, for an operator to look at.
    let state = server.kill_keep_state();
    let journal = state.path().join("data/notary.journal");
    let mut bytes = std::fs::read(&journal).unwrap();
    bytes[20] ^= 0x01;
    std::fs::write(&journal, &bytes).unwrap();
    let out = std::process::Command::new(common::binary())
        .env_clear()
        .env("WEBSEARCHD_LISTEN", "127.0.0.1:0")
        .env("WEBSEARCHD_STATE_DIR", state.path().join("data"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("notary journal"));
}

#[test]
fn sigkill_while_clients_notarise_loses_no_returned_receipt() {
    let server = free_server(None);
    let addr = server.addr;
    let received = Arc::new(Mutex::new(Vec::<Value>::new()));
    let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let clients: Vec<_> = (0..4u32)
        .map(|c| {
            let (received, stop) = (received.clone(), stop.clone());
            std::thread::spawn(move || {
                let mut n = 0;
                while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                    n += 1;
                    let body = json!({"op": "notarize", "hash": hash(c * 100_000 + n)}).to_string();
                    let Ok(r) = std::panic::catch_unwind(|| {
                        common::request(
                            addr,
                            "POST",
                            "/notary/service",
                            &[("Content-Type", "application/json")],
                            body.as_bytes(),
                        )
                    }) else {
                        break;
                    };
                    if r.status == 200 {
                        received.lock().unwrap().push(r.json());
                    }
                }
            })
        })
        .collect();
    // Let receipts accumulate, then kill -9 mid-stream.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while received.lock().unwrap().len() < 40 && std::time::Instant::now() < deadline {
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let state = server.kill_keep_state();
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    for c in clients {
        let _ = c.join();
    }
    let received = received.lock().unwrap().clone();
    assert!(received.len() >= 40, "only {} receipts before the kill", received.len());
    // Every receipt a client got is in the journal, and the journal is one chain.
    let journal = state.path().join("data/notary.journal");
    let opened = websearchd::journal::Journal::read(&journal).unwrap();
    let receipts: Vec<Value> = opened.records.iter().map(|r| r["receipt"].clone()).collect();
    check_links(&receipts).unwrap();
    for r in &received {
        let seq = r["receipt"]["seq"].as_u64().unwrap() as usize;
        assert_eq!(opened.records[seq - 1], *r, "receipt {seq}");
    }
    // And the chain continues after the restart.
    let server = free_server(Some(state));
    let next = notarize(&server, &hash(999_999), &[]).json();
    assert_eq!(next["receipt"]["seq"].as_u64().unwrap() as usize, receipts.len() + 1);
    let keys = jwks(&server);
    for r in opened.records.iter().chain([&next]) {
        verify_record(r, &keys).unwrap();
    }
}

#[test]
fn the_notary_on_its_own_listener() {
    let server = Server::start(&[("WEBSEARCHD_NOTARY_LISTEN", "127.0.0.1:0"), ("WEBSEARCHD_NOTARY_PATH", "/stamp")]);
    let log = server.log_text();
    let addr: std::net::SocketAddr = log
        .split("notary served on http://")
        .nth(1)
        .and_then(|s| s.split_whitespace().next())
        .expect("the notary listener's address")
        .parse()
        .unwrap();
    let body = json!({"op": "notarize", "hash": hash(1)}).to_string();
    let r = common::request(addr, "POST", "/stamp/service", &[("Content-Type", "application/json")], body.as_bytes());
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(common::request(addr, "GET", "/stamp/receipts/1", &[], b"").json(), r.json());
    assert_eq!(common::request(addr, "GET", "/health", &[], b"").status, 200);
    // Search is not served there; both are served on the main address.
    assert_eq!(common::request(addr, "POST", "/service", &[("Content-Type", "application/json")], b"{}").status, 404);
    assert_eq!(server.get("/stamp/receipts/1").status, 200);
    assert_eq!(server.get("/notary/receipts/1").status, 404);
}

// ---- core ----

#[test]
fn core_needs_a_key_and_reflects_traffic() {
    let facilitator = Facilitator::start();
    let source = common::upstream::Upstream::start(|_| {
        common::upstream::Answer::html(200, common::own_fixture("search/ddg_html_results.html"))
    });
    let mut vars = paid_env(&facilitator);
    vars.extend([
        ("WEBSEARCHD_SOURCES".to_string(), "ddg_html".to_string()),
        ("WEBSEARCHD_DDG_HTML_URL".to_string(), source.url("/html/")),
        ("WEBSEARCHD_SOURCE_INTERVAL_MS".to_string(), "0".to_string()),
    ]);
    let server = start(&vars);
    for (headers, code) in [
        (vec![], "api_key_required"),
        (vec![("X-WALLET", "wsk_not-a-key")], "api_key_invalid"),
        (vec![("X-WALLET", PAY_TO)], "api_key_invalid"),
    ] {
        for path in ["/core/state", "/core/meshgraph"] {
            let r = server.request("GET", path, &headers, b"");
            assert_eq!((r.status, r.error_code().as_str()), (403, code), "{path} {headers:?}");
        }
    }
    // `apikey new` adds a key to the running server's file: it works without a restart.
    let out = std::process::Command::new(common::binary())
        .env_clear()
        .env("WEBSEARCHD_STATE_DIR", server.state_dir.path().join("data"))
        .args(["apikey", "new", "--comment", "test"])
        .output()
        .unwrap();
    assert!(out.status.success());
    let key = String::from_utf8(out.stdout).unwrap().trim().to_owned();
    assert!(key.starts_with("wsk_"));
    assert!(!server.log_text().contains(&key[4..]), "keys are never logged");

    // Traffic: a paid search, a paid notarisation, a refused payment.
    let accepted = server.post_json("/service", r#"{"query":"rust"}"#).json()["accepts"][0].clone();
    let payer = Payer::new(7);
    let r = server.request(
        "POST",
        "/service",
        &[("Content-Type", "application/json"), ("PAYMENT-SIGNATURE", &payer.v2_header(&accepted))],
        br#"{"query":"rust"}"#,
    );
    assert_eq!(r.status, 200, "{}", r.text());
    let accepted = notarize(&server, &hash(1), &[]).json()["accepts"][0].clone();
    let mut notary_payer = Payer::new(8);
    notary_payer.value = 7_000;
    assert_eq!(notarize(&server, &hash(1), &[("PAYMENT-SIGNATURE", &notary_payer.v2_header(&accepted))]).status, 200);

    let state = server.request("GET", "/core/state", &[("X-WALLET", &key)], b"");
    assert_eq!(state.status, 200, "{}", state.text());
    assert_eq!(state.header("cache-control"), Some("no-store"));
    let s = state.json();
    assert_eq!(s["mode"], "paid");
    assert_eq!(s["version"], env!("CARGO_PKG_VERSION"));
    assert_eq!(s["search"]["sources"][0]["name"], "ddg_html");
    assert_eq!(s["search"]["sources"][0]["ok"], 1);
    assert_eq!(s["search"]["sources"][0]["breaker"], "closed");
    assert_eq!(s["payments"]["verified"], 2);
    assert_eq!(s["payments"]["settled"], 2);
    assert_eq!(s["payments"]["ledger"]["settled"], 2);
    assert_eq!(s["payments"]["ledger"]["settled_atomic"], "12000");
    assert_eq!(s["payments"]["facilitator"]["calls"], 4);
    assert_eq!(s["notary"]["receipts"], 1);
    assert_eq!(s["notary"]["head"].as_str().unwrap().len(), 64);
    assert!(s["server"]["workers"].as_u64().unwrap() >= 1);
    assert!(s["requests"]["core_state"]["403"].as_u64().unwrap() >= 3);
    assert!(s["search"]["cache"]["entries"].is_u64());

    let graph = server.request("GET", "/core/meshgraph", &[("X-WALLET", &format!("  {key} "))], b"").json();
    let nodes = graph["nodes"].as_array().unwrap();
    let edges = graph["edges"].as_array().unwrap();
    let agent = format!("agent:{}", payer.from().to_lowercase());
    assert!(nodes.iter().any(|n| n["id"] == agent && n["kind"] == "agent" && n["address_verified"] == true));
    assert!(nodes.iter().any(|n| n["id"] == "service:search" && n["kind"] == "service"));
    assert!(nodes.iter().any(|n| n["id"] == "service:notary"));
    assert!(nodes.iter().any(|n| n["kind"] == "source"));
    assert!(nodes.iter().any(|n| n["kind"] == "facilitator"));
    let to_notary = edges.iter().find(|e| e["from"] == agent && e["to"] == "service:notary").expect("agent edge");
    assert_eq!(to_notary["count"], 1);
    let to_search = edges.iter().find(|e| e["from"] == agent && e["to"] == "service:search").unwrap();
    assert_eq!((to_search["count"].as_u64(), to_search["failures"].as_u64()), (Some(1), Some(0)));
    let searches = edges.iter().find(|e| e["kind"] == "searches").unwrap();
    assert_eq!(searches["count"], 1);
    assert!(searches["last_at"].is_string());
    for e in edges {
        for field in ["from", "to", "kind", "count", "failures"] {
            assert!(!e[field].is_null(), "{e}");
        }
    }
}

/// Runs the server on a state directory and expects it to refuse to start: its exit code and stderr (bounded wait, so
/// that a server that does start fails the test instead of hanging it).
fn refused_start(state: &std::path::Path) -> (Option<i32>, String) {
    use std::io::Read;
    let mut child = std::process::Command::new(common::binary())
        .env_clear()
        .env("WEBSEARCHD_LISTEN", "127.0.0.1:0")
        .env("WEBSEARCHD_STATE_DIR", state.join("data"))
        .env("WEBSEARCHD_MAP_LAYERS", "none")
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        if std::time::Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("the server started on a damaged journal");
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    };
    let mut err = String::new();
    child.stderr.take().unwrap().read_to_string(&mut err).unwrap();
    (status.code(), err)
}

fn journal_command(args: &[&str]) -> (Option<i32>, String) {
    let out = std::process::Command::new(common::binary()).env_clear().arg("journal").args(args).output().unwrap();
    (out.status.code(), format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr)))
}

/// Issue 13, finding 8: a complete last record with a bad checksum was taken for a torn write and cut, and the next
/// notarisation reused its seq and prev: the chain forked. Now the start refuses, names the file, line and offset,
/// and the documented repair keeps a backup and never lets that seq be issued again.
#[test]
fn a_damaged_complete_receipt_stops_the_start_and_its_seq_is_never_reused() {
    let server = free_server(None);
    let delivered: Vec<Value> = (1..=3).map(|n| notarize(&server, &hash(n), &[]).json()).collect();
    let state = server.kill_keep_state();
    let journal = state.path().join("data/notary.journal");
    let mut bytes = std::fs::read(&journal).unwrap();
    let last = bytes[..bytes.len() - 1].iter().rposition(|&b| b == b'\n').unwrap() + 1;
    // One flipped byte inside receipt 3, which a client holds; its newline is intact.
    let hash_at = last + String::from_utf8_lossy(&bytes[last..]).find(&hash(3)).unwrap();
    bytes[hash_at] ^= 0x01;
    std::fs::write(&journal, &bytes).unwrap();

    let (code, err) = refused_start(state.path());
    assert_eq!(code, Some(1), "{err}");
    let path = journal.display().to_string();
    for needle in [
        path.as_str(),
        "line 3",
        &format!("byte offset {last}"),
        &format!("websearchd journal repair {path} --truncate-at {last}"),
    ] {
        assert!(err.contains(needle), "{needle:?} not in {err}");
    }
    assert_eq!(std::fs::read(&journal).unwrap(), bytes, "nothing was cut");

    let (code, out) = journal_command(&["check", &path]);
    assert_eq!(code, Some(1), "{out}");
    assert!(out.contains(&format!("damaged: line 3 at byte offset {last} fails its checksum")), "{out}");
    let (code, out) = journal_command(&["repair", &path, "--truncate-at", &(last + 1).to_string()]);
    assert_eq!(code, Some(2), "{out}");
    let (code, out) = journal_command(&["repair", &path, "--truncate-at", &last.to_string()]);
    assert_eq!(code, Some(0), "{out}");
    let backup = out.split(" in ").nth(1).and_then(|s| s.split(';').next()).unwrap();
    assert_eq!(std::fs::read(backup).unwrap(), bytes, "the backup holds the file as it was");
    assert_eq!(journal_command(&["check", &path]).0, Some(0));

    // The chain continues after receipt 2, and number 3 is never issued again.
    let server = free_server(Some(state));
    assert!(server.log_text().contains("1 receipt number(s) were cut by a journal repair"), "{}", server.log_text());
    let next = notarize(&server, &hash(4), &[]).json();
    assert_eq!(next["receipt"]["seq"], 4);
    assert_eq!(next["receipt"]["prev"], delivered[1]["receipt_sha256"]);
    assert_eq!(server.get("/notary/receipts/3").status, 404);
    assert_eq!(server.get("/notary/receipts/2").json(), delivered[1]);
    assert_eq!(server.get("/notary/receipts/4").json(), next);
    // The journal verifies offline, with the gap shown.
    let out = std::process::Command::new(common::binary())
        .env_clear()
        .env("WEBSEARCHD_STATE_DIR", server.state_dir.path().join("data"))
        .args(["verify", "--receipts", &path])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success() && text.contains("not given: 3..3"), "{text}");
    // And a restart still agrees.
    let state = server.kill_keep_state();
    let server = free_server(Some(state));
    assert_eq!(notarize(&server, &hash(5), &[]).json()["receipt"]["seq"], 5);
}
