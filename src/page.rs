//! A page's main content by URL: the untrusted fetch (SSRF guard, pinned addresses, redirects checked) streaming
//! its body into the extractor as it arrives, then the token budget. The one place that joins `fetch` and
//! `extract`; used by `/service` (`extract: true`) and `websearchd extract`.

use serde_json::{json, Value};

use crate::extract::{budget, Extractor, Options};
use crate::fetch::guard::Policy;
use crate::fetch::untrusted::{self, Limits};

/// A fetched and extracted page, cut to its budget.
#[derive(Debug, Clone)]
pub struct Page {
    pub url: String,
    pub title: Option<String>,
    pub markdown: String,
    pub tokens: usize,
    pub truncated: bool,
}

impl Page {
    /// The `extract` member of an answer.
    pub fn summary(&self) -> Value {
        json!({
            "url": self.url,
            "title": self.title,
            "tokens": self.tokens,
            "truncated": self.truncated,
            "status": "ok",
            "content_sha256": crate::sign::sha256_hex(self.markdown.as_bytes()),
        })
    }
}

/// Fetches `url` and extracts its main content within `tokens` (0: no budget).
pub fn extract(url: &str, policy: &Policy, limits: &Limits, tokens: usize) -> Result<Page, untrusted::Error> {
    let mut extractor = Extractor::new(Options { base_url: Some(url.to_owned()), ..Options::default() });
    let fetched = untrusted::fetch(url, policy, limits, &mut |chunk| extractor.feed(chunk))?;
    let extract = extractor.finish();
    let fitted = budget::fit(&extract.blocks, tokens);
    Ok(Page {
        url: fetched.final_url,
        title: extract.title,
        markdown: fitted.markdown,
        tokens: fitted.tokens,
        truncated: fitted.truncated,
    })
}

/// The `extract` member for a failure: the search still answers, without `answer_extract`.
pub fn failure(url: &str, status: &str, message: &str) -> Value {
    json!({ "url": url, "status": status, "error": message })
}

/// Fetches an answer's top result and adds `answer_extract` and `extract` (or only `extract`, saying why not).
pub fn add_to_answer(answer: &mut Value, config: &crate::config::Config, tokens: usize) {
    let top = answer.get("results").and_then(|r| r.get(0)).and_then(|r| r.get("url")).and_then(Value::as_str);
    let (summary, markdown) = match top {
        None => (json!({ "status": "no_results" }), None),
        Some(url) => {
            let (policy, limits) = config.fetch_policy();
            match extract(url, &policy, &limits, tokens) {
                Ok(page) if page.markdown.trim().is_empty() => {
                    (failure(url, "empty", "no main content was found on the page"), None)
                }
                Ok(page) => (page.summary(), Some(page.markdown)),
                Err(e) => (failure(url, e.code(), &e.to_string()), None),
            }
        }
    };
    if let Some(map) = answer.as_object_mut() {
        if let Some(md) = markdown {
            map.insert("answer_extract".into(), md.into());
        }
        map.insert("extract".into(), summary);
    }
}
