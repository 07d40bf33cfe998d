//! DuckDuckGo's lite endpoint (`lite.duckduckgo.com/lite/`): a table in which each result is a row with
//! `a.result-link`, then rows with `td.result-snippet` and `span.link-text` / `span.timestamp`. Sponsored rows
//! carry `tr.result-sponsored` (their "more info" links are `result-link`s too). "No results." is a text row.

use super::{decide, is_ddg_anomaly, Entry, Field, Page, Reading};
use crate::html::{collapse_whitespace, Sink, Tag, Tokenizer};

/// DuckDuckGo's own host: links that stay on it are not results.
const OWN_HOST: &str = "duckduckgo.com";

#[derive(Default)]
struct Parser {
    sponsored_row: bool,
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
        if tag.name == "tr" {
            self.sponsored_row = tag.has_class("result-sponsored");
        }
        if self.reading.start(tag) {
            return;
        }
        if tag.has_class("result-link") && tag.name == "a" {
            if self.sponsored_row {
                // An ad, or an ad's "more info" link: capture nothing into the previous result.
                self.reading.capture(Field::Other, tag);
                return;
            }
            let entry = Entry { href: tag.attr("href").unwrap_or("").to_owned(), ..Entry::default() };
            self.reading.begin(OWN_HOST, entry);
            self.reading.capture(Field::Title, tag);
        } else if self.reading.current.is_some() && !self.sponsored_row {
            if tag.has_class("result-snippet") {
                self.reading.capture(Field::Snippet, tag);
            } else if tag.has_class("timestamp") {
                self.reading.capture(Field::Date, tag);
            }
        }
    }

    fn end_tag(&mut self, name: &str) {
        self.reading.end(name);
    }

    fn text(&mut self, text: &str) {
        if !self.reading.text(text) {
            let t = collapse_whitespace(text);
            if t == "No results." || t == "No more results." {
                self.no_results = true;
            }
        }
    }

    /// Script and style text is not page text (a script's string cannot pass for the no-results sentence).
    fn wants_raw_text(&self) -> bool {
        false
    }
}
