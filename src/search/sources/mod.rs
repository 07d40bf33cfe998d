//! The search sources: what each is (`Kind`) and how its answer is read (`Kind::parse_paged`; the engine builds the
//! requests, `Engine::ask`). Parsing is pure: bytes and a status in, a `Page` out, which says what the page is
//! (results, a genuine "no results", a block, or something we cannot read) and never guesses between them.

mod bing;
mod brave;
mod ddg_html;
mod ddg_lite;
mod mojeek;
mod searxng;
mod wikipedia;

use crate::html::{collapse_whitespace, Tag};

pub use bing::parse as parse_bing;
pub use brave::parse as parse_brave;
pub use ddg_html::{parse as parse_ddg_html, parse_paged as parse_ddg_html_paged, NextForm};
pub use ddg_lite::parse as parse_ddg_lite;
pub use mojeek::parse as parse_mojeek;
pub use searxng::parse as parse_searxng;
pub use wikipedia::parse as parse_wikipedia;

/// Longest title and snippet of a result, in characters; a longer one is cut and ends with `…`. An upstream's
/// answer is bounded by its bytes; a result, in the answer and in the cache, by these.
pub const TITLE_CHARS_MAX: usize = 300;
pub const SNIPPET_CHARS_MAX: usize = 1_000;
/// Longest reason kept for a block or an unreadable page (some quote the page: SearXNG's unresponsive engines).
pub const REASON_CHARS_MAX: usize = 300;

/// What a source's page says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Page {
    Results(Vec<Hit>),
    /// The page says there is nothing: a valid, empty answer.
    NoResults,
    /// A bot wall, a challenge, a rate limit: the source refuses us for now.
    Blocked(String),
    /// Neither results nor a no-results marker: the markup changed, or this is not a results page.
    Unparseable(String),
}

/// One organic result as the source gave it (titles and snippets already plain text).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Hit {
    pub title: String,
    pub url: String,
    pub snippet: String,
    /// `YYYY-MM-DD`, when the source dates the result.
    pub date: Option<String>,
}

/// The kinds of source.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Kind {
    DdgHtml,
    DdgLite,
    Searxng,
    Mojeek,
    Bing,
    Brave,
    Wikipedia,
}

impl Kind {
    pub const ALL: [Kind; 7] =
        [Kind::DdgHtml, Kind::DdgLite, Kind::Searxng, Kind::Mojeek, Kind::Bing, Kind::Brave, Kind::Wikipedia];

    pub fn name(self) -> &'static str {
        match self {
            Kind::DdgHtml => "ddg_html",
            Kind::DdgLite => "ddg_lite",
            Kind::Searxng => "searxng",
            Kind::Mojeek => "mojeek",
            Kind::Bing => "bing",
            Kind::Brave => "brave",
            Kind::Wikipedia => "wikipedia",
        }
    }

    /// The provider behind the source: endpoints of one provider share its pacing (DuckDuckGo's two endpoints are
    /// one provider's load).
    pub fn provider(self) -> &'static str {
        match self {
            Kind::DdgHtml | Kind::DdgLite => "duckduckgo",
            other => other.name(),
        }
    }

    /// Whether the engine can ask the source's next page: by offset, or (DuckDuckGo's HTML endpoint) by posting the
    /// page's own next-page form. The lite endpoint's forms are not followed.
    pub fn pages(self) -> bool {
        self != Kind::DdgLite
    }

    /// The URL the source is asked at when none is configured (the parsers of sources whose links are relative to
    /// it, Wikipedia's, use it as the origin).
    pub fn default_url(self) -> &'static str {
        match self {
            Kind::DdgHtml => "https://html.duckduckgo.com/html/",
            Kind::DdgLite => "https://lite.duckduckgo.com/lite/",
            Kind::Searxng => "",
            Kind::Mojeek => "https://www.mojeek.com/search",
            Kind::Bing => "https://www.bing.com/search",
            Kind::Brave => "https://search.brave.com/search",
            Kind::Wikipedia => "https://en.wikipedia.org/w/api.php",
        }
    }

    pub fn from_name(name: &str) -> Option<Kind> {
        Kind::ALL.into_iter().find(|k| k.name() == name)
    }

    /// Reads a response from the source's default URL (see `parse_from`).
    pub fn parse(self, status: u16, body: &[u8]) -> Page {
        self.parse_from(status, body, self.default_url())
    }

    /// Reads a response of the endpoint at `endpoint`. Statuses that mean "not now" (403, 429) are blocks whatever
    /// the body says.
    pub fn parse_from(self, status: u16, body: &[u8], endpoint: &str) -> Page {
        self.parse_paged(status, body, endpoint).0
    }

    /// `parse_from`, with the form that asks the next page where the source pages by form (DuckDuckGo's HTML
    /// endpoint). Titles, snippets and reasons are cut to their bounds here, for every source.
    pub fn parse_paged(self, status: u16, body: &[u8], endpoint: &str) -> (Page, Option<NextForm>) {
        if status == 429 || status == 403 {
            return (Page::Blocked(format!("HTTP {status}")), None);
        }
        let (mut page, next) = match self {
            Kind::DdgHtml => ddg_html::parse_paged(body),
            Kind::DdgLite => (ddg_lite::parse(body), None),
            Kind::Searxng => (searxng::parse(body), None),
            Kind::Mojeek => (mojeek::parse(body), None),
            Kind::Bing => (bing::parse(body), None),
            Kind::Brave => (brave::parse(body), None),
            Kind::Wikipedia => (wikipedia::parse(body, super::url::origin(endpoint)), None),
        };
        // Bing and Brave write a result's date at the head of its snippet ("Jul 16, 2025 · ...", "April 24, 2026 -").
        if let (Kind::Bing | Kind::Brave, Page::Results(hits)) = (self, &mut page) {
            for hit in hits.iter_mut().filter(|h| h.date.is_none()) {
                hit.date = leading_date(&hit.snippet);
            }
        }
        (page.bounded(), next)
    }

    /// Whether this HTTP status carries a page worth parsing (DuckDuckGo serves its bot wall with 202).
    pub fn parses_status(self, status: u16) -> bool {
        matches!(status, 200 | 202 | 403 | 429)
    }
}

impl Page {
    /// The page with its titles, snippets and reason cut to their bounds and kept to what XML allows (a URL
    /// percent-encoded past `RESULT_URL_BYTES_MAX` drops its result).
    fn bounded(self) -> Page {
        match self {
            Page::Results(hits) => {
                let hits: Vec<Hit> = hits
                    .into_iter()
                    .filter_map(|h| {
                        let url = xml_url(h.url);
                        (url.len() <= super::url::RESULT_URL_BYTES_MAX).then(|| Hit {
                            title: cut(xml_text(h.title), TITLE_CHARS_MAX),
                            url,
                            snippet: cut(xml_text(h.snippet), SNIPPET_CHARS_MAX),
                            date: h.date,
                        })
                    })
                    .collect();
                // Never "no results" for results we could not keep.
                if hits.is_empty() {
                    Page::Unparseable("every result's URL is too long".into())
                } else {
                    Page::Results(hits)
                }
            }
            Page::NoResults => Page::NoResults,
            Page::Blocked(why) => Page::Blocked(cut(xml_text(why), REASON_CHARS_MAX)),
            Page::Unparseable(why) => Page::Unparseable(cut(xml_text(why), REASON_CHARS_MAX)),
        }
    }
}

/// Whether XML 1.0 allows `c` in a document (its `Char` production; a Rust string holds no surrogate): not the C0
/// controls other than tab, line feed and carriage return, nor U+FFFE and U+FFFF. What a source said is kept to
/// these characters on every format (one such character in a title made the RSS unparseable).
pub fn xml_char(c: char) -> bool {
    !matches!(c, '\0'..='\u{8}' | '\u{b}' | '\u{c}' | '\u{e}'..='\u{1f}' | '\u{fffe}' | '\u{ffff}')
}

/// `text` (a source's title, snippet or reason) without the characters XML does not allow, its spaces collapsed
/// again where one was removed.
pub fn xml_text(text: String) -> String {
    if text.chars().all(xml_char) {
        return text;
    }
    collapse_whitespace(&text.replace(|c: char| !xml_char(c), ""))
}

/// A result's `url` with each character XML does not allow percent-encoded, as a browser sends it.
fn xml_url(url: String) -> String {
    if url.chars().all(xml_char) {
        return url;
    }
    let mut out = String::with_capacity(url.len() + 8);
    for c in url.chars() {
        if xml_char(c) {
            out.push(c);
        } else {
            c.encode_utf8(&mut [0; 4]).bytes().for_each(|b| out.push_str(&format!("%{b:02X}")));
        }
    }
    out
}

/// `text` if it has at most `chars_max` characters, else its first `chars_max - 1` and `…`.
fn cut(mut text: String, chars_max: usize) -> String {
    if text.chars().nth(chars_max).is_some() {
        let end = text.char_indices().nth(chars_max.saturating_sub(1)).map_or(0, |(i, _)| i);
        text.truncate(end);
        text.push('…');
    }
    text
}

/// The outcome of an HTML results page, decided in the same order for every source: a block wins, then results,
/// then a no-results marker; a page with none of them is unparseable (never "no results").
fn decide(blocked: bool, hits: Vec<Hit>, no_results: bool) -> Page {
    if blocked {
        Page::Blocked("bot wall (challenge page)".into())
    } else if !hits.is_empty() {
        Page::Results(hits)
    } else if no_results {
        Page::NoResults
    } else {
        Page::Unparseable("no results and no no-results marker".into())
    }
}

/// Text being collected for a field until the element that started it closes.
#[derive(Debug)]
struct Capture<F> {
    field: F,
    tag: String,
    depth: u32,
    text: String,
}

impl<F: Copy> Capture<F> {
    fn new(field: F, tag: &Tag) -> Capture<F> {
        Capture { field, tag: tag.name.clone(), depth: 1, text: String::new() }
    }

    fn start(&mut self, tag: &Tag) {
        if tag.name == self.tag && !tag.self_closing {
            self.depth += 1;
        }
    }

    /// True when this end tag closes the captured element.
    fn end(&mut self, name: &str) -> bool {
        if name == self.tag {
            self.depth -= 1;
        }
        self.depth == 0
    }

    fn finish(self) -> (F, String) {
        (self.field, collapse_whitespace(&self.text))
    }
}

/// A field of a result whose text is being captured.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Field {
    Title,
    /// The first snippet wins.
    Snippet,
    /// Text holding a date (`YYYY-MM-DD` or a month-name date); the first one found wins.
    Date,
    /// Text that belongs to no field (an ad's links): captured so that it lands nowhere.
    Other,
}

/// A result as an HTML results page shows it.
#[derive(Debug, Default)]
struct Entry {
    ad: bool,
    href: String,
    title: String,
    snippet: String,
    date: Option<String>,
}

/// The plumbing every HTML results parser shares: the result being read, the field being captured for it, and the
/// results read so far. A parser says where a result begins (`begin`) and which element holds which field
/// (`capture`), and passes its tags and text through (`start`, `end`, `text`), which feed the capture first.
#[derive(Debug, Default)]
struct Reading {
    current: Option<Entry>,
    capture: Option<Capture<Field>>,
    hits: Vec<Hit>,
}

impl Reading {
    /// Closes the result being read (if any) and begins `entry`.
    fn begin(&mut self, own: &str, entry: Entry) {
        self.close(own);
        self.current = Some(entry);
    }

    fn capture(&mut self, field: Field, tag: &Tag) {
        self.capture = Some(Capture::new(field, tag));
    }

    fn capturing(&self) -> bool {
        self.capture.is_some()
    }

    /// A start tag; true when it is inside the capture (the parser then looks no further).
    fn start(&mut self, tag: &Tag) -> bool {
        let Some(c) = self.capture.as_mut() else { return false };
        c.start(tag);
        true
    }

    /// An end tag: the capture ends with its element.
    fn end(&mut self, name: &str) {
        if self.capture.as_mut().is_some_and(|c| c.end(name)) {
            self.finish_capture();
        }
    }

    /// Text; true when the capture took it.
    fn text(&mut self, text: &str) -> bool {
        let Some(c) = self.capture.as_mut() else { return false };
        c.text.push_str(text);
        true
    }

    fn finish_capture(&mut self) {
        let Some((field, text)) = self.capture.take().map(Capture::finish) else { return };
        let Some(e) = self.current.as_mut() else { return };
        match field {
            Field::Title => e.title = text,
            Field::Snippet if e.snippet.is_empty() => e.snippet = text,
            Field::Date if e.date.is_none() => e.date = iso_date(&text),
            Field::Snippet | Field::Date | Field::Other => {}
        }
    }

    /// Ends the result being read and keeps it if it is organic for a source whose own host is `own`. Ads are
    /// dropped, and so is DuckDuckGo's "EOF" pseudo-result (a title "EOF" without a snippet).
    fn close(&mut self, own: &str) {
        self.finish_capture();
        let Some(e) = self.current.take() else { return };
        if e.ad || (e.title == "EOF" && e.snippet.is_empty()) {
            return;
        }
        if let Some(hit) = organic_for(own, e.title, &e.href, e.snippet, e.date) {
            self.hits.push(hit);
        }
    }
}

/// DuckDuckGo's bot wall, by markup (never by the word "captcha", which appears in ordinary snippets).
fn is_ddg_anomaly(tag: &Tag) -> bool {
    tag.has_class_prefix("anomaly-modal")
        || tag.attr("id") == Some("challenge-form")
        || ["action", "src"].iter().any(|a| tag.attr(a).is_some_and(|v| v.contains("anomaly.js")))
}

/// `YYYY-MM-DD` from the start of a timestamp such as `2025-06-23T00:00:00.0000000` or `2026-02-03 00:00:00`,
/// found anywhere in the text.
fn iso_date(text: &str) -> Option<String> {
    let bytes = text.as_bytes();
    (0..bytes.len().saturating_sub(9)).find_map(|i| {
        let w = bytes.get(i..i + 10)?;
        let before_ok = i == 0 || !bytes.get(i - 1).is_some_and(u8::is_ascii_digit);
        (is_iso_date(w) && before_ok).then(|| String::from_utf8_lossy(w).into_owned())
    })
}

/// Whether `w` is a date as results carry it: `YYYY-MM-DD` (digits and dashes in their places, nothing more).
pub fn is_iso_date(w: &[u8]) -> bool {
    w.len() == 10 && w.iter().enumerate().all(|(j, b)| if j == 4 || j == 7 { *b == b'-' } else { b.is_ascii_digit() })
}

/// `YYYY-MM-DD` from a date written with its month's name at the very start of `text` (`Jul 16, 2025`,
/// `April 24, 2026`), followed by the end, a space or punctuation; `None` for anything else (a relative "3 days ago"
/// is not a date: it is never turned into one).
fn leading_date(text: &str) -> Option<String> {
    const MONTHS: [&str; 12] = [
        "january",
        "february",
        "march",
        "april",
        "may",
        "june",
        "july",
        "august",
        "september",
        "october",
        "november",
        "december",
    ];
    let mut words = text.splitn(4, ' ');
    let (month, day, year) = (words.next()?, words.next()?, words.next()?);
    let month = month.trim_end_matches('.').to_ascii_lowercase();
    let m = MONTHS.iter().position(|full| {
        month.len() >= 3 && full.starts_with(month.as_str()) && (month.len() == 3 || month == *full || month == "sept")
    })? + 1;
    let day: u32 = day.strip_suffix(',')?.parse().ok().filter(|d| (1..=31).contains(d))?;
    let digits = year.bytes().take_while(u8::is_ascii_digit).count();
    let after = year.get(digits..)?.chars().next();
    let year: u32 = year.get(..digits).filter(|_| digits == 4)?.parse().ok()?;
    let leap = year.is_multiple_of(4) && (!year.is_multiple_of(100) || year.is_multiple_of(400));
    let days = match m {
        2 if leap => 29,
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    };
    (day <= days && !after.is_some_and(char::is_alphanumeric)).then(|| format!("{year:04}-{m:02}-{day:02}"))
}

/// Keeps results that are organic: an http(s) destination (unwrapped) not on the source's own host (`own`, or a
/// subdomain of it), and a title. A root-relative link is on the source's own site (DuckDuckGo's `/l/?uddg=`
/// redirect is unwrapped from there); only the source's own host is dropped, so a result about another engine
/// (duckduckgo.com on Bing) stays.
fn organic_for(own: &str, title: String, href: &str, snippet: String, date: Option<String>) -> Option<Hit> {
    let href = href.trim();
    let url = if href.starts_with('/') && !href.starts_with("//") {
        super::url::unwrap_result_link(&format!("https://{own}{href}"))?
    } else {
        super::url::unwrap_result_link(href)?
    };
    let host = super::url::host(&url)?;
    let own_site = host == own || host.strip_suffix(own).is_some_and(|rest| rest.ends_with('.'));
    if own_site || title.is_empty() {
        return None;
    }
    Some(Hit { title, url, snippet, date })
}

#[cfg(test)]
mod tests;
