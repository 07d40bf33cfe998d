//! Mojeek's results page: `ul.results-standard > li` with `h2 > a.title` and `p.s` (the snippet). "No results" is
//! the sentence "No pages found matching". Its bot wall (a proof-of-work challenge titled "Captcha") holds
//! `div.captcha-wrap` in place of results.

use super::{decide, Entry, Field, Page, Reading};
use crate::html::{Sink, Tag, Tokenizer};

/// Mojeek's own host: links that stay on it are not results.
const OWN_HOST: &str = "mojeek.com";

#[derive(Default)]
struct Parser {
    /// Depth of `ul` nesting, and the depth of the results list when inside it.
    ul_depth: u32,
    results_ul: Option<u32>,
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
        if tag.name == "div" && tag.has_class("captcha-wrap") {
            self.blocked = true;
        }
        if tag.name == "ul" {
            self.ul_depth += 1;
            if tag.has_class("results-standard") {
                self.results_ul = Some(self.ul_depth);
            }
        }
        if self.reading.start(tag) || self.results_ul != Some(self.ul_depth) {
            return;
        }
        if tag.name == "li" {
            self.reading.begin(OWN_HOST, Entry::default());
        } else if let Some(current) = self.reading.current.as_mut() {
            if tag.name == "a" && tag.has_class("title") {
                current.href = tag.attr("href").unwrap_or("").to_owned();
                self.reading.capture(Field::Title, tag);
            } else if tag.name == "p" && tag.has_class("s") {
                self.reading.capture(Field::Snippet, tag);
            }
        }
    }

    fn end_tag(&mut self, name: &str) {
        self.reading.end(name);
        if name == "ul" {
            if self.results_ul == Some(self.ul_depth) {
                self.reading.close(OWN_HOST);
                self.results_ul = None;
            }
            self.ul_depth = self.ul_depth.saturating_sub(1);
        }
    }

    fn text(&mut self, text: &str) {
        if !self.reading.text(text) && text.contains("No pages found matching") {
            self.no_results = true;
        }
    }

    /// Script and style text is not page text (a script's string cannot pass for the no-results sentence).
    fn wants_raw_text(&self) -> bool {
        false
    }
}
