//! Bing's results page (`www.bing.com/search?q=...&first=N`): `ol#b_results > li.b_algo`, each with `h2 > a` (title,
//! link wrapped as `bing.com/ck/a?...&u=a1<base64url>`) and the first `p` of `div.b_caption` (snippet, as the browser
//! shows it, date prefix included). Ads are `li.b_ad` and answers `li.b_ans`: neither is a result. "No results" is
//! `li.b_no`. Blocks are recognised by status (403, 429) in `Kind::parse`.

use super::{decide, Entry, Field, Page, Reading};
use crate::html::{Sink, Tag, Tokenizer};

/// Bing's own host: links that stay on it are not results.
const OWN_HOST: &str = "bing.com";

#[derive(Default)]
struct Parser {
    li_depth: u32,
    div_depth: u32,
    /// The `li` depth of the result being read.
    result_li: Option<u32>,
    /// Inside the result's `h2`.
    heading: bool,
    /// Inside the result's `div.b_caption` (its depth in divs), and whether it has closed: one caption per result,
    /// a later one (a rich card) is not the snippet.
    caption_div: Option<u32>,
    caption_done: bool,
    reading: Reading,
    no_results: bool,
}

pub fn parse(body: &[u8]) -> Page {
    let mut p = Parser::default();
    Tokenizer::run(body, &mut p);
    p.close_result();
    decide(false, p.reading.hits, p.no_results)
}

impl Parser {
    fn close_result(&mut self) {
        self.reading.close(OWN_HOST);
        self.result_li = None;
        self.heading = false;
        self.caption_div = None;
        self.caption_done = false;
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
            if tag.has_class("b_algo") && !self.reading.capturing() {
                self.close_result();
                self.result_li = Some(self.li_depth);
                self.reading.current = Some(Entry::default());
                return;
            }
        }
        if tag.name == "div" && opens {
            self.div_depth += 1;
        }
        if self.reading.start(tag) {
            return;
        }
        let Some(current) = self.reading.current.as_mut() else {
            return;
        };
        match tag.name.as_str() {
            "div" if tag.has_class("b_caption") && self.caption_div.is_none() && !self.caption_done => {
                self.caption_div = Some(self.div_depth);
            }
            "h2" if opens => self.heading = true,
            "a" if self.heading && current.href.is_empty() => {
                current.href = tag.attr("href").unwrap_or("").to_owned();
                self.reading.capture(Field::Title, tag);
            }
            "p" if self.caption_div.is_some() && current.snippet.is_empty() => {
                self.reading.capture(Field::Snippet, tag);
            }
            _ => {}
        }
    }

    fn end_tag(&mut self, name: &str) {
        self.reading.end(name);
        match name {
            "h2" => self.heading = false,
            "div" => {
                if self.caption_div == Some(self.div_depth) {
                    self.caption_div = None;
                    self.caption_done = true;
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
        self.reading.text(text);
    }
}
