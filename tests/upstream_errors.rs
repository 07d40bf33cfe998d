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

/// Issue 41, item 7: a source that compresses its answer though it was not asked to (the search sends no
/// `Accept-Encoding` with DuckDuckGo's form) is read as it meant it: gzip and deflate are undone (within the byte
/// cap), and a coding that cannot be (`br`) is the source's error `content_encoding_refused`, named, never an
/// unreadable page.
#[test]
fn a_sources_unasked_content_coding_is_undone_or_refused_by_name() {
    use std::io::Write;
    let page = common::own_fixture("search/ddg_html_results.html");
    let up = common::upstream::Upstream::start(move |seen| {
        assert!(seen.header("accept-encoding").is_none(), "not asked");
        let coding = seen.param("q").unwrap_or_default();
        let body = match coding.as_str() {
            "gzip" => {
                let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
                e.write_all(&page).unwrap();
                e.finish().unwrap()
            }
            // 64 MB of zeros in 64 KB: inflated only up to the source's byte cap.
            "bomb" => {
                let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
                (0..1_024).for_each(|_| e.write_all(&[0; 65_536]).unwrap());
                e.finish().unwrap()
            }
            "deflate" => {
                let mut e = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::default());
                e.write_all(&page).unwrap();
                e.finish().unwrap()
            }
            _ => page.clone(),
        };
        let answer = Box::new(common::upstream::Answer::html(200, body));
        let coding = if coding == "bomb" { "gzip".into() } else { coding };
        common::upstream::Answer::WithHeaders(answer, vec![("Content-Encoding".into(), coding)])
    });
    let env = common::sources_env(&up, "ddg_html");
    let server = Server::start(&common::pairs(&env));
    for coding in ["gzip", "deflate"] {
        let r = server.post_json("/service", &format!(r#"{{"query":"{coding}"}}"#));
        assert_eq!(r.status, 200, "{coding}: {}", r.text());
        assert_eq!(r.json()["results"][0]["url"], "https://www.rust-lang.org/", "{coding}: {}", r.text());
    }
    let r = server.post_json("/service", r#"{"query":"bomb"}"#);
    assert_eq!(r.json()["error"]["sources"][0]["error"], "too_large", "{}", r.text());
    let r = server.post_json("/service", r#"{"query":"br"}"#);
    assert_eq!((r.status, r.error_code().as_str()), (502, "all_sources_failed"), "{}", r.text());
    let source = &r.json()["error"]["sources"][0];
    assert_eq!(source["error"], "content_encoding_refused", "{}", r.text());
    assert!(source["detail"].as_str().unwrap().contains("\"br\""), "{}", r.text());
}
