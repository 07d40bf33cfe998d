//! One vocabulary of upstream failures (issue 16): a host name that does not resolve is `resolve_failed` for a search
//! source and a map feed (a source's was `io`), as it is for `extract`, whose guard resolves names itself (its test is
//! in `fetch::guard`; the guard refuses this test's host before resolving it). The host's first label is 64
//! characters long, one more than DNS allows, so the C library's resolver refuses it itself and no query leaves the
//! machine.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)]

mod common;

use common::Server;

const UNRESOLVABLE: &str = "http://aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa.invalid/x";

#[test]
fn a_host_that_does_not_resolve_is_resolve_failed_everywhere() {
    let server = Server::start(&[
        ("WEBSEARCHD_SOURCES", "ddg_html"),
        ("WEBSEARCHD_DDG_HTML_URL", UNRESOLVABLE),
        ("WEBSEARCHD_MAP_LAYERS", "terremotos"),
        ("WEBSEARCHD_MAP_TERREMOTOS_URL", UNRESOLVABLE),
    ]);
    let r = server.post_json("/service", r#"{"query":"rust"}"#);
    assert_eq!((r.status, r.error_code().as_str()), (502, "all_sources_failed"), "{}", r.text());
    assert_eq!(r.json()["error"]["sources"][0]["error"], "resolve_failed", "{}", r.text());

    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    let last_error = loop {
        let layer = server.get("/map/api/capa/terremotos").json()["layer"].clone();
        if let Some(e) = layer["last_error"].as_str() {
            break e.to_owned();
        }
        assert!(std::time::Instant::now() < deadline, "the feed was not polled: {layer}");
        std::thread::sleep(std::time::Duration::from_millis(50));
    };
    assert!(last_error.starts_with("resolve_failed"), "{last_error}");
}
