//! Issue 33, finding 11 (the fetch's part): what a third party's server sends that the extractor cannot read as it
//! comes. A body compressed without being asked for (the fetcher sends no `Accept-Encoding`) was extracted as its
//! compressed bytes, and a UTF-16 page came out with a NUL between letters. Pages are fetched from loopback
//! (allowlisted past the SSRF guard) through `page::extract`, the path `extract` and `extract: true` take.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)]

mod common;

use std::io::Write as _;
use std::time::Duration;

use common::upstream::{Answer, Upstream};
use websearchd::fetch::guard::Policy;
use websearchd::fetch::untrusted::{Error, Limits};
use websearchd::page::{self, Page};

const BODY_BYTES_MAX: u64 = 256 * 1_024;

const PAGE: &str = "<html><head><title>Encodings</title></head><body><article><h1>Encodings</h1>\
    <p>The first paragraph of the page says something worth reading, in plain words.</p>\
    <p>Ünïcödé and 日本語 and 😀 survive the trip, as every other character does.</p></article></body></html>";

/// Fetches and extracts `/page`, answered with `answer`.
fn extract(answer: Answer) -> Result<Page, Error> {
    let site = Upstream::start(move |seen| match seen.path() {
        "/page" => answer.clone(),
        _ => Answer::html(404, ""),
    });
    let policy = Policy { allow: vec![("127.0.0.1".into(), site.addr.port())], ports: vec![] };
    let limits = Limits {
        connect_timeout: Duration::from_secs(2),
        deadline: Duration::from_secs(10),
        body_bytes_max: BODY_BYTES_MAX,
    };
    page::extract(&site.url("/page"), &policy, &limits, 0, "")
}

fn encoded(body: Vec<u8>, content_type: &'static str, coding: &str) -> Answer {
    let inner = Answer::Respond { status: 200, content_type, body };
    Answer::WithHeaders(Box::new(inner), vec![("Content-Encoding".into(), coding.into())])
}

fn gzip(data: &[u8]) -> Vec<u8> {
    let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    e.write_all(data).unwrap();
    e.finish().unwrap()
}

fn zlib(data: &[u8]) -> Vec<u8> {
    let mut e = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::default());
    e.write_all(data).unwrap();
    e.finish().unwrap()
}

#[track_caller]
fn check_read(page: Result<Page, Error>, what: &str) {
    let page = page.unwrap_or_else(|e| panic!("{what}: {e}"));
    assert!(page.markdown.contains("says something worth reading, in plain words"), "{what}: {}", page.markdown);
    assert!(page.markdown.contains("Ünïcödé and 日本語 and 😀 survive"), "{what}: {}", page.markdown);
    assert!(!page.markdown.contains('\0') && !page.markdown.contains('\u{fffd}'), "{what}: {:?}", page.markdown);
}

#[test]
fn a_body_compressed_unasked_is_inflated() {
    let html = "text/html; charset=utf-8";
    check_read(extract(encoded(gzip(PAGE.as_bytes()), html, "gzip")), "gzip");
    check_read(extract(encoded(gzip(PAGE.as_bytes()), html, "X-GZIP")), "x-gzip");
    check_read(extract(encoded(zlib(PAGE.as_bytes()), html, "deflate")), "deflate");
    check_read(extract(encoded(PAGE.into(), html, "identity")), "identity");
}

#[test]
fn a_coding_that_cannot_be_undone_or_a_broken_body_is_refused() {
    let html = "text/html";
    for (body, coding) in [
        (PAGE.as_bytes().to_vec(), "br"),
        (PAGE.as_bytes().to_vec(), "zstd"),
        (gzip(&gzip(PAGE.as_bytes())), "gzip, gzip"),
        (PAGE.as_bytes().to_vec(), "gzip"),
        (gzip(PAGE.as_bytes())[..40].to_vec(), "gzip"),
        ([&gzip(PAGE.as_bytes())[..10], &[0xff; 200][..]].concat(), "gzip"),
    ] {
        let e = extract(encoded(body, html, coding)).map(|p| p.markdown).unwrap_err();
        assert_eq!(e.code(), "content_encoding_refused", "{coding}: {e}");
    }
}

/// A small body that inflates past the byte cap is refused as too large, after reading no more than the cap.
#[test]
fn an_inflated_body_is_held_to_the_byte_cap() {
    let bomb = gzip(&vec![b' '; 4 * BODY_BYTES_MAX as usize]);
    assert!(bomb.len() < 8 * 1_024, "{}", bomb.len());
    let e = extract(encoded(bomb, "text/html", "gzip")).map(|p| p.markdown).unwrap_err();
    assert_eq!(e.code(), "too_large", "{e}");
    let within = [PAGE.as_bytes(), &vec![b' '; BODY_BYTES_MAX as usize - PAGE.len()]].concat();
    check_read(extract(encoded(gzip(&within), "text/html", "gzip")), "at the cap");
}

#[test]
fn a_utf16_page_is_read_as_text() {
    let le: Vec<u8> = PAGE.encode_utf16().flat_map(u16::to_le_bytes).collect();
    let be: Vec<u8> = PAGE.encode_utf16().flat_map(u16::to_be_bytes).collect();
    let respond = |content_type: &'static str, body: Vec<u8>| Answer::Respond { status: 200, content_type, body };
    check_read(extract(respond("text/html", [&[0xff, 0xfe][..], &le].concat())), "little-endian with a mark");
    check_read(extract(respond("text/html", [&[0xfe, 0xff][..], &be].concat())), "big-endian with a mark");
    check_read(extract(respond("text/html; charset=utf-16be", be.clone())), "big-endian by its charset");
    check_read(extract(respond("text/html", le.clone())), "little-endian without a mark or a charset");
    // Compressed and UTF-16 at once: inflated, then decoded.
    check_read(extract(encoded(gzip(&[&[0xff, 0xfe][..], &le].concat()), "text/html", "gzip")), "gzip of UTF-16");
}
