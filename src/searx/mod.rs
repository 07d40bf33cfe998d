//! The SearXNG door: `GET`/`POST` `/search` (and `/` with `q`) speak SearXNG's search API, so that the tools
//! self-hosters already point at "the URL of your SearXNG" (LangChain's `SearxSearchWrapper`, Open WebUI, Perplexica,
//! n8n, MCP wrappers) search through websearchd; `format=html` (or none) gives the search page for people (`page`).
//!
//! SearXNG's parameters map onto the controls of `/service`:
//!
//! | SearXNG | websearchd |
//! |---|---|
//! | `q` | `query` |
//! | `format` `json`, `csv`, `rss`; `html` or none | SearXNG's answer in that form (`formats`); the page (`page`) |
//! | `language` `de-DE`, `en-GB`, `pt-BR`, `ja-JP` | `region` `de-de`, `uk-en`, `br-pt`, `jp-jp` (country first, as DuckDuckGo writes them: `uk` for GB, a language's main region in its own code) |
//! | `language` `de`, `en`, `fr` (no country) | the language's main region (`de-de`, `us-en`, `fr-fr`: `controls::LANGUAGE_REGIONS`) |
//! | `language` `all`, `auto`, empty | `wt-wt` (no region) |
//! | `time_range` `day`, `week`, `month`, `year` | the same |
//! | `safesearch` `0`, `1`, `2` | `off`, `moderate`, `strict` |
//! | `pageno` `1`, `2` | results 1-10 of a search for 10, results 11-20 of a search for 20 (`RESULTS_PER_PAGE`) |
//! | `categories` `general` (or none) | a search; any other category alone: no results, each source in `unresponsive_engines` |
//! | `engines` `bing`, `duckduckgo`, `ddg_lite` | only those sources are asked (by source or provider name); names of no configured source are ignored, and if none is left every source is asked |
//!
//! The work is `answer::search_answer`, as for `/service` and the MCP tools; this module imports no door.

mod formats;
pub mod page;

use serde_json::{json, Map, Value};

use crate::error::ApiError;
use crate::http::{Request, Response};
use crate::search::{Engine, SearchRequest};
use crate::x402::{Call, Gate, Refusal, Resource};

/// Results on one SearXNG page: `pageno` 2 is results 11-20 of a search for 20 (`MAX_RESULTS_MAX`), the last page.
pub const RESULTS_PER_PAGE: usize = 10;
/// Pages a search has: `MAX_RESULTS_MAX / RESULTS_PER_PAGE`.
pub const PAGES_MAX: usize = crate::search::MAX_RESULTS_MAX / RESULTS_PER_PAGE;
/// Parameters one call may carry (SearXNG clients send about ten); more is a 400.
pub const PARAMS_MAX: usize = 64;
/// Longest parameter list read (the query string, or the form body), in bytes.
pub const PARAMS_BYTES_MAX: usize = 8 * 1_024;
/// Categories and engines one call may name.
const NAMES_MAX: usize = 32;

/// The formats served: SearXNG's `json`, `csv` and `rss`, and `html` (the search page).
pub const FORMATS: [&str; 4] = ["json", "csv", "rss", "html"];

/// What a call asks, parsed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Params {
    pub search: SearchRequest,
    pub format: Format,
    /// 1-based.
    pub pageno: usize,
    /// The categories asked other than `general`, when `general` is not among them (no search is made).
    pub other_categories: Vec<String>,
    /// The engines named (the sources asked, by source or provider name: `with_engines`).
    pub engines: Vec<String>,
    /// The language as given (for the page's form).
    pub language: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    Json,
    Csv,
    Rss,
    Html,
}

/// The parameters of a call: the query string, then for a `POST` the form body (SearXNG reads both).
pub fn pairs(req: &Request) -> Result<Vec<(String, String)>, ApiError> {
    let query = req.query().unwrap_or("");
    if req.method() != "POST" {
        return parse_lists(&[query]);
    }
    match req.media_type() {
        Some(t) if t.eq_ignore_ascii_case("application/x-www-form-urlencoded") => {}
        _ if req.body().is_empty() => {}
        _ => {
            return Err(ApiError::new(
                415,
                "unsupported_media_type",
                "a POST to the SearXNG API carries a form: Content-Type: application/x-www-form-urlencoded",
            ))
        }
    }
    let body = std::str::from_utf8(req.body())
        .map_err(|_| ApiError::bad_request("form_invalid", "the form body is not UTF-8"))?;
    parse_lists(&[query, body])
}

/// `application/x-www-form-urlencoded` lists (a query string, a form body) as decoded pairs, in order: at most
/// `PARAMS_MAX` pairs from lists of at most `PARAMS_BYTES_MAX` bytes each. One pass over each list.
pub fn parse_lists(lists: &[&str]) -> Result<Vec<(String, String)>, ApiError> {
    let mut out = Vec::new();
    for list in lists {
        if list.len() > PARAMS_BYTES_MAX {
            return Err(ApiError::bad_request(
                "parameters_too_long",
                format!("the parameters are {} bytes; at most {PARAMS_BYTES_MAX} are read", list.len()),
            ));
        }
        for pair in list.split('&').filter(|p| !p.is_empty()) {
            if out.len() == PARAMS_MAX {
                return Err(ApiError::bad_request(
                    "too_many_parameters",
                    format!("at most {PARAMS_MAX} parameters are read"),
                ));
            }
            let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
            out.push((form_decode(k), form_decode(v)));
        }
    }
    Ok(out)
}

fn form_decode(s: &str) -> String {
    crate::search::url::percent_decode(&s.replace('+', " "))
}

/// The first value of a parameter, trimmed; an empty one counts as absent (Open WebUI sends `time_range=` and
/// `categories=`).
fn param<'a>(pairs: &'a [(String, String)], name: &str) -> Option<&'a str> {
    pairs.iter().find(|(k, _)| k == name).map(|(_, v)| v.trim()).filter(|v| !v.is_empty())
}

/// Whether the call names a query (`/` with `q` is the API; without, the home page).
pub fn has_query(pairs: &[(String, String)]) -> bool {
    pairs.iter().any(|(k, _)| k == "q")
}

/// The format asked: `json`, `csv`, `rss`, or `html` (also when none is given).
pub fn format(pairs: &[(String, String)]) -> Result<Format, ApiError> {
    match param(pairs, "format") {
        None | Some("html") => Ok(Format::Html),
        Some("json") => Ok(Format::Json),
        Some("csv") => Ok(Format::Csv),
        Some("rss") => Ok(Format::Rss),
        Some(other) => Err(ApiError::invalid_field(
            "format_unsupported",
            "format",
            format!("the format {other:?} is not served; the formats served are json, csv, rss and html"),
        )
        .detail("formats", FORMATS.to_vec())),
    }
}

/// Reads SearXNG's parameters into a search (every bad one a 400 naming its field).
pub fn parse(pairs: &[(String, String)]) -> Result<Params, ApiError> {
    parse_as(pairs, format(pairs)?)
}

/// `parse` with the format already read.
fn parse_as(pairs: &[(String, String)], format: Format) -> Result<Params, ApiError> {
    let pageno = match param(pairs, "pageno") {
        None => 1,
        Some(p) => p.parse::<usize>().ok().filter(|n| *n >= 1).ok_or_else(|| {
            ApiError::invalid_field("pageno_invalid", "pageno", "`pageno` must be a whole number from 1")
        })?,
    };
    let mut fields = Map::new();
    let q = pairs.iter().find(|(k, _)| k == "q").map(|(_, v)| v.as_str());
    let Some(q) = q else {
        return Err(ApiError::invalid_field("query_missing", "q", "the parameter `q` is required"));
    };
    fields.insert("query".into(), q.into());
    fields.insert("max_results".into(), (pageno.min(PAGES_MAX) * RESULTS_PER_PAGE).into());
    if let Some(t) = param(pairs, "time_range") {
        fields.insert("time_range".into(), t.into());
    }
    if let Some(s) = param(pairs, "safesearch") {
        let level = match s {
            "0" => "off",
            "1" => "moderate",
            "2" => "strict",
            _ => {
                return Err(ApiError::invalid_field(
                    "safesearch_invalid",
                    "safesearch",
                    "`safesearch` must be 0 (off), 1 (moderate) or 2 (strict)",
                ))
            }
        };
        fields.insert("safesearch".into(), level.into());
    }
    let language = param(pairs, "language").unwrap_or("").to_owned();
    if let Some(region) = region_of_language(&language)? {
        fields.insert("region".into(), region.into());
    }
    let search = SearchRequest::from_fields(&fields)?;
    let categories = names(pairs, "categories")?;
    let other_categories =
        if categories.is_empty() || categories.iter().any(|c| c == "general") { Vec::new() } else { categories };
    let engines = names(pairs, "engines")?;
    Ok(Params { search, format, pageno, other_categories, engines, language })
}

/// A comma-separated list (`categories`, `engines`), lowercase.
fn names(pairs: &[(String, String)], name: &str) -> Result<Vec<String>, ApiError> {
    let list: Vec<String> = param(pairs, name)
        .unwrap_or("")
        .split(',')
        .map(|s| s.trim().to_ascii_lowercase())
        .filter(|s| !s.is_empty())
        .collect();
    if list.len() > NAMES_MAX {
        return Err(ApiError::invalid_field(
            "names_too_many",
            name,
            format!("`{name}` names at most {NAMES_MAX} entries"),
        ));
    }
    Ok(list)
}

/// The region of a SearXNG `language`: `de-DE` -> `de-de`, `en-GB` -> `uk-en`, `de` -> `de-de`
/// (`Region::from_tag`), `all`, `auto` or empty -> `wt-wt` (worldwide, as SearXNG's `all`). A language we cannot
/// place is a 400.
pub fn region_of_language(language: &str) -> Result<Option<String>, ApiError> {
    let language = language.trim();
    if language.is_empty() || language.eq_ignore_ascii_case("all") || language.eq_ignore_ascii_case("auto") {
        return Ok(Some(crate::search::controls::Region::NONE.to_owned()));
    }
    let region = crate::search::controls::Region::from_tag(language).ok_or_else(|| {
        ApiError::invalid_field(
            "language_invalid",
            "language",
            "`language` must be all, auto, a language (en, de) or a language and country (en-US, de-DE)",
        )
    })?;
    Ok(Some(region.code().to_owned()))
}

/// What the door needs: the search pipeline's parts and the gate.
pub struct Door<'a> {
    pub engine: &'a Engine,
    pub pages: &'a crate::page::Pages,
    pub kid: &'a str,
    pub gate: &'a Gate,
    pub resource: &'a Resource,
    pub page: &'a page::Page,
}

/// A search through the door, as SearXNG answers it (`format=json`) or as the page shows it.
pub fn handle(door: &Door<'_>, req: &Request) -> Response {
    let pairs = match pairs(req) {
        Ok(p) => p,
        Err(e) => return e.into_response(),
    };
    // A format not served is a program's call: its 400 is JSON.
    let format = match format(&pairs) {
        Ok(f) => f,
        Err(e) => return e.into_response(),
    };
    let html = format == Format::Html;
    if html && !has_query(&pairs) {
        return door.page.home();
    }
    // Validation first: a bad parameter is a 400, never a payment asked for.
    let params = match parse_as(&pairs, format) {
        Ok(p) => p,
        Err(e) if html => return door.page.error(&pairs, &e),
        Err(e) => return e.into_response(),
    };
    // A call that searches nothing (another category, a page past the last) is answered before the gate: it costs
    // no work, so it uses up no free trial and asks no payment.
    if let Some(answer) = unsearched(door.page, &params) {
        return respond(door, &params, &answer);
    }
    // A HEAD would run the search for an answer without a body (a source's request, maybe a trial): not served.
    if req.method() == "HEAD" {
        return ApiError::method_not_allowed("HEAD", "GET, POST, OPTIONS").into_response();
    }
    // SearXNG clients cannot pay: the free rules (payments off, loopback, trials) admit, or the 402 says so.
    let call = Call { payment: None, client: req.client, request_id: &req.request_id };
    match door.gate.admit_call(&call, door.resource) {
        Ok(_) => {}
        Err(Refusal::Challenge { .. }) if html => {
            door.gate.count_challenge(Some(NOT_PAYABLE));
            return door.page.payment_required();
        }
        Err(Refusal::Challenge { terms, .. }) => {
            return door.gate.challenge(&terms, door.resource, Some((NOT_PAYABLE, NOT_PAYABLE_MESSAGE.into())));
        }
        Err(Refusal::Error(e)) => return e.into_response(),
    }
    let answer = run(door, &params, (crate::http::client_addr::key(req.client.ip), &req.request_id));
    respond(door, &params, &answer)
}

/// The 402's code and words for a caller no free rule admits on a paid instance (its JSON; the page has its own).
pub const NOT_PAYABLE: &str = "door_not_payable";
pub const NOT_PAYABLE_MESSAGE: &str = "this instance is paid per call through x402, which SearXNG clients cannot do: \
                                       this door serves the callers its free rules admit; pay through POST /service \
                                       or /mcp";

/// Whether a call would reach the gate (its parameters valid, a search to make), and if so whether its answer is the
/// page (`Some(true)`) or a program's (`Some(false)`): on a paid instance where no free rule can apply, such a call
/// gets the 402 whatever it asks, so the server may answer it from a rendered copy.
pub fn gated(page: &page::Page, req: &Request) -> Option<bool> {
    let pairs = pairs(req).ok()?;
    let params = parse(&pairs).ok()?;
    if unsearched(page, &params).is_some() {
        return None;
    }
    Some(params.format == Format::Html)
}

/// SearXNG's answer in the form asked.
fn respond(door: &Door<'_>, params: &Params, answer: &Value) -> Response {
    match params.format {
        Format::Json => Response::json(200, answer),
        Format::Csv => formats::csv(answer),
        Format::Rss => formats::rss(answer, door.page.public_url()),
        Format::Html => door.page.results(params, answer),
    }
}

/// The answer to a call that searches nothing: a category other than general (each source unresponsive for it), or
/// a page past the last. `None` for a call that searches.
fn unsearched(page: &page::Page, params: &Params) -> Option<Value> {
    if !params.other_categories.is_empty() {
        let why = format!("category {} is not served (only general: web results)", params.other_categories.join(", "));
        let unresponsive: Vec<Value> = page.sources().iter().map(|n| json!([n, why])).collect();
        return Some(searx_answer(&params.search.query, &[], &unresponsive));
    }
    if params.pageno > PAGES_MAX {
        let why = format!(
            "page {} is past the last: a search has at most {} results, {RESULTS_PER_PAGE} a page",
            params.pageno,
            crate::search::MAX_RESULTS_MAX
        );
        return Some(searx_answer(&params.search.query, &[], &[json!(["websearchd", why])]));
    }
    None
}

/// The search and SearXNG's answer to it (a call `unsearched` did not answer): never an error for the sources' sake
/// (their failures are in `unresponsive_engines`); an error of the pipeline itself is one more pair there.
fn run(door: &Door<'_>, params: &Params, who: (crate::page::Caller, &str)) -> Value {
    let work = (door.engine, door.pages);
    let search = with_engines(door.page.selectable(), params);
    let (results, sources) = match crate::answer::search_answer(work, door.kid, &search, who) {
        Ok(answer) => (list(&answer, "results"), list(&answer, "sources")),
        Err(e) => match e.details.get("sources") {
            Some(Value::Array(sources)) => (Vec::new(), sources.clone()),
            _ => (
                Vec::new(),
                vec![json!({ "name": "websearchd", "status": "failed", "error": e.code, "detail": e.message })],
            ),
        },
    };
    let skip = (params.pageno - 1) * RESULTS_PER_PAGE;
    let page: Vec<Value> = results.into_iter().skip(skip).take(RESULTS_PER_PAGE).collect();
    let unresponsive: Vec<Value> = sources.iter().filter_map(unresponsive).collect();
    let mut answer = searx_answer(&params.search.query, &page, &unresponsive);
    if let Some(map) = answer.as_object_mut() {
        // Ours, beside SearXNG's members: every source's report as `/service` gives it (the page shows it).
        map.insert("sources".into(), Value::Array(sources));
    }
    answer
}

/// The search with `engines` applied: the named engines that are configured sources (by source name, `ddg_html`, or
/// provider, `duckduckgo`) are the only ones asked; names of no configured source are ignored, as SearXNG ignores
/// an engine it does not have, and when none is left every source is asked.
fn with_engines(selectable: &[&str], params: &Params) -> SearchRequest {
    let mut sources: Vec<String> =
        params.engines.iter().filter(|e| selectable.contains(&e.as_str())).cloned().collect();
    sources.sort_unstable();
    sources.dedup();
    SearchRequest { sources, ..params.search.clone() }
}

fn list(answer: &Value, name: &str) -> Vec<Value> {
    answer.get(name).and_then(Value::as_array).cloned().unwrap_or_default()
}

/// The names of the configured sources, each once, in the engine's order: read once at start (`Engine::state`
/// locks every endpoint), kept on the page.
pub fn source_names(engine: &Engine) -> Vec<String> {
    let state = engine.state();
    let sources = state.get("sources").and_then(Value::as_array).cloned().unwrap_or_default();
    let mut names: Vec<String> = Vec::new();
    for name in sources.iter().filter_map(|s| s.get("name").and_then(Value::as_str)) {
        if !names.iter().any(|n| n == name) {
            names.push(name.to_owned());
        }
    }
    names
}

/// `[engine, reason]` for a source that failed or was skipped; `None` for one that answered (with or without
/// results).
fn unresponsive(source: &Value) -> Option<Value> {
    let field = |k: &str| source.get(k).and_then(Value::as_str);
    let status = field("status")?;
    // A source the call's `engines` left out was not asked by the caller's wish: SearXNG does not list it.
    if matches!(status, "ok" | "empty") || field("error") == Some("not_selected") {
        return None;
    }
    let mut reason = format!("{status}: {}", field("error").unwrap_or(status));
    if let Some(control) = field("control") {
        reason.push_str(&format!(" ({control})"));
    }
    if let Some(detail) = field("detail") {
        reason.push_str(&format!(": {detail}"));
    }
    Some(json!([field("name").unwrap_or("?"), reason]))
}

/// SearXNG's answer: its members, each result in its shape.
fn searx_answer(query: &str, results: &[Value], unresponsive: &[Value]) -> Value {
    let results: Vec<Value> = results.iter().map(searx_result).collect();
    json!({
        "query": query,
        "number_of_results": results.len(),
        "results": results,
        "answers": [],
        "corrections": [],
        "infoboxes": [],
        "suggestions": [],
        "unresponsive_engines": unresponsive,
    })
}

/// One result as SearXNG writes it: `url`, `title`, `content`, `engine`, `engines`, `positions`, `score`,
/// `category`, `parsed_url` (Python's `urlparse`: scheme, netloc, path, params, query, fragment), and
/// `publishedDate` where the source gave a date (`YYYY-MM-DDT00:00:00`, as SearXNG writes a date).
fn searx_result(r: &Value) -> Value {
    let s = |k: &str| r.get(k).and_then(Value::as_str).unwrap_or("");
    let position = r.get("position").and_then(Value::as_u64).unwrap_or(1).max(1);
    let url = s("url");
    let mut v = json!({
        "url": url,
        "title": s("title"),
        "content": s("snippet"),
        "engine": s("source"),
        "engines": [s("source")],
        "positions": [position],
        "score": 1.0 / position as f64,
        "category": "general",
        "parsed_url": parsed_url(url),
        "template": "default.html",
    });
    if let (Some(date), Some(map)) = (r.get("published").and_then(Value::as_str), v.as_object_mut()) {
        map.insert("publishedDate".into(), format!("{date}T00:00:00").into());
    }
    v
}

/// Python's `urlparse(url)` as a list: `[scheme, netloc, path, params, query, fragment]`.
pub fn parsed_url(url: &str) -> Value {
    let (scheme, rest) = url.split_once("://").unwrap_or(("", url));
    let (rest, fragment) = rest.split_once('#').unwrap_or((rest, ""));
    let (rest, query) = rest.split_once('?').unwrap_or((rest, ""));
    let (netloc, path) = match rest.find('/') {
        Some(i) => rest.split_at(i),
        None => (rest, ""),
    };
    // Python splits the params off the last segment only: `/a;x/b;y` is path `/a;x/b`, params `y`.
    let last = path.rfind('/').map_or(0, |i| i + 1);
    let (path, params) = match path.get(last..).and_then(|seg| seg.find(';')) {
        Some(i) => (path.get(..last + i).unwrap_or(path), path.get(last + i + 1..).unwrap_or("")),
        None => (path, ""),
    };
    json!([scheme, netloc, path, params, query, fragment])
}

#[cfg(test)]
mod tests;
