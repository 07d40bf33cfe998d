//! A page's main content by URL: the untrusted fetch (SSRF guard, pinned addresses, redirects checked) streaming
//! its body into the extractor as it arrives, then the token budget. The one place that joins `fetch` and
//! `extract`; used by `/service` (`extract: true`) and `websearchd extract`. The fetch's deadline covers the
//! extraction too: the extractor stops at it and the page is a timeout.

use std::time::Instant;

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

/// Pages at least this large are followed by a heap trim: their extraction is what leaves the most freed memory
/// in the allocator's per-thread arenas.
const TRIM_AFTER_BYTES: u64 = 256 * 1_024;

/// Fetches `url` and extracts its main content within `tokens` (0: no budget), all within the fetch's deadline.
pub fn extract(url: &str, policy: &Policy, limits: &Limits, tokens: usize) -> Result<Page, untrusted::Error> {
    let deadline = Instant::now() + limits.deadline;
    let options = Options { base_url: Some(url.to_owned()), ..Options::default() };
    let mut extractor = Extractor::with_deadline(options, deadline);
    let fetched = untrusted::fetch(url, policy, limits, &mut |chunk| extractor.feed(chunk));
    let page = match fetched {
        Err(e) => Err(e),
        // Past the deadline the extractor stopped taking input: what it holds is not the page.
        Ok(_) if extractor.timed_out() => Err(untrusted::Error::Fetch(crate::fetch::Error::Timeout)),
        Ok(fetched) => {
            let extract = extractor.finish();
            let fitted = budget::fit(&extract.blocks, tokens);
            Ok((
                Page {
                    url: fetched.final_url,
                    title: extract.title,
                    markdown: fitted.markdown,
                    tokens: fitted.tokens,
                    truncated: fitted.truncated || extract.truncated,
                },
                fetched.bytes,
            ))
        }
    };
    // Everything the extraction allocated is freed by now; hand it back to the system after a large page.
    if page.as_ref().is_ok_and(|(_, bytes)| *bytes >= TRIM_AFTER_BYTES) {
        crate::http::sys::trim_heap();
    }
    page.map(|(page, _)| page)
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
