//! Wikipedia's search API (`/w/api.php?action=query&list=search&format=json&srsearch=...&sroffset=N`): each
//! `query.search[]` entry is an article (title, snippet with `searchmatch` markup and entities). The article URL is
//! built from the configured endpoint's origin (`<origin>/wiki/<Title_with_underscores>`), so another language's
//! wiki works by its URL alone. An empty `query.search` list is "no results" (MediaWiki leaves `searchinfo` out when
//! it is not asked for); an `error` object is a block when it says so (`ratelimited`, `maxlag`), otherwise
//! unreadable.

use serde_json::Value;

use super::{Hit, Page};
use crate::html::{collapse_whitespace, Sink, Tag, Tokenizer};

/// Error codes of the API that mean "not now".
const BLOCK_CODES: [&str; 3] = ["ratelimited", "maxlag", "readonly"];
/// Longest title taken (MediaWiki's own limit is 255 bytes).
const TITLE_BYTES_MAX: usize = 512;

pub fn parse(body: &[u8], origin: &str) -> Page {
    let value: Value = match serde_json::from_slice(body) {
        Ok(v) => v,
        Err(e) => return Page::Unparseable(format!("invalid JSON: {e}")),
    };
    if let Some(error) = value.get("error") {
        let code = error.get("code").and_then(Value::as_str).unwrap_or("");
        let info = error.get("info").and_then(Value::as_str).unwrap_or("");
        return if BLOCK_CODES.contains(&code) {
            Page::Blocked(format!("API error {code}: {info}"))
        } else {
            Page::Unparseable(format!("API error {code}: {info}"))
        };
    }
    let query = value.get("query");
    let Some(list) = query.and_then(|q| q.get("search")).and_then(Value::as_array) else {
        return Page::Unparseable("JSON without `query.search`".into());
    };
    let hits: Vec<Hit> = list.iter().filter_map(|r| hit(r, origin)).collect();
    if !hits.is_empty() {
        Page::Results(hits)
    } else if list.is_empty() {
        Page::NoResults
    } else {
        Page::Unparseable("search entries without a title".into())
    }
}

fn hit(r: &Value, origin: &str) -> Option<Hit> {
    let title = collapse_whitespace(r.get("title")?.as_str()?);
    if title.is_empty() || title.len() > TITLE_BYTES_MAX {
        return None;
    }
    let snippet = r.get("snippet").and_then(Value::as_str).map(plain_text).unwrap_or_default();
    let url = format!("{}/wiki/{}", origin.trim_end_matches('/'), article_path(&title));
    Some(Hit { title, url, snippet, date: None })
}

/// A title as MediaWiki writes it in a URL: spaces as underscores, the rest percent-encoded except the characters
/// its own links keep (letters, digits and `-._~!$&'()*+,;=:@/`).
fn article_path(title: &str) -> String {
    let mut out = String::with_capacity(title.len() * 2);
    for b in title.replace(' ', "_").bytes() {
        if b.is_ascii_alphanumeric() || b"-._~!$&'()*+,;=:@/".contains(&b) {
            out.push(char::from(b));
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// The snippet's text: markup dropped, entities decoded (by the tokenizer, which also bounds the work).
fn plain_text(html: &str) -> String {
    #[derive(Default)]
    struct Text(String);
    impl Sink for Text {
        fn start_tag(&mut self, _tag: &Tag) {}
        fn end_tag(&mut self, _name: &str) {}
        fn text(&mut self, text: &str) {
            self.0.push_str(text);
        }
    }
    let mut t = Text::default();
    Tokenizer::run(html.as_bytes(), &mut t);
    collapse_whitespace(&t.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn article_paths() {
        assert_eq!(article_path("React (software)"), "React_(software)");
        assert_eq!(article_path("Caffeine-induced sleep disorder"), "Caffeine-induced_sleep_disorder");
        assert_eq!(article_path("C# / é?"), "C%23_/_%C3%A9%3F");
    }
}
