//! The body of `POST /service`, parsed once into a typed `SearchRequest` (the query, its controls, the pages to
//! extract). Each way a body can be wrong has its own stable error code naming its field, and every check runs
//! before payment is asked for.

use std::ops::RangeInclusive;

use serde_json::{Map, Value};

use super::controls::Asked;
use crate::error::ApiError;

/// Longest query, in Unicode scalar values after trimming (DuckDuckGo refuses queries near 500 bytes).
pub const QUERY_CHARS_MAX: usize = 400;
pub const MAX_RESULTS_DEFAULT: usize = 5;
pub const MAX_RESULTS_MAX: usize = 20;
/// Token budget of `answer_extract`: default and bounds (cl100k tokens).
pub const EXTRACT_TOKENS_DEFAULT: usize = 2_000;
pub const EXTRACT_TOKENS_MIN: usize = 100;
pub const EXTRACT_TOKENS_MAX: usize = 8_000;
/// Results whose pages one call may ask for (`extract: k`).
pub const EXTRACT_PAGES_MAX: usize = 5;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SearchRequest {
    /// Trimmed, inner whitespace runs collapsed to one space.
    pub query: String,
    pub max_results: usize,
    /// The controls as given (the engine fills in its defaults).
    pub controls: Asked,
    /// How many of the first results to extract the pages of: 0 none, 1 the top one (`extract: true`), up to
    /// `EXTRACT_PAGES_MAX`.
    pub extract: usize,
    pub extract_tokens: usize,
    /// The sources to ask, by source or provider name (`ddg_html`, `duckduckgo`); empty: every configured source.
    /// The SearXNG door's `engines` sets it; `/service` and the MCP tool ask every source.
    pub sources: Vec<String>,
}

/// A request body as a JSON object, with the doors' stable codes: `invalid_json`, `body_not_object`.
pub fn json_object(body: &[u8]) -> Result<Map<String, Value>, ApiError> {
    let value: Value = serde_json::from_slice(body)
        .map_err(|e| ApiError::bad_request("invalid_json", format!("the body is not valid JSON: {e}")))?;
    match value {
        Value::Object(fields) => Ok(fields),
        _ => Err(ApiError::bad_request("body_not_object", "the body must be a JSON object")),
    }
}

impl SearchRequest {
    /// Parses a JSON body. Unknown fields are ignored, so clients may send more than we read.
    pub fn from_json(body: &[u8]) -> Result<SearchRequest, ApiError> {
        SearchRequest::from_fields(&json_object(body)?)
    }

    pub fn from_fields(fields: &Map<String, Value>) -> Result<SearchRequest, ApiError> {
        let query = match fields.get("query") {
            None | Some(Value::Null) => {
                return Err(ApiError::invalid_field("query_missing", "query", "the field `query` is required"))
            }
            Some(Value::String(q)) => normalize_query(q)?,
            Some(_) => return Err(ApiError::invalid_field("query_not_string", "query", "`query` must be a string")),
        };
        let max_results = integer_field(
            fields,
            "max_results",
            MAX_RESULTS_DEFAULT,
            1..=MAX_RESULTS_MAX,
            ["max_results_out_of_range", "max_results_not_integer"],
        )?;
        let extract = match fields.get("extract") {
            None | Some(Value::Null) | Some(Value::Bool(false)) => 0,
            Some(Value::Bool(true)) => 1,
            Some(Value::Number(_)) => {
                integer_field(fields, "extract", 1, 1..=EXTRACT_PAGES_MAX, ["extract_out_of_range", "extract_invalid"])?
            }
            Some(_) => {
                return Err(ApiError::invalid_field(
                    "extract_invalid",
                    "extract",
                    format!(
                        "`extract` must be true, false or the number of results to extract, 1 to {EXTRACT_PAGES_MAX}"
                    ),
                ))
            }
        };
        let extract_tokens = integer_field(
            fields,
            "extract_tokens",
            EXTRACT_TOKENS_DEFAULT,
            EXTRACT_TOKENS_MIN..=EXTRACT_TOKENS_MAX,
            ["extract_tokens_out_of_range", "extract_tokens_not_integer"],
        )?;
        let controls = Asked::from_fields(fields)?;
        Ok(SearchRequest { query, max_results, controls, extract, extract_tokens, sources: Vec::new() })
    }
}

/// The integer field `name` of a JSON object: `default` when it is absent or null, else an integer within `range`.
/// `codes` are the errors' codes: `[out of range, not an integer]` (a float or a string is not an integer).
pub fn integer_field(
    fields: &Map<String, Value>,
    name: &str,
    default: usize,
    range: RangeInclusive<usize>,
    codes: [&'static str; 2],
) -> Result<usize, ApiError> {
    let [out_of_range, not_integer] = codes;
    let n = match fields.get(name) {
        None | Some(Value::Null) => return Ok(default),
        Some(Value::Number(n)) if n.is_u64() || n.is_i64() => n,
        Some(_) => return Err(ApiError::invalid_field(not_integer, name, format!("`{name}` must be an integer"))),
    };
    match n.as_u64().and_then(|n| usize::try_from(n).ok()) {
        Some(n) if range.contains(&n) => Ok(n),
        _ => Err(ApiError::invalid_field(
            out_of_range,
            name,
            format!("`{name}` must be from {} to {}", range.start(), range.end()),
        )),
    }
}

pub fn normalize_query(raw: &str) -> Result<String, ApiError> {
    if raw.chars().any(|c| c.is_control() && !c.is_whitespace()) {
        return Err(ApiError::invalid_field("query_invalid", "query", "`query` must not contain control characters"));
    }
    let query = raw.split_whitespace().collect::<Vec<_>>().join(" ");
    if query.is_empty() {
        return Err(ApiError::invalid_field("query_empty", "query", "`query` must not be empty"));
    }
    let chars = query.chars().count();
    if chars > QUERY_CHARS_MAX {
        return Err(ApiError::invalid_field(
            "query_too_long",
            "query",
            format!("`query` has {chars} characters; at most {QUERY_CHARS_MAX} are allowed"),
        ));
    }
    Ok(query)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[track_caller]
    fn check(body: &str, expected: Result<(&str, usize, usize), &str>) {
        let got = SearchRequest::from_json(body.as_bytes());
        match expected {
            Ok((q, n, e)) => {
                let expected = SearchRequest {
                    query: q.into(),
                    max_results: n,
                    controls: Asked::default(),
                    extract: e,
                    extract_tokens: 2_000,
                    sources: Vec::new(),
                };
                assert_eq!(got, Ok(expected), "{body}")
            }
            Err(code) => assert_eq!(got.map_err(|e| e.code), Err(code), "{body}"),
        }
    }

    #[test]
    fn valid_bodies() {
        check(r#"{"query":"rust"}"#, Ok(("rust", 5, 0)));
        check(r#"{"query":"  rust \n  lang\t","max_results":20,"extract":true}"#, Ok(("rust lang", 20, 1)));
        check(r#"{"query":"q","max_results":null,"unknown":[1,2]}"#, Ok(("q", 5, 0)));
        check(&format!(r#"{{"query":"{}"}}"#, "é".repeat(400)), Ok((&"é".repeat(400), 5, 0)));
        check(r#"{"query":"q","extract":false}"#, Ok(("q", 5, 0)));
        check(r#"{"query":"q","extract":3}"#, Ok(("q", 5, 3)));
        check(r#"{"query":"q","extract":5}"#, Ok(("q", 5, 5)));
    }

    #[test]
    fn each_error_has_its_code() {
        check("", Err("invalid_json"));
        check("{", Err("invalid_json"));
        check("[]", Err("body_not_object"));
        check("{}", Err("query_missing"));
        check(r#"{"query":5}"#, Err("query_not_string"));
        check(r#"{"query":"   "}"#, Err("query_empty"));
        check(r#"{"query":"a\u0000b"}"#, Err("query_invalid"));
        check(&format!(r#"{{"query":"{}"}}"#, "a".repeat(401)), Err("query_too_long"));
        check(r#"{"query":"q","max_results":0}"#, Err("max_results_out_of_range"));
        check(r#"{"query":"q","max_results":21}"#, Err("max_results_out_of_range"));
        check(r#"{"query":"q","max_results":-3}"#, Err("max_results_out_of_range"));
        check(r#"{"query":"q","max_results":2.5}"#, Err("max_results_not_integer"));
        check(r#"{"query":"q","max_results":"5"}"#, Err("max_results_not_integer"));
        check(r#"{"query":"q","extract":"yes"}"#, Err("extract_invalid"));
        check(r#"{"query":"q","extract":2.5}"#, Err("extract_invalid"));
        check(r#"{"query":"q","extract":0}"#, Err("extract_out_of_range"));
        check(r#"{"query":"q","extract":6}"#, Err("extract_out_of_range"));
        check(r#"{"query":"q","time_range":"decade"}"#, Err("time_range_invalid"));
        check(r#"{"query":"q","include_domains":["https://a.com/"]}"#, Err("include_domains_url"));
        check(r#"{"query":"q","extract_tokens":99}"#, Err("extract_tokens_out_of_range"));
        check(r#"{"query":"q","extract_tokens":8001}"#, Err("extract_tokens_out_of_range"));
        check(r#"{"query":"q","extract_tokens":"500"}"#, Err("extract_tokens_not_integer"));
    }

    /// The shared reader of bounded integers (also `extract`'s `tokens` in MCP): its codes, field and message.
    #[test]
    fn integer_fields() {
        let read = |body: &str| {
            let fields: Map<String, Value> = serde_json::from_str(body).unwrap();
            integer_field(&fields, "tokens", 7, 5..=9, ["tokens_out_of_range", "tokens_not_integer"])
        };
        assert_eq!(read("{}"), Ok(7));
        assert_eq!(read(r#"{"tokens":null}"#), Ok(7));
        assert_eq!(read(r#"{"tokens":5}"#), Ok(5));
        assert_eq!(read(r#"{"tokens":9}"#), Ok(9));
        let e = read(r#"{"tokens":10}"#).unwrap_err();
        assert_eq!(
            (e.code, e.message.as_str(), &e.details["field"]),
            ("tokens_out_of_range", "`tokens` must be from 5 to 9", &Value::from("tokens"))
        );
        assert_eq!(read(r#"{"tokens":-1}"#).map_err(|e| e.code), Err("tokens_out_of_range"));
        for wrong in [r#"{"tokens":5.0}"#, r#"{"tokens":"5"}"#, r#"{"tokens":[5]}"#] {
            assert_eq!(read(wrong).map_err(|e| e.code), Err("tokens_not_integer"), "{wrong}");
        }
    }
}
