//! The MCP tools: `web_search` (the `/service` pipeline: `answer::search_answer`) and `extract_page` (one page through
//! the same SSRF guard, fetch limits and extraction cache as `extract: true`). Each answer is signed with the
//! result key over exactly the text block sent, as `/service` signs its body, and the structured content carries
//! the answer with the signature beside it. A call is read first (`Job::parse`: bad arguments never cost a payment),
//! then run on borrowed `Parts`: the stdio door (`Toolbox`, no payment: the operator's own) owns them, the server's
//! paid `/mcp` (`mcp::http`) borrows the server's.

use std::sync::Arc;

use serde_json::{json, Map, Value};

use super::{ToolResult, Tools};
use crate::clock::{Clock, SystemClock};
use crate::config::Config;
use crate::error::ApiError;
use crate::http::RequestIds;
use crate::search::{Engine, SearchRequest, EXTRACT_TOKENS_DEFAULT, EXTRACT_TOKENS_MAX, EXTRACT_TOKENS_MIN};
use crate::sign::{Keyring, SignedObject};

/// Longest URL `extract_page` takes, in bytes.
pub const URL_BYTES_MAX: usize = 4_096;

/// A tool call whose arguments have been read.
#[derive(Debug, Clone, PartialEq)]
pub enum Job {
    Search(SearchRequest),
    /// `query`: what the call asks about (empty: nothing said).
    Extract {
        url: String,
        tokens: usize,
        query: String,
    },
}

impl Job {
    /// Reads a call: `None` when there is no tool by that name, `Err` for arguments it refuses.
    pub fn parse(name: &str, arguments: &Map<String, Value>) -> Option<Result<Job, ApiError>> {
        match name {
            "web_search" => Some(SearchRequest::from_fields(arguments).map(Job::Search)),
            "extract_page" => Some(extract_arguments(arguments)),
            _ => None,
        }
    }

    /// The tool's name.
    pub fn tool(&self) -> &'static str {
        match self {
            Job::Search(_) => "web_search",
            Job::Extract { .. } => "extract_page",
        }
    }
}

fn extract_arguments(arguments: &Map<String, Value>) -> Result<Job, ApiError> {
    let url = url_argument(arguments.get("url"), "url")?;
    let (tokens, query) = page_arguments(arguments)?;
    Ok(Job::Extract { url, tokens, query })
}

/// A URL to fetch, as `extract_page` and the reader door (`POST /extract`, each of its `urls`) take it: a string of
/// at most `URL_BYTES_MAX` bytes, trimmed, that the fetcher's guard reads as a URL (`guard::parse_url`; its scheme,
/// userinfo, port and address are the guard's to refuse when it is fetched, as that page's status). `field` names it
/// in the error (`url`, `urls[2]`).
pub fn url_argument(value: Option<&Value>, field: &str) -> Result<String, ApiError> {
    let url = match value {
        None | Some(Value::Null) => {
            return Err(ApiError::invalid_field("url_missing", field, format!("the argument `{field}` is required")))
        }
        Some(Value::String(u)) if u.len() > URL_BYTES_MAX => {
            return Err(ApiError::invalid_field(
                "url_too_long",
                field,
                format!("`{field}` has {} bytes; at most {URL_BYTES_MAX} are allowed", u.len()),
            ))
        }
        Some(Value::String(u)) => u.trim(),
        Some(_) => return Err(ApiError::invalid_field("url_not_string", field, format!("`{field}` must be a string"))),
    };
    // Not a URL at all (the guard's own reading of one): bad input, not a page's refusal.
    if let Err(crate::fetch::guard::Refusal::Url(why)) = crate::fetch::guard::parse_url(url) {
        return Err(ApiError::invalid_field("url_invalid", field, format!("`{field}` is not a URL: {why}")));
    }
    Ok(url.to_owned())
}

/// What a page is read with, as `extract_page` and the reader door take it: `tokens` (the range of
/// `extract_tokens`) and `query` (the search's rules, but optional: absent, null or blank is none, the empty string).
pub fn page_arguments(arguments: &Map<String, Value>) -> Result<(usize, String), ApiError> {
    let tokens = crate::search::integer_field(
        arguments,
        "tokens",
        EXTRACT_TOKENS_DEFAULT,
        EXTRACT_TOKENS_MIN..=EXTRACT_TOKENS_MAX,
        ["tokens_out_of_range", "tokens_not_integer"],
    )?;
    let query = match arguments.get("query") {
        None | Some(Value::Null) => String::new(),
        Some(Value::String(q)) if q.trim().is_empty() => String::new(),
        Some(Value::String(q)) => crate::search::normalize_query(q)?,
        Some(_) => return Err(ApiError::invalid_field("query_not_string", "query", "`query` must be a string")),
    };
    Ok((tokens, query))
}

/// What the tools run on: the search pipeline's parts, the result key and the clock.
#[derive(Clone, Copy)]
pub struct Parts<'a> {
    pub engine: &'a Engine,
    pub config: &'a Config,
    pub pages: &'a crate::page::Pages,
    pub keys: &'a Keyring,
    pub clock: &'a dyn Clock,
}

impl Parts<'_> {
    /// Runs a job: its answer, not yet signed.
    pub fn run(&self, job: &Job, (caller, request_id): (crate::page::Caller, &str)) -> Result<Value, ApiError> {
        match job {
            Job::Search(search) => {
                let work = (self.engine, self.pages);
                crate::answer::search_answer(work, &self.keys.result.kid, search, (caller, request_id))
            }
            Job::Extract { url, tokens, query } => self.extract_page(url, (*tokens, query), (caller, request_id)),
        }
    }

    fn extract_page(
        &self,
        url: &str,
        (tokens, query): (usize, &str),
        (caller, request_id): (crate::page::Caller, &str),
    ) -> Result<Value, ApiError> {
        let page = self
            .pages
            .extract(caller, url, tokens, query)
            .map_err(|e| ApiError::new(502, e.code(), e.to_string()).detail("url", url))?;
        if page.markdown.trim().is_empty() {
            return Err(ApiError::new(422, "empty", "no main content was found on the page").detail("url", url));
        }
        Ok(json!({
            "request_id": request_id,
            "url": url,
            "final_url": page.url,
            "title": page.title,
            "markdown": page.markdown,
            "tokens": page.tokens,
            "truncated": page.truncated,
            "cut": page.cut.name(),
            "content_sha256": crate::sign::sha256_hex(page.markdown.as_bytes()),
            "issued_at": crate::clock::rfc3339_ms(self.clock.now_unix_ms()),
            "kid": self.keys.result.kid,
        }))
    }

    /// An answer as `/service` sends it (its body, made by the same function), signed over exactly those bytes; the
    /// structured content is the answer with `signature` added.
    pub fn signed(&self, answer: Value) -> ToolResult {
        let body = crate::http::Response::json(200, &answer).body;
        let [(_, value), (_, kid), (_, object)] = crate::sign::sign_answer(&self.keys.result, &body, SignedObject::Raw);
        let mut structured = answer;
        if let Some(map) = structured.as_object_mut() {
            map.insert(
                "signature".into(),
                json!({
                    "alg": "Ed25519",
                    "kid": kid,
                    "signed_object": object,
                    "value": value,
                    "covers": "the exact UTF-8 bytes of the text of content[0]",
                }),
            );
        }
        ToolResult::new(structured, String::from_utf8_lossy(&body).into_owned(), false)
    }
}

/// The unpaid tools of `websearchd mcp`, owning what they run on.
pub struct Toolbox {
    config: Config,
    engine: Engine,
    keys: Arc<Keyring>,
    pages: crate::page::Pages,
    ids: RequestIds,
    clock: Arc<dyn Clock>,
    /// What `tools/list` answers, made once: the definitions with the schemas filled in.
    definitions: Vec<Value>,
}

impl Toolbox {
    /// The tools over the configured sources, fetch policy and caches, signing with `keys`.
    pub fn new(config: Config, keys: Arc<Keyring>) -> Toolbox {
        let clock: Arc<dyn Clock> = Arc::new(SystemClock);
        let engine = Engine::from_config(&config, clock.clone());
        let pages = crate::page::Pages::new(&config, 1);
        Toolbox { config, engine, keys, pages, ids: RequestIds::new(), clock, definitions: definitions() }
    }

    fn parts(&self) -> Parts<'_> {
        Parts {
            engine: &self.engine,
            config: &self.config,
            pages: &self.pages,
            keys: &self.keys,
            clock: self.clock.as_ref(),
        }
    }
}

/// Checks a tool's answer as a client does: `text` (of `content[0]`) against the `signature` member of the structured
/// content, with the service's keys (`sign::keys_from_jwks` of its JWKS). The other side of `Toolbox::signed`.
pub fn verify(
    text: &str,
    signature: &Value,
    keys: &[crate::sign::PublicKey],
) -> Result<crate::sign::Verified, crate::sign::VerifyError> {
    // The members stand for the headers `/service` signs with.
    let member = |header: &str| match header {
        crate::sign::HEADER_SIGNATURE => "value",
        crate::sign::HEADER_KID => "kid",
        _ => "signed_object",
    };
    let header = |name: &str| signature.get(member(name)).and_then(Value::as_str).map(str::to_owned);
    crate::sign::verify_answer(text.as_bytes(), header, keys)
}

/// A tool that failed: the error body the HTTP door would send, for the model to read and correct.
pub(crate) fn failed(e: &ApiError) -> ToolResult {
    let body = e.body();
    ToolResult::new(body.clone(), body.to_string(), true)
}

impl Tools for Toolbox {
    fn list(&self) -> Vec<Value> {
        self.definitions.clone()
    }

    fn call(&self, name: &str, arguments: &Map<String, Value>, _meta: &Map<String, Value>) -> Option<ToolResult> {
        let parts = self.parts();
        let answer =
            Job::parse(name, arguments)?.and_then(|job| parts.run(&job, (crate::page::LOCAL, &self.ids.next())));
        Some(match answer {
            Ok(answer) => parts.signed(answer),
            Err(e) => failed(&e),
        })
    }
}

/// The tools as `tools/list` gives them, without the schemas `definitions` adds: the search's input and output
/// schemas are `openapi`'s (one description of the search for every door). Text, not code: see `openapi`.
const TOOLS: &str = r#"[
 {
  "name": "web_search",
  "title": "Web search",
  "description": "Search the web: ranked organic results (title, url, snippet, published date where the source shows one) from live public sources with fallback, every source's outcome reported. Narrow it with time_range (day, week, month, year), region (us-en, de-de; wt-wt for none), safesearch (off, moderate, strict), include_domains and exclude_domains (host names). With extract: true, the top result's main content as token-budgeted markdown in answer_extract (a page over the budget keeps its title, its lead and the passages most relevant to the query); with extract: k (1 to 5), the first k results' pages, each in its result's extract member, in one call. Signed with Ed25519.",
  "annotations": {"readOnlyHint": true, "openWorldHint": true, "destructiveHint": false}
 },
 {
  "name": "extract_page",
  "title": "Extract a page",
  "description": "Fetch one public web page (private, loopback and reserved addresses are refused) and return its main content as token-budgeted markdown. With query, a page over the budget keeps its title, its lead and the passages most relevant to the query (cut: query); without, its head (cut: head). Signed with Ed25519.",
  "annotations": {"readOnlyHint": true, "openWorldHint": true, "destructiveHint": false},
  "inputSchema": {
   "type": "object",
   "properties": {
    "url": {"type": "string", "minLength": 1, "maxLength": 4096, "description": "An http:// or https:// URL."},
    "tokens": {
     "type": "integer", "minimum": 100, "maximum": 8000, "default": 2000,
     "description": "Token budget (cl100k) of the markdown."
    },
    "query": {
     "type": "string", "maxLength": 400,
     "description": "What you want from the page: over the budget, the passages most relevant to it are kept."
    }
   },
   "required": ["url"]
  },
  "outputSchema": {
   "type": "object",
   "properties": {
    "request_id": {"type": "string"},
    "url": {"type": "string", "description": "The URL asked for."},
    "final_url": {"type": "string", "description": "The URL after redirects."},
    "title": {"type": ["string", "null"]},
    "markdown": {"type": "string"},
    "tokens": {"type": "integer", "minimum": 0},
    "truncated": {"type": "boolean"},
    "cut": {"enum": ["none", "head", "query"], "description": "none: the whole page fit; head: its head was kept; query: its title, lead and the passages most relevant to the query."},
    "content_sha256": {"type": "string"},
    "issued_at": {"type": "string"},
    "kid": {"type": "string"}
   },
   "required": ["request_id", "url", "final_url", "markdown", "tokens", "truncated", "issued_at", "kid"]
  }
 }
]"#;

/// The signature member of a tool's structured content.
const SIGNATURE_SCHEMA: &str = r#"{
 "type": "object",
 "description": "Ed25519 signature by the result key over the exact text of content[0] (the answer as /service sends it); the key is in the service's JWKS under kid.",
 "properties": {
  "alg": {"const": "Ed25519"},
  "kid": {"type": "string"},
  "signed_object": {"enum": ["raw"]},
  "value": {"type": "string", "description": "Standard base64 of the 64-byte signature."},
  "covers": {"type": "string"}
 },
 "required": ["alg", "kid", "signed_object", "value"]
}"#;

/// `schema` (an object schema) with the signature member added and required.
fn with_signature(mut schema: Value) -> Value {
    if let Some(props) = schema.get_mut("properties").and_then(Value::as_object_mut) {
        props.insert("signature".into(), serde_json::from_str(SIGNATURE_SCHEMA).unwrap_or_default());
    }
    if let Some(required) = schema.get_mut("required").and_then(Value::as_array_mut) {
        required.push("signature".into());
    }
    schema
}

pub(crate) fn definitions() -> Vec<Value> {
    // This crate's own text; the tests list the tools.
    let mut tools: Vec<Value> = serde_json::from_str(TOOLS).unwrap_or_default();
    for tool in &mut tools {
        let Some(tool) = tool.as_object_mut() else { continue };
        if tool.get("name").and_then(Value::as_str) == Some("web_search") {
            tool.insert("inputSchema".into(), crate::openapi::search_request_schema());
            tool.insert("outputSchema".into(), crate::openapi::search_answer_schema());
        }
        if let Some(output) = tool.remove("outputSchema") {
            tool.insert("outputSchema".into(), with_signature(output));
        }
    }
    tools
}

/// Runs `websearchd mcp`: the keys (created on first use, as `serve` does), the tools, and the stdio loop until
/// the client closes stdin. Logs go to stderr; stdout carries only protocol messages.
pub fn run(config: Config) -> std::process::ExitCode {
    let keys = match Keyring::load_or_create(&config.key_paths()) {
        Ok(k) => Arc::new(k),
        Err(e) => {
            log::error!("cannot load or create the signing keys: {e}");
            return std::process::ExitCode::from(1);
        }
    };
    log::info!("mcp: serving web_search and extract_page on stdio, signing with {}", keys.result.kid);
    let toolbox = Toolbox::new(config, keys);
    match super::serve(&toolbox, std::io::stdin().lock(), std::io::stdout().lock()) {
        Ok(()) => std::process::ExitCode::SUCCESS,
        // The client went away while an answer was written: the session is over, not failed.
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => std::process::ExitCode::SUCCESS,
        Err(e) => {
            log::error!("mcp: stdio failed: {e}");
            std::process::ExitCode::from(1)
        }
    }
}
