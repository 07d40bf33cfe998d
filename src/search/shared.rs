//! An answer read back from the shared store, after its seal opened (`store::entry`): taken only in the shape this
//! service writes (`Outcome::render`), every result within the bounds a source's result has, and cut to the
//! request's `max_results`. A node of the fleet wrote it; this is the check that a node of another version, or a
//! bug, cannot have another node serve (and sign) something no search of its own would give.

use serde_json::Value;

use super::sources::{is_iso_date, SNIPPET_CHARS_MAX, TITLE_CHARS_MAX};
use super::url::RESULT_URL_BYTES_MAX;
use super::MAX_RESULTS_MAX;

/// The members a result has: always the first five, `published` when its source dates it (the test
/// `what_a_node_renders_is_taken` holds this list to `Outcome::render`).
const RESULT_MEMBERS: [&str; 6] = ["position", "title", "url", "snippet", "source", "published"];
/// Bytes of a shared answer read at most: what the store holds (the longest answer a node renders, 20 results at
/// their bounds, takes 190 KB; the test `what_a_node_renders_is_taken` holds it within); a longer one is refused
/// before it is parsed.
const SHARED_ANSWER_BYTES_MAX: usize = crate::store::ANSWER_BYTES_MAX;

/// The shared answer in `bytes` (its `results`, cut to `max_results`, and its `sources`, as this node caches them);
/// why not, if it is not an answer.
pub fn answer(bytes: &[u8], max_results: usize) -> Result<(Vec<Value>, Vec<Value>), String> {
    if bytes.len() > SHARED_ANSWER_BYTES_MAX {
        return Err(format!("{} bytes, longer than any answer shared", bytes.len()));
    }
    let mut shared: Value = serde_json::from_slice(bytes).map_err(|e| format!("not JSON: {e}"))?;
    let mut list = |name: &str| match shared.get_mut(name).map(Value::take) {
        Some(Value::Array(items)) => Ok(items),
        _ => Err(format!("no `{name}` list")),
    };
    let (mut results, sources) = (list("results")?, list("sources")?);
    if results.len() > MAX_RESULTS_MAX {
        return Err(format!("{} results, more than any search keeps", results.len()));
    }
    for (i, result) in results.iter().enumerate() {
        check_result(result, i + 1).map_err(|e| format!("result {}: {e}", i + 1))?;
    }
    for (i, source) in sources.iter().enumerate() {
        let named = |m: &str| source.get(m).is_some_and(Value::is_string);
        if !(named("name") && named("status")) {
            return Err(format!("source {} is not an attempt's report", i + 1));
        }
    }
    results.truncate(max_results);
    Ok((results, sources))
}

/// A result at `position` as `Outcome::render` writes it.
fn check_result(result: &Value, position: usize) -> Result<(), &'static str> {
    let map = result.as_object().ok_or("not an object")?;
    if map.keys().any(|k| !RESULT_MEMBERS.contains(&k.as_str())) {
        return Err("a member no result has");
    }
    let text = |name: &str| map.get(name).and_then(Value::as_str).ok_or("a member missing or not a string");
    if map.get("position").and_then(Value::as_u64) != Some(position as u64) {
        return Err("its position is not its place");
    }
    if text("title")?.chars().nth(TITLE_CHARS_MAX).is_some()
        || text("snippet")?.chars().nth(SNIPPET_CHARS_MAX).is_some()
    {
        return Err("a title or snippet longer than a source's");
    }
    let url = text("url")?;
    if url.len() > RESULT_URL_BYTES_MAX || !(url.starts_with("https://") || url.starts_with("http://")) {
        return Err("not a result's URL");
    }
    if text("source")?.is_empty() {
        return Err("no source");
    }
    match map.get("published") {
        Some(Value::String(d)) if is_iso_date(d.as_bytes()) => Ok(()),
        Some(_) => Err("a date not YYYY-MM-DD"),
        None => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn result(position: usize) -> Value {
        json!({
            "position": position, "title": "T", "url": "https://example.com/", "snippet": "s", "source": "ddg_html",
        })
    }

    fn answer_of(results: Vec<Value>) -> Vec<u8> {
        let sources = json!([{ "name": "ddg_html", "status": "ok", "elapsed_ms": 3 }]);
        json!({ "results": results, "sources": sources }).to_string().into_bytes()
    }

    #[track_caller]
    fn refused(results: Vec<Value>, why: &str) {
        let e = answer(&answer_of(results), MAX_RESULTS_MAX).map(|_| ()).unwrap_err();
        assert!(e.contains(why), "{e}");
    }

    #[test]
    fn an_answer_is_cut_to_the_request() {
        let five: Vec<Value> = (1..=5).map(result).collect();
        let (results, sources) = answer(&answer_of(five.clone()), 2).unwrap();
        assert_eq!(results, five[..2]);
        assert_eq!(sources.len(), 1);
        let mut dated = result(1);
        dated["published"] = "2026-11-28".into();
        assert_eq!(answer(&answer_of(vec![dated.clone()]), 10).unwrap().0, [dated]);
    }

    /// Every member `Outcome::render` writes, at its bounds, is taken back as it was written.
    #[test]
    fn what_a_node_renders_is_taken() {
        use super::super::sources::Hit;
        use super::super::{Outcome, Ranked};
        let hit = |n: usize, date: Option<&str>| Ranked {
            hit: Hit {
                title: "t".repeat(TITLE_CHARS_MAX),
                url: format!("https://example.com/{}", "p".repeat(RESULT_URL_BYTES_MAX - 21 - n.to_string().len()))
                    + &n.to_string(),
                snippet: "é".repeat(SNIPPET_CHARS_MAX),
                date: date.map(str::to_owned),
            },
            source: "ddg_html",
        };
        let results = (1..=MAX_RESULTS_MAX).map(|n| hit(n, (n % 2 == 0).then_some("2026-11-28"))).collect();
        let rendered = Outcome { results, sources: Vec::new() }.render();
        let written = json!({ "results": rendered.results, "sources": rendered.sources }).to_string();
        let taken = answer(written.as_bytes(), MAX_RESULTS_MAX).unwrap();
        assert_eq!(taken, (rendered.results, rendered.sources));
        assert!(written.len() < SHARED_ANSWER_BYTES_MAX, "{}", written.len());
    }

    #[test]
    fn anything_but_an_answer_in_the_shape_written_is_refused() {
        assert!(answer(b"FORGED", 10).unwrap_err().starts_with("not JSON"));
        // An answer longer than any shared is refused unparsed, even one that is an answer.
        let mut padded = answer_of(vec![result(1)]);
        padded.resize(SHARED_ANSWER_BYTES_MAX + 1, b' ');
        assert!(answer(&padded, 10).unwrap_err().contains("longer than any answer shared"));
        assert!(answer(br#"{"results":[]}"#, 10).unwrap_err().contains("`sources`"));
        assert!(answer(br#"{"results":{},"sources":[]}"#, 10).unwrap_err().contains("`results`"));
        // 520,001 "results" in 1 MB once cost 35 MB; more than a search keeps is not an answer.
        refused((1..=MAX_RESULTS_MAX + 1).map(result).collect(), "more than any search keeps");
        refused(vec![json!({"position": 1})], "result 1: a member missing");
        refused(vec![json!(0)], "not an object");
        refused(vec![result(2)], "position");
        let mut r = result(1);
        r["title"] = json!(7);
        refused(vec![r], "not a string");
        let mut r = result(1);
        r["extra"] = json!("x");
        refused(vec![r], "a member no result has");
        let mut r = result(1);
        r["snippet"] = "s".repeat(SNIPPET_CHARS_MAX + 1).into();
        refused(vec![r], "longer");
        let mut r = result(1);
        r["url"] = "javascript:alert(1)".into();
        refused(vec![r], "URL");
        let mut r = result(1);
        r["published"] = "yesterday".into();
        refused(vec![r], "date");
        // Ten bytes are not a date: the shape is.
        for not_a_date in ["2026/11/28", "yesterday!", "2026-11-2x", "20261128--"] {
            let mut r = result(1);
            r["published"] = not_a_date.into();
            refused(vec![r], "date");
        }
        let e = answer(br#"{"results":[],"sources":[{"name":"x"}]}"#, 10).map(|_| ()).unwrap_err();
        assert!(e.contains("source 1"), "{e}");
    }
}
