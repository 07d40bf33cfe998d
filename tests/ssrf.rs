//! The SSRF guard end to end: real sockets on loopback, real resolution, real redirects.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)]

mod common;

use std::time::{Duration, Instant};

use common::upstream::{Answer, Upstream};
use websearchd::fetch::guard::Policy;
use websearchd::fetch::untrusted::{fetch, Error, Fetched, Limits};

fn limits() -> Limits {
    Limits { connect_timeout: Duration::from_secs(2), deadline: Duration::from_secs(3), body_bytes_max: 64 * 1_024 }
}

fn allow(up: &Upstream) -> Policy {
    Policy { allow: vec![("127.0.0.1".into(), up.addr.port())], ports: vec![] }
}

fn get(url: &str, policy: &Policy) -> (Result<Fetched, Error>, Vec<u8>) {
    let mut body = Vec::new();
    let r = fetch(url, policy, &limits(), &mut |chunk| body.extend_from_slice(chunk));
    (r, body)
}

fn page() -> Answer {
    Answer::html(200, "<html><title>ok</title><p>fetched</p></html>")
}

fn redirect(to: &str) -> Answer {
    Answer::Respond { status: 302, content_type: "text/html", body: Vec::new() }.with_location(to)
}

#[test]
fn loopback_is_refused_without_the_allowlist_and_reachable_with_it() {
    let up = Upstream::start(|_| page());
    let url = up.url("/page");
    let (r, _) = get(&url, &Policy::default());
    assert_eq!(r.unwrap_err().code(), "port_refused");
    let ports_only = Policy { allow: vec![], ports: vec![up.addr.port()] };
    let (r, _) = get(&url, &ports_only);
    assert_eq!(r.unwrap_err().code(), "address_refused", "127.0.0.1 itself is refused");
    let (r, body) = get(&url, &allow(&up));
    let f = r.unwrap();
    assert_eq!((f.bytes as usize, f.redirects), (body.len(), 0));
    assert!(String::from_utf8(body).unwrap().contains("fetched"));
    assert_eq!(up.count("/page"), 1);
}

#[test]
fn a_name_that_resolves_to_a_private_address_is_refused() {
    let up = Upstream::start(|_| page());
    let policy = Policy { allow: vec![], ports: vec![up.addr.port()] };
    let (r, _) = get(&format!("http://localhost:{}/", up.addr.port()), &policy);
    let e = r.unwrap_err();
    assert_eq!(e.code(), "address_refused", "{e}");
    assert!(e.to_string().contains("loopback"), "{e}");
    assert_eq!(up.count("/"), 0, "no connection was made");
}

#[test]
fn every_redirect_hop_is_checked() {
    let inner = Upstream::start(|_| page());
    let inner_url = inner.url("/secret");
    let up = Upstream::start(move |seen| match seen.path() {
        "/to-unlisted" => redirect(&inner_url),
        "/to-metadata" => redirect("http://169.254.169.254/latest/meta-data/"),
        "/to-file" => redirect("file:///etc/passwd"),
        "/to-decimal" => redirect("http://2130706433/"),
        "/to-v6" => redirect("http://[::1]/"),
        "/loop" => redirect("/loop"),
        "/relative" => redirect("final"),
        "/final" => page(),
        _ => Answer::html(404, ""),
    });
    let policy = allow(&up);
    for (path, code) in [
        ("/to-unlisted", "port_refused"),
        ("/to-metadata", "address_refused"),
        ("/to-file", "scheme_refused"),
        ("/to-decimal", "address_refused"),
        ("/to-v6", "address_refused"),
    ] {
        let (r, _) = get(&up.url(path), &policy);
        match r {
            Err(Error::RedirectRefused { hop: 1, refusal }) => assert_eq!(refusal.code(), code, "{path}"),
            other => panic!("{path}: {other:?}"),
        }
    }
    assert_eq!(inner.count("/secret"), 0);
    let (r, _) = get(&up.url("/loop"), &policy);
    assert_eq!(r.unwrap_err(), Error::TooManyRedirects);
    assert_eq!(up.count("/loop"), 6, "the first request and five redirects");
    let (r, body) = get(&up.url("/relative"), &policy);
    assert_eq!(r.unwrap().redirects, 1);
    assert!(!body.is_empty());
}

#[test]
fn content_type_size_and_deadline() {
    let big = vec![b'a'; 200 * 1_024];
    let up = Upstream::start(move |seen| match seen.path() {
        "/png" => Answer::Respond { status: 200, content_type: "image/png", body: vec![0x89, b'P', b'N', b'G'] },
        "/big" => Answer::html(200, big.clone()),
        "/hang" => Answer::Hang(Duration::from_secs(10)),
        "/text" => Answer::Respond { status: 200, content_type: "text/plain; charset=utf-8", body: b"plain".to_vec() },
        _ => Answer::html(404, ""),
    });
    let policy = allow(&up);
    assert_eq!(get(&up.url("/png"), &policy).0.unwrap_err().code(), "content_type_refused");
    let (r, body) = get(&up.url("/big"), &policy);
    assert_eq!(r.unwrap_err().code(), "too_large");
    assert!(body.len() as u64 <= 64 * 1_024);
    assert!(get(&up.url("/text"), &policy).0.is_ok());
    assert_eq!(get(&up.url("/missing"), &policy).0.unwrap_err(), Error::Status(404));
    let started = Instant::now();
    assert_eq!(get(&up.url("/hang"), &policy).0.unwrap_err().code(), "timeout");
    assert!(started.elapsed() < Duration::from_secs(5));
}
