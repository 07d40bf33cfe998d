//! `/openapi.json`, and the JSON Schemas of the public bodies (the search request and answer) that every door
//! describing them uses: the MCP tools' input and output schemas (`mcp`) and the OpenAPI document.
//! Schemas are JSON Schema 2020-12, the dialect of both OpenAPI 3.1 and MCP.
//!
//! The document is data, `openapi_template.json`: every endpoint as a paid instance with every part on at its
//! default path serves it. `document` fits it to the configuration at start: it drops the parts that are off,
//! moves the configured base paths, fills in the map's layers and the terms, and on a free instance drops
//! everything that only payments bring (the 402 answers, the payment headers, the codes of the payment gate).
//! Kept as text rather than built by code: it costs its bytes in the binary, not code for every member.

use serde_json::{json, Map, Value};

use crate::config::Config;
use crate::x402::{FreeRules, Terms};

/// The template, deflated by `build.rs` (about 8.5 KB in the binary instead of 42 KB of minified JSON).
static TEMPLATE_DEFLATED: &[u8] = crate::embedded::deflated!("src/openapi_template.json");

/// The template, inflated and parsed (at start: the OpenAPI document and the MCP tools' schemas).
fn template() -> Value {
    serde_json::from_str(&crate::embedded::inflate(TEMPLATE_DEFLATED)).unwrap_or_default()
}

/// Error codes only the payment gate gives (a free instance never answers them).
const PAID_CODES: [&str; 4] =
    ["settlement_unknown", "facilitator_unavailable", "facilitator_unsupported", "ledger_unavailable"];
/// Request and response headers that only payments bring, and the terms' extension.
const PAID_MEMBERS: [&str; 6] =
    ["402", "PAYMENT-SIGNATURE", "X-PAYMENT", "PAYMENT-RESPONSE", "X-PAYMENT-RESPONSE", "x-x402"];
/// The optional parts, by the base path the template gives them.
const NOTARY: &str = "/notary/";
const CORE: &str = "/core/";
const MAP: &str = "/map/";

fn schema(name: &str) -> Value {
    template().pointer(&format!("/components/schemas/{name}")).cloned().unwrap_or_default()
}

/// The body of `POST /service` and the arguments of the MCP `web_search` tool.
pub fn search_request_schema() -> Value {
    schema("SearchRequest")
}

/// A 200 answer of a search: what `/service` sends and the MCP `web_search` tool returns (the tool adds
/// `signature`). Members the engine may add later are allowed.
pub fn search_answer_schema() -> Value {
    schema("SearchAnswer")
}

/// The OpenAPI 3.1 description of this instance, built at start from its configuration: the endpoints that are off
/// are not listed, and the paid operations carry the 402 and the terms (`x-x402`) only when payments are on.
pub fn document(
    config: &Config,
    terms: Option<&Terms>,
    free: FreeRules,
    map: Option<&crate::map::MapService>,
) -> Value {
    let mut doc = template();
    let Some(root) = doc.as_object_mut() else { return doc };
    let base = &config.public_url;
    root.insert("servers".into(), json!([{ "url": base }]));
    if let Some(info) = root.get_mut("info").and_then(Value::as_object_mut) {
        info.insert("description".into(), description(terms.is_some()).into());
    }
    let paths = match root.remove("paths") {
        Some(Value::Object(paths)) => paths,
        _ => Map::new(),
    };
    let map_path = config.map_path.as_deref().filter(|_| map.is_some());
    let mut moved = Map::new();
    for (path, item) in paths {
        let rebased = [(NOTARY, config.notary_path.as_deref()), (CORE, config.core_path.as_deref()), (MAP, map_path)]
            .into_iter()
            .find_map(|(part, configured)| {
                path.strip_prefix(part).map(|rest| configured.map(|p| format!("{p}/{rest}")))
            });
        match rebased {
            None => moved.insert(path, item),
            Some(Some(path)) => moved.insert(path, item),
            // The part is off: not listed.
            Some(None) => None,
        };
    }
    if !config.searxng {
        // The SearXNG door and the search page are off: not listed.
        for path in ["/", "/search", "/opensearch.xml"] {
            moved.remove(path);
        }
    }
    if !config.tavily {
        // The Tavily door is off: not listed.
        for path in ["/tavily/search", "/tavily/extract"] {
            moved.remove(path);
        }
    }
    root.insert("paths".into(), Value::Object(moved));
    if let (Some(path), Some(map)) = (map_path, map) {
        let at =
            format!("/paths/{}/get/parameters/0/schema/enum", pointer_escape(&format!("{path}/api/capa/{{slug}}")));
        if let Some(slugs) = doc.pointer_mut(&at) {
            *slugs = json!(map.slugs());
        }
    }
    match terms {
        Some(t) => {
            let notary_terms = Terms { price: config.notary_price_atomic, ..t.clone() };
            // The reader's terms are one page's: a call pays them once per URL it asks for.
            let reader_terms = Terms { price: config.extract_price_atomic, ..t.clone() };
            let operations = [
                ("/service".to_owned(), format!("{base}/service"), t),
                ("/extract".to_owned(), format!("{base}/extract"), &reader_terms),
                // The Tavily door is priced as the doors it stands for.
                ("/tavily/search".to_owned(), format!("{base}/service"), t),
                ("/tavily/extract".to_owned(), format!("{base}/extract"), &reader_terms),
                ("/mcp".to_owned(), format!("{base}/mcp"), t),
                (
                    format!("{}/service", config.notary_path.as_deref().unwrap_or("")),
                    format!("{}/service", config.notary_url),
                    &notary_terms,
                ),
            ];
            for (path, resource, terms) in operations {
                let at = format!("/paths/{}/post", pointer_escape(&path));
                if let Some(op) = doc.pointer_mut(&at).and_then(Value::as_object_mut) {
                    op.insert("x-x402".into(), Value::Object(crate::x402::terms::published(&resource, terms, free)));
                }
            }
        }
        None => {
            if let Some(schemas) = doc.pointer_mut("/components/schemas").and_then(Value::as_object_mut) {
                schemas.remove("PaymentRequired");
            }
            unpaid(&mut doc);
        }
    }
    doc
}

fn description(paid: bool) -> String {
    format!(
        "The endpoints this instance serves (websearchd {}). {} Answers of the search and the notary carry \
         X-Signature (standard base64 Ed25519 by the result key), X-Signature-Kid and X-Signed-Object; the procedure \
         is at /pubkey. Every error is {{\"error\": {{\"code\", \"message\", ...}}}} with a stable code (each error \
         answer lists its codes). Errors of the HTTP layer on any path: 400 bad_request, 404 not_found, 405 \
         method_not_allowed, 408 request_timeout, 411 length_required, 431 headers_too_large or too_many_headers, \
         500 internal_error, 503 too_many_connections (with Retry-After).",
        env!("CARGO_PKG_VERSION"),
        if paid {
            "Paid operations answer 402 with the x402 v2 PaymentRequired object as the body and, base64, in the \
             PAYMENT-REQUIRED header; pay with PAYMENT-SIGNATURE (x402 v2) or X-PAYMENT (v1); the 200 carries \
             PAYMENT-RESPONSE (v2) or X-PAYMENT-RESPONSE (v1)."
        } else {
            "Payments are off on this instance: every operation is free."
        }
    )
}

/// A JSON Pointer reference token (RFC 6901): `~` and `/` escaped.
fn pointer_escape(token: &str) -> String {
    token.replace('~', "~0").replace('/', "~1")
}

/// Drops what only payments bring: the 402 answers, the payment and settlement headers, the terms, the gate's
/// error codes, an error answer left without a code, and an operation left without an answer.
fn unpaid(value: &mut Value) {
    match value {
        Value::Object(members) => {
            for name in PAID_MEMBERS {
                members.remove(name);
            }
            members.values_mut().for_each(unpaid);
            members.retain(|_, v| {
                let no_code = v
                    .pointer("/content/application~1json/schema/allOf/1/properties/error/properties/code/enum")
                    .and_then(Value::as_array)
                    .is_some_and(Vec::is_empty);
                let no_answer = v.get("responses").and_then(Value::as_object).is_some_and(Map::is_empty);
                !no_code && !no_answer
            });
        }
        Value::Array(items) => {
            items.retain(|v| {
                let code = v.as_str().is_some_and(|s| PAID_CODES.contains(&s));
                let header = v.get("name").and_then(Value::as_str).is_some_and(|n| PAID_MEMBERS.contains(&n));
                !code && !header
            });
            items.iter_mut().for_each(unpaid);
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::search::{
        EXTRACT_TOKENS_DEFAULT, EXTRACT_TOKENS_MAX, EXTRACT_TOKENS_MIN, MAX_RESULTS_DEFAULT, MAX_RESULTS_MAX,
        QUERY_CHARS_MAX,
    };

    #[test]
    fn the_template_parses_and_says_the_limits_the_code_enforces() {
        let written: Value = serde_json::from_str(include_str!("openapi_template.json")).expect("the template is JSON");
        assert_eq!(template(), written, "the deflated template inflates to the file as written");
        // 9 KiB: the reader door (`/extract`, issue 39) took the template past the 8 KiB it had kept within.
        assert!(TEMPLATE_DEFLATED.len() < 9_216, "{} bytes deflated", TEMPLATE_DEFLATED.len());
        assert_eq!(written["openapi"], "3.1.0");
        let request = search_request_schema();
        let p = &request["properties"];
        assert_eq!(p["query"]["maxLength"], QUERY_CHARS_MAX);
        assert_eq!(p["max_results"]["maximum"], MAX_RESULTS_MAX);
        assert_eq!(p["max_results"]["default"], MAX_RESULTS_DEFAULT);
        assert_eq!(p["extract_tokens"]["minimum"], EXTRACT_TOKENS_MIN);
        assert_eq!(p["extract_tokens"]["maximum"], EXTRACT_TOKENS_MAX);
        assert_eq!(p["extract_tokens"]["default"], EXTRACT_TOKENS_DEFAULT);
        assert_eq!(p["extract"]["oneOf"][1]["maximum"], crate::search::EXTRACT_PAGES_MAX);
        use crate::search::controls::{SafeSearch, TimeRange, DOMAINS_MAX, DOMAIN_BYTES_MAX};
        assert_eq!(p["time_range"]["enum"], json!(TimeRange::NAMES));
        assert_eq!(p["safesearch"]["enum"], json!(SafeSearch::NAMES));
        for field in ["include_domains", "exclude_domains"] {
            assert_eq!(p[field]["maxItems"], DOMAINS_MAX);
            assert_eq!(p[field]["items"]["maxLength"], DOMAIN_BYTES_MAX);
        }
        assert_eq!(search_answer_schema()["type"], "object");
        assert_eq!(schema("Error")["required"], json!(["error"]));
    }
}
