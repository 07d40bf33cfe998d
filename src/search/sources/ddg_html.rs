//! DuckDuckGo's HTML endpoint (`html.duckduckgo.com/html/`): `div.result` blocks with `a.result__a` (title and link),
//! `.result__snippet`, and a date span in `.result__extras__url`; ads carry `result--ad`; "no results" is
//! `result--no-result` or `div.no-results`; the "EOF" pseudo-result points at a Google search and is dropped.
//!
//! The next page is not a link but a form: `div.nav-link > form[method=post]` whose hidden inputs (`q`, `s` the
//! offset, `dc`, `v`, `o`, `api`, `vqd` the query's token, `kl`) are posted back as they are. A later page holds a
//! "Previous" form too: the next one is the form with the larger offset `s`. A form without `s` or `vqd` is not
//! followed (DuckDuckGo answers such a post with its bot wall).

use super::{decide, is_ddg_anomaly, Entry, Field, Page, Reading};
use crate::html::{Sink, Tag, Tokenizer};

/// DuckDuckGo's own host: links that stay on it are not results.
const OWN_HOST: &str = "duckduckgo.com";
/// Hidden fields kept from one form (the recorded ones have nine).
const FORM_FIELDS_MAX: usize = 16;
/// Longest field name or value kept (a `vqd` token is under 100 bytes); a form with a longer one is not followed.
const FORM_FIELD_BYTES_MAX: usize = 512;
/// Navigation forms looked at on one page (a later page has two: previous and next).
const NAV_FORMS_MAX: usize = 4;

/// The fields that ask DuckDuckGo's next page, in the page's order.
pub type NextForm = Vec<(String, String)>;

#[derive(Default)]
struct Parser {
    div_depth: u32,
    /// The div depth at which the current result opened.
    result_depth: Option<u32>,
    reading: Reading,
    no_results: bool,
    blocked: bool,
    /// The div depth of the `div.nav-link` being read, the form being read in it (`None` once it overflowed), and
    /// the complete forms.
    nav_depth: Option<u32>,
    form: Option<Option<NextForm>>,
    forms: Vec<NextForm>,
}

pub fn parse(body: &[u8]) -> Page {
    parse_paged(body).0
}

/// The page, and the form that asks the next one when the page has it.
pub fn parse_paged(body: &[u8]) -> (Page, Option<NextForm>) {
    let mut p = Parser::default();
    Tokenizer::run(body, &mut p);
    p.reading.close(OWN_HOST);
    let next = p.forms.into_iter().filter(followable).max_by_key(offset);
    let page = decide(p.blocked, p.reading.hits, p.no_results);
    let next = if matches!(page, Page::Results(_)) { next } else { None };
    (page, next)
}

fn field<'a>(form: &'a NextForm, name: &str) -> Option<&'a str> {
    form.iter().find(|(k, _)| k == name).map(|(_, v)| v.as_str())
}

fn offset(form: &NextForm) -> u64 {
    field(form, "s").and_then(|s| s.parse().ok()).unwrap_or(0)
}

fn followable(form: &NextForm) -> bool {
    field(form, "s").is_some_and(|s| s.parse::<u64>().is_ok()) && field(form, "vqd").is_some_and(|v| !v.is_empty())
}

impl Parser {
    /// A tag inside `div.nav-link`: forms open and close, hidden inputs are collected.
    fn nav_tag(&mut self, tag: &Tag) {
        match tag.name.as_str() {
            "form" if self.forms.len() < NAV_FORMS_MAX => {
                let post = tag.attr("method").is_some_and(|m| m.eq_ignore_ascii_case("post"));
                self.form = Some(post.then(Vec::new));
            }
            "input" if tag.attr("type").is_some_and(|t| t.eq_ignore_ascii_case("hidden")) => {
                let Some(Some(fields)) = self.form.as_mut() else { return };
                let (name, value) = (tag.attr("name").unwrap_or(""), tag.attr("value").unwrap_or(""));
                let fits = name.len() <= FORM_FIELD_BYTES_MAX && value.len() <= FORM_FIELD_BYTES_MAX;
                if fits && fields.len() < FORM_FIELDS_MAX && !name.is_empty() {
                    fields.push((name.to_owned(), value.to_owned()));
                } else {
                    self.form = Some(None);
                }
            }
            _ => {}
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
        if self.nav_depth.is_some() {
            self.nav_tag(tag);
        }
        if tag.name == "div" && !tag.self_closing {
            self.div_depth += 1;
            if tag.has_class("nav-link") && self.nav_depth.is_none() {
                self.nav_depth = Some(self.div_depth);
            }
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
        if name == "form" {
            if let Some(Some(form)) = self.form.take() {
                self.forms.push(form);
            }
        }
        if name == "div" {
            if self.result_depth == Some(self.div_depth) {
                self.reading.close(OWN_HOST);
                self.result_depth = None;
            }
            if self.nav_depth == Some(self.div_depth) {
                self.nav_depth = None;
                self.form = None;
            }
            self.div_depth = self.div_depth.saturating_sub(1);
        }
    }

    fn text(&mut self, text: &str) {
        self.reading.text(text);
    }
}
