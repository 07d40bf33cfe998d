//! Bing's results page (`www.bing.com/search?q=...&first=N`): `ol#b_results > li.b_algo`, each with `h2 > a` (title,
//! link wrapped as `bing.com/ck/a?...&u=a1<base64url>`) and the first `p` of `div.b_caption` (snippet, as the browser
//! shows it, date prefix included). Ads are `li.b_ad` and answers `li.b_ans`: neither is a result. "No results" is
//! `li.b_no`. Blocks are recognised by status (403, 429) in `Kind::parse`.

use super::{decide, organic_for, Capture, Hit, Page};
use crate::html::{Sink, Tag, Tokenizer};

/// Bing's own host: links that stay on it are not results.
const OWN_HOST: &str = "bing.com";

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
    /// Inside the result's `div.b_caption` (its depth in divs, relative to the page).
    caption_div: Option<u32>,
    caption_done: bool,
}

#[derive(Default)]
struct Parser {
    li_depth: u32,
    div_depth: u32,
    /// The `li` depth of the result being read.
    result_li: Option<u32>,
    /// Inside the result's `h2`.
    heading: bool,
    current: Option<Current>,
    capture: Option<Capture<Field>>,
    hits: Vec<Hit>,
    no_results: bool,
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
        self.result_li = None;
        self.heading = false;
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
        let opens = !tag.self_closing;
        if tag.name == "li" && opens {
            self.li_depth += 1;
            if tag.has_class("b_no") {
                self.no_results = true;
            }
            if tag.has_class("b_algo") && self.capture.is_none() {
                self.close_result();
                self.result_li = Some(self.li_depth);
                self.current = Some(Current::default());
                return;
            }
        }
        if tag.name == "div" && opens {
            self.div_depth += 1;
        }
        if let Some(capture) = self.capture.as_mut() {
            capture.start(tag);
            return;
        }
        let div_depth = self.div_depth;
        let Some(current) = self.current.as_mut() else {
            return;
        };
        match tag.name.as_str() {
            "div" if tag.has_class("b_caption") && current.caption_div.is_none() && !current.caption_done => {
                current.caption_div = Some(div_depth);
            }
            "h2" if opens => self.heading = true,
            "a" if self.heading && current.href.is_empty() => {
                current.href = tag.attr("href").unwrap_or("").to_owned();
                self.capture = Some(Capture::new(Field::Title, tag));
            }
            "p" if current.caption_div.is_some() && current.snippet.is_empty() => {
                self.capture = Some(Capture::new(Field::Snippet, tag));
            }
            _ => {}
        }
    }

    fn end_tag(&mut self, name: &str) {
        if let Some(capture) = self.capture.as_mut() {
            if capture.end(name) {
                self.finish_capture();
            }
        }
        match name {
            "h2" => self.heading = false,
            "div" => {
                if let Some(current) = self.current.as_mut() {
                    if current.caption_div == Some(self.div_depth) {
                        // One caption per result: a later one (a rich card) is not the snippet.
                        current.caption_div = None;
                        current.caption_done = true;
                    }
                }
                self.div_depth = self.div_depth.saturating_sub(1);
            }
            "li" => {
                if self.result_li == Some(self.li_depth) {
                    self.close_result();
                }
                self.li_depth = self.li_depth.saturating_sub(1);
            }
            _ => {}
        }
    }

    fn text(&mut self, text: &str) {
        if let Some(capture) = self.capture.as_mut() {
            capture.text.push_str(text);
        }
    }
}
