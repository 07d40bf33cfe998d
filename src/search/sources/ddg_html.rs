//! DuckDuckGo's HTML endpoint (`html.duckduckgo.com/html/`): `div.result` blocks with `a.result__a` (title and link),
//! `.result__snippet`, and a date span in `.result__extras__url`; ads carry `result--ad`; "no results" is
//! `result--no-result` or `div.no-results`; the "EOF" pseudo-result points at a Google search and is dropped.

use super::{decide, is_ddg_anomaly, iso_date, organic, Capture, Hit, Page};
use crate::html::{Sink, Tag, Tokenizer};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Field {
    Title,
    Snippet,
    ExtrasUrl,
}

#[derive(Debug, Default)]
struct Current {
    ad: bool,
    href: String,
    title: String,
    snippet: String,
    date: Option<String>,
}

#[derive(Default)]
struct Parser {
    div_depth: u32,
    /// The div depth at which the current result opened.
    result_depth: Option<u32>,
    current: Option<Current>,
    capture: Option<Capture<Field>>,
    hits: Vec<Hit>,
    no_results: bool,
    blocked: bool,
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
        let Some(c) = self.current.take() else { return };
        if c.ad || (c.title == "EOF" && c.snippet.is_empty()) {
            return;
        }
        if let Some(hit) = organic(c.title, &c.href, c.snippet, c.date) {
            self.hits.push(hit);
        }
    }

    fn finish_capture(&mut self) {
        let Some(capture) = self.capture.take() else {
            return;
        };
        let Some(current) = self.current.as_mut() else {
            return;
        };
        let (field, text) = capture.finish();
        match field {
            Field::Title => current.title = text,
            Field::Snippet => current.snippet = text,
            Field::ExtrasUrl => current.date = current.date.take().or_else(|| iso_date(&text)),
        }
    }
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
                self.close_result();
                self.result_depth = Some(self.div_depth);
                self.current = Some(Current { ad: tag.has_class("result--ad"), ..Current::default() });
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
        if tag.has_class("result__a") {
            current.href = tag.attr("href").unwrap_or("").to_owned();
            self.capture = Some(Capture::new(Field::Title, tag));
        } else if tag.has_class("result__snippet") {
            self.capture = Some(Capture::new(Field::Snippet, tag));
        } else if tag.has_class("result__extras__url") {
            self.capture = Some(Capture::new(Field::ExtrasUrl, tag));
        } else if tag.has_class("badge--ad") {
            current.ad = true;
        }
    }

    fn end_tag(&mut self, name: &str) {
        if let Some(capture) = self.capture.as_mut() {
            if capture.end(name) {
                self.finish_capture();
            }
        }
        if name == "div" {
            if self.result_depth == Some(self.div_depth) {
                self.close_result();
                self.result_depth = None;
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
