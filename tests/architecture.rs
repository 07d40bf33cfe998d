//! The arrows between the parts point down (issue 32, ARCHITECTURE.md): a door (`mcp`, the SearXNG door, the page)
//! never imports `app`, which stays a router that only the command line starts; `openapi` does not import
//! `discovery` (discovery serves openapi's document, not the other way); the fetcher and the map take URL pieces from
//! the ground floor (`urls`), not from `search`. Read from the source text, so a new file is checked too.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// Every file under `src/` with its path relative to it (`mcp/http.rs`) and its text.
fn sources() -> Vec<(String, String)> {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    files
        .into_iter()
        .map(|p| (p.strip_prefix(&src).unwrap().to_string_lossy().into_owned(), std::fs::read_to_string(&p).unwrap()))
        .collect()
}

/// Whether `text` names the module `module` (`crate::app`, `super::app` from a module at the top, `use crate::{app`).
fn names(text: &str, module: &str) -> bool {
    let forms = [format!("crate::{module}::"), format!("crate::{module};"), format!("crate::{{{module}")];
    forms.iter().any(|f| text.contains(f.as_str()))
}

#[test]
fn no_part_but_the_command_line_imports_app() {
    let offenders: Vec<String> = sources()
        .into_iter()
        .filter(|(path, _)| !["app.rs", "cli.rs", "main.rs", "lib.rs"].contains(&path.as_str()))
        .filter(|(path, text)| names(text, "app") || (path.matches('/').count() == 0 && text.contains("super::app")))
        .map(|(path, _)| path)
        .collect();
    assert!(offenders.is_empty(), "these import app, which only the command line may start: {offenders:?}");
}

#[test]
fn openapi_does_not_import_discovery() {
    let (_, text) = sources().into_iter().find(|(p, _)| p == "openapi.rs").unwrap();
    assert!(!names(&text, "discovery"), "openapi imports discovery");
}

#[test]
fn fetch_and_map_take_url_pieces_from_the_ground_floor() {
    let offenders: Vec<String> = sources()
        .into_iter()
        .filter(|(path, _)| path.starts_with("fetch") || path.starts_with("map") || path == "urls.rs")
        .filter(|(_, text)| names(text, "search"))
        .map(|(path, _)| path)
        .collect();
    assert!(offenders.is_empty(), "these take from search: {offenders:?}");
}

#[test]
fn config_takes_no_file_name_from_the_parts_it_configures() {
    let (_, text) = sources().into_iter().find(|(p, _)| p == "config.rs").unwrap();
    for part in ["x402::gate::", "notary::"] {
        assert!(!text.contains(&format!("crate::{part}")), "config takes {part}");
    }
}

/// The check itself: each rule finds what it forbids.
#[test]
fn the_checks_see_an_import() {
    assert!(names("use crate::app::App;", "app"));
    assert!(names("crate::app::search_answer(x)", "app"));
    assert!(names("use crate::{app, config};", "app"));
    assert!(!names("crate::apikeys::ApiKeys", "app"));
    assert!(names("crate::search::url::origin(u)", "search"));
}
