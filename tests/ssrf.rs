//! The SSRF guard end to end: real sockets on loopback, real resolution, real redirects.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)]

mod common;

use std::sync::Arc;
use std::time::{Duration, Instant};

use common::upstream::{Answer, Upstream};
use common::{own_fixture, Server};
use serde_json::json;
use websearchd::clock::Clock;
use websearchd::fetch::guard::Policy;
use websearchd::fetch::untrusted::{fetch, Error, Fetched, Limits};
use websearchd::fetch::{Client, Error as FetchError, Limits as ClientLimits};
use websearchd::map::{MapService, Settings as MapSettings};

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
    assert!(body.is_empty(), "a body declared longer than the cap is refused unread");
    assert!(get(&up.url("/text"), &policy).0.is_ok());
    assert_eq!(get(&up.url("/missing"), &policy).0.unwrap_err(), Error::Status(404));
    let started = Instant::now();
    assert_eq!(get(&up.url("/hang"), &policy).0.unwrap_err().code(), "timeout");
    assert!(started.elapsed() < Duration::from_secs(5));
}

/// Issue 13, finding 3: a configured source answering with a redirect to another loopback listener (an internal
/// admin page) made the server request it. Only the configured origin is followed freely; the redirect is refused
/// before any connection, and the search report names the guard's refusal.
#[test]
fn a_search_source_redirect_to_an_internal_listener_is_refused() {
    let internal = Upstream::start(|_| Answer::json(200, own_fixture("search/searxng_results.json")));
    let admin = internal.url("/internal-admin");
    let up = Upstream::start(move |seen| match seen.path() {
        "/searx/search" => redirect(&admin),
        // A redirect within the configured origin (a moved path) is still followed.
        "/moved/search" => redirect(&format!("/searx2/search?{}", seen.target.split_once('?').unwrap().1)),
        "/searx2/search" => Answer::json(200, own_fixture("search/searxng_results.json")),
        _ => Answer::html(404, ""),
    });
    let search = |instance: &str, query: &str| {
        let server = Server::start(&[
            ("WEBSEARCHD_SOURCES", "searxng"),
            ("WEBSEARCHD_SEARXNG_URLS", &up.url(instance)),
            ("WEBSEARCHD_SOURCE_INTERVAL_MS", "0"),
        ]);
        server.post_json("/service", &json!({ "query": query }).to_string())
    };
    let reply = search("/searx", "internal");
    assert_eq!(reply.status, 502, "{}", reply.text());
    let report = &reply.json()["error"]["sources"][0];
    assert_eq!(report["status"], "failed", "{report}");
    assert_eq!(report["error"], "port_refused", "{report}");
    let detail = report["detail"].as_str().unwrap();
    assert!(detail.contains("redirect") && detail.contains("/internal-admin"), "{detail}");
    assert_eq!(up.count("/searx/search"), 1);
    assert_eq!(internal.seen().len(), 0, "the internal listener was never reached");

    let reply = search("/moved", "moved");
    assert_eq!(reply.status, 200, "{}", reply.text());
    assert_eq!(reply.json()["sources"][0]["status"], "ok");
    let followed = up.seen().into_iter().find(|s| s.path() == "/searx2/search").expect("the same-origin redirect");
    assert_eq!(followed.param("q").as_deref(), Some("moved"));
}

/// A minimal USGS feed with one earthquake.
fn quakes() -> Vec<u8> {
    br#"{"type":"FeatureCollection","metadata":{"generated":1717198140000},"features":[{"type":"Feature","id":"q1",
    "geometry":{"type":"Point","coordinates":[8.5,50.0,10.0]},"properties":{"mag":2.5,"time":1717198140000}}]}"#
        .to_vec()
}

fn quake_map(url: String) -> MapService {
    let mut s = MapSettings::defaults();
    s.layers = vec!["terremotos".into()];
    s.urls = vec![("terremotos".into(), url)];
    s.timeout = Duration::from_secs(3);
    MapService::new(s, Arc::new(Fixed(1_717_198_170_000)))
}

struct Fixed(u64);

impl Clock for Fixed {
    fn now_unix_ms(&self) -> u64 {
        self.0
    }
}

/// Issue 13, finding 3, for the map: a feed's redirect to another loopback listener is refused and the layer's error
/// names the refusal; a redirect within the feed's own origin is followed.
#[test]
fn a_map_feed_redirect_to_an_internal_listener_is_refused() {
    let internal = Upstream::start(|_| Answer::json(200, quakes()));
    let admin = internal.url("/internal-admin");
    let up = Upstream::start(move |seen| match seen.path() {
        "/feed" => redirect(&admin),
        "/moved" => redirect("/quakes"),
        "/quakes" => Answer::json(200, quakes()),
        _ => Answer::html(404, ""),
    });
    let m = quake_map(up.url("/feed"));
    assert!(m.poll_slug("terremotos"));
    let layer = &m.layer_data("terremotos").unwrap()["layer"];
    assert_eq!(layer["status"], "error", "{layer}");
    let why = layer["last_error"].as_str().unwrap();
    assert!(why.starts_with("port_refused") && why.contains("/internal-admin"), "{why}");
    assert_eq!(internal.seen().len(), 0, "the internal listener was never reached");

    let m = quake_map(up.url("/moved"));
    assert!(m.poll_slug("terremotos"));
    let data = m.layer_data("terremotos").unwrap();
    assert_eq!(data["layer"]["status"], "ok", "{}", data["layer"]);
    assert_eq!(data["features"].as_array().unwrap().len(), 1);
    assert_eq!(up.count("/quakes"), 1);
}

fn client(policy: Policy) -> Client {
    let limits = ClientLimits {
        connect_timeout: Duration::from_secs(2),
        total_timeout: Duration::from_secs(3),
        body_bytes_max: 64 * 1_024,
        redirects_max: 3,
    };
    Client::new(limits, policy)
}

/// `fetch::Client` (sources, feeds): the URL asked is fetched as configured, even on loopback; a redirect within its
/// origin is followed as configured; any other redirect target goes through the guard, and only the allowlist opens
/// it. Loopback port A is configured, port B is not: A to B is refused unless B is allowlisted.
#[test]
fn client_redirects_leave_the_configured_origin_only_through_the_guard() {
    let other = Upstream::start(|_| page());
    let b = other.addr.port();
    let (to_b, to_b_name, to_b_siit) =
        (other.url("/b"), format!("http://localhost:{b}/b"), "http://[::ffff:0:127.0.0.1]/b".to_owned());
    let up = Upstream::start(move |seen| match seen.path() {
        "/to-b" => redirect(&to_b),
        "/to-b-by-name" => redirect(&to_b_name),
        "/to-siit" => redirect(&to_b_siit),
        "/to-file" => redirect("file:///etc/passwd"),
        "/to-userinfo" => redirect("http://user@example.com/"),
        "/to-self" => redirect("/page"),
        "/to-self-by-name" => {
            let port = seen.header("host").unwrap().rsplit_once(':').unwrap().1;
            redirect(&format!("http://localhost:{port}/page"))
        }
        "/loop" => redirect("/loop"),
        "/page" => page(),
        _ => Answer::html(404, ""),
    });
    let refused = |policy: Policy, path: &str, code: &str| {
        let e = client(policy).get(&up.url(path), &[]).unwrap_err();
        match &e {
            FetchError::RedirectRefused { hop: 1, refusal, .. } => assert_eq!(refusal.code(), code, "{path}: {e}"),
            other => panic!("{path}: {other:?}"),
        }
        assert_eq!(e.code(), code);
    };
    refused(Policy::default(), "/to-b", "port_refused");
    refused(Policy { allow: vec![], ports: vec![b] }, "/to-b", "address_refused");
    refused(Policy { allow: vec![], ports: vec![b] }, "/to-b-by-name", "address_refused");
    refused(Policy::default(), "/to-siit", "address_refused");
    refused(Policy::default(), "/to-file", "scheme_refused");
    refused(Policy::default(), "/to-userinfo", "userinfo_refused");
    // The configured host and port under another name is another origin: checked, and localhost is loopback.
    refused(Policy { allow: vec![], ports: vec![up.addr.port()] }, "/to-self-by-name", "address_refused");
    assert_eq!(other.seen().len(), 0, "nothing reached port B");

    let allowed = Policy { allow: vec![("127.0.0.1".into(), b)], ports: vec![] };
    let f = client(allowed).get(&up.url("/to-b"), &[]).unwrap();
    assert_eq!((f.status, other.count("/b")), (200, 1), "an allowlisted host:port is followed");

    let f = client(Policy::default()).get(&up.url("/to-self"), &[]).unwrap();
    assert_eq!(f.status, 200);
    assert!(String::from_utf8(f.body).unwrap().contains("fetched"));
    let f = client(Policy::default()).get(&up.url("/loop"), &[]).unwrap();
    assert_eq!(f.status, 302, "after redirects_max hops the redirect itself is the answer");
    assert_eq!(up.count("/loop"), 4, "the first request and three redirects");
}

/// After a POST, 303 (and 301, 302) become a GET without the body and without `Authorization`; a 307 would have to
/// repeat the body and is returned as it is.
#[test]
fn client_redirects_after_a_post() {
    let up = Upstream::start(|seen| match (seen.method.as_str(), seen.path()) {
        ("POST", "/see-other") => Answer::html(303, "").with_location("/results"),
        ("POST", "/temporary") => Answer::html(307, "").with_location("/results"),
        ("GET", "/results") => page(),
        _ => Answer::html(405, ""),
    });
    let c = client(Policy::default());
    let headers = [("Authorization", "Bearer secret"), ("Accept", "text/html")];
    let f = c.post_form(&up.url("/see-other"), &headers, &[("q", "rust")]).unwrap();
    assert_eq!(f.status, 200);
    let get = up.seen().into_iter().find(|s| s.path() == "/results").unwrap();
    assert_eq!((get.method.as_str(), get.body.len()), ("GET", 0));
    assert_eq!(get.header("authorization"), None);
    assert_eq!(get.header("accept"), Some("text/html"));
    let f = c.post_json(&up.url("/temporary"), &headers, b"{}").unwrap();
    assert_eq!(f.status, 307);
    assert_eq!(up.count("/results"), 1, "the 307 was not followed");
}

/// Once a third party chose a hop, the way back to the configured origin is its choice too: it goes through the
/// guard (and loopback is refused). Only `Accept` and `Accept-Language` leave the configured origin: a token the
/// operator configured for a feed does not.
#[test]
fn a_redirect_out_and_back_is_guarded_and_secrets_stay_home() {
    let home = Upstream::start(|seen| match seen.path() {
        "/out" => redirect(&format!("http://127.0.0.1:{}/back", seen.param("to").unwrap())),
        "/page" => page(),
        _ => Answer::html(404, ""),
    });
    let home_page = home.url("/page");
    let other = Upstream::start(move |seen| match seen.path() {
        "/back" => redirect(&home_page),
        _ => page(),
    });
    let b = other.addr.port();
    let allowed = Policy { allow: vec![("127.0.0.1".into(), b)], ports: vec![] };
    let headers = [("X-Feed-Token", "secret"), ("Accept", "text/html")];
    let e = client(allowed).get(&home.url(&format!("/out?to={b}")), &headers).unwrap_err();
    match &e {
        FetchError::RedirectRefused { hop: 2, .. } => {}
        other => panic!("the way back was not guarded: {other:?}"),
    }
    assert_eq!(home.count("/page"), 0, "the configured origin was reached through a third party's redirect");
    let at_other = other.seen().into_iter().find(|s| s.path() == "/back").unwrap();
    assert_eq!(at_other.header("x-feed-token"), None, "a configured secret left its origin");
    assert_eq!(at_other.header("accept"), Some("text/html"));
}
