//! DuckDuckGo's HTML endpoint (`html.duckduckgo.com/html/`): `div.result` blocks with `a.result__a` (title and link),
//! `.result__snippet`, and a date span in `.result__extras__url`; ads carry `result--ad`; "no results" is
//! `result--no-result` or `div.no-results`; the "EOF" pseudo-result points at a Google search and is dropped.

use super::{decide, is_ddg_anomaly, Entry, Field, Page, Reading};
use crate::html::{Sink, Tag, Tokenizer};

/// DuckDuckGo's own host: links that stay on it are not results.
const OWN_HOST: &str = "duckduckgo.com";

#[derive(Default)]
struct Parser {
    div_depth: u32,
    /// The div depth at which the current result opened.
    result_depth: Option<u32>,
    reading: Reading,
    no_results: bool,
    blocked: bool,
}

pub fn parse(body: &[u8]) -> Page {
    let mut p = Parser::default();
    Tokenizer::run(body, &mut p);
    p.reading.close(OWN_HOST);
    decide(p.blocked, p.reading.hits, p.no_results)
}

impl Sink for Parser {
    fn start_tag(&mut self, tag: &Tag) {
        if is_ddg_anomaly(tag) {
            self.blocked = true;
        }
        if tag.has_class("result--no-result") || tag.has_class("no-results") {
            self.no_results = true;
        }
        if tag.name == "div" && !tag.self_closing {
            self.div_depth += 1;
            if tag.has_class("result") && !tag.has_class("result--no-result") {
                self.result_depth = Some(self.div_depth);
                self.reading.begin(OWN_HOST, Entry { ad: tag.has_class("result--ad"), ..Entry::default() });
                return;
            }
        }
        if self.reading.start(tag) {
            return;
        }
        let Some(current) = self.reading.current.as_mut() else {
            return;
        };
        if tag.has_class("result__a") {
            current.href = tag.attr("href").unwrap_or("").to_owned();
            self.reading.capture(Field::Title, tag);
        } else if tag.has_class("result__snippet") {
            self.reading.capture(Field::Snippet, tag);
        } else if tag.has_class("result__extras__url") {
            // The date is in a span of the displayed URL.
            self.reading.capture(Field::Date, tag);
        } else if tag.has_class("badge--ad") {
            current.ad = true;
        }
    }

    fn end_tag(&mut self, name: &str) {
        self.reading.end(name);
        if name == "div" {
            if self.result_depth == Some(self.div_depth) {
                self.reading.close(OWN_HOST);
                self.result_depth = None;
            }
            self.div_depth = self.div_depth.saturating_sub(1);
        }
    }

    fn text(&mut self, text: &str) {
        self.reading.text(text);
    }
}
