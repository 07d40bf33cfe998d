//! Regression tests for extraction faults found on real pages (issue 14), each on a small fixture of its own in
//! `fixtures/extract/`, named after what broke.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)]

mod common;

use std::io::Read;
use std::process::{Command, Stdio};

use websearchd::extract::{budget, Extract, Extractor, Options};

fn fixture(name: &str) -> Vec<u8> {
    common::own_fixture(&format!("extract/{name}"))
}

/// The extract of `html`, the same whole and fed in chunks of 1, 2, 3, 7 and 64 bytes.
#[track_caller]
fn run(html: &[u8]) -> Extract {
    let whole = Extractor::run(html, Options::default());
    for size in [1, 2, 3, 7, 64] {
        let mut e = Extractor::new(Options::default());
        for chunk in html.chunks(size) {
            e.feed(chunk);
        }
        assert_eq!(e.finish(), whole, "chunk size {size}");
    }
    whole
}

#[test]
fn a_document_without_a_head_end_tag_keeps_its_body() {
    let md = run(&fixture("no_head_end.html")).markdown();
    assert!(md.starts_with("# Tide tables without a closing head\n\nThe end tag of the head element"), "{md}");
    assert!(md.contains("every paragraph in place."), "{md}");
    assert!(!md.contains("Harbour office"), "{md}");
}

#[test]
fn a_streamed_react_segment_is_read_although_hidden() {
    let md = run(&fixture("react_streamed.html")).markdown();
    assert!(md.contains("React streams a server-rendered page"), "{md}");
    assert!(md.contains("an extractor should read it there"), "{md}");
    assert!(!md.contains("Modal dialog"), "{md}");
    assert!(!md.contains("Loading"), "{md}");
}

#[test]
fn a_table_of_content_wins_over_the_paragraphs_below_it() {
    let md = run(&fixture("table_content.html")).markdown();
    assert!(md.starts_with("# Release history\n\n| Version | Date | Changes |"), "{md}");
    assert!(md.contains("| 3.1.1 | 2026-04-09 |"), "{md}");
}

#[test]
fn a_page_without_main_content_is_empty_not_a_lone_title() {
    let e = run(&fixture("empty_shell.html"));
    assert_eq!(e.title.as_deref(), Some("Dashboard | Example App"));
    assert!(e.blocks.is_empty(), "{:?}", e.blocks);
    assert_eq!(e.markdown(), "");
}

#[test]
fn the_extract_command_says_when_a_page_has_no_content() {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/fixtures/extract/empty_shell.html");
    let out = Command::new(common::binary()).env_clear().args(["extract", "--file", path]).output().unwrap();
    assert!(out.status.success());
    assert_eq!(String::from_utf8_lossy(&out.stdout), "");
    assert!(String::from_utf8_lossy(&out.stderr).contains("no main content"), "{:?}", out);
}

#[test]
fn a_first_block_over_the_budget_is_cut_at_a_sentence_end() {
    let e = run(&fixture("long_first_paragraph.html"));
    let fitted = budget::fit(&e.blocks, 30);
    assert!(fitted.truncated && fitted.tokens <= 30, "{fitted:?}");
    assert!(fitted.markdown.starts_with("# Budgets\n\nA budget is a promise about size."), "{fitted:?}");
    assert!(fitted.markdown.ends_with('.'), "{fitted:?}");
    // No sentence fits: a word boundary, never mid-word.
    let fitted = budget::fit(&e.blocks, 8);
    assert!(fitted.markdown.starts_with("# Budgets\n\nA budget"), "{fitted:?}");
    assert!(!fitted.markdown.contains("promise about size."), "{fitted:?}");
    let text = String::from_utf8_lossy(&fixture("long_first_paragraph.html")).into_owned();
    let last = fitted.markdown.split_whitespace().last().unwrap();
    assert!(text.contains(&format!(" {last} ")), "{last:?} is not a whole word");
}

#[test]
fn the_extract_command_stops_quietly_when_its_reader_goes() {
    // More than a pipe's buffer (64 KiB), so that the command is still writing when the reader closes the pipe.
    let dir = common::tempdir::TempDir::new("broken-pipe");
    let page = dir.path().join("long.html");
    let body: String = (0..3_000)
        .map(|i| format!("<p>Paragraph {i} says something long enough to be kept, with a comma, and more words.</p>\n"))
        .collect();
    std::fs::write(
        &page,
        format!("<html><head><title>Long</title></head><body><article>{body}</article></body></html>"),
    )
    .unwrap();
    let mut child = Command::new(common::binary())
        .env_clear()
        .args(["extract", "--file", page.to_str().unwrap(), "--tokens", "0"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Read the first bytes (as `head -c` would), then close the pipe.
    let mut stdout = child.stdout.take().unwrap();
    let mut first = [0u8; 16];
    stdout.read_exact(&mut first).unwrap();
    drop(stdout);
    let mut stderr = String::new();
    child.stderr.take().unwrap().read_to_string(&mut stderr).unwrap();
    let status = child.wait().unwrap();
    assert!(!stderr.contains("panicked") && !stderr.contains("Broken pipe"), "{stderr}");
    assert_eq!(status.code(), Some(0), "{stderr}");
}

// Page types (issue 14): the rules, each on a page of its kind.

#[test]
fn a_service_page_keeps_every_section() {
    let md = run(&fixture("service_sections.html")).markdown();
    for part in
        ["We clean offices", "## Offices", "Hull, deck and cabin", "Degreasing", "## Prices", "90 euros", "photographs"]
    {
        assert!(md.contains(part), "{part:?} missing from:\n{md}");
    }
    for junk in ["Contact", "All rights reserved"] {
        assert!(!md.contains(junk), "{junk:?} leaked into:\n{md}");
    }
}

#[test]
fn a_forum_thread_keeps_its_replies_in_a_region_named_comments() {
    let md = run(&fixture("forum_comments.html")).markdown();
    for part in ["My anchor keeps dragging", "A plough is poor in soft mud", "let it settle for a minute"] {
        assert!(md.contains(part), "{part:?} missing from:\n{md}");
    }
    assert!(!md.contains("volunteers"), "{md}");
}

#[test]
fn a_thread_served_inside_noscript_is_read() {
    // Discourse serves readers without scripts (and crawlers) the whole thread inside `<noscript>`.
    let md = run(&fixture("noscript_thread.html")).markdown();
    assert!(md.contains("renewed twice a night"), "{md}");
    assert!(md.contains("Keep the timer."), "{md}");
    assert!(!md.contains("JavaScript"), "{md}");
}

#[test]
fn a_listing_keeps_its_items_and_not_its_filters() {
    let md = run(&fixture("listing_cards.html")).markdown();
    for part in ["Coastal navigation", "Charts, tides and pilotage", "Marine diesel engines", "Reading the weather"] {
        assert!(md.contains(part), "{part:?} missing from:\n{md}");
    }
    for junk in ["Beginner", "About", "Quay 2"] {
        assert!(!md.contains(junk), "{junk:?} leaked into:\n{md}");
    }
}
