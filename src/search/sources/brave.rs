//! Brave Search's results page (`search.brave.com/search?q=...&offset=N`): `div.snippet[data-type=web]`, each with
//! the result link (the first `a` with an absolute href), its `.title`, and the snippet: the first description block
//! after the title (`div.content` of a generic or video snippet, a forum question's `div.inline-qa-question`; older
//! pages: `.snippet-description`). Other snippets (the knowledge panel `#infobox-snippet`, news, video clusters,
//! discussions, "Find elsewhere") are not web results. Blocks: by status (403, 429) in `Kind::parse`, and the bot
//! wall Brave serves in their place, whose page says the request "has been flagged as being suspicious" (outside any
//! result). No recorded page shows Brave's "no results" answer: an empty page is unparseable.

use super::{decide, Entry, Field, Page, Reading};
use crate::html::{Sink, Tag, Tokenizer};

/// Brave's own host: links that stay on it are not results.
const OWN_HOST: &str = "search.brave.com";
/// The sentence of Brave's bot wall (its no-JavaScript text; the page is otherwise an empty application shell).
const WALL_SENTENCE: &str = "has been flagged as being suspicious";

#[derive(Default)]
struct Parser {
    div_depth: u32,
    /// The div depth at which the current web result opened.
    result_div: Option<u32>,
    reading: Reading,
    blocked: bool,
}

pub fn parse(body: &[u8]) -> Page {
    let mut p = Parser::default();
    Tokenizer::run(body, &mut p);
    p.reading.close(OWN_HOST);
    decide(p.blocked, p.reading.hits, false)
}

impl Sink for Parser {
    fn start_tag(&mut self, tag: &Tag) {
        if tag.name == "div" && !tag.self_closing {
            self.div_depth += 1;
            if tag.has_class("snippet") && !self.reading.capturing() {
                self.reading.close(OWN_HOST);
                self.result_div = None;
                if tag.attr("data-type") == Some("web") {
                    self.result_div = Some(self.div_depth);
                    self.reading.current = Some(Entry::default());
                }
                return;
            }
        }
        if self.reading.start(tag) {
            return;
        }
        let Some(current) = self.reading.current.as_mut() else {
            return;
        };
        let absolute = |v: &str| v.starts_with("http://") || v.starts_with("https://");
        if tag.name == "a" && current.href.is_empty() && tag.attr("href").is_some_and(absolute) {
            current.href = tag.attr("href").unwrap_or("").to_owned();
        } else if tag.has_class("title") && current.title.is_empty() && !current.href.is_empty() {
            self.reading.capture(Field::Title, tag);
        } else if current.snippet.is_empty()
            && ((tag.name == "div"
                && (tag.has_class("content") || tag.has_class("inline-qa-question"))
                && !current.title.is_empty())
                || tag.has_class("snippet-description"))
        {
            self.reading.capture(Field::Snippet, tag);
        }
    }

    fn end_tag(&mut self, name: &str) {
        self.reading.end(name);
        if name == "div" {
            if self.result_div == Some(self.div_depth) {
                self.reading.close(OWN_HOST);
                self.result_div = None;
            }
            self.div_depth = self.div_depth.saturating_sub(1);
        }
    }

    fn text(&mut self, text: &str) {
        // Script text never arrives here (`wants_raw_text`), so a script's string cannot pass for the wall.
        if !self.reading.text(text) && self.reading.current.is_none() && text.contains(WALL_SENTENCE) {
            self.blocked = true;
        }
    }

    fn wants_raw_text(&self) -> bool {
        false
    }
}
