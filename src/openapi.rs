//! The JSON Schemas of the public bodies (the search request and answer, the error body), written once here and
//! used by every door that describes them: the MCP tools' input and output schemas (`mcp`) and `/openapi.json`.
//! Schemas are JSON Schema 2020-12, the dialect of both OpenAPI 3.1 and MCP. `document` is `/openapi.json`.

use serde_json::{json, Map, Value};

use crate::config::Config;
use crate::x402::{FreeRules, Terms};

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

/// The OpenAPI 3.1 description of this instance, built at start from its configuration: the endpoints that are off
/// are not listed, and the paid operations carry the terms of their 402 (`x-x402`) only when payments are on.
pub fn document(
    config: &Config,
    terms: Option<&Terms>,
    free: FreeRules,
    map: Option<&crate::map::MapService>,
) -> Value {
    let base = &config.public_url;
    let paid = terms.is_some();
    let mut paths = Map::new();
    let mut service = operation(
        "websearch",
        "Search the web",
        "Ranked organic results from live public sources with fallback, every source reported; with extract, the top \
         result's main content as markdown. The 200 answer is signed (X-Signature over the exact body).",
        &["search"],
    );
    service.insert("parameters".into(), paid_parameters(paid));
    service.insert(
        "requestBody".into(),
        json_body(
            json!({ "$ref": "#/components/schemas/SearchRequest" }),
            json!({ "query": "rust async runtime", "max_results": 5 }),
        ),
    );
    let mut responses = vec![
        ("200", signed_answer("The results.", json!({ "$ref": "#/components/schemas/SearchAnswer" }), paid)),
        ("400", error_response("The request is wrong; error.field names the field.", &SEARCH_400)),
        ("405", error_response("Not POST.", &["method_not_allowed"])),
        ("413", error_response("The body is over the limit.", &["body_too_large"])),
        ("415", error_response("The body is not declared as application/json.", &["unsupported_media_type"])),
        (
            "502",
            error_response(
                "No source answered (error.sources is the report).",
                &with_paid(paid, &["all_sources_failed"], &["settlement_unknown"]),
            ),
        ),
        (
            "503",
            error_response(
                "Every source is cooling down or not ready, or the server is overloaded; see Retry-After.",
                &with_paid(paid, &["all_sources_skipped", "overloaded"], &PAYMENT_503),
            ),
        ),
    ];
    if let Some(t) = terms {
        responses.insert(2, ("402", payment_required()));
        service.insert(
            "x-x402".into(),
            Value::Object(crate::discovery::terms_params(&format!("{base}/service"), t, free)),
        );
    }
    service.insert("responses".into(), responses_object(responses));
    paths.insert("/service".into(), json!({ "post": service }));

    if let Some(notary) = &config.notary_path {
        let mut post = operation(
            "notarize",
            "Notarise a SHA-256 hash",
            "Appends the hash to the notary's chain and returns a receipt signed with the result key.",
            &["notary"],
        );
        post.insert("parameters".into(), paid_parameters(paid));
        post.insert(
            "requestBody".into(),
            json_body(
                json!({ "$ref": "#/components/schemas/NotaryRequest" }),
                json!({ "op": "notarize", "hash": "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08" }),
            ),
        );
        let mut responses = vec![
            ("200", signed_answer("The receipt.", json!({ "$ref": "#/components/schemas/NotaryReceipt" }), paid)),
            ("400", error_response("The request is wrong.", &NOTARY_400)),
            ("415", error_response("The body is not declared as application/json.", &["unsupported_media_type"])),
            (
                "503",
                error_response(
                    "The receipt could not be stored, or payments cannot be taken now; see Retry-After.",
                    &with_paid(paid, &["journal_unavailable", "overloaded"], &PAYMENT_503),
                ),
            ),
        ];
        let mut item = Map::new();
        if let Some(t) = terms {
            responses.insert(2, ("402", payment_required()));
            responses.push((
                "502",
                error_response(
                    "The settlement's outcome is unknown; the receipt is withheld.",
                    &["settlement_unknown"],
                ),
            ));
            let url = format!("{}/service", config.notary_url);
            let terms = Terms { price: config.notary_price_atomic, ..t.clone() };
            post.insert("x-x402".into(), Value::Object(crate::discovery::terms_params(&url, &terms, free)));
            let mut get = operation(
                "notarizeTerms",
                "The notary's payment terms",
                "A 402 challenge with the terms.",
                &["notary"],
            );
            get.insert("responses".into(), responses_object(vec![("402", payment_required())]));
            item.insert("get".into(), Value::Object(get));
        }
        post.insert("responses".into(), responses_object(responses));
        item.insert("post".into(), Value::Object(post));
        paths.insert(format!("{notary}/service"), Value::Object(item));
        let mut get = operation(
            "notaryReceipt",
            "A stored receipt",
            "Any receipt of the chain, by its sequence number (public, immutable).",
            &["notary"],
        );
        get.insert(
            "parameters".into(),
            json!([{ "name": "seq", "in": "path", "required": true, "schema": { "type": "integer", "minimum": 1 } }]),
        );
        get.insert(
            "responses".into(),
            responses_object(vec![
                ("200", json_response("The receipt.", json!({ "$ref": "#/components/schemas/NotaryReceipt" }))),
                (
                    "400",
                    error_response("The sequence number is not a positive integer in plain decimal.", &["seq_invalid"]),
                ),
                ("404", error_response("There is no such receipt.", &["receipt_not_found"])),
            ]),
        );
        paths.insert(format!("{notary}/receipts/{{seq}}"), json!({ "get": get }));
    }

    if let Some(core) = &config.core_path {
        for (path, id, summary) in [
            ("state", "coreState", "Deep state of the service"),
            ("meshgraph", "meshGraph", "Graph of services, sources and agents"),
        ] {
            let mut get = operation(id, summary, "Needs an API key in X-WALLET; answers are not cached.", &["core"]);
            get.insert("security".into(), json!([{ "apiKey": [] }]));
            get.insert(
                "responses".into(),
                responses_object(vec![
                    ("200", json_response(summary, json!({ "type": "object" }))),
                    ("403", error_response("No key, or a wrong one.", &["api_key_required", "api_key_invalid"])),
                    (
                        "429",
                        error_response(
                            "Too many failed attempts from this address; see Retry-After.",
                            &["api_key_attempts"],
                        ),
                    ),
                    ("503", error_response("The keys file is not usable (permissions).", &["api_keys_unusable"])),
                ]),
            );
            paths.insert(format!("{core}/{path}"), json!({ "get": get }));
        }
    }

    if let (Some(path), Some(map)) = (&config.map_path, map) {
        let mut get = operation(
            "mapState",
            "The live world-map state",
            "Every layer with its status, source, licence and times.",
            &["map"],
        );
        get.insert(
            "responses".into(),
            responses_object(vec![("200", json_response("The map state.", json!({ "type": "object" })))]),
        );
        paths.insert(format!("{path}/mapstate"), json!({ "get": get }));
        let mut get =
            operation("mapLayer", "One layer's data", "A GeoJSON FeatureCollection with the layer's entry.", &["map"]);
        let slug = json!({ "name": "slug", "in": "path", "required": true, "schema": { "enum": map.slugs() } });
        get.insert("parameters".into(), json!([slug]));
        get.insert(
            "responses".into(),
            responses_object(vec![
                ("200", json_response("The layer's last good data.", json!({ "type": "object" }))),
                ("404", error_response("No layer by that slug (error.valid_slugs lists them).", &["layer_unknown"])),
            ]),
        );
        paths.insert(format!("{path}/api/capa/{{slug}}"), json!({ "get": get }));
    }

    let mut get = operation("health", "Liveness", "Version, mode and per-source state.", &["operations"]);
    get.insert("responses".into(), responses_object(vec![("200", json_response("Up.", json!({ "type": "object" })))]));
    paths.insert("/health".into(), json!({ "get": get }));
    let mut get = operation(
        "metrics",
        "Prometheus metrics",
        "Counters and gauges in the Prometheus text format.",
        &["operations"],
    );
    get.insert(
        "responses".into(),
        responses_object(vec![(
            "200",
            json!({ "description": "The metrics.", "content": { "text/plain": { "schema": { "type": "string" } } } }),
        )]),
    );
    paths.insert("/metrics".into(), json!({ "get": get }));

    for (path, id, summary, media) in DOCUMENTS {
        let mut get =
            operation(id, summary, "A discovery document, cached: ETag, Cache-Control, If-None-Match.", &["discovery"]);
        get.insert(
            "parameters".into(),
            json!([{ "name": "If-None-Match", "in": "header", "schema": { "type": "string" } }]),
        );
        let schema = if media.starts_with("text/") { json!({ "type": "string" }) } else { json!({ "type": "object" }) };
        get.insert(
            "responses".into(),
            responses_object(vec![
                (
                    "200",
                    json!({
                        "description": summary,
                        "headers": { "ETag": { "schema": { "type": "string" } } },
                        "content": { media: { "schema": schema } },
                    }),
                ),
                ("304", json!({ "description": "Not modified (If-None-Match)." })),
            ]),
        );
        paths.insert(path.into(), json!({ "get": get }));
    }

    json!({
        "openapi": "3.1.0",
        "info": {
            "title": "websearchd",
            "version": INTERFACE_VERSION,
            "summary": "Web search for software agents, answers signed with Ed25519.",
            "description": format!(
                "The endpoints this instance serves (websearchd {}). {} Answers of the search and the notary carry \
                 X-Signature (standard base64 Ed25519 by the result key), X-Signature-Kid and X-Signed-Object; the \
                 procedure is at /pubkey. Every error is {{\"error\": {{\"code\", \"message\", ...}}}} with a stable \
                 code. Errors of the HTTP layer on any path: 400 bad_request, 404 not_found, 405 \
                 method_not_allowed, 408 request_timeout, 411 length_required, 431 headers_too_large or \
                 too_many_headers, 500 internal_error, 503 too_many_connections (with Retry-After).",
                env!("CARGO_PKG_VERSION"),
                if paid {
                    "Paid operations answer 402 with the x402 v2 PaymentRequired object as the body and, base64, in \
                     the PAYMENT-REQUIRED header; pay with PAYMENT-SIGNATURE (x402 v2) or X-PAYMENT (v1); the 200 \
                     carries PAYMENT-RESPONSE (v2) or X-PAYMENT-RESPONSE (v1)."
                } else {
                    "Payments are off on this instance: every operation is free."
                }
            ),
        },
        "servers": [{ "url": base }],
        "paths": paths,
        "components": {
            "schemas": {
                "SearchRequest": search_request_schema(),
                "SearchAnswer": search_answer_schema(),
                "NotaryRequest": {
                    "type": "object",
                    "properties": {
                        "op": { "const": "notarize" },
                        "hash": { "type": "string", "pattern": "^[0-9a-f]{64}$" },
                    },
                    "required": ["op", "hash"],
                    "additionalProperties": false,
                },
                "NotaryReceipt": {
                    "type": "object",
                    "properties": {
                        "receipt": { "type": "object" },
                        "signature": { "type": "string" },
                        "receipt_sha256": { "type": "string" },
                    },
                    "required": ["receipt", "signature", "receipt_sha256"],
                },
                "PaymentRequired": payment_required_schema(),
                "Error": error_schema(),
            },
            "securitySchemes": {
                "apiKey": {
                    "type": "apiKey",
                    "in": "header",
                    "name": "X-WALLET",
                    "description": "API key of the core endpoints.",
                },
            },
        },
    })
}

/// The version of the interface description (the interface specification's 1.0.0).
pub const INTERFACE_VERSION: &str = "1.0.0";

/// The discovery documents: path, operationId, summary, media type.
const DOCUMENTS: [(&str, &str, &str, &str); 7] = [
    ("/agent-card.json", "agentCard", "The A2A agent card (signed)", "application/json"),
    (
        "/.well-known/agent-card.json",
        "agentCardWellKnown",
        "The A2A agent card at its well-known path",
        "application/json",
    ),
    ("/.well-known/jwks.json", "jwks", "The public keys (JWKS)", "application/jwk-set+json"),
    ("/pubkey", "pubkey", "How to verify signatures, as data (signed)", "application/json"),
    ("/catalog.json", "catalog", "Every operation with its price (signed)", "application/json"),
    ("/llms.txt", "llmsTxt", "The plain-text guide", "text/plain"),
    ("/openapi.json", "openapi", "This document", "application/json"),
];

const SEARCH_400: [&str; 13] = [
    "invalid_json",
    "body_not_object",
    "query_missing",
    "query_not_string",
    "query_empty",
    "query_invalid",
    "query_too_long",
    "max_results_not_integer",
    "max_results_out_of_range",
    "extract_not_boolean",
    "extract_tokens_not_integer",
    "extract_tokens_out_of_range",
    "signed_object_unknown",
];

const NOTARY_400: [&str; 9] = [
    "invalid_json",
    "invalid_request",
    "op_missing",
    "op_unknown",
    "op_invalid",
    "hash_missing",
    "hash_invalid",
    "unknown_field",
    "signed_object_unknown",
];

/// 503 codes of the gate, before the work (nothing taken) or before settlement.
const PAYMENT_503: [&str; 3] = ["facilitator_unavailable", "facilitator_unsupported", "ledger_unavailable"];

/// The refusal codes of a 402 (`error` in the body).
const PAYMENT_402: [&str; 15] = [
    "payment_malformed",
    "payment_version_unsupported",
    "payment_scheme_mismatch",
    "payment_network_mismatch",
    "payment_asset_mismatch",
    "payment_pay_to_mismatch",
    "payment_amount_mismatch",
    "payment_not_yet_valid",
    "payment_expired",
    "payment_signature_invalid",
    "payment_signature_high_s",
    "payment_domain_mismatch",
    "payment_replayed",
    "payment_rejected",
    "settlement_failed",
];

fn with_paid(paid: bool, always: &[&'static str], when_paid: &[&'static str]) -> Vec<&'static str> {
    let mut codes = always.to_vec();
    if paid {
        codes.extend_from_slice(when_paid);
    }
    codes
}

fn operation(id: &str, summary: &str, description: &str, tags: &[&str]) -> Map<String, Value> {
    let mut op = Map::new();
    op.insert("operationId".into(), id.into());
    op.insert("summary".into(), summary.into());
    op.insert("description".into(), description.into());
    op.insert("tags".into(), json!(tags));
    op
}

fn responses_object(responses: Vec<(&str, Value)>) -> Value {
    Value::Object(responses.into_iter().map(|(status, r)| (status.to_owned(), r)).collect())
}

fn json_body(schema: Value, example: Value) -> Value {
    json!({ "required": true, "content": { "application/json": { "schema": schema, "example": example } } })
}

fn json_response(description: &str, schema: Value) -> Value {
    json!({ "description": description, "content": { "application/json": { "schema": schema } } })
}

/// An error answer whose `error.code` is one of `codes`.
fn error_response(description: &str, codes: &[&str]) -> Value {
    let schema = json!({
        "allOf": [
            { "$ref": "#/components/schemas/Error" },
            { "properties": { "error": { "properties": { "code": { "enum": codes } } } } },
        ],
    });
    json!({
        "description": format!("{description} Codes: {}.", codes.join(", ")),
        "content": { "application/json": { "schema": schema } },
    })
}

/// The request headers of a paid operation (payment when payments are on; the signed-object choice always).
fn paid_parameters(paid: bool) -> Value {
    let mut params = vec![json!({
        "name": "X-Signed-Object",
        "in": "header",
        "description": "What the answer's signature covers: raw (the body bytes, the default) or sha256-hex.",
        "schema": { "enum": ["raw", "sha256-hex"] },
    })];
    if paid {
        params.push(json!({
            "name": "PAYMENT-SIGNATURE",
            "in": "header",
            "description": "x402 v2: standard base64 of the PaymentPayload JSON (an EIP-3009 authorization).",
            "schema": { "type": "string" },
        }));
        params.push(json!({
            "name": "X-PAYMENT",
            "in": "header",
            "description": "x402 v1: standard base64 of the payment payload JSON.",
            "schema": { "type": "string" },
        }));
    }
    Value::Array(params)
}

/// A 200 answer signed with the result key, with the settlement headers when payments are on.
fn signed_answer(description: &str, schema: Value, paid: bool) -> Value {
    let string = json!({ "type": "string" });
    let mut headers = json!({
        "X-Signature": { "description": "Standard base64 of the Ed25519 signature.", "schema": string },
        "X-Signature-Kid": { "description": "The result key's kid (in the JWKS).", "schema": string },
        "X-Signed-Object": { "description": "raw or sha256-hex.", "schema": string },
    });
    if let (true, Some(map)) = (paid, headers.as_object_mut()) {
        let settlement = "x402 v2 settlement: base64 of {success, transaction, network, payer}.";
        map.insert("PAYMENT-RESPONSE".into(), json!({ "description": settlement, "schema": string }));
        map.insert(
            "X-PAYMENT-RESPONSE".into(),
            json!({ "description": "The same for a v1 payment.", "schema": string }),
        );
    }
    json!({ "description": description, "headers": headers, "content": { "application/json": { "schema": schema } } })
}

fn payment_required() -> Value {
    json!({
        "description": format!(
            "Payment required: the x402 v2 PaymentRequired object as the body and, base64, in PAYMENT-REQUIRED. A \
             refused payment says why in error: {}.",
            PAYMENT_402.join(", ")
        ),
        "headers": {
            "PAYMENT-REQUIRED": {
                "description": "Standard base64 of the PaymentRequired JSON (the body without message, trial and \
                                free_from_loopback).",
                "required": true,
                "schema": { "type": "string" },
            },
        },
        "content": { "application/json": { "schema": { "$ref": "#/components/schemas/PaymentRequired" } } },
    })
}

fn payment_required_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "x402Version": { "const": 2 },
            "error": { "enum": PAYMENT_402 },
            "message": { "type": "string" },
            "resource": {
                "type": "object",
                "properties": {
                    "url": { "type": "string" },
                    "description": { "type": "string" },
                    "mimeType": { "type": "string" },
                },
                "required": ["url"],
            },
            "accepts": {
                "type": "array",
                "items": {
                    "type": "object",
                    "properties": {
                        "scheme": { "const": "exact" },
                        "network": { "type": "string", "description": "CAIP-2, eip155:8453 for Base." },
                        "amount": { "type": "string", "description": "Atomic units (USDC has 6 decimals)." },
                        "asset": { "type": "string" },
                        "payTo": { "type": "string" },
                        "maxTimeoutSeconds": { "type": "integer" },
                        "extra": { "type": "object" },
                    },
                    "required": ["scheme", "network", "amount", "asset", "payTo", "maxTimeoutSeconds"],
                },
            },
            "extensions": { "type": "object" },
            "trial": { "type": "object" },
            "free_from_loopback": { "type": "boolean" },
        },
        "required": ["x402Version", "resource", "accepts"],
    })
}
