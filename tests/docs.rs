//! The documentation holds together (issue 34): every relative link and `#anchor` in README.md and docs/*.md names a
//! file of the repository and, in a markdown file, one of its headings (by GitHub's anchors); each page's contents
//! list its sections; the README stays short. (The configuration tables are checked against `config::vars` in
//! `config`'s tests, the metrics against `/metrics` in tests/payments.rs.)
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)]

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// The README's length the issue allows ("at most about 200 lines").
const README_LINES_MAX: usize = 200;
/// The largest picture under docs/.
const PICTURE_BYTES_MAX: u64 = 150 * 1024;

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// README.md, then every page under docs/.
fn pages() -> Vec<PathBuf> {
    let mut docs: Vec<PathBuf> = std::fs::read_dir(root().join("docs"))
        .expect("docs/")
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "md"))
        .collect();
    docs.sort();
    assert!(docs.len() >= 5, "docs/ lost pages: {docs:?}");
    let mut all = vec![root().join("README.md")];
    all.extend(docs);
    all
}

/// Each line of the text with fenced code blocks blanked and inline code spans removed: what is left is where links
/// and headings are.
fn prose(text: &str) -> Vec<String> {
    let mut fenced = false;
    text.lines()
        .map(|line| {
            if line.trim_start().starts_with("```") {
                fenced = !fenced;
                return String::new();
            }
            if fenced {
                return String::new();
            }
            line.split('`').step_by(2).collect()
        })
        .collect()
}

/// GitHub's anchor of a heading: lowercased, letters, digits, `-` and `_` kept, spaces made `-`, the rest dropped.
fn slug(heading: &str) -> String {
    heading
        .trim()
        .to_lowercase()
        .chars()
        .filter_map(|c| match c {
            ' ' => Some('-'),
            c if c.is_alphanumeric() || c == '-' || c == '_' => Some(c),
            _ => None,
        })
        .collect()
}

/// The `##`-and-deeper headings of a markdown text as (level, anchor), a repeated anchor numbered as GitHub does.
fn headings(text: &str) -> Vec<(usize, String)> {
    let mut seen: BTreeMap<String, usize> = BTreeMap::new();
    let mut fenced = false;
    let mut out = Vec::new();
    for line in text.lines() {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
        }
        let level = line.chars().take_while(|&c| c == '#').count();
        if fenced || level == 0 || !line[level..].starts_with(' ') {
            continue;
        }
        let base = slug(&line[level..]);
        let n = seen.entry(base.clone()).or_insert(0);
        out.push((level, if *n == 0 { base } else { format!("{base}-{n}") }));
        *n += 1;
    }
    out
}

/// The targets of the inline links and images of a markdown text.
fn links(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    for line in prose(text) {
        let mut rest = line.as_str();
        while let Some(at) = rest.find("](") {
            rest = &rest[at + 2..];
            let end = rest.find(')').unwrap_or(rest.len());
            out.push(rest[..end].trim().to_owned());
            rest = &rest[end..];
        }
    }
    out
}

/// What is wrong with the links of `text`, the page at `path`: a missing file, or an anchor no heading has.
fn broken_links(path: &Path, text: &str) -> Vec<String> {
    let mut wrong = Vec::new();
    for target in links(text) {
        if target.contains("://") || target.starts_with("mailto:") {
            continue;
        }
        let (file, anchor) = target.split_once('#').unwrap_or((&target, ""));
        if file.is_empty() {
            if !headings(text).iter().any(|(_, a)| a == anchor) {
                wrong.push(format!("{}: ({target}): no heading #{anchor} in the page", path.display()));
            }
            continue;
        }
        let file = path.parent().unwrap().join(file);
        let Ok(file) = file.canonicalize() else {
            wrong.push(format!("{}: ({target}) names no file", path.display()));
            continue;
        };
        if !file.starts_with(root().canonicalize().unwrap()) {
            wrong.push(format!("{}: ({target}) is outside the repository", path.display()));
        }
        if anchor.is_empty() {
            continue;
        }
        let anchors: BTreeSet<String> = match std::fs::read_to_string(&file) {
            Ok(t) if file.extension().is_some_and(|e| e == "md") => headings(&t).into_iter().map(|(_, a)| a).collect(),
            _ => BTreeSet::new(),
        };
        if !anchors.contains(anchor) {
            wrong.push(format!("{}: ({target}): {} has no heading #{anchor}", path.display(), file.display()));
        }
    }
    wrong
}

#[test]
fn every_relative_link_resolves() {
    let mut wrong = Vec::new();
    let mut count = 0;
    for page in pages() {
        let text = std::fs::read_to_string(&page).unwrap();
        count += links(&text).len();
        wrong.extend(broken_links(&page, &text));
    }
    assert!(count > 100, "only {count} links found: is the link parser broken?");
    assert!(wrong.is_empty(), "{} broken link(s):\n{}", wrong.len(), wrong.join("\n"));
}

/// Every page's `##` sections are listed in its contents (a link to each section's anchor).
#[test]
fn every_page_lists_its_sections() {
    let mut wrong = Vec::new();
    for page in pages() {
        let text = std::fs::read_to_string(&page).unwrap();
        let linked: BTreeSet<String> =
            links(&text).into_iter().filter_map(|t| t.strip_prefix('#').map(str::to_owned)).collect();
        for (level, anchor) in headings(&text) {
            if level == 2 && !linked.contains(&anchor) {
                wrong.push(format!("{}: the contents lack #{anchor}", page.display()));
            }
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

/// The pictures of the docs stay small: they are in every clone, archive and package.
#[test]
fn the_pictures_are_small() {
    for entry in std::fs::read_dir(root().join("docs")).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "png") {
            let bytes = std::fs::metadata(&path).unwrap().len();
            assert!(bytes <= PICTURE_BYTES_MAX, "{} is {bytes} bytes: make it smaller (pngquant)", path.display());
        }
    }
}

#[test]
fn the_readme_is_short() {
    let lines = std::fs::read_to_string(root().join("README.md")).unwrap().lines().count();
    assert!(lines <= README_LINES_MAX, "README.md has {lines} lines; the rest belongs in docs/");
}

/// The checker finds what is broken (a file, an anchor, in a page and across pages) and reads anchors as GitHub makes
/// them.
#[test]
fn the_checker_finds_broken_links() {
    let page = root().join("docs/deploy.md");
    let text = "## A `code` heading: (x) → y\n\n## Twice\n\n## Twice\n\n```sh\n[not](a-link.md)\n```\n\
                [ok](#a-code-heading-x--y) [ok](#twice-1) [ok](api.md#signed-answers) [ok](../README.md) `[no](code.md)`\n\
                [bad](#nowhere) [bad](nothing.md) [bad](api.md#nowhere) [ok](https://example.org/x#y)\n";
    let wrong = broken_links(&page, text);
    assert_eq!(wrong.len(), 3, "{wrong:#?}");
    assert!(wrong[0].contains("#nowhere") && wrong[1].contains("nothing.md") && wrong[2].contains("api.md#nowhere"));
    assert_eq!(slug("Operator's view: `GET /core/state`"), "operators-view-get-corestate");
}
