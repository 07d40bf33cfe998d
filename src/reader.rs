//! The reader door, `POST /extract`: the pages of 1 to `URLS_MAX` URLs in one call, each read as `extract_page`
//! reads its page (the same URL, `tokens` and `query` arguments: `mcp::tools::url_argument`, `page_arguments`) and
//! answered as the member a result's page is in `/service`, in the order asked. The body is parsed once into a typed
//! `ReaderRequest`, each way it can be wrong with its own stable code, before payment is asked for; what happens to
//! a page (a refusal of the SSRF guard, a failed fetch, a timeout) is that page's status, never the call's.

use serde_json::{json, Map, Value};

use crate::error::ApiError;
use crate::mcp::tools::{page_arguments, url_argument};
use crate::search::EXTRACT_PAGES_MAX;

/// URLs one call may ask for: as many as a search may extract pages of (`extract: k`).
pub const URLS_MAX: usize = EXTRACT_PAGES_MAX;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReaderRequest {
    /// Each trimmed, in the order asked (the same URL twice is two pages).
    pub urls: Vec<String>,
    /// The token budget of each page (the range of `extract_tokens`).
    pub tokens: usize,
    /// What the pages are read for (empty: nothing said).
    pub query: String,
}

impl ReaderRequest {
    /// Parses a JSON body. Unknown fields are ignored, so clients may send more than we read.
    pub fn from_json(body: &[u8]) -> Result<ReaderRequest, ApiError> {
        ReaderRequest::from_fields(&crate::search::json_object(body)?)
    }

    pub fn from_fields(fields: &Map<String, Value>) -> Result<ReaderRequest, ApiError> {
        let items = match fields.get("urls") {
            None | Some(Value::Null) => {
                return Err(ApiError::invalid_field("urls_missing", "urls", "the field `urls` is required"))
            }
            Some(Value::Array(items)) => items,
            Some(_) => {
                return Err(ApiError::invalid_field("urls_not_array", "urls", "`urls` must be an array of URLs"))
            }
        };
        let urls = url_list(items.iter(), URLS_MAX)?;
        let (tokens, query) = page_arguments(fields)?;
        Ok(ReaderRequest { urls, tokens, query })
    }

    /// How many pages the call asks for (what it is priced by).
    pub fn pages(&self) -> usize {
        self.urls.len()
    }
}

/// The URLs of a call's `urls` (1 to `max`), each checked as `extract_page` checks its one (`url_argument`, whose
/// errors name `urls[i]`).
pub fn url_list<'v>(items: impl ExactSizeIterator<Item = &'v Value>, max: usize) -> Result<Vec<String>, ApiError> {
    url_count(items.len(), max)?;
    items.enumerate().map(|(i, item)| url_argument(Some(item), &format!("urls[{i}]"))).collect()
}

/// `urls` of `n` URLs is 1 to `max` of them, or the 400 saying which way it is not (`urls_empty`, `urls_too_many`).
pub fn url_count(n: usize, max: usize) -> Result<(), ApiError> {
    if n == 0 {
        return Err(ApiError::invalid_field("urls_empty", "urls", "`urls` must hold at least one URL"));
    }
    if n > max {
        let many = format!("`urls` holds {n} URLs; at most {max} are allowed");
        return Err(ApiError::invalid_field("urls_too_many", "urls", many));
    }
    Ok(())
}

/// The answer: the pages (`page::Pages::read`, one per URL in order), who asked, when, and the key that signs it.
pub fn answer(
    (pages, kid): (&crate::page::Pages, &str),
    request: &ReaderRequest,
    (caller, request_id): (crate::page::Caller, &str),
    now_ms: u64,
) -> Value {
    let read = pages.read(caller, &request.urls, request.tokens, &request.query);
    json!({
        "request_id": request_id,
        "pages": read,
        "issued_at": crate::clock::rfc3339_ms(now_ms),
        "kid": kid,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(body: &str) -> Result<ReaderRequest, &'static str> {
        ReaderRequest::from_json(body.as_bytes()).map_err(|e| e.code)
    }

    #[test]
    fn valid_bodies() {
        let one = ReaderRequest { urls: vec!["https://a.example/".into()], tokens: 2_000, query: String::new() };
        assert_eq!(parse(r#"{"urls":["  https://a.example/ "]}"#), Ok(one.clone()));
        assert_eq!(parse(r#"{"urls":["https://a.example/"],"query":" ","tokens":null,"x":1}"#), Ok(one));
        let five = format!(r#"{{"urls":{},"tokens":100,"query":" rust  async "}}"#, json!(vec!["http://b/"; 5]));
        let got = parse(&five).unwrap();
        assert_eq!((got.pages(), got.tokens, got.query.as_str()), (5, 100, "rust async"));
        // The guard's refusals are the pages' to report, not the call's.
        let refused = parse(r#"{"urls":["ftp://a/","http://127.0.0.1/","http://u:p@a/"]}"#).unwrap();
        assert_eq!(refused.pages(), 3);
    }

    #[test]
    fn each_error_has_its_code_and_field() {
        for (body, code, field) in [
            ("", "invalid_json", None),
            ("[]", "body_not_object", None),
            ("{}", "urls_missing", Some("urls")),
            (r#"{"urls":null}"#, "urls_missing", Some("urls")),
            (r#"{"urls":"https://a/"}"#, "urls_not_array", Some("urls")),
            (r#"{"urls":[]}"#, "urls_empty", Some("urls")),
            (r#"{"urls":["a","b","c","d","e","f"]}"#, "urls_too_many", Some("urls")),
            (r#"{"urls":["https://a/",5]}"#, "url_not_string", Some("urls[1]")),
            (r#"{"urls":["https://a/",null]}"#, "url_missing", Some("urls[1]")),
            (r#"{"urls":["  "]}"#, "url_invalid", Some("urls[0]")),
            (r#"{"urls":["not a url"]}"#, "url_invalid", Some("urls[0]")),
            (r#"{"urls":["http:///path"]}"#, "url_invalid", Some("urls[0]")),
            (r#"{"urls":["https://a/"],"tokens":99}"#, "tokens_out_of_range", Some("tokens")),
            (r#"{"urls":["https://a/"],"tokens":"500"}"#, "tokens_not_integer", Some("tokens")),
            (r#"{"urls":["https://a/"],"query":5}"#, "query_not_string", Some("query")),
        ] {
            let e = ReaderRequest::from_json(body.as_bytes()).unwrap_err();
            assert_eq!((e.status, e.code), (400, code), "{body}");
            assert_eq!(e.details.get("field").and_then(Value::as_str), field, "{body}");
        }
        let long = json!({ "urls": [format!("https://a/{}", "x".repeat(crate::mcp::tools::URL_BYTES_MAX))] });
        assert_eq!(parse(&long.to_string()), Err("url_too_long"));
    }
}
