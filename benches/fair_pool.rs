//! The starved pool (issue 41, item 4): `cargo bench --bench fair_pool [-- --trials N]`. In the default
//! configuration, four callers from one address each ask for five pages that never answer (the reader door); once
//! the pool holds their share, a fifth caller from another address reads a fast page through each door (`/extract`,
//! `/service` with `extract: 1`, MCP's `extract_page`), and then another call from the hostile address does; odd
//! trials spread the four hostile callers over four addresses. Prints, per door, the fifth caller's median and worst time over the trials,
//! and the server's peak memory (VmHWM). The target: the other address's page within 2 s. It starts the release
//! build beside it (glibc), or the binary `WEBSEARCHD_BIN` names (the static musl release that ships).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing, dead_code)]

#[path = "../tests/common/mod.rs"]
mod common;

use std::time::Duration;

use common::fair::{world, HOSTILE, OTHER};

fn main() {
    let args: Vec<String> = std::env::args().skip(1).filter(|a| a != "--bench").collect();
    let trials: usize = match args.iter().position(|a| a == "--trials") {
        Some(i) => args.get(i + 1).and_then(|n| n.parse().ok()).expect("--trials N"),
        None => 5,
    };
    let doors = ["extract", "service", "mcp"];
    let mut times: Vec<Vec<Duration>> = vec![Vec::new(); doors.len()];
    let mut statuses: Vec<Vec<String>> = vec![Vec::new(); doors.len()];
    let mut same = Vec::new();
    let mut peak = 0;
    for trial in 0..trials {
        let w = world(&[]);
        // Odd trials: the four hostile callers each from an address of its own.
        let hostile = w.starve(4, 4, trial % 2 == 1);
        for (i, door) in doors.iter().enumerate() {
            let (status, took) = w.fast_page(OTHER, door);
            times[i].push(took);
            statuses[i].push(status);
        }
        same.push(w.fast_page(HOSTILE, "extract"));
        peak = peak.max(w.server.status_bytes("VmHWM:"));
        drop(w);
        for h in hostile {
            let _ = h.join();
        }
    }
    println!(
        "fair_pool: 4 callers (from {HOSTILE}; from four addresses in odd trials) holding 5 hanging pages each, \
         {trials} trials, default configuration"
    );
    for (i, door) in doors.iter().enumerate() {
        let mut t = times[i].clone();
        t.sort();
        let ok = statuses[i].iter().filter(|s| *s == "ok").count();
        println!(
            "  {door:8} another address's fast page: median {:.3} s, worst {:.3} s, ok {ok}/{trials}",
            t[t.len() / 2].as_secs_f64(),
            t[t.len() - 1].as_secs_f64()
        );
    }
    let mut t: Vec<Duration> = same.iter().map(|(_, d)| *d).collect();
    t.sort();
    let ok = same.iter().filter(|(s, _)| s == "ok").count();
    println!(
        "  extract  a fast page of another call from the hostile address: median {:.3} s, worst {:.3} s, ok {ok}/{trials}",
        t[t.len() / 2].as_secs_f64(),
        t[t.len() - 1].as_secs_f64()
    );
    println!("  server peak RSS (VmHWM): {:.1} MB", peak as f64 / 1e6);
}
