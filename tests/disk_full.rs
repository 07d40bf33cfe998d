//! Issue 13, the uncovered case: the disk fills while journals are written. The server runs with SIGXFSZ ignored and
//! its file-size limit (RLIMIT_FSIZE) lowered while it runs, so that a journal append gets EFBIG part-way through a
//! record, as it would get ENOSPC on a full disk. A failed append fails the request cleanly (503, a stable code,
//! `Retry-After`), leaves no half record, holds or frees the authorization as it should, and once the limit is
//! lifted the server serves again without a restart.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)]

mod common;

use std::os::unix::process::CommandExt;
use std::path::Path;

use common::pay::{paid_env, Facilitator, Payer};
use common::upstream::{Answer, Upstream};
use common::{own_fixture, Reply, Server};
use serde_json::{json, Value};
use websearchd::journal::Journal;

/// Starts the server with SIGXFSZ ignored (inherited across exec), so that going past the limit is an EFBIG error.
fn start(vars: &[(String, String)]) -> Server {
    Server::start_with(&common::pairs(vars), |c| {
        // SAFETY: between fork and exec only an async-signal-safe call is made.
        unsafe {
            c.pre_exec(|| {
                libc::signal(libc::SIGXFSZ, libc::SIG_IGN);
                Ok(())
            })
        }
    })
}

/// Sets the server's soft file-size limit (None: unlimited); false, with a notice, where the system refuses.
fn limit_file_size(server: &Server, bytes: Option<u64>) -> bool {
    let limit = libc::rlimit { rlim_cur: bytes.unwrap_or(libc::RLIM_INFINITY), rlim_max: libc::RLIM_INFINITY };
    // SAFETY: a valid pid, a pointer to a live rlimit, and a null pointer for the old value.
    let rc = unsafe { libc::prlimit(server.pid() as libc::pid_t, libc::RLIMIT_FSIZE, &limit, std::ptr::null_mut()) };
    if rc != 0 {
        eprintln!("notice: prlimit(RLIMIT_FSIZE) on the server failed ({}); skipping", std::io::Error::last_os_error());
    }
    rc == 0
}

fn len(path: &Path) -> u64 {
    std::fs::metadata(path).unwrap().len()
}

/// The journal ends with a complete record, parses without a torn tail, and opens.
#[track_caller]
fn whole(path: &Path) -> Vec<Value> {
    let bytes = std::fs::read(path).unwrap();
    assert_eq!(bytes.last(), Some(&b'\n'), "the journal ends with a complete record");
    let opened = Journal::read(path).unwrap();
    assert_eq!(opened.torn_bytes, 0);
    opened.records
}

fn line_lengths(path: &Path) -> Vec<u64> {
    std::fs::read(path).unwrap().split_inclusive(|&b| b == b'\n').map(|l| l.len() as u64).collect()
}

#[track_caller]
fn unavailable(r: &Reply, code: &str) {
    assert_eq!((r.status, r.error_code().as_str()), (503, code), "{}", r.text());
    assert_eq!(r.header("retry-after"), Some("30"));
}

#[test]
fn a_full_disk_under_the_payment_ledger() {
    let source = Upstream::start(|_| Answer::html(200, own_fixture("search/ddg_html_results.html")));
    let facilitator = Facilitator::start();
    let vars = paid_env(source.url("/html/"), facilitator.url());
    let server = start(&vars);
    let ledger = server.state_dir.path().join("data").join("payments.journal");
    let search = |payer: &Payer| {
        let accepted = server.post_json("/service", r#"{"query":"terms"}"#).json()["accepts"][0].clone();
        server.request(
            "POST",
            "/service",
            &[("Content-Type", "application/json"), ("PAYMENT-SIGNATURE", &payer.v2_header(&accepted))],
            br#"{"query":"rust"}"#,
        )
    };
    assert_eq!(search(&Payer::new(1)).status, 200);
    let full = len(&ledger);
    let lines = line_lengths(&ledger);
    let (verified, settling) = (lines[0], lines[1]);

    // No room for the `verified` record: refused before any work, nothing taken.
    if !limit_file_size(&server, Some(full + 40)) {
        return;
    }
    let payer = Payer::new(2);
    unavailable(&search(&payer), "ledger_unavailable");
    assert_eq!((len(&ledger), source.count("/html/"), facilitator.upstream.count("/settle")), (full, 1, 1));
    assert_eq!(whole(&ledger).len(), 3);

    // Room for `verified` but not for `settling`: the facilitator is not asked, the answer is withheld.
    assert!(limit_file_size(&server, Some(full + verified + settling / 2)));
    unavailable(&search(&payer), "ledger_unavailable");
    assert_eq!(facilitator.upstream.count("/settle"), 1, "no settlement without its record on disk");
    let records = whole(&ledger);
    assert_eq!(records.last().unwrap()["event"], "verified");

    // Space is back: the same authorization pays (it was released), without a restart.
    assert!(limit_file_size(&server, None));
    let r = search(&payer);
    assert_eq!(r.status, 200, "{}", r.text());
    assert!(r.header("payment-response").is_some());
    assert_eq!(facilitator.upstream.count("/settle"), 2);
    let events: Vec<String> = whole(&ledger).iter().map(|r| r["event"].as_str().unwrap().to_owned()).collect();
    assert_eq!(events[3..], ["verified", "verified", "settling", "settled"]);
    // And the ledger opens on the next start.
    let state = server.kill_keep_state();
    let server = Server::start_in(state, &common::pairs(&vars), |c| c);
    assert_eq!(server.get("/health").status, 200);
}

#[test]
fn a_full_disk_under_the_notary_journal() {
    let server = start(&[("WEBSEARCHD_SOURCES".to_string(), "ddg_html".to_string())]);
    let journal = server.state_dir.path().join("data").join("notary.journal");
    let notarize = |n: u32| {
        let hash = websearchd::sign::sha256_hex(format!("document {n}").as_bytes());
        let body = json!({"op": "notarize", "hash": hash}).to_string();
        server.request("POST", "/notary/service", &[("Content-Type", "application/json")], body.as_bytes())
    };
    let first: Vec<Value> = (1..=2).map(|n| notarize(n).json()).collect();
    let full = len(&journal);
    if !limit_file_size(&server, Some(full + 100)) {
        return;
    }
    for n in 3..5 {
        unavailable(&notarize(n), "journal_unavailable");
        assert_eq!(len(&journal), full, "no half receipt is left behind");
    }
    assert_eq!(server.get("/health").status, 200, "the server keeps serving");
    assert!(limit_file_size(&server, None));
    let next = notarize(5).json();
    assert_eq!(next["receipt"]["seq"], 3, "a receipt that was never written takes no number");
    assert_eq!(next["receipt"]["prev"], first[1]["receipt_sha256"]);
    assert_eq!(whole(&journal).len(), 3);
    let state = server.kill_keep_state();
    let server = Server::start_in(state, &[("WEBSEARCHD_SOURCES", "ddg_html")], |c| c);
    assert_eq!(notarize_on(&server)["receipt"]["seq"], 4);
}

fn notarize_on(server: &Server) -> Value {
    let body = json!({"op": "notarize", "hash": "a".repeat(64)}).to_string();
    server.request("POST", "/notary/service", &[("Content-Type", "application/json")], body.as_bytes()).json()
}
