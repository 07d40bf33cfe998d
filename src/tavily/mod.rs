//! The Tavily door: `POST /tavily/search` and `POST /tavily/extract` answer in Tavily's shapes, so that the agent
//! frameworks that call Tavily by default (`tavily-python`'s `TavilyClient(api_base_url=...)`, LangChain's
//! `TavilySearch` and `TavilyExtract`) search and read through websearchd. The work is the one answer pipeline's
//! (`answer::search_answer`, `page::Pages::read`, the query-focused passages of `extract::focus::best`); this module
//! turns it into Tavily's members:
//!
//! | Tavily | websearchd |
//! |---|---|
//! | `content` (`search_depth` basic, fast, ultra-fast) | the source's snippet |
//! | `content` (`advanced`) | the page's `chunks_per_source` passages most relevant to the query, joined by ` [...] ` (the snippet when the page could not be read or holds none) |
//! | `raw_content` | the page (markdown, or its text), for the first results a search extracts pages of (`EXTRACT_PAGES_MAX`); `null` after |
//! | `answer` | extractive: the fetched pages' passages most relevant to the query, quoted as they stand; `null` when none holds a word of it |
//! | `score` | the source's rank as a number: 1 for the first result down to just above 0.5 for the last |
//! | `published_date` | the date the source gave (`YYYY-MM-DD`) |
//! | `images`, `favicon`, `follow_up_questions` | empty: nothing to give |
//!
//! Errors are Tavily's `{"detail": {"error": "..."}}`, with our stable `code` (and `field`) beside the words. This
//! module imports no other door's handling: URLs are checked as the reader checks them (`reader::url_count`,
//! `mcp::tools::url_argument`).

pub mod request;

use std::time::Instant;

use serde_json::{json, Map, Value};

use crate::error::ApiError;
use crate::extract::focus;
use crate::http::Response;
use crate::search::Engine;
pub use request::{Context, ExtractCall, Format, SearchCall, EXTRACT_CALL_MAX};

/// What joins the passages of one page (Tavily's separator).
pub const CHUNK_SEPARATOR: &str = " [...] ";
/// Passages an extractive answer quotes at most.
pub const ANSWER_PASSAGES_MAX: usize = 2;

/// The pipeline's parts a call needs.
pub struct Work<'a> {
    pub engine: &'a Engine,
    pub pages: &'a crate::page::Pages,
    pub kid: &'a str,
    /// Who the pages are read for on the extraction pool.
    pub caller: crate::page::Caller,
    /// Now (Unix ms): the answer's `issued_at`.
    pub now_ms: u64,
    /// One page's fetch deadline and the pages one call reads side by side (`WEBSEARCHD_FETCH_TIMEOUT_MS`,
    /// `WEBSEARCHD_EXTRACT_PARALLEL`): an extract call's deadline.
    pub fetch_deadline: std::time::Duration,
    pub parallel: usize,
}

/// A search answered in Tavily's shape. An error when the search failed (every source failed or none could be
/// asked): its words name the sources and why.
pub fn search(work: &Work<'_>, call: &SearchCall, request_id: &str) -> Result<Value, ApiError> {
    let started = Instant::now();
    let answer =
        crate::answer::search_answer((work.engine, work.pages), work.kid, &call.search, (work.caller, request_id))?;
    let mut results: Vec<Value> = list(&answer, "results").into_iter().filter(|r| admitted(call, r)).collect();
    if !call.prefer.is_empty() {
        use crate::search::controls::{Controls, Region, SafeSearch};
        if let Some(region) = Region::parse(Region::NONE) {
            let include_domains = call.prefer.clone();
            let time_range = None;
            let preferred = Controls {
                time_range,
                region,
                safesearch: SafeSearch::Off,
                include_domains,
                exclude_domains: Vec::new(),
            };
            // Each part keeps the source's order.
            let (first, after): (Vec<Value>, Vec<Value>) =
                results.into_iter().partition(|r| preferred.admits(str_of(r, "url")));
            results = first.into_iter().chain(after).collect();
        }
    }
    results.truncate(call.max_results);
    let urls: Vec<String> = results.iter().take(call.pages()).map(|r| str_of(r, "url").to_owned()).collect();
    let within = call.fetch_timeout.map_or(work.fetch_deadline, |t| t.min(work.fetch_deadline));
    let query = call.search.query.as_str();
    let pages =
        if urls.is_empty() { Vec::new() } else { work.pages.read_within(work.caller, &urls, (0, query), within) };
    let markdown = |i: usize| -> Option<&str> {
        pages.get(i).filter(|p| str_of(p, "status") == "ok").and_then(|p| p.get("markdown")).and_then(Value::as_str)
    };
    let n = results.len().max(1) as f64;
    let mut out = Vec::with_capacity(results.len());
    for (i, r) in results.iter().enumerate() {
        let mut content = str_of(r, "snippet").to_owned();
        if call.advanced {
            if let Some(md) = markdown(i) {
                // Text, as Tavily's `content` is.
                let chunks: Vec<String> = passages(md, query, call.chunks).iter().map(|c| plain(c)).collect();
                if !chunks.is_empty() {
                    content = chunks.join(CHUNK_SEPARATOR);
                }
            }
        }
        let raw = call.raw.and_then(|format| markdown(i).map(|md| as_format(md, format)));
        let mut result = Map::new();
        result.insert("title".into(), str_of(r, "title").into());
        result.insert("url".into(), str_of(r, "url").into());
        result.insert("content".into(), content.into());
        // Three decimals, as Tavily writes its scores.
        result.insert("score".into(), (((1.0 - i as f64 / (2.0 * n)) * 1_000.0).round() / 1_000.0).into());
        result.insert("raw_content".into(), raw.map_or(Value::Null, Value::from));
        if let Some(date) = r.get("published").and_then(Value::as_str) {
            result.insert("published_date".into(), date.into());
        }
        if call.favicon {
            result.insert("favicon".into(), Value::Null);
        }
        out.push(Value::Object(result));
    }
    let extractive = if call.answer { answer_of(&pages, &call.search.query) } else { None };
    let mut body = json!({
        "query": call.search.query,
        "answer": extractive,
        "images": [],
        "results": out,
        "follow_up_questions": null,
        "response_time": seconds(started),
        "request_id": request_id,
    });
    if let Some(map) = body.as_object_mut() {
        if call.auto_parameters {
            map.insert("auto_parameters".into(), json!({ "topic": call.topic.name(), "search_depth": call.depth }));
        }
        if call.usage {
            map.insert("usage".into(), json!({ "credits": if call.advanced { 2 } else { 1 } }));
        }
        // Ours, beside Tavily's members: every source's report as `/service` gives it, whether the search was
        // answered from the cache and how old it is, when and with which key the answer is signed.
        map.insert("sources".into(), Value::Array(list(&answer, "sources")));
        for member in ["cached", "age_s"] {
            if let Some(v) = answer.get(member) {
                map.insert(member.into(), v.clone());
            }
        }
        map.insert("issued_at".into(), crate::clock::rfc3339_ms(work.now_ms).into());
        map.insert("kid".into(), work.kid.into());
    }
    Ok(body)
}

/// An extract call answered in Tavily's shape: the pages read (`results`), and the others with why
/// (`failed_results`), each in the order asked.
pub fn extract(work: &Work<'_>, call: &ExtractCall, request_id: &str) -> Value {
    let started = Instant::now();
    let readable = call.readable();
    // A fetch deadline for each round of pages read side by side, within the caller's `timeout` and the cap.
    let rounds = u32::try_from(readable.len().div_ceil(work.parallel.max(1)).max(1)).unwrap_or(u32::MAX);
    let cap = call.timeout.map_or(EXTRACT_CALL_MAX, |t| t.min(EXTRACT_CALL_MAX));
    let within = work.fetch_deadline.saturating_mul(rounds).min(cap);
    let mut read = work.pages.read_within(work.caller, &readable, (0, &call.query), within).into_iter();
    let (mut results, mut failed) = (Vec::new(), Vec::new());
    for asked in &call.urls {
        let (url, page) = match asked {
            Ok(url) => (url, read.next().unwrap_or(Value::Null)),
            Err((url, why)) => {
                failed.push(json!({ "url": url, "error": why }));
                continue;
            }
        };
        let page = &page;
        let md = page.get("markdown").and_then(Value::as_str).filter(|_| str_of(page, "status") == "ok");
        let Some(md) = md else {
            let why = format!("{}: {}", str_of(page, "status"), str_of(page, "error"));
            failed.push(json!({ "url": url, "error": why }));
            continue;
        };
        let text = if call.query.is_empty() {
            as_format(md, call.format)
        } else {
            // The passages most relevant to the query, or the page's first ones when none holds a word of it.
            let mut chunks = passages(md, &call.query, call.chunks);
            if chunks.is_empty() {
                chunks =
                    md.split("\n\n").filter(|b| !b.trim().is_empty()).take(call.chunks).map(str::to_owned).collect();
            }
            as_format(&chunks.join(CHUNK_SEPARATOR), call.format)
        };
        let sha = page.get("content_sha256").cloned().unwrap_or(Value::Null);
        let mut result = json!({ "url": url, "raw_content": text, "images": [], "content_sha256": sha });
        if let (true, Some(map)) = (call.favicon, result.as_object_mut()) {
            map.insert("favicon".into(), Value::Null);
        }
        results.push(result);
    }
    let mut body = json!({
        "results": results,
        "failed_results": failed,
        "response_time": seconds(started),
        "request_id": request_id,
    });
    let read_ok = body.get("results").and_then(Value::as_array).map_or(0, Vec::len);
    if let (true, Some(map)) = (call.usage, body.as_object_mut()) {
        // Tavily's price: a credit for every five URLs read.
        map.insert("usage".into(), json!({ "credits": read_ok.div_ceil(5) }));
    }
    if let Some(map) = body.as_object_mut() {
        map.insert("issued_at".into(), crate::clock::rfc3339_ms(work.now_ms).into());
        map.insert("kid".into(), work.kid.into());
    }
    body
}

/// Distinct API keys whose calls are counted one by one; the calls of keys past them are counted together (under
/// `other`), so the counts stay bounded whatever the keys file held over time.
pub const KEY_COUNTS_MAX: usize = 1_024;

/// Calls through the door by API key id (`apikeys::key_id`), for `/metrics`.
#[derive(Default)]
pub struct KeyCounts(std::sync::Mutex<std::collections::BTreeMap<String, u64>>);

impl KeyCounts {
    pub fn count(&self, id: String) {
        let mut counts = self.0.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        let id = if counts.len() < KEY_COUNTS_MAX || counts.contains_key(&id) { id } else { "other".to_owned() };
        *counts.entry(id).or_insert(0) += 1;
    }

    /// The Prometheus family `websearchd_tavily_key_calls_total{key="<id>"}`.
    pub fn metrics(&self) -> String {
        let counts = self.0.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        let mut out = String::new();
        crate::metrics::family(
            &mut out,
            "websearchd_tavily_key_calls_total",
            "counter",
            "Calls admitted through the Tavily door by an API key, by the key's id (its SHA-256's first 8 hex digits).",
        );
        for (id, n) in counts.iter() {
            out.push_str(&format!("websearchd_tavily_key_calls_total{{key=\"{id}\"}} {n}\n"));
        }
        out
    }
}

/// Tavily's error answer: `{"detail": {"error": "<words>", "code": ..., ...}}` with the error's status and headers.
pub fn error_response(e: ApiError) -> Response {
    let mut detail = Map::new();
    detail.insert("error".into(), e.message.clone().into());
    detail.insert("code".into(), e.code.into());
    for (k, v) in &e.details {
        detail.insert(k.clone(), v.clone());
    }
    let mut response = Response::json(e.status, &json!({ "detail": detail }));
    for (name, value) in e.headers {
        response = response.header(name, value);
    }
    response
}

/// Whether a result passes the call's own filters: its date within `oldest`..`newest` (an undated result passes),
/// and with `exact_match` each quoted phrase in its title or snippet.
fn admitted(call: &SearchCall, r: &Value) -> bool {
    let day = r
        .get("published")
        .and_then(Value::as_str)
        .and_then(|d| crate::clock::parse_rfc3339_ms(&format!("{d}T00:00:00Z")))
        .map(|ms| ms / 86_400_000);
    let dated = day.is_none_or(|d| call.oldest.is_none_or(|o| d >= o) && call.newest.is_none_or(|n| d <= n));
    let text = || format!("{} {}", str_of(r, "title"), str_of(r, "snippet")).to_lowercase();
    dated && (call.phrases.is_empty() || call.phrases.iter().all(|p| text().contains(p.as_str())))
}

/// The `n` passages of a page's markdown most relevant to `query`, best first.
fn passages(md: &str, query: &str, n: usize) -> Vec<String> {
    let blocks: Vec<String> = md.split("\n\n").map(str::to_owned).collect();
    focus::best(&blocks, query, n, false).into_iter().map(|c| c.text).collect()
}

/// The extractive answer: the sentences of the fetched pages most relevant to the query (the best passage of
/// prose of each page, then the best of those), as text, in the order of their scores; `None` when no page holds a word of the query.
fn answer_of(pages: &[Value], query: &str) -> Option<String> {
    let mut best: Vec<(String, f32)> = Vec::new();
    for page in pages.iter().filter(|p| str_of(p, "status") == "ok") {
        let md = str_of(page, "markdown");
        let blocks: Vec<String> = md.split("\n\n").map(str::to_owned).collect();
        if let Some(chosen) = focus::best(&blocks, query, 1, true).into_iter().next() {
            best.push((item_text(&plain(&chosen.text)).to_owned(), chosen.score));
        }
    }
    // The best `ANSWER_PASSAGES_MAX`, best first (an equal score after the one before it).
    let mut quoted: Vec<(String, f32)> = Vec::with_capacity(ANSWER_PASSAGES_MAX + 1);
    for (text, score) in best {
        let at = quoted.iter().position(|q| q.1 < score).unwrap_or(quoted.len());
        quoted.insert(at, (text, score));
        quoted.truncate(ANSWER_PASSAGES_MAX);
    }
    let quoted: Vec<String> = quoted.into_iter().map(|(t, _)| t).collect();
    (!quoted.is_empty()).then(|| quoted.join(" "))
}

/// A list item's text without its marker (`- `, `* `, `+ `, `1. `).
fn item_text(line: &str) -> &str {
    let digits = line.bytes().take_while(u8::is_ascii_digit).count();
    let rest = line.get(digits..).unwrap_or(line);
    let marker = if digits > 0 {
        rest.strip_prefix(". ")
    } else {
        rest.strip_prefix(['-', '*', '+']).and_then(|r| r.strip_prefix(' '))
    };
    marker.unwrap_or(line)
}

fn as_format(md: &str, format: Format) -> String {
    match format {
        Format::Markdown => md.to_owned(),
        Format::Text => plain(md),
    }
}

/// Markdown as text: headings' and quotes' marks, emphasis, code fences and table rules dropped, links and images
/// as their text, a table row's outer bars dropped. One pass over the text.
pub fn plain(md: &str) -> String {
    let mut out = String::with_capacity(md.len());
    for line in md.split('\n') {
        let trimmed = line.trim_start();
        if trimmed.starts_with("```") || is_rule(trimmed) {
            continue;
        }
        let body = trimmed.trim_start_matches('#').trim_start_matches('>');
        let body = if body.len() < trimmed.len() { body.trim_start() } else { line };
        let body = body.strip_prefix('|').map_or(body, |b| b.strip_suffix('|').unwrap_or(b).trim());
        inline_text(body, &mut out);
        out.push('\n');
    }
    while out.ends_with('\n') {
        out.pop();
    }
    out
}

/// A table's rule (`|---|:--:|`) or a thematic break.
fn is_rule(line: &str) -> bool {
    !line.is_empty() && line.contains('-') && line.bytes().all(|b| matches!(b, b'|' | b'-' | b':' | b' ' | b'*' | b'_'))
}

/// A line's text: `[text](url)` and `![alt](src)` as their text, emphasis marks (`emphasis`) and `` ` `` dropped, a
/// backslash escape as its character.
fn inline_text(line: &str, out: &mut String) {
    let marks = emphasis(line);
    let mut chars = line.char_indices().peekable();
    // Brackets opened by a link or an image, whose closing one is dropped too.
    let mut open = 0usize;
    while let Some((at, c)) = chars.next() {
        if marks.get(at).copied().unwrap_or(false) {
            continue;
        }
        match c {
            '\\' => {
                if let Some((_, next)) = chars.next() {
                    out.push(next);
                }
            }
            '!' if chars.peek().is_some_and(|(_, n)| *n == '[') => {}
            '[' => open += 1,
            ']' if open > 0 => {
                open -= 1;
                if chars.peek().is_some_and(|(_, n)| *n == '(') {
                    // The link's target, up to its closing parenthesis, is left out.
                    let mut depth = 0usize;
                    for (_, t) in chars.by_ref() {
                        match t {
                            '(' => depth += 1,
                            ')' if depth <= 1 => break,
                            ')' => depth -= 1,
                            _ => {}
                        }
                    }
                }
            }
            '`' => {}
            c => out.push(c),
        }
    }
}

/// The emphasis marks of a line, as a flag for each of its bytes: runs of one to three `*` or `_` that open and close in
/// pairs of the same run, CommonMark's flanking rules simplified (a `_` run inside a word neither opens nor closes,
/// so `snake_case` and `__init__` stay as they are). An unpaired run is text. Linear: a closing run pairs with the
/// last open run of its kind.
fn emphasis(line: &str) -> Vec<bool> {
    let bytes = line.as_bytes();
    // Open runs by kind: `*` or `_`, one to three long.
    let mut open: [Vec<usize>; 6] = Default::default();
    let mut marks = vec![false; line.len()];
    let mut i = 0;
    while let Some(&b) = bytes.get(i) {
        if b == b'\\' {
            i += 2;
            continue;
        }
        if b != b'*' && b != b'_' {
            i += 1;
            continue;
        }
        let len = bytes.get(i..).map_or(0, |t| t.iter().take_while(|&&c| c == b).count());
        let before = line.get(..i).and_then(|t| t.chars().next_back()).unwrap_or(' ');
        let after = line.get(i + len..).and_then(|t| t.chars().next()).unwrap_or(' ');
        let (left, right) = (!after.is_whitespace(), !before.is_whitespace());
        let (opens, closes) = if b == b'_' {
            (left && !before.is_alphanumeric(), right && !after.is_alphanumeric())
        } else {
            (left, right)
        };
        if let Some(kind) = (1..=3).contains(&len).then(|| usize::from(b == b'_') * 3 + len - 1) {
            let stack = open.get_mut(kind);
            match stack {
                Some(stack) if closes && !stack.is_empty() => {
                    if let Some(start) = stack.pop() {
                        for at in (start..start + len).chain(i..i + len) {
                            if let Some(m) = marks.get_mut(at) {
                                *m = true;
                            }
                        }
                    }
                }
                Some(stack) if opens => stack.push(i),
                _ => {}
            }
        }
        i += len;
    }
    marks
}

fn seconds(started: Instant) -> f64 {
    (started.elapsed().as_secs_f64() * 100.0).round() / 100.0
}

fn str_of<'v>(v: &'v Value, key: &str) -> &'v str {
    v.get(key).and_then(Value::as_str).unwrap_or("")
}

fn list(answer: &Value, name: &str) -> Vec<Value> {
    answer.get(name).and_then(Value::as_array).cloned().unwrap_or_default()
}

#[cfg(test)]
mod tests;
