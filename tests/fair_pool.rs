//! Issue 41, item 4: slow pages cannot starve other callers. Four callers, from one address or from four, ask for
//! five pages that never answer, in the default configuration; another call's fast page is read through each door
//! (the reader, `/service`'s `extract`, MCP's `extract_page`), from another address or from theirs, instead of waiting
//! behind theirs until its deadline. Before the fair pool, the hostile pages took every thread and the fast page was
//! a timeout. (Timings: benches/fair_pool.rs.)
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)]

mod common;

use common::fair::{world, HOSTILE, OTHER};

#[test]
fn another_callers_page_is_read_while_one_address_holds_hanging_pages() {
    // The pool has the workers' threads (the default: 2 per core, at least 8); other calls' pages leave half free.
    for spread in [false, true] {
        let w = world(&[]);
        let hostile = w.starve(4, 4, spread);
        assert!(w.hanging() >= 4, "each hostile call's first page is being fetched: {}", w.hanging());
        for (client, door) in [(OTHER, "extract"), (OTHER, "service"), (OTHER, "mcp"), (HOSTILE, "extract")] {
            let (status, took) = w.fast_page(client, door);
            assert_eq!(status, "ok", "spread {spread}, {client} through {door}: the fast page after {took:?}");
        }
        // The hostile calls' other pages leave the reserve free: at most 4 + 3 of their pages were asked for.
        assert!(w.hanging() <= 7, "{}", w.hanging());
        drop(w);
        for h in hostile {
            let _ = h.join();
        }
    }
}
