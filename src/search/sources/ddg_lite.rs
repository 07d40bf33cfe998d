//! DuckDuckGo's lite endpoint (`lite.duckduckgo.com/lite/`): a table in which each result is a row with
//! `a.result-link`, then rows with `td.result-snippet` and `span.link-text` / `span.timestamp`. Sponsored rows
//! carry `tr.result-sponsored` (their "more info" links are `result-link`s too). "No results." is a text row.

use super::{decide, is_ddg_anomaly, iso_date, organic, Capture, Hit, Page};
use crate::html::{collapse_whitespace, Sink, Tag, Tokenizer};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Field {
    Title,
    Snippet,
    Date,
    Other,
}

#[derive(Debug, Default)]
struct Current {
    href: String,
    title: String,
    snippet: String,
    date: Option<String>,
}

#[derive(Default)]
struct Parser {
    sponsored_row: bool,
    current: Option<Current>,
    capture: Option<Capture<Field>>,
    hits: Vec<Hit>,
    no_results: bool,
    blocked: bool,
    /// Inside `script` or `style`, whose text is not page text.
    in_raw: bool,
}

pub fn parse(body: &[u8]) -> Page {
    let mut p = Parser::default();
    Tokenizer::run(body, &mut p);
    p.close_result();
    decide(p.blocked, p.hits, p.no_results)
}

impl Parser {
    fn close_result(&mut self) {
        self.finish_capture();
        if let Some(c) = self.current.take() {
            if let Some(hit) = organic(c.title, &c.href, c.snippet, c.date) {
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
            Field::Snippet if current.snippet.is_empty() => current.snippet = text,
            Field::Date => current.date = iso_date(&text),
            Field::Snippet | Field::Other => {}
        }
    }
}

impl Sink for Parser {
    fn start_tag(&mut self, tag: &Tag) {
        if is_ddg_anomaly(tag) {
            self.blocked = true;
        }
        self.in_raw = matches!(tag.name.as_str(), "script" | "style") && !tag.self_closing;
        if tag.name == "tr" {
            self.sponsored_row = tag.has_class("result-sponsored");
        }
        if let Some(capture) = self.capture.as_mut() {
            capture.start(tag);
            return;
        }
        if tag.has_class("result-link") && tag.name == "a" {
            if self.sponsored_row {
                // An ad, or an ad's "more info" link: capture nothing into the previous result.
                self.capture = Some(Capture::new(Field::Other, tag));
                return;
            }
            self.close_result();
            self.current = Some(Current { href: tag.attr("href").unwrap_or("").to_owned(), ..Current::default() });
            self.capture = Some(Capture::new(Field::Title, tag));
        } else if self.current.is_some() && !self.sponsored_row {
            if tag.has_class("result-snippet") {
                self.capture = Some(Capture::new(Field::Snippet, tag));
            } else if tag.has_class("timestamp") {
                self.capture = Some(Capture::new(Field::Date, tag));
            }
        }
    }

    fn end_tag(&mut self, name: &str) {
        if matches!(name, "script" | "style") {
            self.in_raw = false;
        }
        if let Some(capture) = self.capture.as_mut() {
            if capture.end(name) {
                self.finish_capture();
            }
        }
    }

    fn text(&mut self, text: &str) {
        if let Some(capture) = self.capture.as_mut() {
            capture.text.push_str(text);
        } else if !self.in_raw {
            let t = collapse_whitespace(text);
            if t == "No results." || t == "No more results." {
                self.no_results = true;
            }
        }
    }
}
