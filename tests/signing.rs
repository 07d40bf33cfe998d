//! Signed answers and discovery documents from the real server, checked with `websearchd verify` and by hand.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)]

mod common;

use common::upstream::{Answer, Upstream};
use common::{own_fixture, tempdir::TempDir, Reply, Server};
use serde_json::Value;

fn start() -> (Upstream, Server) {
    let source = Upstream::start(|_| Answer::html(200, own_fixture("search/ddg_html_results.html")));
    let url = source.url("/html/");
    let server = Server::start(&[
        ("WEBSEARCHD_SOURCES", "ddg_html"),
        ("WEBSEARCHD_DDG_HTML_URL", &url),
        ("WEBSEARCHD_SOURCE_INTERVAL_MS", "0"),
        ("WEBSEARCHD_PUBLIC_URL", "https://search.example"),
    ]);
    (source, server)
}

/// Saves a reply as `curl -D` would (headers file, body file) and runs `websearchd verify` on it.
fn verify(dir: &TempDir, reply: &Reply, jwks: &[u8], name: &str) -> (bool, String) {
    let body = dir.path().join(format!("{name}.body"));
    let headers = dir.path().join(format!("{name}.headers"));
    let keys = dir.path().join("jwks.json");
    std::fs::write(&body, &reply.body).unwrap();
    let head: String = std::iter::once(format!("HTTP/1.1 {} X\r\n", reply.status))
        .chain(reply.headers.iter().map(|(k, v)| format!("{k}: {v}\r\n")))
        .collect();
    std::fs::write(&headers, head).unwrap();
    std::fs::write(&keys, jwks).unwrap();
    let out = std::process::Command::new(common::binary())
        .env_clear()
        .args(["verify", "--body", body.to_str().unwrap(), "--headers", headers.to_str().unwrap()])
        .args(["--jwks", keys.to_str().unwrap()])
        .output()
        .unwrap();
    (out.status.success(), String::from_utf8_lossy(&out.stdout).into_owned())
}

#[test]
fn answers_are_signed_and_verify_offline() {
    let (_source, server) = start();
    let jwks = server.get("/.well-known/jwks.json");
    let keys: Value = jwks.json();
    let result_kid = keys["keys"].as_array().unwrap().iter().find(|k| k["purpose"] == "result").unwrap()["kid"]
        .as_str()
        .unwrap()
        .to_string();
    let card_kid = keys["keys"][0]["kid"].as_str().unwrap().to_string();
    let dir = TempDir::new("verify");

    let raw = server.post_json("/service", r#"{"query":"signed"}"#);
    assert_eq!(raw.status, 200);
    assert_eq!(raw.header("x-signature-kid"), Some(result_kid.as_str()));
    assert_eq!(raw.header("x-signed-object"), Some("raw"));
    let a = raw.json();
    assert_eq!((a["kid"].as_str(), a["query"].as_str()), (Some(result_kid.as_str()), Some("signed")));
    assert_eq!(a["request_id"].as_str(), raw.header("x-request-id"));
    let (ok, out) = verify(&dir, &raw, &jwks.body, "raw");
    assert!(ok, "{out}");
    assert!(out.contains(&result_kid) && out.contains("raw"), "{out}");

    let hex = server.request(
        "POST",
        "/service",
        &[("Content-Type", "application/json"), ("X-Signed-Object", "sha256-hex")],
        br#"{"query":"signed hex"}"#,
    );
    assert_eq!(hex.header("x-signed-object"), Some("sha256-hex"));
    let (ok, out) = verify(&dir, &hex, &jwks.body, "hex");
    assert!(ok, "{out}");

    // A tampered body, a wrong kid, and the card key's kid are each refused with a reason.
    let mut tampered = raw.clone();
    tampered.body = String::from_utf8(raw.body.clone()).unwrap().replace("signed", "forged").into_bytes();
    let (ok, out) = verify(&dir, &tampered, &jwks.body, "tampered");
    assert!(!ok && out.contains("does not match"), "{out}");
    let mut wrong_kid = raw.clone();
    for (k, v) in wrong_kid.headers.iter_mut() {
        if k.eq_ignore_ascii_case("x-signature-kid") {
            *v = "result-unknown".into();
        }
    }
    let (ok, out) = verify(&dir, &wrong_kid, &jwks.body, "kid");
    assert!(!ok && out.contains("no key with kid"), "{out}");
    let mut card = raw.clone();
    for (k, v) in card.headers.iter_mut() {
        if k.eq_ignore_ascii_case("x-signature-kid") {
            *v = card_kid.clone();
        }
    }
    let (ok, out) = verify(&dir, &card, &jwks.body, "card");
    assert!(!ok && out.contains("card key"), "{out}");

    let bad = server.request(
        "POST",
        "/service",
        &[("Content-Type", "application/json"), ("X-Signed-Object", "md5")],
        br#"{"query":"q"}"#,
    );
    assert_eq!((bad.status, bad.error_code().as_str()), (400, "signed_object_unknown"));
}

#[test]
fn discovery_documents() {
    let (_source, server) = start();
    let card = server.get("/agent-card.json");
    let well_known = server.get("/.well-known/agent-card.json");
    assert_eq!(card.status, 200);
    assert_eq!(card.body, well_known.body, "the same bytes at both paths");
    let c = card.json();
    assert_eq!(c["skills"][0]["id"], "websearch");
    assert_eq!(c["securitySchemes"]["apiKey"]["apiKeySecurityScheme"]["name"], "X-WALLET");
    assert!(c.get("supportedInterfaces").is_none(), "no A2A binding is served, so none is advertised");
    assert!(c["description"].as_str().unwrap().contains("https://search.example/openapi.json"));
    assert_eq!(c["signatures"].as_array().unwrap().len(), 1);

    let etag = card.header("etag").unwrap().to_string();
    assert!(card.header("cache-control").unwrap().contains("max-age"));
    let again = server.request("GET", "/agent-card.json", &[("If-None-Match", &etag)], b"");
    assert_eq!(again.status, 304);
    assert!(again.body.is_empty());

    for path in ["/pubkey", "/catalog.json", "/.well-known/jwks.json", "/llms.txt"] {
        let r = server.get(path);
        assert_eq!(r.status, 200, "{path}");
        assert!(r.header("etag").is_some(), "{path}");
    }
    let pubkey = server.get("/pubkey").json();
    assert_eq!(pubkey["answers"]["headers"]["X-Signed-Object"], "what was signed: raw or sha256-hex");
    assert!(pubkey["signatures"][0]["protected"].is_string());
    let llms = server.get("/llms.txt").text();
    assert!(llms.starts_with("# websearchd\n\n> "));
    assert!(llms.contains("## API") && llms.contains("https://search.example/service"));
    let catalog = server.get("/catalog.json").json();
    assert_eq!(catalog["operations"][0]["payment"]["mode"], "free");
}

#[test]
fn keys_survive_restarts_and_keygen_retires_the_old_ones() {
    let (_source, server) = start();
    let before = server.get("/.well-known/jwks.json").json();
    let state = server.kill_keep_state();
    let data = state.path().join("data");
    let out = std::process::Command::new(common::binary())
        .env_clear()
        .env("WEBSEARCHD_STATE_DIR", &data)
        .arg("keygen")
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let server = Server::start_in(state, &[], |c| c);
    let after = server.get("/.well-known/jwks.json").json();
    let kids = |v: &Value, status: &str| -> Vec<String> {
        v["keys"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|k| k["status"] == status)
            .map(|k| k["kid"].as_str().unwrap().to_string())
            .collect()
    };
    assert_eq!(kids(&after, "retired"), kids(&before, "active"), "the old keys stay published as retired");
    assert_ne!(kids(&after, "active"), kids(&before, "active"));
}

/// Issue 16: `verify` without `--jwks` on a machine with no state made a key pair, then failed against it. It must
/// create nothing and point to `--jwks URL`; with the URL of a service's key set it checks the answer.
#[test]
fn verify_without_a_key_set_creates_no_keys_and_takes_a_jwks_url() {
    let (_source, server) = start();
    let answer = server.post_json("/service", r#"{"query":"signed"}"#);
    let dir = TempDir::new("verify-nokeys");
    let (body, headers) = (dir.path().join("a.body"), dir.path().join("a.headers"));
    std::fs::write(&body, &answer.body).unwrap();
    let head: String = answer.headers.iter().map(|(k, v)| format!("{k}: {v}\r\n")).collect();
    std::fs::write(&headers, head).unwrap();
    let state = dir.path().join("fresh-state");
    let run = |jwks: Option<&str>| {
        let mut cmd = std::process::Command::new(common::binary());
        cmd.env_clear().env("WEBSEARCHD_STATE_DIR", &state).args([
            "verify",
            "--body",
            body.to_str().unwrap(),
            "--headers",
            headers.to_str().unwrap(),
        ]);
        if let Some(j) = jwks {
            cmd.args(["--jwks", j]);
        }
        cmd.output().unwrap()
    };
    let out = run(None);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("--jwks URL"), "{err}");
    assert!(!state.exists(), "verify created {}", state.display());

    let url = format!("http://{}/.well-known/jwks.json", server.addr);
    let out = run(Some(&url));
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stdout));
    assert!(String::from_utf8_lossy(&out.stdout).starts_with("ok: signed by result-"));
    assert!(!state.exists());
}
