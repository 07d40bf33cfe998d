//! Issue 18: the answers that depend on the configuration only (the unpaid 402, the discovery documents, the
//! preflights) are rendered once and answered by the reactor with the request id and the date spliced in. They must
//! be byte-correct answers (a unique id, a valid date, the right length), the same bytes a worker would send, and
//! they must stay answerable while every worker waits.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)]

mod common;

use std::collections::HashSet;
use std::net::TcpStream;
use std::sync::Arc;
use std::time::{Duration, Instant};

use common::pay::{paid_env, Facilitator, Mode, Payer};
use common::upstream::{Answer, Upstream};
use common::{read_reply_to, write_request, Reply, Server};
use websearchd::clock::Clock as _;
use websearchd::http::{Handler, Reply as Answered, Request};

fn source() -> Upstream {
    Upstream::start(|_| Answer::html(200, common::own_fixture("search/ddg_html_results.html")))
}

fn paid_server(source: &Upstream, facilitator: &Facilitator, extra: &[(&str, &str)]) -> Server {
    let mut vars = paid_env(source.url("/html/"), facilitator.url());
    vars.extend(extra.iter().map(|(k, v)| (k.to_string(), v.to_string())));
    Server::start(&common::pairs(&vars))
}

/// The `Date` values the server may have sent now: the IMF-fixdates of the seconds around the test's clock.
fn dates_near_now() -> HashSet<String> {
    let now_ms = websearchd::clock::SystemClock.now_unix_ms();
    (0..=20).map(|k| websearchd::clock::http_date(now_ms - 10_000 + k * 1_000)).collect()
}

/// A request (method, path, headers, body) and the status of its answer.
type Case<'a> = (&'a str, &'a str, &'a [(&'a str, &'a str)], &'a [u8], u16);

/// Pipelined on one connection, in a mixed order, every kind of answer the reactor makes from bytes: each has its
/// own request id, a valid date and a `Content-Length` that frames its body (for HEAD, the GET's length; none on a
/// 204).
#[test]
fn spliced_answers_are_whole_and_each_has_its_own_id() {
    let (source, facilitator) = (source(), Facilitator::start());
    let server = paid_server(&source, &facilitator, &[("WEBSEARCHD_KEEPALIVE_REQUESTS_MAX", "100000")]);
    let catalog_len = server.get("/catalog.json").body.len();
    let challenges_before = server.metric("websearchd_payment_challenges_total");
    let json = [("Content-Type", "application/json")];
    let cases: [Case; 6] = [
        ("POST", "/service", &json, br#"{"query":"q"}"#, 402),
        ("GET", "/catalog.json", &[], b"", 200),
        ("HEAD", "/catalog.json", &[], b"", 200),
        ("OPTIONS", "/service", &[], b"", 204),
        ("GET", "/health", &[], b"", 200),
        ("GET", "/notary/service", &[], b"", 402),
    ];
    const ROUNDS: usize = 40;
    let mut s = TcpStream::connect(server.addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    for _ in 0..ROUNDS {
        for (method, path, headers, body, _) in cases {
            write_request(&mut s, method, path, headers, body);
        }
    }
    let dates = dates_near_now();
    let mut ids = HashSet::new();
    let mut first_402: Option<Reply> = None;
    for round in 0..ROUNDS {
        for (method, path, _, _, status) in cases {
            let r = read_reply_to(&mut s, method == "HEAD").unwrap_or_else(|| panic!("{method} {path} {round}"));
            assert_eq!(r.status, status, "{method} {path}");
            let id = r.header("x-request-id").unwrap().to_owned();
            assert!(id.len() == 32 && id.bytes().all(|b| b.is_ascii_hexdigit() && !b.is_ascii_uppercase()), "{id}");
            assert!(ids.insert(id.clone()), "request id {id} sent twice");
            let date = r.header("date").unwrap();
            assert!(dates.contains(date), "Date {date:?} is not an IMF-fixdate of now");
            // A 204 has no content, and must not send `Content-Length`.
            let length = r.header("content-length").map(|l| l.parse::<usize>().unwrap());
            let expected = match (method, status) {
                (_, 204) => None,
                ("HEAD", _) => Some(catalog_len),
                _ => Some(r.body.len()),
            };
            assert_eq!(length, expected, "{method} {path}");
            assert_eq!(r.header("connection"), Some("keep-alive"));
            assert_eq!(r.header("access-control-allow-origin"), Some("*"));
            if path == "/service" && method == "POST" {
                // Every unpaid call gets the same challenge, whole.
                let first = first_402.get_or_insert_with(|| r.clone());
                assert_eq!(first.body, r.body);
                assert_eq!(first.header("payment-required"), r.header("payment-required"));
                assert_eq!(r.json()["accepts"][0]["amount"], "5000");
            }
        }
    }
    // A challenge answered from bytes is counted like one the gate made.
    let challenges = server.metric("websearchd_payment_challenges_total") - challenges_before;
    assert_eq!(challenges, 2 * ROUNDS as u64);
    assert!(facilitator.upstream.seen().is_empty(), "an unpaid call never asks the facilitator");
    assert_eq!(source.count("/html/"), 0, "no work before payment");
}

/// The request a test hands the application directly.
fn request(method: &str, path: &str, headers: &[(&str, &str)], body: &[u8]) -> Request {
    let peer: std::net::SocketAddr = "192.0.2.7:40000".parse().unwrap();
    let mut wire = format!("{method} {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: {}\r\n", body.len());
    for (name, value) in headers {
        wire.push_str(&format!("{name}: {value}\r\n"));
    }
    wire.push_str("\r\n");
    let client = websearchd::http::client_addr::Client { ip: peer.ip(), local: false };
    let id = websearchd::http::RequestId::from_bits(0x0123456789abcdef0123456789abcdef);
    Request::from_wire([wire.as_bytes(), body].concat(), peer, client, id).unwrap()
}

/// The application in this process, with payments on (the facilitator is never asked here).
fn app_in(state: &std::path::Path, extra: &[(&str, &str)]) -> websearchd::app::App {
    use websearchd::config::{Config, Source};
    let mut vars = vec![
        ("WEBSEARCHD_PAY_TO".to_owned(), common::pay::PAY_TO.to_owned()),
        ("WEBSEARCHD_PUBLIC_URL".to_owned(), "https://search.example".to_owned()),
        ("WEBSEARCHD_STATE_DIR".to_owned(), state.display().to_string()),
        ("WEBSEARCHD_MAP_LAYERS".to_owned(), "none".to_owned()),
        // Never asked: nothing here pays.
        ("WEBSEARCHD_FACILITATOR_URL".to_owned(), "http://127.0.0.1:9".to_owned()),
    ];
    vars.extend(extra.iter().map(|(k, v)| (k.to_string(), v.to_string())));
    let config = Config::from_source(&Source::from_pairs(vars, None).unwrap()).unwrap();
    std::fs::create_dir_all(&config.state_dir).unwrap();
    let clock: Arc<dyn websearchd::clock::Clock> = Arc::new(websearchd::clock::SystemClock);
    let gate = websearchd::x402::Gate::from_config(&config, clock.clone()).unwrap();
    let keys = Arc::new(websearchd::sign::Keyring::load_or_create(&config.key_paths()).unwrap());
    let engine = websearchd::search::Engine::from_config(&config, clock.clone());
    let stats = Arc::new(websearchd::http::ServerStats::default());
    websearchd::app::App::new(config, stats, engine, gate, keys, clock).unwrap()
}

fn wire(reply: &Answered) -> String {
    let bytes = reply.to_bytes("0123456789abcdef0123456789abcdef", true, false, "Mon, 23 Nov 2026 10:00:00 GMT");
    String::from_utf8(bytes).unwrap()
}

/// What the reactor answers from bytes is what a worker's full path (`Handler::handle`: validation, the gate, the
/// challenge) sends, byte for byte; and the calls it must not answer (a payment, a free rule that might apply, an
/// invalid body) are left to a worker.
#[test]
fn the_reactor_answers_what_a_worker_would() {
    let dir = std::env::temp_dir().join(format!("websearchd-fixed-{}", std::process::id()));
    let app = app_in(&dir.join("paid"), &[("WEBSEARCHD_NOTARY_PATH", "/notary")]);
    let json = [("Content-Type", "application/json")];
    let same = [
        request("POST", "/service", &json, br#"{"query":"q"}"#),
        request(
            "POST",
            "/notary/service",
            &json,
            format!(r#"{{"op":"notarize","hash":"{}"}}"#, "ab".repeat(32)).as_bytes(),
        ),
        request("GET", "/notary/service", &[], b""),
        request("GET", "/llms.txt", &[], b""),
        request("GET", "/openapi.json", &[], b""),
        request("OPTIONS", "/core/state", &[], b""),
        request("OPTIONS", "/notary/service", &[], b""),
        request("GET", "/map/", &[], b""),
        request("GET", "/map/map.js", &[], b""),
        request("GET", "/map", &[], b""),
        request("GET", "/", &[], b""),
        request("HEAD", "/", &[], b""),
        request("GET", "/search", &[], b""),
        request("GET", "/opensearch.xml", &[], b""),
        // The SearXNG door on a paid instance without free rules: its 402s, the JSON and the page.
        request("GET", "/search?q=rust&format=json", &[], b""),
        request("GET", "/?q=rust&format=csv", &[], b""),
        request("GET", "/search?q=rust", &[], b""),
        request("POST", "/search", &[("Content-Type", "application/x-www-form-urlencoded")], b"q=rust&format=json"),
    ];
    for req in &same {
        let inline =
            app.handle_inline(req).unwrap_or_else(|| panic!("{} {} not answered inline", req.method(), req.path()));
        assert!(matches!(inline, Answered::Prepared(_)), "{} {}", req.method(), req.path());
        let worker = Answered::Built(app.handle(req));
        assert_eq!(wire(&inline), wire(&worker), "{} {}", req.method(), req.path());
    }
    // A conditional GET of the current version: the 304, the same either way.
    let etag = app.handle(&request("GET", "/catalog.json", &[], b"")).header_value("etag").unwrap().to_owned();
    let conditional = request("GET", "/catalog.json", &[("If-None-Match", &etag)], b"");
    let inline = app.handle_inline(&conditional).unwrap();
    assert_eq!(inline.status(), 304);
    assert_eq!(wire(&inline), wire(&Answered::Built(app.handle(&conditional))));
    // Left to a worker.
    let payer = Payer::new(1);
    let accepted = app.handle(&same[0]);
    let accepted: serde_json::Value = serde_json::from_slice(&accepted.body).unwrap();
    let paying_header = payer.v2_header(&accepted["accepts"][0]);
    let paying = [("Content-Type", "application/json"), ("PAYMENT-SIGNATURE", paying_header.as_str())];
    for req in [
        request("POST", "/service", &paying, br#"{"query":"q"}"#),
        request("POST", "/service", &[("Content-Type", "application/json"), ("X-PAYMENT", "x")], br#"{"query":"q"}"#),
        request("POST", "/service", &json, br#"{"query":""}"#),
        request("POST", "/service", &[], br#"{"query":"q"}"#),
        request("GET", "/metrics", &[], b""),
        request("GET", "/map/mapstate", &[], b""),
        request("GET", "/nowhere", &[], b""),
        request("GET", "/search?format=json", &[], b""),
        request("POST", "/", &[], b""),
        // A bad parameter is the worker's 400; a call that searches nothing is answered, not charged.
        request("GET", "/search?q=rust&format=json&pageno=0", &[], b""),
        request("GET", "/search?q=rust&format=json&categories=images", &[], b""),
        request("GET", "/search?q=rust&format=json&pageno=9", &[], b""),
    ] {
        assert!(app.handle_inline(&req).is_none(), "{} {} {:?}", req.method(), req.path(), req.headers());
    }
    // With a trial or the loopback rule on, an unpaid call may be free: the gate decides, on a worker.
    for rule in [("WEBSEARCHD_TRIAL_CALLS_PER_DAY", "3"), ("WEBSEARCHD_FREE_LOOPBACK", "1")] {
        let free = app_in(&dir.join(rule.0), &[rule]);
        let mut req = request("POST", "/service", &json, br#"{"query":"q"}"#);
        req.client.local = true;
        assert!(free.handle_inline(&req).is_none(), "{rule:?}");
        let mut req = request("GET", "/search?q=rust&format=json", &[], b"");
        req.client.local = true;
        assert!(free.handle_inline(&req).is_none(), "{rule:?}: the SearXNG door");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// A paid call holds the only worker (its facilitator hangs); unpaid calls, documents and preflights are answered
/// meanwhile, each at once.
#[test]
fn fixed_answers_do_not_wait_for_a_busy_worker() {
    let (source, facilitator) = (source(), Facilitator::start());
    let server = paid_server(&source, &facilitator, &[("WEBSEARCHD_WORKERS", "1"), ("WEBSEARCHD_QUEUE_DEPTH", "1")]);
    let accepted = server.post_json("/service", r#"{"query":"terms"}"#).json()["accepts"][0].clone();
    facilitator.set(Mode::VerifyHang);
    let addr = server.addr;
    let header = Payer::new(9).v2_header(&accepted);
    let busy = std::thread::spawn(move || {
        let headers = [("Content-Type", "application/json"), ("PAYMENT-SIGNATURE", header.as_str())];
        common::request(addr, "POST", "/service", &headers, br#"{"query":"paid"}"#)
    });
    let deadline = Instant::now() + Duration::from_secs(20);
    while !facilitator.upstream.seen().iter().any(|s| s.path() == "/verify") {
        assert!(Instant::now() < deadline, "the paid call never reached the facilitator");
        std::thread::sleep(Duration::from_millis(10));
    }
    for _ in 0..3 {
        for (method, path, status) in [
            ("POST", "/service", 402),
            ("GET", "/llms.txt", 200),
            ("OPTIONS", "/service", 204),
            ("GET", "/health", 200),
        ] {
            let (headers, body): (&[(&str, &str)], &[u8]) = match method {
                "POST" => (&[("Content-Type", "application/json")], br#"{"query":"q"}"#),
                _ => (&[], b""),
            };
            let started = Instant::now();
            let r = server.request(method, path, headers, body);
            assert_eq!(r.status, status, "{method} {path}");
            // Behind the worker it would wait for the facilitator's 5 s; 2 s allows a loaded machine.
            assert!(started.elapsed() < Duration::from_secs(2), "{method} {path} waited {:?}", started.elapsed());
        }
    }
    busy.join().unwrap();
}
