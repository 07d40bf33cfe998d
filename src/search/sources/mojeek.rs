//! Mojeek's results page: `ul.results-standard > li` with `h2 > a.title` and `p.s` (the snippet). "No results" is
//! the sentence "No pages found matching".

use super::{decide, organic, Capture, Hit, Page};
use crate::html::{Sink, Tag, Tokenizer};

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
    /// Depth of `ul` nesting, and the depth of the results list when inside it.
    ul_depth: u32,
    results_ul: Option<u32>,
    current: Option<Current>,
    capture: Option<Capture<Field>>,
    hits: Vec<Hit>,
    no_results: bool,
    in_raw: bool,
}

pub fn parse(body: &[u8]) -> Page {
    let mut p = Parser::default();
    Tokenizer::run(body, &mut p);
    p.close_result();
    decide(false, p.hits, p.no_results)
}

impl Parser {
    fn close_result(&mut self) {
        self.finish_capture();
        if let Some(c) = self.current.take() {
            if let Some(hit) = organic(c.title, &c.href, c.snippet, None) {
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
        self.in_raw = matches!(tag.name.as_str(), "script" | "style") && !tag.self_closing;
        if tag.name == "ul" {
            self.ul_depth += 1;
            if tag.has_class("results-standard") {
                self.results_ul = Some(self.ul_depth);
            }
        }
        if let Some(capture) = self.capture.as_mut() {
            capture.start(tag);
            return;
        }
        if self.results_ul != Some(self.ul_depth) {
            return;
        }
        if tag.name == "li" {
            self.close_result();
            self.current = Some(Current::default());
        } else if let Some(current) = self.current.as_mut() {
            if tag.name == "a" && tag.has_class("title") {
                current.href = tag.attr("href").unwrap_or("").to_owned();
                self.capture = Some(Capture::new(Field::Title, tag));
            } else if tag.name == "p" && tag.has_class("s") {
                self.capture = Some(Capture::new(Field::Snippet, tag));
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
        if name == "ul" {
            if self.results_ul == Some(self.ul_depth) {
                self.close_result();
                self.results_ul = None;
            }
            self.ul_depth = self.ul_depth.saturating_sub(1);
        }
    }

    fn text(&mut self, text: &str) {
        if let Some(capture) = self.capture.as_mut() {
            capture.text.push_str(text);
        } else if !self.in_raw && text.contains("No pages found matching") {
            self.no_results = true;
        }
    }
}
