//! One visible summary of the checks that `cargo test` skips on this machine, and why (issue 16: about 45 checks
//! skip without `../shared` and the interop venv, and each skip's notice is hidden by the test harness, which shows
//! a passing test's output only with `--nocapture`; a skipped check counts as passed).
//!
//! The summary ends `cargo test`'s output (issue 34; it was line 760 of 806): the file's name sorts last, so cargo
//! runs this binary after every other (the package `extract`'s unit tests first: cargo takes the workspace's packages
//! in the order of their names; then websearchd's library's and binary's unit tests, then the integration tests in
//! the order of their names; neither package has doctests, `doctest = false` in each Cargo.toml), and it runs without
//! the test harness (`harness = false`), which would print its own lines after it: `main` makes its checks, then
//! writes the summary, whose last line is the count. A skip is a notice, not a failure, except where every input must be
//! present: with `WEBSEARCHD_REQUIRE_INPUTS=1` (`.ci/run` sets it; CI runs as root with `../shared` and the interop
//! venv) a missing input fails the summary, so that a CI machine that lost one does not pass green with dozens of
//! checks skipped.
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

fn summary_of_skipped_checks() {
    let required = common::inputs_required();
    let missing: Vec<(usize, Input)> = inputs().into_iter().filter(|i| !i.present).map(|i| (checks(&i), i)).collect();
    let text = summary(&missing);
    let _ = std::io::stderr().write_all(text.as_bytes());
    assert!(!required || missing.is_empty(), "WEBSEARCHD_REQUIRE_INPUTS=1, and checks skip:{text}");
}

/// The summary's text: what skipped and how to provide it, ending with the count (the line a reader sees last).
fn summary(missing: &[(usize, Input)]) -> String {
    if missing.is_empty() {
        return "\nwebsearchd: no check skipped: every test input is present.\n".into();
    }
    let total: usize = missing.iter().map(|(n, _)| n).sum();
    let mut text = String::from("\nwebsearchd: checks skipped for missing test inputs (docs/development.md, Tests):\n");
    for (n, input) in missing {
        let mut files: Vec<&str> = input.checks_in.iter().map(|(f, _)| *f).collect();
        files.dedup();
        text.push_str(&format!("  - {n} in {}: {} is absent; {}\n", files.join(", "), input.what, input.how));
    }
    text.push_str(&format!(
        "websearchd: {total} check(s) SKIPPED on this machine (counted as passed above); \
         WEBSEARCHD_REQUIRE_INPUTS=1 makes a skip fail.\n"
    ));
    text
}

/// Every file the summary counts in still holds its marker: a renamed helper must not make the count silently 0.
fn the_counted_markers_exist() {
    for input in inputs() {
        for (file, marker) in input.checks_in {
            let text = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join(file)).unwrap();
            assert!(text.contains(marker), "{file} no longer contains {marker:?}: update tests/zz_skipped_checks.rs");
        }
    }
}

/// This binary runs last, so its summary ends `cargo test`'s output: its name sorts after every other test file's,
/// every other package of the workspace sorts before websearchd (cargo tests the packages in that order), no doctest
/// pass follows it, and no harness prints after it.
fn the_summary_comes_last() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let this = Path::new(file!()).file_name().unwrap().to_owned();
    for entry in std::fs::read_dir(root.join("tests")).unwrap() {
        let name = entry.unwrap().file_name();
        if Path::new(&name).extension().is_some_and(|e| e == "rs") {
            assert!(name <= this, "tests/{} runs after tests/{}: rename one", name.display(), this.display());
        }
    }
    let manifest = std::fs::read_to_string(root.join("Cargo.toml")).unwrap();
    let lib = manifest.split("\n[lib]\n").nth(1).expect("Cargo.toml has a [lib] section").split("\n[").next().unwrap();
    assert!(lib.lines().any(|l| l.trim() == "doctest = false"), "a doctest pass would print after the summary");
    assert!(
        manifest.contains("[[test]]\nname = \"zz_skipped_checks\"\nharness = false\n"),
        "the test harness would print its lines after the summary"
    );
    let members = manifest.split("\nmembers = [").nth(1).expect("Cargo.toml names the workspace's members");
    let members = members.split(']').next().unwrap();
    for member in members.split(',').map(|m| m.trim().trim_matches('"')).filter(|m| !m.is_empty()) {
        let its = std::fs::read_to_string(root.join(member).join("Cargo.toml")).unwrap();
        let name = its.split("\n[package]\nname = \"").nth(1).and_then(|n| n.split('"').next()).unwrap();
        assert!(
            name < "websearchd",
            "the package {name} ({member}) sorts after websearchd: its tests would print last"
        );
        let lib = its.split("\n[lib]\n").nth(1).expect("the member has a [lib] section").split("\n[").next().unwrap();
        assert!(lib.lines().any(|l| l.trim() == "doctest = false"), "{member}: a doctest pass would print last");
    }
}

fn the_summary_ends_with_the_count() {
    let missing = vec![
        (3, Input { what: "x".into(), present: false, checks_in: &[("a.rs", "m")], how: "get x" }),
        (4, Input { what: "y".into(), present: false, checks_in: &[("b.rs", "m")], how: "get y" }),
    ];
    let text = summary(&missing);
    let last = text.lines().last().unwrap();
    assert!(last.starts_with("websearchd: 7 check(s) SKIPPED"), "{text}");
    assert!(text.contains("  - 3 in a.rs: x is absent; get x\n"), "{text}");
    assert!(summary(&[]).contains("no check skipped"));
}

fn main() {
    the_counted_markers_exist();
    the_summary_comes_last();
    the_summary_ends_with_the_count();
    summary_of_skipped_checks();
}
