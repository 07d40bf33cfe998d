//! The JSON Schemas of the public bodies (the search request and answer, the error body), written once here and
//! used by every door that describes them: the MCP tools' input and output schemas (`mcp`) and `/openapi.json`.
//! Schemas are JSON Schema 2020-12, the dialect of both OpenAPI 3.1 and MCP.

use serde_json::{json, Value};

use crate::search::{
    EXTRACT_TOKENS_DEFAULT, EXTRACT_TOKENS_MAX, EXTRACT_TOKENS_MIN, MAX_RESULTS_DEFAULT, MAX_RESULTS_MAX,
    QUERY_CHARS_MAX,
};

/// The body of `POST /service` and the arguments of the MCP `web_search` tool.
pub fn search_request_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "query": {
                "type": "string",
                "minLength": 1,
                "maxLength": QUERY_CHARS_MAX,
                "description": "Natural-language search query (whitespace runs collapse to one space).",
            },
            "max_results": {
                "type": "integer",
                "minimum": 1,
                "maximum": MAX_RESULTS_MAX,
                "default": MAX_RESULTS_DEFAULT,
                "description": "Most organic results to return.",
            },
            "extract": {
                "type": "boolean",
                "default": false,
                "description": "Also fetch the top result and return its main content as markdown in answer_extract.",
            },
            "extract_tokens": {
                "type": "integer",
                "minimum": EXTRACT_TOKENS_MIN,
                "maximum": EXTRACT_TOKENS_MAX,
                "default": EXTRACT_TOKENS_DEFAULT,
                "description": "Token budget (cl100k) of answer_extract.",
            },
        },
        "required": ["query"],
    })
}

/// A 200 answer of a search: what `/service` sends and the MCP `web_search` tool returns (the tool adds
/// `signature`). Members the engine may add later are allowed.
pub fn search_answer_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "request_id": { "type": "string", "description": "The request this answer is for (32 hex digits)." },
            "query": { "type": "string", "description": "The query as searched (normalised)." },
            "results": { "type": "array", "items": result_schema() },
            "sources": {
                "type": "array",
                "description": "Every source asked or skipped, with its outcome.",
                "items": source_schema(),
            },
            "cached": { "type": "boolean" },
            "age_s": { "type": "integer", "minimum": 0, "description": "Age of a cached answer." },
            "issued_at": { "type": "string", "description": "RFC 3339 UTC time of the answer." },
            "elapsed_ms": { "type": "integer", "minimum": 0 },
            "kid": { "type": "string", "description": "The result key that signs this answer." },
            "answer_extract": { "type": "string", "description": "Markdown of the top result's main content." },
            "extract": extract_summary_schema(),
        },
        "required": ["request_id", "query", "results", "sources", "cached", "issued_at", "kid"],
    })
}

fn result_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "position": { "type": "integer", "minimum": 1 },
            "title": { "type": "string" },
            "url": { "type": "string" },
            "snippet": { "type": "string" },
            "source": { "type": "string", "description": "The source that found it." },
            "date": { "type": "string" },
        },
        "required": ["position", "title", "url", "snippet", "source"],
    })
}

fn source_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "name": { "type": "string" },
            "status": { "type": "string", "description": "ok, empty, failed or skipped." },
            "elapsed_ms": { "type": "integer", "minimum": 0 },
            "page": { "type": "integer" },
            "endpoint": { "type": "string" },
            "error": { "type": "string", "description": "A stable code (timeout, blocked, ...)." },
            "detail": { "type": "string" },
            "results": { "type": "integer", "minimum": 0 },
            "retry_in_s": { "type": "integer", "minimum": 0 },
        },
        "required": ["name", "status"],
    })
}

fn extract_summary_schema() -> Value {
    json!({
        "type": "object",
        "description": "How the top result's extraction went (present when extract was asked for).",
        "properties": {
            "url": { "type": "string" },
            "title": { "type": ["string", "null"] },
            "tokens": { "type": "integer", "minimum": 0 },
            "truncated": { "type": "boolean" },
            "status": { "type": "string", "description": "ok, no_results, empty, or a fetch error code." },
            "content_sha256": { "type": "string" },
            "error": { "type": "string" },
        },
        "required": ["status"],
    })
}

/// Every error answer: `{"error": {"code", "message", ...details}}`; `code` is stable and documented.
pub fn error_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "error": {
                "type": "object",
                "properties": {
                    "code": { "type": "string", "description": "Stable snake_case code; clients branch on it." },
                    "message": { "type": "string", "description": "What went wrong, in words." },
                    "field": { "type": "string", "description": "The request field at fault (400s)." },
                },
                "required": ["code", "message"],
            },
        },
        "required": ["error"],
    })
}
