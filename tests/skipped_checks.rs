//! One visible summary of the checks that `cargo test` skips on this machine, and why (issue 16: about 45 checks
//! skip without `../shared` and the interop venv, and each skip's notice is hidden by the test harness, which shows
//! a passing test's output only with `--nocapture`).
//!
//! The summary is written to the process's standard error directly: the harness captures `print!` and `eprint!`,
//! not writes to `std::io::stderr()`, so it shows in every `cargo test` run (between the other test binaries' lines).
//! A skip is a notice, not a failure, except where every input must be present: with `WEBSEARCHD_REQUIRE_INPUTS=1`
//! (`.ci/run` sets it; CI runs as root with `../shared` and the interop venv) a missing input fails the summary, so
//! that a CI machine that lost one does not pass green with dozens of checks skipped.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)]

mod common;

use std::io::Write;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

/// An optional input of the test suite, the checks that skip without it (counted in the sources: each
/// `(file, marker)` occurrence is one check), and how to provide it.
struct Input {
    what: String,
    present: bool,
    checks_in: &'static [(&'static str, &'static str)],
    how: &'static str,
}

fn python() -> PathBuf {
    std::env::var_os("WEBSEARCHD_PYTHON")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/.venv/bin/python")))
}

fn inputs() -> Vec<Input> {
    let shared = common::shared_dir();
    let folder = |rel: &str, checks_in, how| Input {
        what: shared.join(rel).display().to_string(),
        present: shared.join(rel).is_dir(),
        checks_in,
        how,
    };
    const SHARED: &str = "set WEBSEARCHD_SHARED_DIR (default: ../shared beside the project)";
    vec![
        folder(
            "fixtures/search",
            &[
                ("src/search/sources/tests.rs", "shared(\""),
                ("tests/search.rs", "shared_fixture(\"search/"),
                ("tests/fuzz_replay.rs", "shared_dir().join(\"fixtures/search\")"),
            ],
            SHARED,
        ),
        folder(
            "fixtures/map",
            &[("tests/map.rs", "fixture(\""), ("tests/fuzz_replay.rs", "shared_dir().join(\"fixtures/map\")")],
            SHARED,
        ),
        folder(
            "fixtures/x402",
            &[
                ("src/x402/eip712/tests.rs", "vectors() else"),
                ("src/x402/eip712/tests.rs", "vectors();"),
                ("src/x402/payment/tests.rs", "eip3009_vectors.json"),
            ],
            SHARED,
        ),
        folder("fixtures/jcs", &[("src/jcs.rs", "fn official_vectors")], SHARED),
        folder(
            "bench/aeb",
            &[("tests/aeb_metric.rs", "#[test]"), ("tests/fuzz_replay.rs", "shared_dir().join(\"bench/aeb/html\")")],
            SHARED,
        ),
        Input {
            what: format!("the interop Python {}", python().display()),
            present: python().exists(),
            checks_in: &[("tests/interop.rs", "#[test]")],
            how: "run .ci/run (python3 -m venv .venv && .venv/bin/pip install -r tests/interop/requirements.txt) or \
                  set WEBSEARCHD_PYTHON",
        },
        Input {
            what: format!("{} (a real Redis for the shared-store tests)", common::redis::BINARY),
            present: common::redis::available(),
            checks_in: &[
                ("tests/redis.rs", "RedisServer::start() else"),
                ("tests/redis.rs", "= paid_fleet("),
                ("tests/redis.rs", "RedisServer::start_with(&options"),
            ],
            how: "apt-get install redis-server (.ci/run does)",
        },
        Input {
            what: "openssl (the certificates of the rediss:// test)".into(),
            present: std::process::Command::new("openssl").arg("version").output().is_ok(),
            checks_in: &[("tests/redis.rs", "make_certificates(dir.path()) else")],
            how: "apt-get install openssl (.ci/run does)",
        },
        Input {
            what: "one of the browser test tools (Node.js, tests/browser/node_modules, Chromium)".into(),
            present: common::browser_tools().is_ok(),
            checks_in: &[("tests/map_page.rs", "browser_tools_or_skip()"), ("tests/dashboard.rs", "browser_tools_or_skip()")],
            how: "run .ci/run (apt-get install chromium nodejs npm; cd tests/browser && npm ci) or set WEBSEARCHD_CHROMIUM",
        },
        Input {
            what: "root (ownership checks give files to another user)".into(),
            present: std::fs::metadata("/proc/self").is_ok_and(|m| m.uid() == 0),
            checks_in: &[("tests/admin.rs", "= root_instance(")],
            how: "run the tests as root (CI does)",
        },
    ]
}

fn checks(input: &Input) -> usize {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    input
        .checks_in
        .iter()
        .map(|(file, marker)| std::fs::read_to_string(root.join(file)).unwrap_or_default().matches(marker).count())
        .sum()
}

#[test]
fn summary_of_skipped_checks() {
    let required = common::inputs_required();
    let missing: Vec<(usize, Input)> = inputs().into_iter().filter(|i| !i.present).map(|i| (checks(&i), i)).collect();
    if missing.is_empty() {
        return;
    }
    let total: usize = missing.iter().map(|(n, _)| n).sum();
    let mut text =
        format!("\nwebsearchd: {total} check(s) skip on this machine for missing test inputs (see README, Tests):\n");
    for (n, input) in &missing {
        let mut files: Vec<&str> = input.checks_in.iter().map(|(f, _)| *f).collect();
        files.dedup();
        text.push_str(&format!("  - {n} in {}: {} is absent; {}\n", files.join(", "), input.what, input.how));
    }
    let _ = std::io::stderr().write_all(text.as_bytes());
    assert!(!required, "WEBSEARCHD_REQUIRE_INPUTS=1, and {total} check(s) skip:{text}");
}

/// Every file the summary counts in still holds its marker: a renamed helper must not make the count silently 0.
#[test]
fn the_counted_markers_exist() {
    for input in inputs() {
        for (file, marker) in input.checks_in {
            let text = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join(file)).unwrap();
            assert!(text.contains(marker), "{file} no longer contains {marker:?}: update tests/skipped_checks.rs");
        }
    }
}
