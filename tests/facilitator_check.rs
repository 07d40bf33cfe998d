//! The facilitator is asked at start whether it serves the network payments are taken on (issue 16: setting only
//! `WEBSEARCHD_PAY_TO` meant Base mainnet through a testnet-only facilitator, and every payment failed silently).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)]

mod common;

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::pay::{Facilitator, PAY_TO};
use common::upstream::{Answer, Upstream};
use common::{tempdir::TempDir, Server};

/// What the public testnet facilitator lists: Base Sepolia only (v1 and v2 names).
fn testnet_facilitator() -> Upstream {
    Upstream::start(|seen| match seen.path() {
        "/supported" => Answer::json(
            200,
            r#"{"kinds":[{"x402Version":1,"scheme":"exact","network":"base-sepolia"},
                {"x402Version":2,"scheme":"exact","network":"eip155:84532"}],"extensions":[],"signers":{}}"#,
        ),
        _ => Answer::json(404, "{}"),
    })
}

/// Runs the binary with only these variables (and a fresh state directory) to its exit: (code, stdout, stderr).
fn run(args: &[&str], vars: &[(&str, &str)]) -> (Option<i32>, String, String) {
    let state = TempDir::new("facilitator-check");
    let mut child = Command::new(common::binary())
        .env_clear()
        .env("WEBSEARCHD_STATE_DIR", state.path().join("data"))
        .env("WEBSEARCHD_LISTEN", "127.0.0.1:0")
        .env("WEBSEARCHD_MAP_LAYERS", "none")
        .envs(vars.iter().copied())
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(20);
    while child.try_wait().unwrap().is_none() {
        if Instant::now() >= deadline {
            let _ = child.kill();
            panic!("websearchd {args:?} did not exit: {:?}", child.wait_with_output().unwrap());
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let out = child.wait_with_output().unwrap();
    let text = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
    (out.status.code(), text(&out.stdout), text(&out.stderr))
}

#[test]
fn pay_to_alone_means_mainnet_through_a_testnet_facilitator_and_is_refused() {
    for command in ["serve", "check-config"] {
        let (code, _, err) = run(&[command], &[("WEBSEARCHD_PAY_TO", PAY_TO)]);
        assert_eq!(code, Some(2), "{command}: {err}");
        assert!(err.contains("WEBSEARCHD_FACILITATOR_URL") && err.contains("WEBSEARCHD_NETWORK"), "{command}: {err}");
    }
}

#[test]
fn a_facilitator_that_does_not_serve_the_network_stops_the_start() {
    let facilitator = testnet_facilitator();
    let url = facilitator.url("");
    let vars = [("WEBSEARCHD_PAY_TO", PAY_TO), ("WEBSEARCHD_FACILITATOR_URL", url.as_str())];
    for command in ["serve", "check-config"] {
        let (code, _, err) = run(&[command], &vars);
        assert_eq!(code, Some(2), "{command}: {err}");
        for words in ["does not serve payments on eip155:8453", "WEBSEARCHD_NETWORK", "WEBSEARCHD_FACILITATOR_URL"] {
            assert!(err.contains(words), "{command}: {words:?} not in {err}");
        }
        assert!(err.contains("exact base-sepolia"), "what it serves is named: {err}");
    }
    // The network it does serve passes.
    let testnet = [vars[0], vars[1], ("WEBSEARCHD_NETWORK", "base-sepolia")];
    let (code, out, err) = run(&["check-config"], &testnet);
    assert_eq!(code, Some(0), "{err}");
    assert!(out.contains(&format!("# facilitator {url}: serves exact on eip155:84532")), "{out}");
}

#[test]
fn health_reports_whether_the_facilitator_serves_the_network() {
    let facilitator = Facilitator::start();
    let url = facilitator.url();
    let server = Server::start(&[("WEBSEARCHD_PAY_TO", PAY_TO), ("WEBSEARCHD_FACILITATOR_URL", &url)]);
    let health = server.get("/health").json();
    assert_eq!(health["facilitator"]["supports_network"], true, "{health}");
    assert_eq!(health["facilitator"]["network"], "eip155:8453");
    assert_eq!(facilitator.upstream.count("/supported"), 1);

    // Unreachable at start: the server starts, says so loudly, and /health carries it.
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap();
    let down = format!("http://{closed}");
    let server = Server::start(&[("WEBSEARCHD_PAY_TO", PAY_TO), ("WEBSEARCHD_FACILITATOR_URL", &down)]);
    assert!(server.log_with("PAYMENTS UNCHECKED").contains("PAYMENTS UNCHECKED"), "{}", server.log_text());
    let health = server.get("/health").json();
    assert_eq!(health["facilitator"]["supports_network"], serde_json::Value::Null, "{health}");
    assert!(health["facilitator"]["detail"].as_str().unwrap().contains("did not answer"), "{health}");
    assert!(health["facilitator"]["checked_at"].is_string(), "{health}");

    // Payments off: no facilitator entry.
    let server = Server::start(&[]);
    assert!(server.get("/health").json().get("facilitator").is_none());
}
