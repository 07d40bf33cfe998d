//! Issue 41, item 4: slow pages cannot starve other callers. Four callers from one address ask for five pages that
//! never answer, in the default configuration; another caller's fast page is read through each door (the reader,
//! `/service`'s `extract`, MCP's `extract_page`) instead of waiting behind theirs until its deadline. Before the fair
//! pool, the hostile pages took every thread and the fast page was a timeout. (Timings: benches/fair_pool.rs.)
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)]

mod common;

use common::fair::{world, OTHER};

#[test]
fn another_callers_page_is_read_while_one_address_holds_hanging_pages() {
    // The pool has the workers' threads (the default: 2 per core, at least 8); one address may hold half.
    let w = world(&[]);
    let hostile = w.starve(4, 4);
    assert!(w.hanging() >= 4, "the hostile pages are being fetched: {}", w.hanging());
    for door in ["extract", "service", "mcp"] {
        let (status, took) = w.fast_page(OTHER, door);
        assert_eq!(status, "ok", "{door}: the fast page after {took:?}");
    }
    // The hostile address holds no more than its share: its pages wait behind its own.
    assert!(w.hanging() <= 8, "{}", w.hanging());
    drop(w);
    for h in hostile {
        let _ = h.join();
    }
}
