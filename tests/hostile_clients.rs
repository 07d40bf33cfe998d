//! What a hostile client can still try, run against the real binary on loopback: one address taking every
//! connection, forwarded headers and proxies (who is local, whose trial it is), guessing API keys, odd spellings of a
//! receipt number, and a client that never reads its answers.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)]

mod common;

use std::io::Write;
use std::net::{SocketAddr, TcpStream};
use std::time::{Duration, Instant};

use common::pay::{paid_env, Facilitator};
use common::upstream::{Answer, Upstream};
use common::{own_fixture, read_reply, write_request, Reply, Server};

/// A connection from a chosen loopback address (127.0.0.2 plays a second client).
fn connect_from(local: [u8; 4], to: SocketAddr) -> TcpStream {
    let socket = socket2::Socket::new(socket2::Domain::IPV4, socket2::Type::STREAM, None).expect("socket");
    socket.bind(&SocketAddr::from((local, 0)).into()).expect("bind");
    socket.connect(&to.into()).expect("connect");
    socket.into()
}

fn health_from(local: [u8; 4], server: &Server) -> Option<Reply> {
    let mut s = connect_from(local, server.addr);
    s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    write_request(&mut s, "GET", "/health", &[], b"");
    read_reply(&mut s)
}

/// Issue 13, finding 4: 600 slow sockets from one address made fresh clients get 503. Now one address (an IPv6 /64)
/// holds at most `WEBSEARCHD_CONNECTIONS_PER_ADDRESS_MAX` connections; the rest are refused at once and closed.
#[test]
fn one_address_cannot_take_every_connection() {
    let server = Server::start(&[("WEBSEARCHD_REQUEST_TIMEOUT_MS", "60000"), ("WEBSEARCHD_IDLE_TIMEOUT_MS", "60000")]);
    let mut hogs = Vec::new();
    for _ in 0..600 {
        let mut s = connect_from([127, 0, 0, 2], server.addr);
        let _ = s.write_all(b"G");
        hogs.push(s);
    }
    // The 33rd and later were answered 503 and closed.
    let mut refused = hogs.split_off(32);
    let last = refused.last_mut().unwrap();
    last.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    let reply = read_reply(last).expect("a refusal");
    assert_eq!((reply.status, reply.error_code().as_str()), (503, "too_many_connections_from_address"));
    assert_eq!(reply.header("retry-after"), Some("1"));
    for _ in 0..15 {
        let r = health_from([127, 0, 0, 1], &server).expect("a fresh client is answered");
        assert_eq!(r.status, 200);
    }
    assert!(server.metric("websearchd_http_rejected_total{reason=\"address_connections_max\"}") >= 500);
    // The slots come back when the connections close.
    drop(hogs);
    drop(refused);
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        match health_from([127, 0, 0, 2], &server) {
            Some(r) if r.status == 200 => break,
            _ if Instant::now() < deadline => std::thread::sleep(Duration::from_millis(50)),
            other => panic!("127.0.0.2 never got a slot back: {other:?}"),
        }
    }
}

/// A trusted proxy carries many clients on its connections: it is not held to one address's share.
#[test]
fn a_trusted_proxy_is_not_limited_per_address() {
    let server = Server::start(&[
        ("WEBSEARCHD_CONNECTIONS_PER_ADDRESS_MAX", "4"),
        ("WEBSEARCHD_TRUSTED_PROXIES", "127.0.0.2"),
        ("WEBSEARCHD_IDLE_TIMEOUT_MS", "60000"),
    ]);
    let proxy: Vec<TcpStream> = (0..10).map(|_| connect_from([127, 0, 0, 2], server.addr)).collect();
    for mut s in proxy {
        s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
        write_request(&mut s, "GET", "/health", &[], b"");
        assert_eq!(read_reply(&mut s).unwrap().status, 200);
    }
    let other: Vec<TcpStream> = (0..4).map(|_| connect_from([127, 0, 0, 3], server.addr)).collect();
    let r = health_from([127, 0, 0, 3], &server).expect("refusal");
    assert_eq!(r.error_code(), "too_many_connections_from_address");
    drop(other);
}

fn paying_world(extra: &[(&str, &str)]) -> (Upstream, Facilitator, Server) {
    let source = Upstream::start(|_| Answer::html(200, own_fixture("search/ddg_html_results.html")));
    let facilitator = Facilitator::start();
    let mut vars = paid_env(source.url("/html/"), facilitator.url());
    vars.extend(extra.iter().map(|(k, v)| (k.to_string(), v.to_string())));
    let server = Server::start(&common::pairs(&vars));
    (source, facilitator, server)
}

fn search_as(server: &Server, query: &str, headers: &[(&str, &str)]) -> u16 {
    let mut h = vec![("Content-Type", "application/json")];
    h.extend_from_slice(headers);
    server.request("POST", "/service", &h, format!(r#"{{"query":"{query}"}}"#).as_bytes()).status
}

/// Finding 5: behind a reverse proxy on this machine every client came from 127.0.0.1, so the free loopback rule
/// served the whole internet. A relayed request is local only when a trusted proxy forwards a loopback client.
#[test]
fn a_relayed_request_is_not_local() {
    let (_s, _f, server) = paying_world(&[("WEBSEARCHD_FREE_LOOPBACK", "1")]);
    assert_eq!(search_as(&server, "mine", &[]), 200, "the operator's own agent");
    assert_eq!(search_as(&server, "relayed", &[("X-Forwarded-For", "203.0.113.5")]), 402);
    assert_eq!(search_as(&server, "relayed std", &[("Forwarded", "for=203.0.113.5")]), 402);
    let log = server.log_with("WEBSEARCHD_TRUSTED_PROXIES is unset");
    assert!(log.contains("WEBSEARCHD_TRUSTED_PROXIES is unset"), "{log}");

    let (_s, _f, server) =
        paying_world(&[("WEBSEARCHD_FREE_LOOPBACK", "1"), ("WEBSEARCHD_TRUSTED_PROXIES", "127.0.0.1,::1")]);
    assert_eq!(search_as(&server, "remote", &[("X-Forwarded-For", "203.0.113.5")]), 402);
    assert_eq!(search_as(&server, "local via proxy", &[("X-Forwarded-For", "127.0.0.1")]), 200);
    // A spoofed entry to the left of the proxy's own is never reached.
    assert_eq!(search_as(&server, "spoofed", &[("X-Forwarded-For", "127.0.0.1, 203.0.113.5")]), 402);
    // nginx writes X-Forwarded-For and passes the client's own `Forwarded` through: it is not read.
    let both = [("Forwarded", "for=127.0.0.1"), ("X-Forwarded-For", "203.0.113.5")];
    assert_eq!(search_as(&server, "spoofed std", &both), 402);
    assert_eq!(search_as(&server, "spoofed std alone", &both[..1]), 402);
}

/// Finding 5: trials are counted per forwarded client (from a trusted proxy only) and per IPv6 /64.
#[test]
fn trials_count_per_client_behind_a_trusted_proxy_and_per_ipv6_64() {
    let (_s, _f, server) =
        paying_world(&[("WEBSEARCHD_TRIAL_CALLS_PER_DAY", "1"), ("WEBSEARCHD_TRUSTED_PROXIES", "127.0.0.1")]);
    let xff = |ip: &'static str| [("X-Forwarded-For", ip)];
    assert_eq!(search_as(&server, "a1", &xff("203.0.113.5")), 200);
    assert_eq!(search_as(&server, "a2", &xff("203.0.113.5")), 402);
    assert_eq!(search_as(&server, "b1", &xff("203.0.113.6")), 200);
    assert_eq!(search_as(&server, "c1", &xff("2001:db8:1:2::1")), 200);
    assert_eq!(search_as(&server, "c2", &xff("2001:db8:1:2:ffff:ffff:ffff:ffff")), 402, "same /64");
    assert_eq!(search_as(&server, "d1", &xff("2001:db8:1:3::1")), 200, "another /64");

    // Without a trusted proxy the header is ignored: one bucket, the peer's.
    let (_s, _f, server) = paying_world(&[("WEBSEARCHD_TRIAL_CALLS_PER_DAY", "1")]);
    assert_eq!(search_as(&server, "e1", &xff("203.0.113.7")), 200);
    assert_eq!(search_as(&server, "e2", &xff("203.0.113.8")), 402);
}

/// Finding 9: guessing keys is slowed per address, and a keys file others can read is refused.
#[test]
fn api_key_guessing_is_slowed_and_an_open_keys_file_refused() {
    use std::os::unix::fs::PermissionsExt;
    let server = Server::start(&[]);
    let out = std::process::Command::new(common::binary())
        .args(["apikey", "new"])
        .env_clear()
        .env("WEBSEARCHD_STATE_DIR", server.state_dir.path().join("data"))
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let key = String::from_utf8_lossy(&out.stdout).lines().find(|l| l.starts_with("wsk_")).unwrap().trim().to_owned();
    let state = |k: &str| server.request("GET", "/core/state", &[("X-WALLET", k)], b"");
    assert_eq!(state(&key).status, 200);
    for _ in 0..10 {
        assert_eq!(state("wsk_guess").error_code(), "api_key_invalid");
    }
    let r = state(&key);
    assert_eq!((r.status, r.error_code().as_str()), (429, "api_key_attempts"));
    assert!(r.header("retry-after").is_some_and(|s| s.parse::<u64>().unwrap() > 0));

    let keys = server.state_dir.path().join("data/api-keys");
    assert_eq!(std::fs::metadata(&keys).unwrap().permissions().mode() & 0o777, 0o600);
    let server = Server::start_in(common::tempdir::TempDir::new("keys-open"), &[], |c| c);
    let keys_file = server.state_dir.path().join("data/api-keys");
    std::fs::write(&keys_file, format!("{key}\n")).unwrap();
    std::fs::set_permissions(&keys_file, std::fs::Permissions::from_mode(0o644)).unwrap();
    let r = server.request("GET", "/core/state", &[("X-WALLET", &key)], b"");
    assert_eq!((r.status, r.error_code().as_str()), (503, "api_keys_unusable"));
    let log = server.log_with("chmod 600");
    assert!(log.contains("chmod 600"), "{log}");
}

/// Finding 11: `+1` was served as receipt 1. A receipt has one spelling.
#[test]
fn receipt_numbers_are_plain_decimal() {
    let server = Server::start(&[]);
    for seq in ["+1", "01", "1e0", "%2B1", "-1", "18446744073709551616"] {
        let r = server.get(&format!("/notary/receipts/{seq}"));
        assert_eq!((r.status, r.error_code().as_str()), (400, "seq_invalid"), "{seq}");
    }
    assert_eq!(server.get("/notary/receipts/1").error_code(), "receipt_not_found");
}

/// A client that sends many requests and never reads the answers: a worker used to block writing to it (the
/// socket's write timeout applies per send call, so a slow reader could hold it for ever). Now the reactor holds
/// the unwritten bytes and the worker goes on; the reader gets every answer whole when it reads. The reader asks for
/// a route the one worker must run (the documents and `/health` are answered without a worker) whose answer is large
/// for its request, `/metrics`: its requests must all fit in the socket buffers while the server, holding an answer,
/// reads no more of them (with requests as large as their answers, the client's own write could not finish, and the
/// server reset the connection at the write timeout). The probe is a worker's route too.
#[test]
fn a_client_that_does_not_read_holds_no_worker() {
    let server = Server::start(&[
        ("WEBSEARCHD_WORKERS", "1"),
        ("WEBSEARCHD_WRITE_TIMEOUT_MS", "30000"),
        ("WEBSEARCHD_KEEPALIVE_REQUESTS_MAX", "100000"),
    ]);
    // The text only grows from here (counters, and the probe's route), never shrinks.
    let one_size = server.get("/metrics").body.len();
    // Loopback send buffers grow to 4 MiB (tcp_wmem); the answers must outgrow them, or nothing ever blocks.
    let requests = 6_500_000 / one_size + 1;
    let total = one_size * requests;
    assert!(total > 6_000_000, "the answers must outgrow the socket buffers ({total} bytes)");
    let socket = socket2::Socket::new(socket2::Domain::IPV4, socket2::Type::STREAM, None).unwrap();
    socket.set_recv_buffer_size(4_096).unwrap();
    socket.connect(&server.addr.into()).unwrap();
    let mut reader: TcpStream = socket.into();
    let one = b"GET /metrics HTTP/1.1\r\nHost: slow\r\n\r\n";
    assert!(one.len() * requests < 100_000, "the requests fit in the socket buffers");
    reader.write_all(&one.repeat(requests)).unwrap();
    std::thread::sleep(Duration::from_millis(500));
    for _ in 0..5 {
        let started = Instant::now();
        assert_eq!(server.get("/nowhere").status, 404);
        // Held behind the reader, a fresh client would wait for the 30 s write timeout; 10 s allows a loaded machine.
        assert!(started.elapsed() < Duration::from_secs(10), "a fresh client waited {:?}", started.elapsed());
    }
    reader.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    for n in 0..requests {
        let r = read_reply(&mut reader).unwrap_or_else(|| panic!("answer {n} missing"));
        // Whole: the exposition text from its first line to its last newline, at least as long as the first.
        let text = r.text();
        assert_eq!(r.status, 200, "answer {n}");
        assert!(text.starts_with("# HELP websearchd_build_info") && text.ends_with('\n'), "answer {n}");
        assert!(r.body.len() >= one_size, "answer {n}: {} bytes", r.body.len());
    }
    assert_eq!(server.metric("websearchd_http_write_pending_bytes"), 0);
}

/// `/health` needs no worker: with the only worker waiting on a slow source, it still answers at once (the soak
/// measured 780 ms at p99 when it queued behind work).
#[test]
fn health_answers_while_every_worker_is_busy() {
    let source = Upstream::start(|_| {
        Answer::Delay(Duration::from_secs(8), Box::new(Answer::html(200, own_fixture("search/ddg_html_results.html"))))
    });
    let html = source.url("/html/");
    let server = Server::start(&[
        ("WEBSEARCHD_WORKERS", "1"),
        ("WEBSEARCHD_SOURCES", "ddg_html"),
        ("WEBSEARCHD_DDG_HTML_URL", &html),
        ("WEBSEARCHD_SOURCE_INTERVAL_MS", "0"),
        ("WEBSEARCHD_SOURCE_TIMEOUT_MS", "15000"),
        ("WEBSEARCHD_SEARCH_DEADLINE_MS", "20000"),
    ]);
    let addr = server.addr;
    let busy = std::thread::spawn(move || {
        common::request(addr, "POST", "/service", &[("Content-Type", "application/json")], br#"{"query":"slow"}"#)
    });
    source.wait_for("/html/", 1);
    for _ in 0..3 {
        let started = Instant::now();
        let r = server.get("/health");
        assert_eq!(r.status, 200);
        // Queued behind the search, /health would wait most of its 8 s; 2 s allows a loaded machine.
        assert!(started.elapsed() < Duration::from_secs(2), "/health waited {:?}", started.elapsed());
    }
    assert_eq!(busy.join().unwrap().status, 200);
    // Pipelined behind one another on one connection, all answered here.
    let mut s = TcpStream::connect(server.addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    s.write_all(&b"GET /health HTTP/1.1\r\nHost: p\r\n\r\n".repeat(3)).unwrap();
    for _ in 0..3 {
        assert_eq!(read_reply(&mut s).unwrap().status, 200);
    }
}

/// A client that pipelines requests answered by the reactor itself, half-closes, and reads only later: every request
/// it sent is answered, each whole, and the last says `close`; nothing stays counted as pending.
#[test]
fn a_half_closed_slow_reader_still_gets_its_answers() {
    let server = Server::start(&[("WEBSEARCHD_KEEPALIVE_REQUESTS_MAX", "100000")]);
    let socket = socket2::Socket::new(socket2::Domain::IPV4, socket2::Type::STREAM, None).unwrap();
    socket.set_recv_buffer_size(4_096).unwrap();
    socket.connect(&server.addr.into()).unwrap();
    let mut reader: TcpStream = socket.into();
    let requests = 12_000;
    reader.write_all(&b"GET /health HTTP/1.1\r\nHost: h\r\n\r\n".repeat(requests)).unwrap();
    reader.shutdown(std::net::Shutdown::Write).unwrap();
    std::thread::sleep(Duration::from_millis(500));
    reader.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let mut answers = Vec::new();
    while let Some(r) = read_reply(&mut reader) {
        assert_eq!(r.status, 200);
        answers.push(r);
    }
    assert_eq!(answers.len(), requests, "every request sent before the half-close is answered");
    let last = answers.last().expect("answers");
    assert_eq!(last.header("connection"), Some("close"), "the closing answer was cut");
    assert_eq!(server.metric("websearchd_http_write_pending_bytes"), 0);
}

/// A client that pipelines a whole input buffer of requests answered on the reactor (thousands of them) does not hold
/// another client back behind all of them: the reactor answers 16 of one connection's requests per round
/// (`ANSWERS_PER_TURN_MAX`), then the other ready connections. Both clients' requests are made ready while the server
/// is stopped, so the first round after it continues sees both.
#[test]
fn a_pipelining_client_does_not_hold_back_the_others() {
    let server = Server::start(&[("WEBSEARCHD_KEEPALIVE_REQUESTS_MAX", "100000")]);
    let mut a = connect_from([127, 0, 0, 1], server.addr);
    let mut b = connect_from([127, 0, 0, 2], server.addr);
    for s in [&mut a, &mut b] {
        s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        write_request(s, "GET", "/health", &[], b"");
        assert_eq!(read_reply(s).unwrap().status, 200);
    }
    let mut drain = a.try_clone().unwrap();
    let reader = std::thread::spawn(move || std::io::copy(&mut drain, &mut std::io::sink()));
    server.signal("STOP");
    a.write_all(&b"GET /health HTTP/1.1\r\nHost: a\r\n\r\n".repeat(2_000)).unwrap();
    write_request(&mut b, "GET", "/health", &[], b"");
    server.signal("CONT");
    assert_eq!(read_reply(&mut b).unwrap().status, 200);
    let log = server.log_with("peer=127.0.0.2");
    let lines: Vec<&str> = log.lines().filter(|l| l.contains("GET /health 200")).collect();
    let b_answered = lines.iter().rposition(|l| l.contains("peer=127.0.0.2")).expect("b's access line");
    let a_before_b = lines.get(..b_answered).unwrap().iter().filter(|l| l.contains("peer=127.0.0.1")).count();
    // One warm-up answer, then at most a round or two of 16 (the second if b's bytes landed a moment late).
    assert!(a_before_b <= 1 + 2 * 16, "{a_before_b} of the pipelining client's answers came before the other's one");
    a.shutdown(std::net::Shutdown::Write).unwrap();
    drop(server);
    let _ = reader.join();
}

/// A `tools/call` of `web_search` on `/mcp` (2026-07-28, unpaid) with these extra headers: whether it was served
/// (free) rather than answered with the payment requirements.
fn mcp_served_free(server: &Server, headers: &[(&str, &str)]) -> bool {
    let meta = serde_json::json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {},
    });
    let message = serde_json::json!({ "jsonrpc": "2.0", "id": 1, "method": "tools/call",
        "params": { "name": "web_search", "arguments": { "query": "rust" }, "_meta": meta } });
    let mut h = vec![
        ("Content-Type", "application/json"),
        ("MCP-Protocol-Version", "2026-07-28"),
        ("Mcp-Method", "tools/call"),
        ("Mcp-Name", "web_search"),
    ];
    h.extend_from_slice(headers);
    let reply = server.request("POST", "/mcp", &h, message.to_string().as_bytes());
    assert_eq!(reply.status, 200, "{}", reply.text());
    let result = &reply.json()["result"];
    let refused = result["isError"] == true && result["structuredContent"]["accepts"].is_array();
    assert!(refused || result["structuredContent"]["results"].is_array(), "{result}");
    !refused
}

/// Issue 33, finding 7: a proxy on this machine that writes neither `X-Forwarded-For` nor `Forwarded` (nginx's
/// common snippet writes only `X-Real-IP`; a cache writes `Via`) relayed the internet's requests as loopback ones,
/// and the free loopback rule served them free on `/service` and `/mcp`. Any header a proxy writes about its client
/// makes a request from a peer the operator did not list relayed.
#[test]
fn a_request_with_any_proxy_header_is_not_local() {
    let (_s, _f, server) = paying_world(&[("WEBSEARCHD_FREE_LOOPBACK", "1")]);
    assert_eq!(search_as(&server, "mine", &[]), 200, "the operator's own agent");
    assert!(mcp_served_free(&server, &[]), "the operator's own agent on /mcp");
    let relayed: [(&str, &str); 7] = [
        ("X-Real-IP", "203.0.113.5"),
        ("Via", "1.1 nginx"),
        ("X-Forwarded-Proto", "https"),
        ("X-Forwarded-Host", "search.example"),
        ("True-Client-IP", "203.0.113.5"),
        ("CF-Connecting-IP", "203.0.113.5"),
        ("Fastly-Client-IP", "203.0.113.5"),
    ];
    for (i, header) in relayed.iter().enumerate() {
        assert_eq!(search_as(&server, &format!("relayed {i}"), &[*header]), 402, "{header:?} on /service");
        assert!(!mcp_served_free(&server, &[*header]), "{header:?} on /mcp");
    }
}
