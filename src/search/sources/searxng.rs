//! SearXNG's JSON API (`/search?format=json`). Results in either the old or the new shape (`content` or none,
//! `publishedDate` or `pubdate`); empty `results` with `unresponsive_engines` is a failure of the instance, not "no
//! hits"; an HTML page where JSON was asked for is a bot-check interstitial (blocked) or something unknown.

use serde_json::Value;

use super::{iso_date, Hit, Page};
use crate::html::collapse_whitespace;

pub fn parse(body: &[u8]) -> Page {
    let value: Value = match serde_json::from_slice(body) {
        Ok(v) => v,
        Err(e) => return not_json(body, &e),
    };
    let Some(results) = value.get("results").and_then(Value::as_array) else {
        return Page::Unparseable("JSON without a `results` array".into());
    };
    let hits: Vec<Hit> = results.iter().filter_map(hit).collect();
    if !hits.is_empty() {
        return Page::Results(hits);
    }
    let unresponsive: Vec<String> = value
        .get("unresponsive_engines")
        .and_then(Value::as_array)
        .map(|engines| {
            engines
                .iter()
                .filter_map(|e| {
                    let parts: Vec<&str> = e.as_array()?.iter().filter_map(Value::as_str).collect();
                    Some(parts.join(": "))
                })
                .collect()
        })
        .unwrap_or_default();
    if unresponsive.is_empty() {
        Page::NoResults
    } else {
        Page::Blocked(format!("no results and unresponsive engines: {}", unresponsive.join(", ")))
    }
}

fn hit(r: &Value) -> Option<Hit> {
    let url = crate::search::url::unwrap_result_link(r.get("url")?.as_str()?)?;
    let title = collapse_whitespace(r.get("title")?.as_str()?);
    if title.is_empty() {
        return None;
    }
    let snippet = r.get("content").and_then(Value::as_str).map(collapse_whitespace).unwrap_or_default();
    let date = ["publishedDate", "pubdate"].iter().find_map(|k| r.get(*k)?.as_str().and_then(iso_date));
    Some(Hit { title, url: url.to_owned(), snippet, date })
}

/// A body that is not JSON: an HTML bot check is a block; anything else is unreadable.
fn not_json(body: &[u8], e: &serde_json::Error) -> Page {
    let head = String::from_utf8_lossy(body.get(..body.len().min(16_384)).unwrap_or_default()).to_ascii_lowercase();
    let html = head.trim_start().starts_with('<');
    let markers = [
        "verifying your request",
        "checking your browser",
        "just a moment",
        "/check/check",
        "anubis",
        "challenge-platform",
    ];
    if html && markers.iter().any(|m| head.contains(m)) {
        Page::Blocked("bot-check interstitial instead of JSON".into())
    } else if html {
        Page::Unparseable("HTML instead of JSON".into())
    } else {
        Page::Unparseable(format!("invalid JSON: {e}"))
    }
}
