//! Brave Search's results page (`search.brave.com/search?q=...&offset=N`): `div.snippet[data-type=web]`, each with
//! the result link (the first `a` with an absolute href), its `.title`, and the snippet in `div.generic-snippet`
//! (`.content`; older pages: `.snippet-description`). Other snippets (the knowledge panel `#infobox-snippet`, news,
//! videos, discussions) are not web results. Blocks are recognised by status (403, 429) in `Kind::parse`.

use super::{decide, organic_for, Capture, Hit, Page};
use crate::html::{Sink, Tag, Tokenizer};

/// Brave's own host: links that stay on it are not results.
const OWN_HOST: &str = "search.brave.com";

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Field {
    Title,
    Snippet,
}

#[derive(Debug, Default)]
struct Current {
    href: String,
    title: String,
    snippet: String,
}

#[derive(Default)]
struct Parser {
    div_depth: u32,
    /// The div depth at which the current web result opened.
    result_div: Option<u32>,
    current: Option<Current>,
    capture: Option<Capture<Field>>,
    hits: Vec<Hit>,
}

pub fn parse(body: &[u8]) -> Page {
    let mut p = Parser::default();
    Tokenizer::run(body, &mut p);
    p.close_result();
    // No recorded Brave page says "no results" in a way we can recognise: an empty page is unparseable.
    decide(false, p.hits, false)
}

impl Parser {
    fn close_result(&mut self) {
        self.finish_capture();
        self.result_div = None;
        if let Some(c) = self.current.take() {
            if let Some(hit) = organic_for(OWN_HOST, c.title, &c.href, c.snippet, None) {
                self.hits.push(hit);
            }
        }
    }

    fn finish_capture(&mut self) {
        let Some(capture) = self.capture.take() else {
            return;
        };
        let (field, text) = capture.finish();
        let Some(current) = self.current.as_mut() else {
            return;
        };
        match field {
            Field::Title => current.title = text,
            Field::Snippet => current.snippet = text,
        }
    }
}

impl Sink for Parser {
    fn start_tag(&mut self, tag: &Tag) {
        if tag.name == "div" && !tag.self_closing {
            self.div_depth += 1;
            if tag.has_class("snippet") && self.capture.is_none() {
                self.close_result();
                if tag.attr("data-type") == Some("web") {
                    self.result_div = Some(self.div_depth);
                    self.current = Some(Current::default());
                }
                return;
            }
        }
        if let Some(capture) = self.capture.as_mut() {
            capture.start(tag);
            return;
        }
        let Some(current) = self.current.as_mut() else {
            return;
        };
        let absolute = |v: &str| v.starts_with("http://") || v.starts_with("https://");
        if tag.name == "a" && current.href.is_empty() && tag.attr("href").is_some_and(absolute) {
            current.href = tag.attr("href").unwrap_or("").to_owned();
        } else if tag.has_class("title") && current.title.is_empty() && !current.href.is_empty() {
            self.capture = Some(Capture::new(Field::Title, tag));
        } else if current.snippet.is_empty()
            && ((tag.name == "div" && tag.has_class("content") && !current.title.is_empty())
                || tag.has_class("snippet-description"))
        {
            self.capture = Some(Capture::new(Field::Snippet, tag));
        }
    }

    fn end_tag(&mut self, name: &str) {
        if let Some(capture) = self.capture.as_mut() {
            if capture.end(name) {
                self.finish_capture();
            }
        }
        if name == "div" {
            if self.result_div == Some(self.div_depth) {
                self.close_result();
            }
            self.div_depth = self.div_depth.saturating_sub(1);
        }
    }

    fn text(&mut self, text: &str) {
        if let Some(capture) = self.capture.as_mut() {
            capture.text.push_str(text);
        }
    }
}
