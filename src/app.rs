//! The application: routes, their handlers, and the metrics they feed. The HTTP layer gives it complete requests;
//! it answers with `Response`s and turns every `ApiError` into its JSON form in one place (`Handler::handle`).

use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::config::Config;
use crate::discovery::Documents;
use crate::error::ApiError;
use crate::http::{Handler, Request, Response, ServerStats};
use crate::metrics::Metrics;
use crate::search::{Engine, SearchRequest, MAX_RESULTS_MAX, QUERY_CHARS_MAX};
use crate::sign::{Keyring, SignedObject};
use crate::x402::{Admission, Gate, Resource};

pub struct App {
    config: Config,
    started: Instant,
    stats: Arc<ServerStats>,
    metrics: Metrics,
    engine: Engine,
    gate: Gate,
    search_resource: Resource,
    keys: Arc<Keyring>,
    documents: Documents,
}

/// Headers a browser-based client may read, and those it may send (x402 clients send the last one too).
const CORS_EXPOSE: &str = "PAYMENT-REQUIRED, PAYMENT-RESPONSE, X-PAYMENT-RESPONSE, X-Request-Id, Retry-After, \
                           X-Signature, X-Signature-Kid, X-Signed-Object, ETag";
const CORS_ALLOW_HEADERS: &str =
    "Content-Type, PAYMENT-SIGNATURE, X-PAYMENT, X-WALLET, Access-Control-Expose-Headers, X-Request-Id, \
     X-Signed-Object, If-None-Match";

/// The routes, as metric labels and for `Allow` headers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Route {
    Health,
    Metrics,
    Service,
    Document,
    Unknown,
}

impl Route {
    fn of(path: &str) -> Route {
        match path {
            "/health" => Route::Health,
            "/metrics" => Route::Metrics,
            "/service" => Route::Service,
            "/.well-known/jwks.json"
            | "/agent-card.json"
            | "/.well-known/agent-card.json"
            | "/pubkey"
            | "/catalog.json"
            | "/llms.txt" => Route::Document,
            _ => Route::Unknown,
        }
    }

    fn label(self) -> &'static str {
        match self {
            Route::Health => "health",
            Route::Metrics => "metrics",
            Route::Service => "service",
            Route::Document => "discovery",
            Route::Unknown => "unknown",
        }
    }
}

impl App {
    pub fn new(config: Config, stats: Arc<ServerStats>, engine: Engine, gate: Gate, keys: Arc<Keyring>) -> App {
        let documents = Documents::build(&config, &keys, gate.terms(), gate.free_rules());
        let search_resource = Resource {
            url: format!("{}/service", config.public_url),
            description: "Web search for agents: ranked organic results (title, url, snippet) from live public \
                          sources with fallback, every source reported; optionally the top page as token-budgeted \
                          markdown. Answers are signed with Ed25519."
                .into(),
            mime_type: "application/json".into(),
            bazaar: Some(search_bazaar()),
        };
        App {
            config,
            started: Instant::now(),
            stats,
            metrics: Metrics::default(),
            engine,
            gate,
            search_resource,
            keys,
            documents,
        }
    }

    fn route(&self, req: &Request) -> Result<Response, ApiError> {
        let method = req.method.as_str();
        match (Route::of(&req.path), method) {
            (Route::Health, "GET" | "HEAD") => Ok(self.health()),
            (Route::Metrics, "GET" | "HEAD") => Ok(self.metrics()),
            (Route::Service, "POST") => self.service(req),
            (Route::Document, "GET" | "HEAD") => Ok(self.document(req)),
            (Route::Document, "OPTIONS") => Ok(preflight("GET, HEAD, OPTIONS")),
            (Route::Health | Route::Metrics, "OPTIONS") => Ok(preflight("GET, HEAD, OPTIONS")),
            (Route::Service, "OPTIONS") => Ok(preflight("POST, OPTIONS")),
            (Route::Health | Route::Metrics | Route::Document, _) => {
                Err(ApiError::method_not_allowed(method, "GET, HEAD, OPTIONS"))
            }
            (Route::Service, _) => Err(ApiError::method_not_allowed(method, "POST, OPTIONS")),
            (Route::Unknown, _) => Err(ApiError::not_found(&req.path)),
        }
    }

    fn health(&self) -> Response {
        Response::json(
            200,
            &json!({
                "status": "ok",
                "version": env!("CARGO_PKG_VERSION"),
                "uptime_s": self.started.elapsed().as_secs(),
                "mode": if self.gate.terms().is_some() { "paid" } else { "free" },
                "sources": self.engine.health(),
            }),
        )
    }

    fn metrics(&self) -> Response {
        let text = self.metrics.render(&self.stats, self.started.elapsed(), &self.engine.metrics());
        Response::new(200, "text/plain; version=0.0.4; charset=utf-8", text).header("Cache-Control", "no-store")
    }

    fn document(&self, req: &Request) -> Response {
        let Some(doc) = self.documents.get(&req.path) else { return ApiError::not_found(&req.path).into_response() };
        let fresh = req
            .header("if-none-match")
            .is_some_and(|tags| tags.split(',').any(|t| t.trim() == doc.etag || t.trim() == "*"));
        let response = if fresh {
            Response::new(304, doc.content_type, Vec::new())
        } else {
            Response::new(200, doc.content_type, doc.body.clone())
        };
        response.header("ETag", doc.etag.clone()).header("Cache-Control", "public, max-age=300")
    }

    /// Validation first (400s never ask for payment), then the gate, the search, and settlement only for an answer.
    fn service(&self, req: &Request) -> Result<Response, ApiError> {
        require_json(req)?;
        let search = SearchRequest::from_json(&req.body)?;
        let object = match req.header("x-signed-object") {
            None => SignedObject::Raw,
            Some(name) => SignedObject::from_name(name).ok_or_else(|| {
                ApiError::bad_request("signed_object_unknown", "X-Signed-Object must be raw or sha256-hex")
            })?,
        };
        let admission = match self.gate.admit(req, &self.search_resource) {
            Ok(a) => a,
            Err(refusal) => return Ok(refusal),
        };
        let answer = match self.engine.search(&search, &req.request_id) {
            Ok(mut answer) => {
                if search.extract {
                    crate::page::add_to_answer(&mut answer, &self.config, search.extract_tokens);
                }
                if let Some(map) = answer.as_object_mut() {
                    map.insert("kid".into(), self.keys.result.kid.clone().into());
                }
                answer
            }
            Err(e) => {
                if let Admission::Paid(pending) = admission {
                    self.gate.abandon(pending, e.code);
                }
                return Err(e);
            }
        };
        let mut response = Response::json(200, &answer);
        // The signature covers exactly the bytes sent.
        for (name, value) in crate::sign::sign_answer(&self.keys.result, &response.body, object) {
            response = response.header(name, value);
        }
        match admission {
            Admission::Free(_) => Ok(response),
            Admission::Paid(pending) => match self.gate.settle(pending, &self.search_resource) {
                Ok((name, value)) => Ok(response.header(name, value)),
                Err(refusal) => Ok(refusal),
            },
        }
    }
}

/// 415 unless the body is declared as `application/json` (parameters such as `charset=utf-8` are fine).
fn require_json(req: &Request) -> Result<(), ApiError> {
    let media_type = req.header("content-type").map(|v| v.split(';').next().unwrap_or("").trim());
    match media_type {
        Some(t) if t.eq_ignore_ascii_case("application/json") => Ok(()),
        Some(t) => Err(ApiError::new(
            415,
            "unsupported_media_type",
            format!("Content-Type must be application/json, not {t:?}"),
        )),
        None => Err(ApiError::new(415, "unsupported_media_type", "Content-Type: application/json is required")),
    }
}

/// The answer to a CORS preflight.
fn preflight(methods: &str) -> Response {
    Response::new(204, "text/plain", Vec::new())
        .header("Access-Control-Allow-Methods", methods)
        .header("Access-Control-Allow-Headers", CORS_ALLOW_HEADERS)
        .header("Access-Control-Max-Age", "86400")
}

/// The bazaar discovery extension of `/service`: how to call it and what it returns, with JSON Schemas.
fn search_bazaar() -> Value {
    json!({
        "info": {
            "input": {
                "type": "http",
                "method": "POST",
                "bodyType": "json",
                "body": { "query": "rust async runtime comparison", "max_results": 5, "extract": false },
            },
            "output": {
                "type": "json",
                "example": {
                    "request_id": "0f2c9a7e5b1d4c3a8e6f0b9d2c4a6e8f",
                    "query": "rust async runtime comparison",
                    "results": [{
                        "position": 1,
                        "title": "Async runtimes compared",
                        "url": "https://example.org/async-runtimes",
                        "snippet": "A comparison of async runtimes for Rust.",
                        "source": "ddg_html",
                    }],
                    "sources": [{ "name": "ddg_html", "status": "ok", "elapsed_ms": 420, "results": 10 }],
                    "cached": false,
                    "issued_at": "2026-11-22T07:18:52Z",
                    "elapsed_ms": 431,
                },
            },
        },
        "schema": {
            "$schema": "https://json-schema.org/draft/2020-12/schema",
            "type": "object",
            "properties": {
                "input": {
                    "type": "object",
                    "properties": {
                        "type": { "type": "string", "const": "http" },
                        "method": { "type": "string", "enum": ["POST"] },
                        "bodyType": { "type": "string", "enum": ["json"] },
                        "body": {
                            "type": "object",
                            "properties": {
                                "query": { "type": "string", "minLength": 1, "maxLength": QUERY_CHARS_MAX },
                                "max_results": { "type": "integer", "minimum": 1, "maximum": MAX_RESULTS_MAX, "default": 5 },
                                "extract": { "type": "boolean", "default": false },
                            },
                            "required": ["query"],
                        },
                        "queryParams": { "type": "object", "additionalProperties": { "type": "string" } },
                        "headers": { "type": "object", "additionalProperties": { "type": "string" } },
                    },
                    "required": ["type", "method", "bodyType", "body"],
                    "additionalProperties": false,
                },
                "output": {
                    "type": "object",
                    "properties": {
                        "type": { "type": "string" },
                        "example": {
                            "type": "object",
                            "properties": {
                                "request_id": { "type": "string" },
                                "query": { "type": "string" },
                                "results": {
                                    "type": "array",
                                    "items": {
                                        "type": "object",
                                        "properties": {
                                            "position": { "type": "integer" },
                                            "title": { "type": "string" },
                                            "url": { "type": "string" },
                                            "snippet": { "type": "string" },
                                            "source": { "type": "string" },
                                            "date": { "type": "string" },
                                        },
                                        "required": ["position", "title", "url", "snippet", "source"],
                                    },
                                },
                                "sources": { "type": "array" },
                                "cached": { "type": "boolean" },
                                "issued_at": { "type": "string" },
                                "elapsed_ms": { "type": "integer" },
                            },
                            "required": ["request_id", "query", "results", "sources", "cached", "issued_at"],
                        },
                    },
                    "required": ["type"],
                },
            },
            "required": ["input"],
        },
    })
}

impl Handler for App {
    fn handle(&self, request: &Request) -> Response {
        self.route(request)
            .unwrap_or_else(ApiError::into_response)
            .header("Access-Control-Allow-Origin", "*")
            .header("Access-Control-Expose-Headers", CORS_EXPOSE)
    }

    fn completed(&self, request: &Request, status: u16, elapsed: Duration) {
        self.metrics.record(Route::of(&request.path).label(), status, elapsed);
    }
}
