//! The `extract` command's faults found on real pages (issue 14), on fixtures in `fixtures/extract/`; the
//! extractor's own faults are unit tests in `src/extract/tests.rs`.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)]

mod common;

use std::io::Read;
use std::process::{Command, Stdio};

#[test]
fn the_extract_command_says_when_a_page_has_no_content() {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/fixtures/extract/empty_shell.html");
    let out = Command::new(common::binary()).env_clear().args(["extract", "--file", path]).output().unwrap();
    // Not a success (issue 34): a script must tell an empty page from one that said something.
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    assert_eq!(String::from_utf8_lossy(&out.stdout), "");
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(err.lines().count(), 1, "one line: {err}");
    assert!(err.contains("no main content") && err.contains("empty_shell.html"), "{err}");
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
