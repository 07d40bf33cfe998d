//! The public discovery documents, built once at start from the configuration, the keys and the terms: the JWKS, the
//! A2A v1.0 agent card (signed with the card key), `/pubkey` (the verification procedure as data, signed), the
//! catalogue of paid operations (signed), `/llms.txt` and `/openapi.json` (`openapi`). Each is served with an `ETag`
//! and `Cache-Control`.
//!
//! The card is built in the shape the official A2A SDKs rebuild before verifying (their v1.0 model, with empty
//! strings, lists and objects and proto default values dropped), so it carries no empty value and no `false`.

use std::collections::BTreeMap;

use serde_json::{json, Value};

use crate::config::Config;
use crate::mcp::tools::URL_BYTES_MAX;
use crate::reader::URLS_MAX;
use crate::search::controls::DOMAINS_MAX;
use crate::search::{
    EXTRACT_PAGES_MAX, EXTRACT_TOKENS_DEFAULT, EXTRACT_TOKENS_MAX, EXTRACT_TOKENS_MIN, MAX_RESULTS_DEFAULT,
    MAX_RESULTS_MAX, QUERY_CHARS_MAX,
};
use crate::sign::{self, Keyring, SignedObject};
use crate::x402::{FreeRules, Terms};

/// The URI that declares the x402 extension in A2A agent cards.
pub const X402_EXTENSION_URI: &str = "https://github.com/google-a2a/a2a-x402/v0.1";

pub struct Document {
    pub content_type: &'static str,
    pub body: Vec<u8>,
    pub etag: String,
}

pub struct Documents {
    by_path: BTreeMap<&'static str, Document>,
}

impl Documents {
    pub fn get(&self, path: &str) -> Option<&Document> {
        self.by_path.get(path)
    }

    /// Every document with its path.
    pub fn iter(&self) -> impl Iterator<Item = (&'static str, &Document)> {
        self.by_path.iter().map(|(path, doc)| (*path, doc))
    }

    pub fn build(
        config: &Config,
        keys: &Keyring,
        terms: Option<&Terms>,
        free: FreeRules,
        map: Option<&crate::map::MapService>,
    ) -> Documents {
        let base = &config.public_url;
        let mut by_path = BTreeMap::new();
        let mut add = |paths: &[&'static str], content_type: &'static str, body: Vec<u8>| {
            let etag = format!("\"{}\"", sign::sha256_hex(&body).get(..32).unwrap_or_default());
            for p in paths {
                by_path.insert(*p, Document { content_type, body: body.clone(), etag: etag.clone() });
            }
        };
        add(&["/.well-known/jwks.json"], "application/jwk-set+json", pretty(&keys.jwks()));
        let card = agent_card(config, keys, terms, free);
        add(&["/agent-card.json", "/.well-known/agent-card.json"], "application/json", pretty(&card));
        add(&["/pubkey"], "application/json", pretty(&pubkey(base, keys)));
        add(&["/catalog.json"], "application/json", pretty(&catalog(config, keys, terms, free)));
        let mut guide = llms_txt(config, keys, terms, free);
        if let (Some(map), Some(path)) = (map, &config.map_path) {
            // Before the optional section, which readers may skip.
            let at = guide.find("\n## Optional").unwrap_or(guide.len());
            guide.insert_str(at, &map_lines(base, path, map));
        }
        add(&["/llms.txt"], "text/plain; charset=utf-8", guide.into_bytes());
        add(&["/openapi.json"], "application/json", pretty(&crate::openapi::document(config, terms, free, map)));
        Documents { by_path }
    }
}

fn pretty(v: &Value) -> Vec<u8> {
    let mut b = serde_json::to_vec_pretty(v).unwrap_or_default();
    b.push(b'\n');
    b
}

fn with_signature(mut doc: Value, keys: &Keyring) -> Value {
    let signature = sign::sign_document(&keys.card, &doc);
    if let Some(map) = doc.as_object_mut() {
        map.insert("signatures".into(), json!([signature]));
    }
    doc
}

/// The A2A card, as a signed discovery document: it lists no `supportedInterfaces`, because no A2A protocol binding
/// (JSON-RPC, gRPC, HTTP+JSON `message:send`) is served; the skills say how to call the service over plain HTTP.
fn agent_card(config: &Config, keys: &Keyring, terms: Option<&Terms>, free: FreeRules) -> Value {
    let base = &config.public_url;
    let mut extensions = vec![json!({
        "uri": format!("{base}/pubkey"),
        "description": "Every answer is signed with Ed25519 by the result key; the procedure and keys are at this URI.",
        "params": { "jwks": format!("{base}/.well-known/jwks.json"), "resultKid": keys.result.kid },
    })];
    if let Some(t) = terms {
        let mut params = crate::x402::terms::published(&format!("{base}/service"), t, free);
        params.insert("catalog".into(), format!("{base}/catalog.json").into());
        let mut description = format!(
            "Each call to {base}/service is paid with x402: {} USDC on {}, scheme exact.",
            crate::x402::terms::usdc_decimal(t.price),
            t.network.caip2()
        );
        if config.notary_path.is_some() {
            params.insert("notaryResource".into(), format!("{}/service", config.notary_url).into());
            params.insert("notaryAmount".into(), config.notary_price_atomic.to_string().into());
            description.push_str(&format!(
                " Each notarisation at {}/service: {} USDC.",
                config.notary_url,
                crate::x402::terms::usdc_decimal(config.notary_price_atomic)
            ));
        }
        extensions.push(json!({
            "uri": X402_EXTENSION_URI,
            "description": description,
            "required": true,
            "params": params,
        }));
    }
    let core = config.core_path.as_deref().unwrap_or("/core");
    let reader_price = match terms {
        Some(_) => format!(
            " Paid per URL asked: {} USDC a page.",
            crate::x402::terms::usdc_decimal(config.extract_price_atomic)
        ),
        None => String::new(),
    };
    let (paid_how, key_instead) = match terms {
        Some(_) => ("paid per call with x402", "search and the notary are paid per call with x402 instead"),
        None => ("free on this instance", "search and the notary need no key (free on this instance)"),
    };
    let tags = |kind: &'static str, topic: &'static str| -> Vec<&'static str> {
        let mut tags = vec![kind, topic];
        tags.extend(terms.map(|_| "x402"));
        tags.push("signed");
        tags
    };
    let card = json!({
        "name": "websearchd",
        "description": format!(
            "Web search for software agents: ranked organic results (title, url, snippet) from live public sources \
             with fallback and every source reported, optionally the top page as token-budgeted markdown; answers \
             signed with Ed25519; {paid_how}. Called over plain HTTP as each skill says (described at \
             {base}/openapi.json), not through an A2A protocol binding: this card lists none."
        ),
        "version": env!("CARGO_PKG_VERSION"),
        "documentationUrl": format!("{base}/llms.txt"),
        "capabilities": { "extensions": extensions },
        "securitySchemes": {
            "apiKey": {
                "apiKeySecurityScheme": {
                    "description": format!(
                        "API key for the protected core endpoints ({core}/state, {core}/meshgraph) only; {key_instead}."
                    ),
                    "location": "header",
                    "name": "X-WALLET",
                },
            },
        },
        "defaultInputModes": ["application/json"],
        "defaultOutputModes": ["application/json"],
        "skills": [{
            "id": "websearch",
            "name": "Web search",
            "description": format!(
                "POST {base}/service with {{\"query\": \"...\", \"max_results\": 5, \"extract\": false}}: ranked organic \
                 results with title, url and snippet, every source's outcome; controls time_range, region, safesearch, \
                 include_domains and exclude_domains; with extract the top page as markdown in answer_extract \
                 (extract: k, the first k results' pages)."
            ),
            "tags": tags("search", "web"),
            "examples": ["{\"query\": \"rust async runtime comparison\", \"max_results\": 5}"],
            "inputModes": ["application/json"],
            "outputModes": ["application/json"],
        }, {
            "id": "extract",
            "name": "Read web pages",
            "description": format!(
                "POST {base}/extract with {{\"urls\": [\"https://...\"], \"query\": \"...\", \"tokens\": 2000}}: the main \
                 content of 1 to {URLS_MAX} public pages as token-budgeted markdown, one member of pages per URL in \
                 the order asked (status ok, or why not: a refused address or a failed fetch is that page's status); \
                 with query, a page over the budget keeps the passages most relevant to it.{reader_price}"
            ),
            "tags": tags("extract", "web"),
            "examples": ["{\"urls\": [\"https://www.rust-lang.org/\"], \"query\": \"install\"}"],
            "inputModes": ["application/json"],
            "outputModes": ["application/json"],
        }],
    });
    let mut card = card;
    if config.notary_path.is_some() {
        if let Some(skills) = card.get_mut("skills").and_then(Value::as_array_mut) {
            skills.push(json!({
                "id": "notarize",
                "name": "Notary",
                "description": format!(
                    "POST {}/service with {{\"op\": \"notarize\", \"hash\": \"<64 lowercase hex SHA-256>\"}}: a \
                     receipt (seq, ts, prev) signed with the result key over its RFC 8785 canonical JSON, chained to \
                     the previous receipt; GET {}/receipts/<seq> returns a stored receipt.",
                    config.notary_url, config.notary_url
                ),
                "tags": tags("notary", "timestamp"),
                "examples": ["{\"op\": \"notarize\", \"hash\": \"9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08\"}"],
                "inputModes": ["application/json"],
                "outputModes": ["application/json"],
            }));
        }
    }
    with_signature(card, keys)
}

fn pubkey(base: &str, keys: &Keyring) -> Value {
    // A worked example, signed now with the result key in both forms.
    let example_body = format!(
        r#"{{"request_id":"0f2c9a7e5b1d4c3a8e6f0b9d2c4a6e8f","query":"example","results":[],"kid":"{}","issued_at":"2026-01-01T00:00:00Z"}}"#,
        keys.result.kid
    );
    let raw = sign::sign_answer(&keys.result, example_body.as_bytes(), SignedObject::Raw);
    let hex = sign::sign_answer(&keys.result, example_body.as_bytes(), SignedObject::Sha256Hex);
    let doc = json!({
        "service": base,
        "jwks_url": format!("{base}/.well-known/jwks.json"),
        "keys": keys.jwks().get("keys").cloned().unwrap_or_default(),
        "purposes": {
            "card": "signs the agent card, this document and the catalogue (JWS over RFC 8785 canonical JSON)",
            "result": "signs answers of paid operations and notary receipts; never the documents",
        },
        "answers": {
            "algorithm": "Ed25519 (RFC 8032), pure, no pre-hash",
            "key": "the JWKS key whose kid equals the X-Signature-Kid header; its purpose must be \"result\"",
            "headers": {
                "X-Signature": "standard base64 (RFC 4648 section 4, padded) of the 64-byte signature",
                "X-Signature-Kid": "the kid of the signing key",
                "X-Signed-Object": "what was signed: raw or sha256-hex",
            },
            "signed_objects": {
                "raw": "the exact bytes of the response body, as received (no re-serialisation)",
                "sha256-hex": "the 64 ASCII bytes of the lowercase hexadecimal SHA-256 of the exact body bytes, no newline",
            },
            "choose": "send the request header X-Signed-Object: sha256-hex to get that form; raw is the default",
            "binding": "the signed body carries request_id, issued_at, query and kid, so an answer cannot pass for the \
                        answer to another request; kid in the body must equal X-Signature-Kid",
            "steps": [
                "fetch the JWKS and find the key whose kid equals X-Signature-Kid; refuse a key whose purpose is not result",
                "build the signed object from the body bytes as X-Signed-Object says",
                "base64-decode X-Signature and verify it over the signed object with the key (Ed25519, strict)",
                "check that the body's kid equals X-Signature-Kid and that request_id is the one you sent",
            ],
        },
        "receipts": {
            "shape": "{receipt: {v, type: notary-receipt, issuer, kid, alg: Ed25519, hash_alg: sha256, hash, seq, ts, prev}, \
                      signature, receipt_sha256}",
            "signed_object": "the RFC 8785 canonical JSON of the receipt member (UTF-8)",
            "signature": "base64url (RFC 4648 section 5, no padding) of the 64-byte Ed25519 signature",
            "key": "the JWKS key whose kid equals receipt.kid; its purpose must be result",
            "chain": "prev is the lowercase hex SHA-256 of the previous receipt's canonical JSON (64 zeros for seq 1); \
                      seq increases by one per receipt, so a gap or a reordering shows",
            "offline": "websearchd verify --receipts FILE --jwks JWKS checks receipts and the links between them",
        },
        "documents": {
            "format": "signatures[] of {protected, signature}: protected is base64url(JSON {alg: EdDSA, kid, typ: JOSE}); \
                       the payload is the RFC 8785 canonical JSON of the document without its signatures member; the \
                       signature is base64url(Ed25519 over ASCII(protected + \".\" + base64url(payload)))",
            "canonicalization": "RFC 8785 (JCS)",
            "key_purpose": "card",
        },
        "example": {
            "body": example_body,
            "sha256_hex": sign::sha256_hex(example_body.as_bytes()),
            "raw": { "X-Signature": raw[0].1, "X-Signature-Kid": raw[1].1, "X-Signed-Object": "raw" },
            "sha256-hex": { "X-Signature": hex[0].1, "X-Signature-Kid": hex[1].1, "X-Signed-Object": "sha256-hex" },
        },
    });
    with_signature(doc, keys)
}

fn catalog(config: &Config, keys: &Keyring, terms: Option<&Terms>, free: FreeRules) -> Value {
    let base = &config.public_url;
    let mut op = json!({
        "id": "websearch",
        "method": "POST",
        "path": "/service",
        "url": format!("{base}/service"),
        "request": {
            "query": format!("string, 1..{QUERY_CHARS_MAX} characters"),
            "max_results": format!("integer 1..{MAX_RESULTS_MAX}, default {MAX_RESULTS_DEFAULT}"),
            "extract": format!("boolean, or integer 1..{EXTRACT_PAGES_MAX} (the first k results' pages)"),
            "time_range": "day, week, month or year",
            "region": "region-language code (us-en, de-de; wt-wt: none)",
            "safesearch": "off, moderate or strict",
            "include_domains": format!("array of at most {DOMAINS_MAX} host names"),
            "exclude_domains": format!("array of at most {DOMAINS_MAX} host names"),
        },
    });
    if let (Some(map), Some(t)) = (op.as_object_mut(), terms) {
        map.insert("payment".into(), Value::Object(crate::x402::terms::published(&format!("{base}/service"), t, free)));
    } else if let Some(map) = op.as_object_mut() {
        map.insert("payment".into(), json!({ "mode": "free" }));
    }
    let mcp_url = format!("{base}/mcp");
    let mcp_payment = match terms {
        Some(t) => {
            let mut p = crate::x402::terms::published(&mcp_url, t, free);
            p.insert("per".into(), "tools/call".into());
            p.insert("carrier".into(), "params._meta[\"x402/payment\"] (x402 MCP transport)".into());
            Value::Object(p)
        }
        None => json!({ "mode": "free" }),
    };
    let mcp = json!({
        "id": "mcp",
        "method": "POST",
        "path": "/mcp",
        "url": mcp_url,
        "protocol": "MCP Streamable HTTP",
        "protocolVersions": crate::mcp::supported_versions(),
        "tools": ["web_search", "extract_page"],
        "payment": mcp_payment,
    });
    let reader_url = format!("{base}/extract");
    let reader_payment = match terms {
        Some(t) => {
            let reader_terms = Terms { price: config.extract_price_atomic, ..t.clone() };
            let mut p = crate::x402::terms::published(&reader_url, &reader_terms, free);
            p.insert("per".into(), "URL asked (the 402 names the call's total)".into());
            Value::Object(p)
        }
        None => json!({ "mode": "free" }),
    };
    let reader = json!({
        "id": "extract",
        "method": "POST",
        "path": "/extract",
        "url": reader_url,
        "request": {
            "urls": format!("array of 1..{URLS_MAX} http(s) URLs, each at most {URL_BYTES_MAX} bytes"),
            "query": format!("string, at most {QUERY_CHARS_MAX} characters (optional: what the pages are read for)"),
            "tokens": format!("integer {EXTRACT_TOKENS_MIN}..{EXTRACT_TOKENS_MAX}, default {EXTRACT_TOKENS_DEFAULT}"),
        },
        "payment": reader_payment,
    });
    let mut operations = vec![op, reader, mcp];
    if config.notary_path.is_some() {
        let url = format!("{}/service", config.notary_url);
        let payment = match terms {
            Some(t) => Value::Object(crate::x402::terms::published(
                &url,
                &Terms { price: config.notary_price_atomic, ..t.clone() },
                free,
            )),
            None => json!({ "mode": "free" }),
        };
        operations.push(json!({
            "id": "notarize",
            "method": "POST",
            "url": url,
            "request": { "op": "\"notarize\"", "hash": "string, 64 lowercase hexadecimal characters (a SHA-256)" },
            "receipts": format!("{}/receipts/<seq>", config.notary_url),
            "payment": payment,
        }));
    }
    let doc = json!({
        "service": base,
        "x402Version": 2,
        "operations": operations,
        "agent_card": format!("{base}/agent-card.json"),
        "jwks": format!("{base}/.well-known/jwks.json"),
        "openapi": format!("{base}/openapi.json"),
    });
    with_signature(doc, keys)
}

/// The map's section of the guide: its endpoints and each layer this instance polls (a link to its data) with its
/// source, licence and schedule; layers that are off are only in the map state, with the reason.
fn map_lines(base: &str, path: &str, map: &crate::map::MapService) -> String {
    // Every line of an llms.txt section is a link: the note about layers that are off goes in the state's line.
    let off = if map.any_active() { "" } else { " No layer is polled on this instance." };
    let mut out = format!(
        "\n## Map\n\n\
         - [Map state]({base}{path}/mapstate): GET, no credentials; every layer with status (ok, stale, error, \
         disabled with the reason), object count, updated_at, the source's own time, refresh interval, source (id, \
         url, licence, attribution), last error, and per-source health counters.{off}\n"
    );
    for (slug, line) in map.catalogue() {
        out.push_str(&format!(
            "- [Layer {slug}]({base}{path}/api/capa/{slug}): GET, a GeoJSON FeatureCollection (coordinates [lon, lat], \
             units in the layer entry) with the layer's entry; {line}\n"
        ));
    }
    out
}

fn notary_lines(config: &Config, terms: Option<&Terms>) -> String {
    if config.notary_path.is_none() {
        return String::new();
    }
    // What `app` answers: with payments on, a GET or an unpaid POST gets the challenge; free, a GET is 405.
    let (price, unpaid) = match terms {
        Some(_) => (
            format!(
                "{} USDC per receipt, paid with x402 like search",
                crate::x402::terms::usdc_decimal(config.notary_price_atomic)
            ),
            "a GET or an unpaid POST gets 402 with the terms",
        ),
        None => ("free on this instance".to_owned(), "POST only: a GET gets 405"),
    };
    format!(
        "- [Notary]({url}/service): POST JSON {{\"op\": \"notarize\", \"hash\": \"<64 lowercase hex SHA-256>\"}}; {price}; \
         200 with receipt {{v, type, issuer, kid, alg, hash_alg, hash, seq, ts, prev}}, signature (base64url Ed25519 \
         over the receipt's RFC 8785 canonical JSON, result key) and receipt_sha256 (the next receipt's prev); \
         {unpaid}.\n\
         - [Receipts]({url}/receipts/1): GET {url}/receipts/<seq>, any stored receipt.\n",
        url = config.notary_url
    )
}

fn core_lines(config: &Config) -> String {
    let Some(core) = &config.core_path else { return String::new() };
    let base = &config.public_url;
    format!(
        "- [Core state]({base}{core}/state): protected; header X-WALLET with an API key from the operator (403 \
         without it). Sources, breakers, cache, payments, notary chain head, server figures.\n\
         - [Mesh graph]({base}{core}/meshgraph): protected like the core state; nodes (services, sources, facilitator, \
         paying agents) and edges with counts, last time and failures.\n"
    )
}

fn llms_txt(config: &Config, keys: &Keyring, terms: Option<&Terms>, free: FreeRules) -> String {
    let base = &config.public_url;
    let (summary, payment, search_402) = match terms {
        Some(t) => (
            "paid per call with x402",
            format!(
                "Price: {} USDC ({} atomic units) per call on {} (scheme exact) to {}, paid with x402.\n\
                 Without payment a call gets HTTP 402 with the terms (x402Version, resource, accepts) in the body and, \
                 base64, in the PAYMENT-REQUIRED header. Check network, asset, amount and payTo, sign an EIP-3009 \
                 authorization, and resend the same request with PAYMENT-SIGNATURE (x402 v2) or X-PAYMENT (v1). The \
                 answer carries PAYMENT-RESPONSE. Never send a private key or recovery phrase to the service.\n",
                crate::x402::terms::usdc_decimal(t.price),
                t.price,
                t.network.caip2(),
                crate::x402::eip712::checksum_address(&t.pay_to)
            ),
            " 402 with the payment terms;",
        ),
        None => (
            "free on this instance",
            "Price: free: this instance runs without payments; a call needs no payment header.\n".to_owned(),
            "",
        ),
    };
    let mut free_lines = String::new();
    if free.trial_calls_per_day > 0 {
        free_lines.push_str(&format!(
            "- Trial: {} free calls per client IP address per UTC day before payment is asked.\n",
            free.trial_calls_per_day
        ));
    }
    if free.loopback {
        free_lines.push_str("- Calls from the machine itself (loopback) are free.\n");
    }
    format!(
        "# websearchd\n\n\
         > Web search for software agents: POST a query, get ranked organic results (title, url, snippet) from live \
         public sources with fallback, every source's outcome reported, answers signed with Ed25519, {summary}.\n\n\
         {payment}\
         {free_lines}\n\
         Answers carry X-Signature (base64 Ed25519), X-Signature-Kid (the result key, {result_kid}) and \
         X-Signed-Object (raw or sha256-hex); the procedure is at /pubkey. A valid signature proves who produced \
         the answer, not that it is true or complete.\n\n\
         Limits: query 1 to {QUERY_CHARS_MAX} characters; max_results 1 to {MAX_RESULTS_MAX} (default \
         {MAX_RESULTS_DEFAULT}); extract true or 1 to {EXTRACT_PAGES_MAX} pages; include_domains and exclude_domains \
         at most {DOMAINS_MAX} host names each; request body at most {body_max} bytes.\n\n\
         ## API\n\n\
         - [Search]({base}/service): POST JSON {{\"query\", \"max_results\", \"extract\", \"extract_tokens\", \"time_range\" \
         (day, week, month, year), \"region\" (us-en, de-de, wt-wt), \"safesearch\" (off, moderate, strict), \
         \"include_domains\", \"exclude_domains\"}}; 200 with request_id, query, results[] (position, title, url, \
         snippet, source, published, and with extract: k each of the first k results' page in extract), sources[] \
         (name, status, error; control when a source cannot honour one, removed when the domain filters removed \
         results), cached, issued_at;\
         {search_402} 400 with a stable error code.\n\
         - [Reader]({base}/extract): POST JSON {{\"urls\" (1 to {URLS_MAX}), \"query\", \"tokens\"}}; 200 with \
         request_id, pages[] (one per URL in the order asked: status ok with url, final_url, title, markdown, tokens, \
         truncated, cut, content_sha256; or status, url and error when the page was refused or failed), issued_at, \
         kid;{reader_402} 400 with a stable error code.\n\
         - [MCP]({base}/mcp): Model Context Protocol over Streamable HTTP (2026-07-28, 2025-11-25, 2025-06-18), \
         tools web_search and extract_page with the same answers, signed; initialize, server/discover and tools/list \
         are free{mcp_402}.\n\
         {searx_line}\
         {tavily_line}\
         {notary_lines}\
         - [Health]({base}/health): GET, liveness, version, mode and per-source state.\n\
         - [Metrics]({base}/metrics): GET, Prometheus text.\n\n\
         ## Verification\n\n\
         - [Signature procedure]({base}/pubkey): keys, purposes, signed objects, headers, a worked example; signed with \
         the card key.\n\
         - [Key set]({base}/.well-known/jwks.json): the Ed25519 public keys (OKP), active and retired.\n\n\
         ## Discovery\n\n\
         - [Agent card]({base}/agent-card.json): A2A v1.0, signed with the card key; also at \
         /.well-known/agent-card.json.\n\
         - [Catalogue]({base}/catalog.json): every operation with its price (network, asset and payTo when paid); \
         signed.\n\
         - [OpenAPI]({base}/openapi.json): OpenAPI 3.1 description of every endpoint this instance serves, with the \
         error codes{openapi_402}.\n\n\
         ## Optional\n\n\
         {core_lines}",
        result_kid = keys.result.kid,
        notary_lines = notary_lines(config, terms),
        searx_line = if config.searxng {
            format!(
                "- [SearXNG API]({base}/search): GET ?q=...&format=json (also csv, rss), answered as a SearXNG instance \
                 answers, for tools that take the URL of a SearXNG; {}; / without q is a search page for people.\n",
                if terms.is_some() { "free callers only (it cannot be paid)" } else { "free" }
            )
        } else {
            String::new()
        },
        tavily_line = if config.tavily {
            format!(
                "- [Tavily API]({base}/tavily/search): POST JSON in Tavily's shapes (and /tavily/extract), for Tavily's \
                 SDK and LangChain's Tavily tools with api_base_url {base}/tavily; {}.\n",
                if terms.is_some() { "an API key from the operator, or x402 as /service; else 401" } else { "free" }
            )
        } else {
            String::new()
        },
        core_lines = core_lines(config),
        mcp_402 = if terms.is_some() {
            "; each tools/call is paid as /service is, the payment in params._meta[\"x402/payment\"] and the \
             settlement in the result's _meta[\"x402/payment-response\"] (x402 MCP transport), payment required as a \
             tool error whose structured content is the PaymentRequired object"
        } else {
            ""
        },
        reader_402 = match terms {
            Some(_) => format!(
                " 402 with the payment terms, {} USDC per URL asked;",
                crate::x402::terms::usdc_decimal(config.extract_price_atomic)
            ),
            None => String::new(),
        },
        openapi_402 = if terms.is_some() { " and the 402 answer with its PAYMENT-REQUIRED header" } else { "" },
        body_max = config.body_bytes_max,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn usdc_amounts() {
        assert_eq!(crate::x402::terms::usdc_decimal(5_000), "0.005");
        assert_eq!(crate::x402::terms::usdc_decimal(1_000_000), "1");
        assert_eq!(crate::x402::terms::usdc_decimal(1_250_000), "1.25");
        assert_eq!(crate::x402::terms::usdc_decimal(1), "0.000001");
    }

    /// No empty string, list or object and no `false` anywhere in the card: the A2A SDKs drop them before checking.
    #[test]
    fn the_card_has_no_value_the_sdks_would_drop() {
        fn walk(v: &Value, path: &str) {
            match v {
                Value::String(s) => assert!(!s.is_empty(), "empty string at {path}"),
                Value::Bool(b) => assert!(*b, "false at {path}"),
                Value::Array(a) => {
                    assert!(!a.is_empty(), "empty list at {path}");
                    a.iter().enumerate().for_each(|(i, x)| walk(x, &format!("{path}[{i}]")));
                }
                Value::Object(o) => {
                    assert!(!o.is_empty(), "empty object at {path}");
                    o.iter().for_each(|(k, x)| walk(x, &format!("{path}.{k}")));
                }
                Value::Number(n) => assert!(n.as_f64() != Some(0.0), "zero at {path}"),
                Value::Null => panic!("null at {path}"),
            }
        }
        let keys = Keyring {
            card: sign::KeyPair::from_seed(sign::Purpose::Card, &[1; 32]),
            result: sign::KeyPair::from_seed(sign::Purpose::Result, &[2; 32]),
            retired: Vec::new(),
        };
        let config = Config::defaults();
        for terms in [
            None,
            Some(Terms { network: crate::x402::Network::Base, pay_to: [7; 20], price: 5_000, max_timeout_s: 60 }),
        ] {
            let card =
                agent_card(&config, &keys, terms.as_ref(), FreeRules { trial_calls_per_day: 0, loopback: false });
            walk(&card, "card");
        }
    }
}
