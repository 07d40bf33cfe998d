//! The streaming half: tokens in, a flat list of blocks out, each knowing the containers around it.

use crate::html::{Sink, Tag};

use super::signals::{LdScanner, Signals};
use super::{Options, BLOCKS_MAX, CELLS_MAX, DEPTH_MAX, NODES_MAX, TEXT_BYTES_MAX, TITLE_BYTES_MAX};

/// How many enclosing containers a block remembers (readability scores parent, grandparent and a few more).
pub const PATH_LEN: usize = 5;
pub const NO_NODE: u32 = u32::MAX;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Para,
    Heading(u8),
    Item {
        depth: u8,
        ordered: bool,
        index: u32,
    },
    Pre,
    /// A row of a data table; `table` identifies the table, `header` a row of `th` cells only (a row whose first
    /// cell is a `th` naming it is data).
    Row {
        table: u32,
        header: bool,
    },
}

#[derive(Debug, Clone)]
pub struct Block {
    pub kind: Kind,
    pub quote_depth: u8,
    /// Inline markdown (for rows: cells joined by `|`).
    pub md: String,
    pub cells: Vec<String>,
    /// Characters of visible text, and of link text.
    pub text_len: u32,
    pub link_len: u32,
    /// Links with visible text.
    pub links: u32,
    pub commas: u32,
    /// The nearest enclosing containers, innermost first (`NO_NODE` when fewer).
    pub path: [u32; PATH_LEN],
    /// Inside navigation, a footer, an aside, a form, or an element whose class or id says boilerplate.
    pub boiler: bool,
    /// Inside an element whose class, id or tag says main content.
    pub content: bool,
    /// What `boiler` and `content` would be if comments sections were not boilerplate (a forum's posts are its
    /// content even in a region named comments).
    pub plain: (bool, bool),
    /// Inside `<noscript>`: what the page says to readers without scripts.
    pub noscript: bool,
    /// Inside a section of customers' reviews (boilerplate on a product page).
    pub reviews: bool,
    /// Inside a `<form>`: its labels, prompts and choices.
    pub form: bool,
    /// Inside a wrapper of the page hidden until a script shows it (see `Builder::veil`).
    pub veiled: bool,
    /// Boilerplate only by page builders' widget classes (`BUILDER_WIDGET`).
    pub widget: bool,
}

#[derive(Debug, Clone, Copy)]
pub struct Node {
    pub parent: u32,
    /// Class/id hint: positive for content, negative for boilerplate.
    pub weight: i32,
    /// This element or one around it is boilerplate by tag or hint.
    pub boiler: bool,
    /// This element or one around it is content by tag or hint.
    pub content: bool,
    /// As for blocks: (`boiler`, `content`) if comments sections were not boilerplate.
    pub plain: (bool, bool),
    /// A hash of the tag and class attribute (0 without a class): the article's template repeats it when a body is
    /// split into several containers.
    pub class_key: u64,
    /// A hash of the tag and the class tokens that name a template (0 without a class): numbered tokens
    /// (`post-15859`), state words (`first`, `instock`) and taxonomy tokens or letters (`category-dinner`, `A`:
    /// `listing::taxonomy_token`) are left out, so the cards of a listing share it where their full class lists
    /// differ by an id, a position, a state or a category (`product post-15859 first instock`).
    pub card_key: u64,
    /// The element holds one post's text by schema.org microdata (`itemprop="text"` of a question, an answer, a
    /// comment or a forum posting): the posts of a thread.
    pub post: bool,
    /// This element or one around it holds what a forum shows beside a post about its poster, not the post: a
    /// signature, the poster's title and statistics (see `forum::poster_token`).
    pub poster: bool,
    /// The element's class or id names a listing's filters (`listing::facet_token`).
    pub facets: bool,
    /// The element is a `<form>`.
    pub form: bool,
    /// The element is or lies inside a wrapper of the page hidden until a script shows it (see `Builder::veil`).
    pub veiled: bool,
    /// As for blocks: boilerplate only by page builders' widget classes.
    pub widget: bool,
}

pub struct Page {
    pub title: Option<String>,
    pub og_title: Option<String>,
    pub signals: Signals,
    pub blocks: Vec<Block>,
    pub nodes: Vec<Node>,
    /// A cap was reached: blocks, containers or cells were left out.
    pub truncated: bool,
    /// Some blocks or containers are `veiled`.
    pub veiled: bool,
}

impl Page {
    /// A container and the containers around it, innermost first (at most `DEPTH_MAX + 1`, the tree's depth).
    pub fn ancestors(&self, from: usize) -> impl Iterator<Item = usize> + '_ {
        let mut x = Some(from);
        std::iter::from_fn(move || {
            let here = x?;
            x = self.nodes.get(here).map(|node| node.parent as usize).filter(|&p| p < here);
            Some(here)
        })
        .take(DEPTH_MAX + 1)
    }

    /// The innermost container holding `first` and every one of `others` (one of them when it holds the rest);
    /// one in another tree than `first` (an element closed early) is passed over. Linear in the others: each walks
    /// up at most `DEPTH_MAX` steps, looking for `first`'s ancestors by binary search (a parent comes before its
    /// children, so their indices fall outward).
    pub fn common_ancestor(&self, first: usize, others: impl IntoIterator<Item = usize>) -> usize {
        let chain: Vec<usize> = self.ancestors(first).collect();
        let mut top = 0;
        for other in others {
            if let Some(at) = self.ancestors(other).find_map(|x| chain.binary_search_by(|c| x.cmp(c)).ok()) {
                top = top.max(at);
            }
        }
        chain.get(top).copied().unwrap_or(first)
    }
}

struct Open {
    name: String,
    /// A comments section (readers' comments are never the article).
    comments: bool,
    /// A section of customers' reviews.
    reviews: bool,
    /// Node id for containers, `NO_NODE` for the rest.
    node: u32,
    boiler: bool,
    content: bool,
    /// A boilerplate class or id hint inside a content region (a shop's "related products" inside `<main>`): what
    /// it holds is not content, whatever encloses it (see `Builder::in_content`).
    masks: bool,
    /// The element holds one post's text (`Node::post`).
    post: bool,
    /// A page's frame (see `FRAME_TAGS`) opened outside any content region.
    frame: bool,
    /// Boilerplate by a page builder's widget class alone (`Hinted::widget`).
    widget: bool,
    skip: bool,
    /// For `ol`/`ul`: the next item number.
    counter: u32,
    /// For `a`: the resolved target.
    href: Option<String>,
    /// Markdown emphasis marker to close.
    mark: &'static str,
    /// For `td`/`th`: whether the cell contained a block-level element (then it is not a data cell).
    cell_blocks: bool,
}

pub struct Builder {
    options: Options,
    stack: Vec<Open>,
    /// Elements nested beyond `DEPTH_MAX`: counted, not stored.
    overflow: usize,
    blocks: Vec<Block>,
    nodes: Vec<Node>,
    /// The block being filled.
    cur: String,
    cur_text: u32,
    cur_links: u32,
    /// Links with visible text in the current block, and `cur_links` where the open link began.
    cur_link_count: u32,
    link_start: u32,
    cur_commas: u32,
    /// The current table row's cells, and whether it had `th` and `td` cells.
    row: Vec<String>,
    row_header: bool,
    row_data: bool,
    /// Characters of link text in the current row's cells.
    row_links: u32,
    tables: u32,
    title: Option<String>,
    in_title: bool,
    title_buf: String,
    og_title: Option<String>,
    signals: Signals,
    /// Inside `<script type="application/ld+json">`: its text is read for `@type`.
    in_ld_json: bool,
    /// Reads the types of the JSON-LD script being read.
    ld_json: LdScanner,
    /// Whether the last character written to `cur` was whitespace (to collapse runs).
    space: bool,
    hints: Hints,
    words: Words,
    /// How many open elements have each property: the questions asked per text run and per block are then O(1)
    /// instead of a walk of the stack.
    depths: Depths,
    /// Bytes of text held: in `blocks` (what they cost to render, see `flush`) and in the current row's cells.
    text_bytes: usize,
    /// Something was left out (a cap was reached).
    truncated: bool,
    /// A cap on blocks, containers or text was reached: nothing more is collected, every token is ignored.
    full: bool,
    /// The open element hidden from screen readers (`aria-hidden`), as its index in `stack`.
    muted: Option<usize>,
    /// The `stack` length at which an element hidden from screen readers closed: a sibling of it for screen readers
    /// only says to them what it shows (`usize::MAX` when none).
    voiced_at: usize,
    /// The last thing read was a `</span>`: a `<span>` right after it is another run of text (see `start_tag`).
    span_ended: bool,
    /// The buffers of closed elements' names, reused for the next ones: no allocation per element. As many as the
    /// stack held at once, at most `DEPTH_MAX`.
    names: Vec<String>,
    /// The name of the element being closed (see `pop`), in a buffer of its own.
    closing: String,
    /// A `<span>` opened right after a `</span>`: its text is set apart by a space if it starts a word after one
    /// (see `text`).
    span_gap: bool,
    /// The open wrapper of the page hidden until a script shows it, whose content is kept marked `veiled` (the
    /// extract uses it only when the visible page says nothing: `select::unveil`).
    veil: Option<Veil>,
    /// Something was kept `veiled`.
    veiled: bool,
}

/// A hidden wrapper being read: where it is on the stack, and what `muted` and `voiced_at` would be had it been
/// skipped (they are put back when it closes, so that what follows it reads as if it had been).
#[derive(Clone, Copy)]
struct Veil {
    depth: usize,
    muted: Option<usize>,
    voiced_at: usize,
}

/// Open elements at most around a hidden element kept as a wrapper of the page (`html`, `body` and two more): a
/// page hidden until a script shows it is hidden near its top; menus, drawers and modals hidden deeper are skipped
/// as before, whatever they hold.
const VEIL_DEPTH_MAX: usize = 4;

/// A veil is read only while the page holds less than a half (1 / this) of each cap (`BLOCKS_MAX`, `NODES_MAX`,
/// `TEXT_BYTES_MAX`); past it the rest of the veil is skipped like any hidden element, so that a large hidden wrapper
/// cannot fill the caps and stop the page before its visible part.
const VEIL_CAP_DIVISOR: usize = 2;

/// Roles of a window over the page (a modal, an alert): hidden until opened, and never the page, however much it
/// holds.
const DIALOG_ROLES: &[&str] = &["dialog", "alertdialog"];

/// The elements that wrap a page (a hidden one is kept as a veil only if these alone are around it too); a hidden
/// `nav`, `aside`, `dialog` or list is never the page.
const VEIL_TAGS: &[&str] = &["html", "body", "form", "div", "main", "section", "article"];

#[derive(Default, Clone, Copy)]
struct Depths {
    pre: u32,
    links: u32,
    boiler: u32,
    content: u32,
    comments: u32,
    reviews: u32,
    quotes: u32,
    paragraphs: u32,
    cells: u32,
    lists: u32,
    noscript: u32,
    forms: u32,
    masks: u32,
    posts: u32,
    frames: u32,
    widgets: u32,
}

impl Depths {
    fn add(&mut self, o: &Open, up: bool) {
        let step = |n: &mut u32, yes: bool| {
            if yes {
                *n = if up { n.saturating_add(1) } else { n.saturating_sub(1) };
            }
        };
        step(&mut self.pre, o.name == "pre");
        step(&mut self.links, o.name == "a");
        step(&mut self.boiler, o.boiler);
        step(&mut self.content, o.content);
        step(&mut self.comments, o.comments);
        step(&mut self.reviews, o.reviews);
        step(&mut self.quotes, o.name == "blockquote");
        step(&mut self.paragraphs, o.name == "p");
        step(&mut self.cells, o.name == "td" || o.name == "th");
        step(&mut self.lists, o.name == "ul" || o.name == "ol");
        step(&mut self.noscript, o.name == "noscript");
        step(&mut self.forms, o.name == "form");
        step(&mut self.masks, o.masks);
        step(&mut self.posts, o.post);
        step(&mut self.frames, o.frame);
        step(&mut self.widgets, o.widget);
    }
}

const VOID: &[&str] =
    &["area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "param", "source", "track", "wbr"];
const SKIP: &[&str] = &[
    "script",
    "style",
    "template",
    "svg",
    "math",
    "iframe",
    "object",
    "canvas",
    "select",
    "textarea",
    "button",
    "video",
    "audio",
    "map",
    "head",
    "dialog",
    "figcaption",
];

/// The class a CMS gives the `body` of a page listing its posts or products by category, tag, author or date
/// (WordPress's archive templates, WooCommerce's shop and categories): a listing, whatever Open Graph says.
const ARCHIVE_CLASS: &str = "archive";

/// What the head may hold; any other element starts the body.
const HEAD_CONTENT: &[&str] = &["title", "meta", "link", "style", "script", "noscript", "base", "template"];
/// Inline elements: a `match`, which compiles to a switch on the name's length and first bytes (asked twice of every
/// element, where a scan of a list compared it with each name).
fn inline(name: &str) -> bool {
    matches!(
        name,
        "a" | "abbr"
            | "b"
            | "bdi"
            | "bdo"
            | "cite"
            | "code"
            | "data"
            | "dfn"
            | "em"
            | "font"
            | "i"
            | "kbd"
            | "mark"
            | "q"
            | "s"
            | "samp"
            | "small"
            | "span"
            | "strong"
            | "sub"
            | "sup"
            | "time"
            | "u"
            | "var"
            | "label"
            | "strike"
            | "del"
            | "ins"
            | "big"
            | "tt"
            | "nobr"
            | "picture"
            | "output"
            | "meter"
            | "progress"
    )
}
/// Boilerplate tags (with `form`) that frame a page (its header, footer, menus and sidebars; not `form`, which ASP.NET wraps
/// around every page). Opened outside any content region, a content hint inside one names one of the frame's
/// parts (`component-content` of a footer's columns, `widget-content` of a sidebar), not the page's content; inside
/// content (an `<article>`'s own `<header>`) it is the article's.
const FRAME_TAGS: &[&str] = &["nav", "footer", "aside", "menu", "header"];
const CONTENT_TAGS: &[&str] = &["article", "main"];

/// Class/id words that mark boilerplate, and words that mark content.
const NEGATIVE: &[&str] = &[
    "comment",
    "footer",
    "footnote",
    "sidebar",
    "widget",
    "share",
    "sharing",
    "social",
    "related",
    "promo",
    "sponsor",
    "advert",
    "banner",
    "cookie",
    "consent",
    "newsletter",
    "subscribe",
    "popup",
    "modal",
    "breadcrumb",
    "pagination",
    "navbar",
    "navigation",
    "menu",
    "masthead",
    "byline-social",
    "toolbar",
    "disqus",
    "outbrain",
    "taboola",
    "recommend",
    "trending",
    "most-popular",
    "mostpopular",
    "signup",
    "sign-up",
    "paywall",
    "author-bio",
    "tags",
    "skip",
    "hidden",
    "print-only",
    "site-header",
    "site-footer",
    "nav",
];
const POSITIVE: &[&str] = &[
    "article",
    "articlebody",
    "article-body",
    "article__body",
    "story",
    "story-body",
    "entry-content",
    "post-content",
    "post-body",
    "main-content",
    "content-body",
    "body-text",
    "text",
    "content",
    "entry",
    "main",
    "post",
];

/// What one lowercase class/id token says: exact words, and (for words longer than five letters) words inside
/// longer tokens.
fn token_hint(token: &str) -> u16 {
    let mut h = 0;
    let t = token.as_bytes();
    // The token is lowercase: the byte scans of `contains_ignore_ascii_case` find what `str::contains` would, without
    // a searcher set up per word.
    if CONSENT.iter().any(|w| contains_ignore_ascii_case(t, w.as_bytes())) {
        h |= HINT_CONSENT;
    }
    if (0..t.len()).any(|i| {
        t.get(i..).is_some_and(|r| r.starts_with(b"review")) && i.checked_sub(1).and_then(|p| t.get(p)) != Some(&b'p')
    }) {
        h |= HINT_REVIEWS;
    }
    if NEGATIVE.contains(&token) {
        h |= HINT_NEGATIVE;
    }
    if ASIDE_WORDS.contains(&token) {
        h |= HINT_ASIDE;
    }
    for part in token.split('-') {
        if part == BYLINE {
            h |= HINT_NEGATIVE | HINT_ASIDE;
        }
        if ASIDE_CLASS_PARTS.contains(&part) {
            h |= HINT_ASIDE_PART;
        }
    }
    if POSITIVE.contains(&token) {
        h |= HINT_POSITIVE;
    }
    let bigrams = long_word_bigrams();
    for i in 0..t.len().saturating_sub(5) {
        let rest = t.get(i..).unwrap_or_default();
        let (Some(&a), Some(&b)) = (rest.first(), rest.get(1)) else { break };
        // Most positions start no word: one bit says so.
        let pair = usize::from(a) << 8 | usize::from(b);
        if bigrams.get(pair / 64).is_none_or(|w| w & 1 << (pair % 64) == 0) {
            continue;
        }
        if rest.starts_with(b"articlebody") {
            return HINT_BODY;
        }
        for (list, flag) in [(NEGATIVE, HINT_NEGATIVE), (POSITIVE, HINT_POSITIVE)] {
            if let Some(w) =
                list.iter().find(|w| inside_words(w) && t.len() > w.len() && rest.starts_with(w.as_bytes()))
            {
                h |= if *w == BUILDER_WIDGET { HINT_WIDGET } else { flag };
            }
        }
    }
    h
}

/// Whether a hint word also counts inside a longer token: words longer than five letters, except `hidden`, which
/// inside a token is a state or a utility (`overflow-hidden`, `panel--hidden` of a collapsed section), not a
/// hidden element.
fn inside_words(w: &str) -> bool {
    w.len() > 5 && w != "hidden"
}

/// The first two bytes of every word that counts inside longer tokens, as a bit set.
fn long_word_bigrams() -> &'static [u64; 1024] {
    static SET: std::sync::OnceLock<[u64; 1024]> = std::sync::OnceLock::new();
    SET.get_or_init(|| {
        let mut set = [0u64; 1024];
        for w in NEGATIVE.iter().chain(POSITIVE).filter(|w| inside_words(w)).chain(&["articlebody"]) {
            let b = w.as_bytes();
            let pair = usize::from(b.first().copied().unwrap_or(0)) << 8 | usize::from(b.get(1).copied().unwrap_or(0));
            if let Some(word) = set.get_mut(pair / 64) {
                *word |= 1 << (pair % 64);
            }
        }
        set
    })
}

const HINT_NEGATIVE: u16 = 1;
const HINT_POSITIVE: u16 = 2;
const HINT_BODY: u16 = 4;
/// A token naming customers' reviews (`reviews`, `product-review__title`, `customerreviews`), not a preview:
/// boilerplate on a product page only, so a flag of its own.
const HINT_REVIEWS: u16 = 8;
/// A token naming a cookie or consent banner: never content, whatever else its classes say
/// (`vertical-align-content` on OneTrust's banner).
const HINT_CONSENT: u16 = 16;
/// A token that is one of `ASIDE_WORDS` itself: a hint that holds inside a content region.
const HINT_ASIDE: u16 = 32;
/// A token with a part among `ASIDE_CLASS_PARTS`: `HINT_ASIDE` when the token is a class's.
const HINT_ASIDE_PART: u16 = 64;
/// `BUILDER_WIDGET` inside a longer token: a negative hint, unless a token of the element names it a widget of
/// content (see `BUILDER_WIDGET`).
const HINT_WIDGET: u16 = 128;

/// A page builder names each block of a page a widget of some kind inside a longer token (Elementor's
/// `elementor-widget elementor-widget-theme-post-content`): a widget is the frame's (a sidebar's), unless one of
/// the element's tokens names a widget of content (`elementor-widget-theme-post-content`, `mz-content-widget-wrap`),
/// which is the page's text, whatever its other tokens say of widgets. The whole token `widget` (WordPress's
/// sidebar widgets) is a plain negative hint.
const BUILDER_WIDGET: &str = "widget";
/// A token that names comments (`comment_token`): remembered with the others, asked of every token.
const HINT_COMMENTS: u16 = 256;

/// Class or id tokens (whole, not inside longer ones) naming what sits beside a page's content even inside the
/// region marked as content (`<main>`, `<article>`): other pages' teasers, share and follow bars, sign-up boxes,
/// sidebars, a navigation, breadcrumb or pagination bar, a modal, a footer of tags. Utility and layout words
/// (`hidden`, a page builder's `widget` on every block, `menu`) and component names (Adobe's `promo` cards of a
/// service page) are not among them: inside content they say nothing.
const ASIDE_WORDS: &[&str] = &[
    "related",
    "share",
    "sharing",
    "social",
    "sidebar",
    "newsletter",
    "subscribe",
    "advert",
    "sponsor",
    "recommend",
    "trending",
    "most-popular",
    "mostpopular",
    "outbrain",
    "taboola",
    "navigation",
    "navbar",
    "breadcrumb",
    "pagination",
    "modal",
    "popup",
    "toolbar",
    "footer",
    "masthead",
    "signup",
    "sign-up",
    "author-bio",
    "tags",
];

/// A part of a class or id token (between hyphens) naming a story's byline (`byline`, `article-byline`,
/// `byline-section`): who wrote it and when, boilerplate even inside the content region.
const BYLINE: &str = "byline";

/// Parts of a class token (between hyphens) naming other pages' teasers (`related-posts`, `rail--trending`,
/// `recommend-list`): beside the content even inside its region, as `ASIDE_WORDS` alone are. Only a class counts:
/// it names a template, where an id names one element (`map-and-related` around a page's whole text).
const ASIDE_CLASS_PARTS: &[&str] = &["related", "trending", "recommend"];

/// What names a cookie or consent banner inside a class or id token.
const CONSENT: &[&str] = &[
    "consent",
    "onetrust",
    "cookiebanner",
    "cookie-banner",
    "cookie-notice",
    "cookienotice",
    "cookie-bar",
    "cookielaw",
    "gdpr",
];

fn class_key(tag: &Tag) -> u64 {
    use std::hash::{Hash, Hasher};
    let Some(class) = tag.attr("class").filter(|c| !c.trim().is_empty()) else { return 0 };
    // FNV-1a: stable and cheap; collisions only merge two templates' containers.
    let mut h = FnvHasher::default();
    tag.name.hash(&mut h);
    class.trim().hash(&mut h);
    h.finish().max(1)
}

/// Class tokens that say where a card sits or what state it is in, not which template built it.
const CARD_STATE_TOKENS: &[&str] = &[
    "first",
    "last",
    "odd",
    "even",
    "active",
    "selected",
    "current",
    "featured",
    "sale",
    "instock",
    "outofstock",
    "onbackorder",
];

/// A class token that numbers its element (`post-15859`, `item_3`): the number is the element's, not its template's.
fn numbered(t: &str) -> bool {
    t.rsplit_once(['-', '_']).is_some_and(|(_, n)| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
}

/// See `Node::card_key`.
fn card_key(tag: &Tag) -> u64 {
    use std::hash::{Hash, Hasher};
    let Some(class) = tag.attr("class") else { return 0 };
    let mut h = FnvHasher::default();
    tag.name.hash(&mut h);
    let mut any = false;
    for t in class.split_whitespace() {
        if numbered(t) || CARD_STATE_TOKENS.contains(&t) || super::listing::taxonomy_token(t) {
            continue;
        }
        t.hash(&mut h);
        any = true;
    }
    // A class of numbered tokens only (`col-6 col-sm-4`) is the template itself.
    if any {
        h.finish().max(1)
    } else {
        class_key(tag)
    }
}

struct FnvHasher(u64);

impl Default for FnvHasher {
    fn default() -> Self {
        FnvHasher(0xcbf2_9ce4_8422_2325)
    }
}

impl std::hash::Hasher for FnvHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for b in bytes {
            self.0 = (self.0 ^ u64::from(*b)).wrapping_mul(0x0100_0000_01b3);
        }
    }
}

/// Class and id hints of containers. Matching a token against the word lists is the costliest step per element,
/// and templates repeat the same few class tokens thousands of times: each token's verdict is remembered.
#[derive(Default)]
struct Hints {
    tokens: std::collections::HashMap<String, u16, std::hash::BuildHasherDefault<FnvHasher>>,
    token: String,
}

/// Distinct tokens remembered; past it the memory starts over (bounded on hostile pages).
const HINT_TOKENS_MAX: usize = 4_096;

/// Longest token remembered: a longer one is judged each time it comes (templates repeat short tokens; a long one is
/// rare), so the memory holds at most `HINT_TOKENS_MAX` tokens of this many bytes, whatever the class lists' lengths.
const HINT_TOKEN_BYTES_MAX: usize = 64;

/// What an element's class, id, role and `itemprop` say of it (`Hints::of`).
#[derive(Debug, Clone, Copy, Default)]
struct Hinted {
    /// Positive for content, negative for boilerplate.
    weight: i32,
    /// A readers' comments section.
    comments: bool,
    /// A section of customers' reviews.
    reviews: bool,
    /// A cookie or consent banner.
    consent: bool,
    /// A token names what sits beside content, even inside it (`HINT_ASIDE`).
    aside: bool,
    /// The negative weight is a page builder's widget class alone (`BUILDER_WIDGET`).
    widget: bool,
}

impl Hints {
    /// What the element's tokens say (see `Hinted`); `comments`: a class or id token names comments
    /// (`WORD_COMMENTS`).
    fn of(&mut self, tag: &Tag, comments: bool) -> Hinted {
        let body = Hinted { weight: 40, comments, ..Hinted::default() };
        if tag.attr("itemprop").is_some_and(|v| v.eq_ignore_ascii_case("articleBody")) {
            return body;
        }
        let mut hints = 0;
        let mut reviews = false;
        let mut consent = false;
        let (mut widget, mut builder_content) = (false, false);
        for a in ["class", "id", "role", "itemprop"] {
            let Some(v) = tag.attr(a) else { continue };
            for raw in v.split(|c: char| c.is_whitespace() || c == '_').filter(|t| !t.is_empty()) {
                self.token.clear();
                self.token.push_str(raw);
                self.token.make_ascii_lowercase();
                let h = match self.tokens.get(self.token.as_str()) {
                    Some(&h) => h,
                    None => {
                        let h = token_hint(&self.token) | if comment_token(&self.token) { HINT_COMMENTS } else { 0 };
                        if self.token.len() <= HINT_TOKEN_BYTES_MAX {
                            if self.tokens.len() >= HINT_TOKENS_MAX {
                                self.tokens.clear();
                            }
                            self.tokens.insert(self.token.clone(), h);
                        }
                        h
                    }
                };
                if h & HINT_BODY != 0 {
                    return body;
                }
                builder_content |= h & (HINT_WIDGET | HINT_POSITIVE) == HINT_WIDGET | HINT_POSITIVE;
                widget |= h & HINT_WIDGET != 0;
                reviews |= h & HINT_REVIEWS != 0;
                consent |= h & HINT_CONSENT != 0;
                // A comments word marks a comments section (`comments`), not a negative hint.
                if h & HINT_COMMENTS == 0 {
                    hints |= h & !HINT_ASIDE_PART;
                }
                if a == "class" && h & HINT_ASIDE_PART != 0 {
                    hints |= HINT_ASIDE;
                }
            }
        }
        let mut w = 0;
        let widget = widget && !builder_content;
        if hints & HINT_NEGATIVE != 0 || widget {
            w -= 25;
        }
        if hints & HINT_POSITIVE != 0 {
            w += 25;
        }
        let role = matches!(tag.attr("role"), Some("navigation" | "banner" | "contentinfo" | "complementary"));
        if role {
            w -= 25;
        }
        let widget = widget && hints & HINT_NEGATIVE == 0 && !role;
        Hinted { weight: w, comments, reviews, consent, aside: hints & HINT_ASIDE != 0, widget }
    }
}

/// A class or id token that names comments as a whole word (`comments`, `comment-list`, `comment_body`,
/// `commentlist`, a nesting level's `comments1`, Disqus, WordPress's `respond`); not a word that merely contains it
/// (`commentary`).
fn comment_token(t: &str) -> bool {
    let first = t.split(['-', '_']).next().unwrap_or("").trim_end_matches(|c: char| c.is_ascii_digit());
    ["comment", "comments", "commentlist"].iter().any(|w| first.eq_ignore_ascii_case(w))
        || t.get(..6).is_some_and(|p| p.eq_ignore_ascii_case("disqus"))
        || t.eq_ignore_ascii_case("respond")
}

/// Whether `hay` holds `word` (lowercase ASCII) in any ASCII case, without allocating. The class and id checks run
/// on every token of every tag: a byte compare where the first byte matches, not a `memcmp` call per position.
pub(super) fn contains_ignore_ascii_case(hay: &[u8], word: &[u8]) -> bool {
    let Some((&first, rest)) = word.split_first() else { return true };
    let Some(starts) = hay.len().checked_sub(rest.len()) else { return false };
    hay.iter().take(starts).enumerate().any(|(i, b)| {
        b.to_ascii_lowercase() == first
            && hay
                .get(i + 1..i + word.len())
                .is_some_and(|r| r.iter().zip(rest).all(|(a, w)| a.to_ascii_lowercase() == *w))
    })
}

/// Whether `s` starts with `word` (lowercase ASCII) in any ASCII case.
pub(super) fn starts_ignore_ascii_case(s: &str, word: &str) -> bool {
    s.as_bytes().get(..word.len()).is_some_and(|h| h.eq_ignore_ascii_case(word.as_bytes()))
}

/// Whether `s` ends with `word` (lowercase ASCII) in any ASCII case.
pub(super) fn ends_ignore_ascii_case(s: &[u8], word: &[u8]) -> bool {
    s.len().checked_sub(word.len()).and_then(|i| s.get(i..)).is_some_and(|e| e.eq_ignore_ascii_case(word))
}

/// A part of a page that React streams after the shell: `<div hidden id="S:0">`, hidden only until a script moves it
/// into its place (`$RC("B:0", "S:0")`). Without the script it is still the page's content.
fn is_streamed_segment(tag: &Tag) -> bool {
    tag.attr("id")
        .and_then(|id| id.strip_prefix("S:"))
        .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
}

/// The `data-role` Invision Community gives the element holding one post's text (`forum::post_token` has the
/// class and id tokens of other forum software).
const INVISION_POST_ROLE: &str = "commentContent";

/// An element holding a post's text by microdata: `itemprop="text"`, the property schema.org's `Question`,
/// `Answer`, `Comment` and `DiscussionForumPosting` give their body.
fn is_post_text(tag: &Tag) -> bool {
    tag.attr("itemprop").is_some_and(|v| v.split_whitespace().any(|t| t.eq_ignore_ascii_case("text")))
}

/// A title as shown: whitespace collapsed, at most `TITLE_BYTES_MAX` bytes (cut at a character boundary).
fn title_text(raw: &str) -> String {
    let mut t = crate::html::collapse_whitespace(raw);
    if t.len() > TITLE_BYTES_MAX {
        t.truncate(crate::html::floor_char_boundary(&t, TITLE_BYTES_MAX));
    }
    t
}

/// Words of a class or id that name a section a reader opens with a click (an accordion's panel, a tab, a FAQ's
/// answer): hidden in the HTML only until then, and part of the page's text.
const COLLAPSED: &[&str] = &["accordion", "collapse", "tabpanel", "tab-pane", "answer", "faq", "expand"];

/// A section hidden until a reader opens it (by its class, id or role), however it is hidden (the `hidden`
/// attribute, `aria-hidden`, `display: none`): a code sample's other languages, an install guide's other systems,
/// a FAQ's answers.
fn is_collapsed_section(tag: &Tag) -> bool {
    tag.attr("role").is_some_and(|r| r.eq_ignore_ascii_case("tabpanel"))
        || ["class", "id"].iter().any(|a| {
            tag.attr(a).is_some_and(|v| {
                let v = v.to_ascii_lowercase();
                COLLAPSED.iter().any(|w| v.contains(w))
            })
        })
}

/// Words that say what a caption or a credit is about, inside a class or id token that ends with "caption" or
/// "credit" (`InlineImage-imageEmbedCaption`, `photo-credit`, `media-caption`): an image's, not a product card's
/// (`product-caption`) or a type style's (`text-caption`).
const CAPTION_OF: &[&str] = &["image", "photo", "img", "media", "figure", "gallery", "video", "pic"];

/// The classes WordPress gives an image with a caption (`wp-caption`, around the image and its text) and the
/// caption's text (`wp-caption-text`, `wp-caption-dd`): a caption's, whatever the theme.
const WORDPRESS_CAPTIONS: &[&str] = &["wp-caption", "wp-caption-text", "wp-caption-dd"];

/// An image's caption or credit by its class or id (as `figcaption` is by its tag): what a photo shows and who took
/// it, not the article's text. A token alone (`caption`, `credit`) counts too, and so do WordPress's names.
fn caption_token(t: &str) -> bool {
    if WORDPRESS_CAPTIONS.iter().any(|w| t.eq_ignore_ascii_case(w)) {
        return true;
    }
    let t = t.as_bytes();
    let named = t.strip_suffix(b"s").or_else(|| t.strip_suffix(b"S")).unwrap_or(t);
    (ends_ignore_ascii_case(named, b"caption") || ends_ignore_ascii_case(named, b"credit"))
        && (named.eq_ignore_ascii_case(b"caption")
            || named.eq_ignore_ascii_case(b"credit")
            || CAPTION_OF.iter().any(|w| contains_ignore_ascii_case(named, w.as_bytes())))
}

/// Class token endings (any case) of a form's outcome messages, shown only once the form is sent: Webflow's
/// `w-form-done` ("Thank you! Your submission has been received!") and `w-form-fail` ("Oops! Something went
/// wrong while submitting the form."), and the like (`form-success`, `form-error`). Never the page's text.
const FORM_STATE_ENDS: &[&str] = &["form-done", "form-fail", "form-success", "form-error"];

fn form_state_token(t: &str) -> bool {
    FORM_STATE_ENDS.iter().any(|w| ends_ignore_ascii_case(t.as_bytes(), w.as_bytes()))
}

/// Verdicts on whole class and id tokens for the rules that look for words inside them: a poster's details
/// (`forum::poster_token`, class only), a listing's filters (`listing::facet_token`) and an image's caption
/// (`caption_token`). Remembered per token like `Hints`'s: templates repeat the same few tokens thousands of times,
/// and the scans inside each token were a tenth of the extraction's time.
#[derive(Default)]
struct Words {
    tokens: std::collections::HashMap<Box<str>, u8, std::hash::BuildHasherDefault<FnvHasher>>,
}

const WORD_POSTER: u8 = 1;
const WORD_FACETS: u8 = 2;
const WORD_CAPTION: u8 = 4;
const WORD_POST: u8 = 8;
const WORD_FORM_STATE: u8 = 16;
/// The token ends with "caption": on a `<span>` (a run of text, never a card or a type style's block), a caption's
/// text (`newsCaption`, `photo-caption`).
const WORD_NAMED_CAPTION: u8 = 32;
/// The token is one of `SCREEN_READER_ONLY`.
const WORD_SCREEN_READER: u8 = 64;
/// The token names comments (`comment_token`): an id or a class of a readers' comments section (boilerplate, except
/// on a forum).
const WORD_COMMENTS: u8 = 128;

/// Class tokens (any case) of text shown only to screen readers, clipped to a pixel or moved off screen
/// (Bootstrap's `sr-only`, WordPress's `screen-reader-text`, `visually-hidden`): a label for a control or a
/// section ("Sort and Filter", "Open menu"), which a reader of the page never sees.
const SCREEN_READER_ONLY: &[&str] = &[
    "sr-only",
    "screen-reader-text",
    "screen-reader-only",
    "screenreader-only",
    "visually-hidden",
    "visuallyhidden",
    "hidden-visually",
    "u-hidden-visually",
    "off-screen",
    "offscreen",
    "sr-text",
    "show-for-sr",
    "element-invisible",
    "a11y-hidden",
    "assistive-text",
];

impl Words {
    fn token(&mut self, t: &str) -> u8 {
        if let Some(&f) = self.tokens.get(t) {
            return f;
        }
        let f = if super::forum::poster_token(t) { WORD_POSTER } else { 0 }
            | if super::listing::facet_token(t) { WORD_FACETS } else { 0 }
            | if caption_token(t) { WORD_CAPTION } else { 0 }
            | if super::forum::post_token(t) { WORD_POST } else { 0 }
            | if form_state_token(t) { WORD_FORM_STATE } else { 0 }
            | if ends_ignore_ascii_case(t.as_bytes(), b"caption") { WORD_NAMED_CAPTION } else { 0 }
            | if SCREEN_READER_ONLY.iter().any(|w| t.eq_ignore_ascii_case(w)) { WORD_SCREEN_READER } else { 0 }
            | if comment_token(t) { WORD_COMMENTS } else { 0 };
        if t.len() <= HINT_TOKEN_BYTES_MAX {
            if self.tokens.len() >= HINT_TOKENS_MAX {
                self.tokens.clear();
            }
            self.tokens.insert(t.into(), f);
        }
        f
    }

    /// The `WORD_*` verdicts of an element: its class tokens', and its id's without `WORD_POSTER`.
    fn of(&mut self, tag: &Tag) -> u8 {
        let mut of = |a: &str| tag.attr(a).map_or(0, |v| v.split_whitespace().fold(0, |f, t| f | self.token(t)));
        of("class") | (of("id") & !WORD_POSTER)
    }
}

/// `display: none` in a style attribute, spaces around the colon allowed, in any case; no allocation (asked of
/// every tag with a style).
fn style_hides(style: &str) -> bool {
    let b = style.as_bytes();
    let spaces = |s: &[u8]| -> usize { s.iter().take_while(|c| **c == b' ').count() };
    (0..b.len()).any(|i| {
        b.get(i..i + 7).is_some_and(|w| w.eq_ignore_ascii_case(b"display")) && {
            let after = b.get(i + 7..).unwrap_or_default();
            let after = after.get(spaces(after)..).unwrap_or_default();
            after.strip_prefix(b":").is_some_and(|v| {
                v.get(spaces(v)..).and_then(|v| v.get(..4)).is_some_and(|n| n.eq_ignore_ascii_case(b"none"))
            })
        }
    })
}

fn is_hidden(tag: &Tag) -> bool {
    ((tag.attr("hidden").is_some() && !is_streamed_segment(tag))
        || tag.attr("aria-hidden") == Some("true")
        || tag.attr("style").is_some_and(style_hides))
        && !is_collapsed_section(tag)
}

/// A byte that is a whole character pushed as it is by `Builder::push_text` outside `<pre>`: visible ASCII that
/// markdown does not need escaped, not a comma (counted), not `_` (escaped or not by what precedes it).
fn plain(b: u8) -> bool {
    b.is_ascii_graphic() && !matches!(b, b'_' | b'*' | b'`' | b'[' | b']' | b'<' | b'>' | b'#' | b'|' | b'\\' | b',')
}

impl Builder {
    pub fn new(options: Options) -> Builder {
        Builder {
            options,
            stack: Vec::new(),
            overflow: 0,
            blocks: Vec::new(),
            nodes: Vec::new(),
            cur: String::new(),
            cur_text: 0,
            cur_links: 0,
            cur_link_count: 0,
            link_start: 0,
            cur_commas: 0,
            row: Vec::new(),
            row_header: false,
            row_data: false,
            row_links: 0,
            tables: 0,
            title: None,
            in_title: false,
            title_buf: String::new(),
            og_title: None,
            signals: Signals::default(),
            in_ld_json: false,
            ld_json: LdScanner::default(),
            space: true,
            hints: Hints::default(),
            words: Words::default(),
            depths: Depths::default(),
            text_bytes: 0,
            truncated: false,
            full: false,
            muted: None,
            voiced_at: usize::MAX,
            span_ended: false,
            span_gap: false,
            veil: None,
            veiled: false,
            names: Vec::new(),
            closing: String::new(),
        }
    }

    pub fn finish(mut self) -> Page {
        self.flush();
        self.flush_row();
        let truncated = self.truncated;
        let signals = std::mem::take(&mut self.signals);
        let veiled = self.veiled;
        Page {
            title: self.title,
            og_title: self.og_title,
            signals,
            blocks: self.blocks,
            nodes: self.nodes,
            truncated,
            veiled,
        }
    }

    /// Whether a cap was reached: the rest of the input changes nothing.
    pub fn full(&self) -> bool {
        self.full
    }

    /// A cap was reached: the block being filled is dropped and nothing more is collected.
    fn stop(&mut self) {
        self.full = true;
        self.truncated = true;
        self.cur = String::new();
        self.row = Vec::new();
        self.cur_text = 0;
    }

    /// Bytes the block being filled may still grow by.
    fn room(&self) -> usize {
        let cap = if self.veil.is_some() { TEXT_BYTES_MAX / VEIL_CAP_DIVISOR } else { TEXT_BYTES_MAX };
        cap.saturating_sub(self.text_bytes + self.cur.len())
    }

    /// Whether an open veil has taken its share of the caps (`VEIL_CAP_DIVISOR`).
    fn veil_full(&self) -> bool {
        self.veil.is_some()
            && (self.blocks.len() >= BLOCKS_MAX / VEIL_CAP_DIVISOR
                || self.nodes.len() >= NODES_MAX / VEIL_CAP_DIVISOR
                || self.text_bytes + self.cur.len() >= TEXT_BYTES_MAX / VEIL_CAP_DIVISOR)
    }

    /// Skips the rest of the open veil, as a hidden element is skipped; whether one was open.
    fn spend_veil(&mut self) -> bool {
        let Some(v) = self.veil else { return false };
        for o in self.stack.iter_mut().skip(v.depth) {
            o.skip = true;
        }
        true
    }

    /// Appends markup (a link target, an image) to the block being filled, or stops when it does not fit.
    fn push_markup(&mut self, markup: &str) {
        if markup.len() > self.room() {
            if !self.spend_veil() {
                self.stop();
            }
            return;
        }
        self.cur.push_str(markup);
    }

    /// Inside an element whose tag, class or id says content, and not inside a boilerplate hint within it.
    fn in_content(&self) -> bool {
        self.depths.content > 0 && self.depths.masks == 0
    }

    /// Inside boilerplate only by page builders' widget classes, and not in a comments section; `boiler` and
    /// `widget` are an element's own, being opened (a container counts itself; a block passes `false`).
    fn builder_widget(&self, boiler: bool, widget: bool) -> bool {
        let boilers = self.depths.boiler + u32::from(boiler);
        boilers > 0 && boilers == self.depths.widgets + u32::from(widget) && self.depths.comments == 0
    }

    fn skipping(&self) -> bool {
        self.stack.last().is_some_and(|o| o.skip)
    }

    fn in_pre(&self) -> bool {
        self.depths.pre > 0
    }

    fn innermost(&self, names: &[&str]) -> Option<usize> {
        self.stack.iter().rposition(|o| names.contains(&o.name.as_str()))
    }

    fn path(&self) -> [u32; PATH_LEN] {
        let mut path = [NO_NODE; PATH_LEN];
        for (slot, node) in path.iter_mut().zip(self.stack.iter().rev().map(|o| o.node).filter(|n| *n != NO_NODE)) {
            *slot = node;
        }
        path
    }

    /// Ends the current block, if it has text.
    fn flush(&mut self) {
        if self.cur_text == 0 {
            self.cur.clear();
            self.cur_links = 0;
            (self.cur_link_count, self.link_start) = (0, 0);
            self.cur_commas = 0;
            self.space = true;
            return;
        }
        // A copy of the trimmed text; `cur` keeps its buffer for the next block (no regrowth per block).
        let md = if self.in_pre() { self.cur.trim_matches('\n').to_owned() } else { self.cur.trim().to_owned() };
        self.cur.clear();
        let quote_depth = self.depths.quotes.min(8) as u8;
        // A quoted block renders with `> ` before each of its lines: that is paid for here, where it is known.
        let prefixes = if quote_depth == 0 { 0 } else { (md.matches('\n').count() + 1) * 2 * usize::from(quote_depth) };
        let cost = md.len() + prefixes;
        if self.blocks.len() >= BLOCKS_MAX || self.text_bytes + cost > TEXT_BYTES_MAX {
            self.stop();
            return;
        }
        self.text_bytes += cost;
        let kind = self.block_kind();
        let comments = self.depths.comments > 0;
        let boiler = comments || self.depths.boiler > 0;
        let content = !comments && self.in_content();
        let plain = (self.depths.boiler > 0, self.in_content());
        self.blocks.push(Block {
            kind,
            quote_depth,
            md,
            cells: Vec::new(),
            text_len: self.cur_text,
            link_len: self.cur_links,
            links: self.cur_link_count,
            commas: self.cur_commas,
            path: self.path(),
            boiler,
            content,
            plain,
            noscript: self.depths.noscript > 0,
            reviews: self.depths.reviews > 0,
            form: self.depths.forms > 0,
            veiled: self.veil.is_some(),
            widget: self.builder_widget(false, false),
        });
        self.cur_text = 0;
        self.cur_links = 0;
        (self.cur_link_count, self.link_start) = (0, 0);
        self.cur_commas = 0;
        self.space = true;
    }

    /// A block-level element starts or ends: the block being filled ends, except inside `<pre>`, where it ends a
    /// line (highlighters put each line of code in a `<div>` of its own: the code is still one block).
    fn end_line_or_block(&mut self) {
        if !self.in_pre() {
            self.flush();
        } else if !self.cur.is_empty() && !self.cur.ends_with('\n') {
            self.push_markup("\n");
        }
    }

    fn block_kind(&self) -> Kind {
        for o in self.stack.iter().rev() {
            match o.name.as_str() {
                "pre" => return Kind::Pre,
                "h1" | "h2" | "h3" | "h4" | "h5" | "h6" => {
                    return Kind::Heading(o.name.as_bytes().get(1).map_or(2, |d| d - b'0'));
                }
                "li" => {
                    let depth = self.depths.lists.clamp(1, 8) as u8;
                    let list = self.stack.iter().rev().find(|x| x.name == "ul" || x.name == "ol");
                    let ordered = list.is_some_and(|l| l.name == "ol");
                    let index = list.map_or(1, |l| l.counter.saturating_sub(1).max(1));
                    return Kind::Item { depth, ordered, index };
                }
                "p" | "div" | "section" | "article" | "td" | "th" | "blockquote" | "dd" | "dt" | "figcaption" => {
                    return Kind::Para;
                }
                _ => {}
            }
        }
        Kind::Para
    }

    fn flush_row(&mut self) {
        let cells = std::mem::take(&mut self.row);
        if cells.iter().all(|c| c.trim().is_empty()) {
            self.row_header = false;
            self.row_data = false;
            self.row_links = 0;
            return;
        }
        if self.blocks.len() >= BLOCKS_MAX {
            self.stop();
            return;
        }
        let text_len: u32 = cells.iter().map(|c| c.chars().count() as u32).sum();
        // The cells were paid for as they came (`pop`); the joined copy is paid for here.
        let md = cells.join(" | ");
        if self.text_bytes + md.len() > TEXT_BYTES_MAX {
            self.stop();
            return;
        }
        self.text_bytes += md.len();
        let table = self.tables;
        self.blocks.push(Block {
            kind: Kind::Row { table, header: self.row_header && !self.row_data },
            quote_depth: 0,
            md,
            cells,
            text_len,
            link_len: std::mem::take(&mut self.row_links).min(text_len),
            links: 0,
            commas: 0,
            path: self.path(),
            boiler: self.depths.boiler > 0 || self.depths.comments > 0,
            content: self.depths.comments == 0 && self.in_content(),
            plain: (self.depths.boiler > 0, self.in_content()),
            noscript: self.depths.noscript > 0,
            reviews: self.depths.reviews > 0,
            form: self.depths.forms > 0,
            veiled: self.veil.is_some(),
            widget: self.builder_widget(false, false),
        });
        self.row_header = false;
        self.row_data = false;
    }

    fn push_text(&mut self, text: &str) {
        let pre = self.in_pre();
        let in_link = self.depths.links > 0;
        let limit = self.cur.len() + self.room();
        let mut rest = text;
        while let Some(c) = rest.chars().next() {
            // A run of plain characters (`plain`) outside `<pre>` is pushed at once, as far as it fits: each adds one
            // byte and one character of text, as it would pushed alone (the one that does not fit stops below).
            let run = if pre { 0 } else { rest.bytes().take_while(|&b| plain(b)).count() };
            let run = run.min(limit.saturating_sub(self.cur.len()));
            if run > 0 {
                self.cur.push_str(rest.get(..run).unwrap_or_default());
                self.space = false;
                self.cur_text += run as u32;
                if in_link {
                    self.cur_links += run as u32;
                }
                rest = rest.get(run..).unwrap_or_default();
                continue;
            }
            rest = rest.get(c.len_utf8()..).unwrap_or_default();
            let escaped = match c {
                '_' => !self.in_word(),
                _ => matches!(c, '*' | '`' | '[' | ']' | '<' | '>' | '#' | '|' | '\\'),
            };
            let adds = if pre {
                c.len_utf8()
            } else if c.is_whitespace() {
                usize::from(!self.space)
            } else {
                c.len_utf8() + usize::from(escaped)
            };
            if self.cur.len() + adds > limit {
                // The text cap: the block so far is kept, the rest of the page is not (of a veil, the rest of it).
                self.flush();
                if !self.spend_veil() {
                    self.stop();
                }
                return;
            }
            if pre {
                self.cur.push(c);
                if !c.is_whitespace() {
                    self.cur_text += 1;
                }
                continue;
            }
            if c.is_whitespace() {
                if !self.space {
                    self.cur.push(' ');
                    self.space = true;
                }
                continue;
            }
            self.space = false;
            if escaped {
                self.cur.push('\\');
            }
            self.cur.push(c);
            self.cur_text += 1;
            if in_link {
                self.cur_links += 1;
            }
            if c == ',' || c == '，' || c == '、' {
                self.cur_commas += 1;
            }
        }
    }

    /// Whether an `_` pushed now would be inside a word: after a letter or digit, or after an unescaped `_` that
    /// was. Such an `_` cannot open emphasis (CommonMark's flanking rules), so it is left bare: `send_sms` stays one
    /// word for a reader and for a word count, where `send\\_sms` reads as `send` and `_sms`.
    fn in_word(&self) -> bool {
        let mut rev = self.cur.chars().rev();
        match rev.next() {
            Some('_') => rev.next().is_some_and(|p| p != '\\'),
            Some(p) => p.is_alphanumeric(),
            None => false,
        }
    }

    fn resolve(&self, href: &str) -> Option<String> {
        let href = href.trim();
        if href.is_empty() || href.starts_with('#') || starts_ignore_ascii_case(href, "javascript:") {
            return None;
        }
        if href.starts_with("http://") || href.starts_with("https://") {
            return Some(href.to_owned());
        }
        let base = self.options.base_url.as_deref()?;
        let (scheme, rest) = base.split_once("://")?;
        if let Some(r) = href.strip_prefix("//") {
            return Some(format!("{scheme}://{r}"));
        }
        let host_end = rest.find('/').unwrap_or(rest.len());
        let origin = format!("{scheme}://{}", rest.get(..host_end)?);
        if href.starts_with('/') {
            return Some(format!("{origin}{href}"));
        }
        if href.contains(':') {
            return None;
        }
        let path = rest.get(host_end..).unwrap_or("/");
        let dir = path.split(['?', '#']).next().unwrap_or("/");
        let dir = dir.rsplit_once('/').map_or("", |(d, _)| d);
        Some(format!("{origin}{dir}/{href}"))
    }

    /// Closes elements down to and including the innermost `name` (if it is open).
    fn close(&mut self, name: &str) {
        let Some(pos) = self.stack.iter().rposition(|o| o.name == name) else { return };
        while self.stack.len() > pos {
            self.pop();
        }
    }

    fn pop(&mut self) {
        let Some(o) = self.stack.last() else { return };
        // A copy of the name, for the element is still open while its end is handled (`flush` asks `block_kind`).
        let mut name = std::mem::take(&mut self.closing);
        name.clear();
        name.push_str(&o.name);
        match name.as_str() {
            "a" => {
                if self.cur_links > self.link_start {
                    self.cur_link_count += 1;
                }
                if let Some(href) = o.href.clone() {
                    if self.options.links && self.cur.ends_with('[') {
                        self.cur.pop();
                    } else if self.options.links {
                        let trimmed = self.cur.trim_end().len();
                        self.cur.truncate(trimmed);
                        self.push_markup(&format!("]({href})"));
                        self.space = false;
                    }
                }
            }
            "td" | "th" if self.innermost(&["tr"]).is_some() && !o.cell_blocks => {
                let cell = self.cur.trim().replace('\n', " ");
                self.cur.clear();
                self.row_links = self.row_links.saturating_add(self.cur_links);
                self.cur_text = 0;
                self.cur_links = 0;
                (self.cur_link_count, self.link_start) = (0, 0);
                if self.row.len() < CELLS_MAX {
                    self.text_bytes += cell.len();
                    self.row.push(cell);
                } else {
                    self.truncated = true;
                }
                self.space = true;
            }
            "tr" => {
                self.flush();
                self.flush_row();
            }
            "table" => {
                self.flush();
                self.flush_row();
                self.tables += 1;
            }
            _ => {
                if !o.mark.is_empty() {
                    let mark = o.mark;
                    if self.cur.ends_with(mark) {
                        let len = self.cur.len() - mark.len();
                        self.cur.truncate(len);
                    } else {
                        let trimmed = self.cur.trim_end().len();
                        let tail = self.cur.split_off(trimmed);
                        self.cur.push_str(mark);
                        self.cur.push_str(&tail);
                    }
                } else if name == "pre" {
                    // Still counted in `depths` until popped below: the code block ends here.
                    self.flush();
                } else if !inline(&name) {
                    self.end_line_or_block();
                }
            }
        }
        self.span_ended = name == "span";
        self.closing = name;
        if let Some(o) = self.stack.pop() {
            self.depths.add(&o, false);
            self.names.push(o.name);
        }
        let len = self.stack.len();
        if let Some(v) = self.veil.filter(|v| v.depth == len) {
            (self.muted, self.voiced_at) = (v.muted, v.voiced_at);
            self.veil = None;
        }
        if self.muted == Some(len) {
            self.voiced_at = len;
            self.muted = None;
        }
        if len < self.voiced_at {
            self.voiced_at = usize::MAX;
        }
    }

    /// `name` in a buffer of a closed element's name (`names`), or a new one.
    fn name_buffer(&mut self, name: &str) -> String {
        let mut buffer = self.names.pop().unwrap_or_default();
        buffer.clear();
        buffer.push_str(name);
        buffer
    }

    fn push(&mut self, open: Open) {
        self.depths.add(&open, true);
        self.stack.push(open);
    }
}

impl Sink for Builder {
    fn start_tag(&mut self, tag: &Tag) {
        if self.full {
            return;
        }
        let name = tag.name.as_str();
        // Spans side by side with no space between are runs of text a style sheet lays out apart (an API
        // reference's field name and its type, a label and its value in a flex row): they read as separate words.
        // Not in code, where a highlighter's spans cut a line into tokens.
        // Decided by the text that follows: a word after a word or a sentence's end is set apart ("id string",
        // "conditions. An"), punctuation and what follows a currency sign or an opening quote are not ("$1,299",
        // "concern.").
        self.span_gap = std::mem::take(&mut self.span_ended) && name == "span" && !self.in_pre();
        if name == "title" && self.title.is_none() {
            self.in_title = true;
            self.title_buf.clear();
        }
        if name == "meta" && self.og_title.is_none() && tag.attr("property") == Some("og:title") {
            self.og_title = tag.attr("content").map(title_text).filter(|t| !t.is_empty());
        }
        if name == "meta" && self.signals.og_type.is_none() && tag.attr("property") == Some("og:type") {
            self.signals.og_type = tag.attr("content").map(|t| t.trim().to_ascii_lowercase()).filter(|t| t.len() <= 64);
        }
        if name == "meta" && tag.attr("property") == Some("article:published_time") {
            self.signals.published = true;
        }
        if name == "body" && tag.has_class(ARCHIVE_CLASS) {
            self.signals.archive = true;
        }
        if let Some(types) = tag.attr("itemtype") {
            // A microdata item that is another's property is something the page holds, not what it is.
            let own = tag.attr("itemprop").is_none();
            for t in types.split_whitespace() {
                self.signals.add(t, own);
            }
        }
        if name == "script" {
            self.in_ld_json = tag.attr("type").is_some_and(|t| t.trim().eq_ignore_ascii_case("application/ld+json"));
            self.ld_json.reset();
        }
        // `</head>` is optional: an element that cannot be in the head ends it (as a browser does), or the whole
        // body would be skipped with it.
        if self.stack.last().is_some_and(|o| o.name == "head") && !HEAD_CONTENT.contains(&name) {
            self.close("head");
        }
        // A paragraph ends at the next one, hidden or not (as a browser reads it): `<p style="display:none">&nbsp;<p>`
        // hides an empty paragraph, not the article after it.
        if name == "p" && !tag.self_closing {
            if let Some(p) = self.innermost(&["p"]) {
                if self.innermost(&["div", "section", "article", "td", "li", "blockquote"]).is_none_or(|c| c < p) {
                    self.close("p");
                }
            }
        }
        if self.skipping() {
            if !VOID.contains(&name) && !tag.self_closing && self.stack.len() < DEPTH_MAX {
                let name = self.name_buffer(name);
                self.push(Open {
                    comments: false,
                    reviews: false,
                    name,
                    node: NO_NODE,
                    boiler: false,
                    content: false,
                    masks: false,
                    post: false,
                    frame: false,
                    widget: false,
                    skip: true,
                    counter: 0,
                    href: None,
                    mark: "",
                    cell_blocks: false,
                });
            }
            return;
        }
        match name {
            "br" => {
                if self.in_pre() {
                    self.push_markup("\n");
                } else if self.cur_text > 0 && !self.cur.ends_with("  \n") {
                    let trimmed = self.cur.trim_end().len();
                    self.cur.truncate(trimmed);
                    self.push_markup("  \n");
                    self.space = true;
                }
                return;
            }
            "img" => {
                let alt = tag.attr("alt").map(crate::html::collapse_whitespace).unwrap_or_default();
                if self.options.image_links {
                    if let Some(src) = tag.attr("src").and_then(|s| self.resolve(s)) {
                        self.push_markup(&format!("![{alt}]({src})"));
                        self.cur_text += alt.chars().count().max(1) as u32;
                        self.space = false;
                    }
                } else if self.options.image_alt && alt.split_whitespace().count() >= 3 {
                    self.push_text(" ");
                    self.push_text(&alt);
                    self.push_text(" ");
                }
                return;
            }
            "hr" => {
                self.flush();
                return;
            }
            _ => {}
        }
        if VOID.contains(&name) || tag.self_closing {
            return;
        }
        // Implied end tags.
        match name {
            "li" => {
                if let (Some(li), list) = (self.innermost(&["li"]), self.innermost(&["ul", "ol"])) {
                    if list.is_none_or(|l| l < li) {
                        self.close("li");
                    }
                }
            }
            "td" | "th" => {
                if let (Some(cell), row) = (self.innermost(&["td", "th"]), self.innermost(&["tr"])) {
                    if row.is_none_or(|r| r < cell) {
                        self.close(if self.stack.get(cell).is_some_and(|o| o.name == "td") { "td" } else { "th" });
                    }
                }
            }
            "tr" => {
                if let (Some(tr), table) = (self.innermost(&["tr"]), self.innermost(&["table"])) {
                    if table.is_none_or(|t| t < tr) {
                        self.close("tr");
                    }
                }
            }
            _ => {}
        }
        let inline = inline(name);
        if !inline {
            // A block-level element starts: the text so far is a block (or, in a cell, makes it a layout cell).
            if let Some(cell) = (self.depths.cells > 0).then(|| self.innermost(&["td", "th"])).flatten() {
                if !matches!(name, "td" | "th" | "tr") {
                    if let Some(o) = self.stack.get_mut(cell) {
                        if !o.cell_blocks {
                            o.cell_blocks = true;
                        }
                    }
                }
            }
            self.end_line_or_block();
        }
        if self.stack.len() >= DEPTH_MAX {
            self.overflow += 1;
            return;
        }
        let hidden = SKIP.contains(&name) || is_hidden(tag);
        // Hints matter on containers; inline elements (links, spans, emphasis) are many and carry none we use.
        // The classes of `html` and `body` describe the whole page's layout (`has-sidebar`, `no-comments`), not a
        // part of it.
        let hinted = !inline && !matches!(name, "html" | "body");
        // A cookie or consent banner is left out like a hidden element: it is never what the page is about.
        // So is an image's caption or credit (the classes of `html` and `body` are the page's, not an image's), and
        // a form's outcome message (`FORM_STATE_ENDS`).
        let words = if hinted {
            self.words.of(tag)
        } else if name == "span" && tag.attr("class").is_some() {
            // Of an inline element only the caption's and the screen reader's verdicts count: a span that names a
            // caption holds its text.
            let w = self.words.of(tag);
            let caption = if w & (WORD_CAPTION | WORD_NAMED_CAPTION) != 0 { WORD_CAPTION } else { 0 };
            caption | w & WORD_SCREEN_READER
        } else {
            0
        };
        let Hinted { weight, comments, reviews, consent, aside, widget } =
            if hinted { self.hints.of(tag, words & WORD_COMMENTS != 0) } else { Hinted::default() };
        // An image's caption is not inside a link; Bootstrap's card holds its title in `div.caption` inside the
        // item's link.
        let caption = words & WORD_CAPTION != 0 && self.depths.links == 0;
        // Text for screen readers goes, unless it says what the element just before it shows to sighted readers
        // only (`aria-hidden`, left out): WooCommerce's prices ("Original price was: $30.00."), an icon's "Yes".
        let screen_reader = words & WORD_SCREEN_READER != 0 && self.voiced_at != self.stack.len();
        let skip = hidden || consent || caption || screen_reader || words & WORD_FORM_STATE != 0;
        if skip && tag.attr("aria-hidden") == Some("true") {
            self.muted = Some(self.stack.len());
        }
        // A wrapper of the page hidden by itself (not a script, a banner, a caption, nor a modal, a menu or a popup
        // by its role or class) is read, marked `veiled`: some shops hide the whole page until a script shows it.
        let veil = skip
            && self.stack.len() <= VEIL_DEPTH_MAX
            && self.veil.is_none()
            && VEIL_TAGS.contains(&name)
            && !(consent || caption || screen_reader || words & WORD_FORM_STATE != 0)
            && weight >= 0
            && !tag.attr("role").is_some_and(|r| DIALOG_ROLES.iter().any(|d| r.eq_ignore_ascii_case(d)))
            && self.stack.iter().all(|o| VEIL_TAGS.contains(&o.name.as_str()));
        if veil {
            self.veil = Some(Veil { depth: self.stack.len(), muted: self.muted, voiced_at: self.voiced_at });
            self.veiled = true;
        }
        let skip = skip && !veil || self.veil_full() && self.spend_veil();
        let frame_tag = FRAME_TAGS.contains(&name);
        // A form right inside `body` is the page's frame, not a form on it: ASP.NET WebForms wraps every page in
        // one (`<form id="aspnetForm">`).
        let page_form = name == "form" && self.stack.last().is_some_and(|o| o.name == "body");
        let boiler = frame_tag || name == "form" && !page_form || weight < 0;
        let widget = boiler && widget && !frame_tag && name != "form";
        let content = (CONTENT_TAGS.contains(&name) || weight > 0) && self.depths.frames == 0;
        let frame = frame_tag && self.depths.content == 0;
        // A `<footer>` inside the content is the article's footer (its tags, share bar, author's note), as the
        // aside words say of what they name.
        let masks = (aside || name == "footer") && !content && self.depths.content > 0;
        let node = if inline
            || matches!(name, "p" | "h1" | "h2" | "h3" | "h4" | "h5" | "h6" | "pre")
            || name == "li" && tag.attr("class").is_none_or(|c| c.trim().is_empty())
        {
            NO_NODE
        } else if self.nodes.len() >= NODES_MAX {
            self.stop();
            return;
        } else {
            let parent = self.stack.iter().rev().find(|o| o.node != NO_NODE).map_or(NO_NODE, |o| o.node);
            let in_comments = comments || self.depths.comments > 0;
            let boiler_ctx = in_comments || boiler || self.depths.boiler > 0;
            // Content by its own tag or hint inside a boilerplate hint within content (an `<article>` card in a
            // "related" grid) is still not content.
            let content_here = !masks && self.depths.masks == 0 && (content || self.depths.content > 0);
            // A post marked up by forum software counts towards a thread unless it sits in another post.
            let forum_post = words & WORD_POST != 0
                || tag.attr("data-role").is_some_and(|r| r.eq_ignore_ascii_case(INVISION_POST_ROLE));
            if forum_post && self.depths.posts == 0 && self.veil.is_none() {
                self.signals.forum_posts += 1;
            }
            self.nodes.push(Node {
                parent,
                weight: weight + if CONTENT_TAGS.contains(&name) { 25 } else { 0 },
                boiler: boiler_ctx,
                content: !in_comments && content_here,
                plain: (boiler || self.depths.boiler > 0, content_here),
                class_key: class_key(tag),
                card_key: card_key(tag),
                post: is_post_text(tag) || forum_post,
                poster: words & WORD_POSTER != 0 || self.nodes.get(parent as usize).is_some_and(|p| p.poster),
                facets: words & WORD_FACETS != 0,
                form: name == "form",
                veiled: self.veil.is_some(),
                widget: !comments && self.builder_widget(boiler, widget),
            });
            (self.nodes.len() - 1) as u32
        };
        let mut open = Open {
            comments,
            reviews,
            name: self.name_buffer(name),
            node,
            boiler,
            content,
            masks,
            post: self.nodes.get(node as usize).is_some_and(|n| n.post),
            frame,
            widget,
            skip,
            counter: 1,
            href: None,
            mark: "",
            cell_blocks: false,
        };
        match name {
            "a" => {
                self.link_start = self.cur_links;
                open.href =
                    Some(tag.attr("href").and_then(|h| self.resolve(h)).unwrap_or_default()).filter(|h| !h.is_empty());
                if open.href.is_some() && self.options.links {
                    if !self.space {
                        self.cur.push(' ');
                    }
                    self.cur.push('[');
                    self.space = true;
                }
            }
            "strong" | "b" => open.mark = "**",
            "em" | "i" => open.mark = "*",
            "code" | "kbd" | "samp" | "tt" if !self.in_pre() => open.mark = "`",
            "li" => {
                if let Some(list) = self.innermost(&["ul", "ol"]) {
                    if let Some(l) = self.stack.get_mut(list) {
                        l.counter += 1;
                    }
                }
            }
            "th" => self.row_header = true,
            "td" => self.row_data = true,
            "tr" => self.row.clear(),
            _ => {}
        }
        if !open.mark.is_empty() {
            if !self.space {
                self.cur.push(' ');
                self.space = true;
            }
            self.cur.push_str(open.mark);
        }
        self.push(open);
    }

    fn end_tag(&mut self, name: &str) {
        if self.full {
            return;
        }
        if name == "script" {
            self.in_ld_json = false;
        }
        if name == "title" && self.in_title {
            self.in_title = false;
            let t = title_text(&self.title_buf);
            if !t.is_empty() {
                self.title = Some(t);
            }
        }
        if self.overflow > 0 && !self.stack.iter().any(|o| o.name == name) {
            self.overflow -= 1;
            return;
        }
        if name == "p" && self.depths.paragraphs == 0 {
            // `</p>` without `<p>` is an empty paragraph: a block boundary.
            self.flush();
            return;
        }
        self.close(name);
    }

    fn wants_raw_text(&self) -> bool {
        self.in_ld_json
    }

    fn text(&mut self, text: &str) {
        self.span_ended = false;
        let gap = std::mem::take(&mut self.span_gap);
        if self.full {
            return;
        }
        if self.in_ld_json {
            self.ld_json.feed(text, &mut self.signals);
            return;
        }
        if self.in_title {
            // Kept up to a little more than the cap (whitespace is collapsed later), character by character so
            // that how the text was split changes nothing.
            for c in text.chars() {
                if self.title_buf.len() + c.len_utf8() > 2 * TITLE_BYTES_MAX {
                    break;
                }
                self.title_buf.push(c);
            }
            return;
        }
        if self.skipping() {
            return;
        }
        // Only before text that is kept: a hidden or skipped run adds no space, and past a cap nothing is added.
        if gap
            && !self.space
            && text.starts_with(char::is_alphanumeric)
            && self.cur.chars().next_back().is_some_and(|p| p.is_alphanumeric() || ")]*_.,;:!?%".contains(p))
        {
            self.cur.push(' ');
            self.space = true;
        }
        self.push_text(text);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_are_found_in_any_case_at_any_place() {
        for (hay, word, found) in [
            ("Product-Filters", "filter", true),
            ("filter", "filter", true),
            ("xfilte", "filter", false),
            ("filte", "filter", false),
            ("", "filter", false),
            ("abc", "", true),
            ("sidebarFACET", "facet", true),
            ("ffacet", "facet", true),
        ] {
            assert_eq!(contains_ignore_ascii_case(hay.as_bytes(), word.as_bytes()), found, "{hay} / {word}");
        }
    }

    #[test]
    fn the_common_ancestor_is_the_innermost_container_holding_all() {
        let html = "<html><body><div><div><div></div></div><div><div></div></div></div><div></div></body></html>";
        let mut builder = Builder::new(Options::default());
        let mut tokenizer = crate::html::Tokenizer::new();
        tokenizer.feed(html.as_bytes(), &mut builder);
        tokenizer.finish(&mut builder);
        let page = builder.finish();
        // Containers in document order: html, body, a (b (c), d (e)), f.
        let [body, a, b, c, d, e, f] = [1, 2, 3, 4, 5, 6, 7];
        assert_eq!(page.nodes.len(), 8);
        assert_eq!(page.ancestors(e).collect::<Vec<_>>(), [e, d, a, body, 0]);
        assert_eq!(page.common_ancestor(c, []), c);
        assert_eq!(page.common_ancestor(c, [c]), c);
        assert_eq!(page.common_ancestor(c, [b]), b);
        assert_eq!(page.common_ancestor(b, [c]), b);
        assert_eq!(page.common_ancestor(c, [e]), a);
        assert_eq!(page.common_ancestor(c, [d, b]), a);
        assert_eq!(page.common_ancestor(e, [c, f]), body);
        // Outside every tree: passed over.
        assert_eq!(page.common_ancestor(c, [99]), c);
    }

    #[test]
    fn token_hints_find_words_inside_tokens() {
        for (token, consent, reviews) in [
            ("onetrust-pc-sdk", true, false),
            ("ot-cookie-banner", true, false),
            ("gdpr", true, false),
            ("cookie", false, false),
            ("reviews", false, true),
            ("product-review__title", false, true),
            ("preview", false, false),
            ("preview-reviews", false, true),
            ("review", false, true),
        ] {
            let h = token_hint(token);
            assert_eq!(h & HINT_CONSENT != 0, consent, "{token}");
            assert_eq!(h & HINT_REVIEWS != 0, reviews, "{token}");
        }
    }

    #[test]
    fn a_comments_token_is_remembered_as_no_negative_hint() {
        let tag = |class: &str| Tag {
            name: "div".into(),
            attrs: vec![crate::html::Attr { name: "class".into(), value: class.into() }],
            self_closing: false,
        };
        let mut hints = Hints::default();
        let mut words = Words::default();
        for _ in 0..2 {
            // `comments` names the section, and is no boilerplate hint of its own; `sidebar` is one.
            let t = tag("Comments sidebar");
            assert_ne!(words.of(&t) & WORD_COMMENTS, 0);
            assert_eq!(hints.of(&t, true).weight, -25);
            let t = tag("comments entry-content");
            assert_eq!(hints.of(&t, true).weight, 25);
            // A word that contains it is not a comments section: a boilerplate hint like any.
            let t = tag("commentary");
            assert_eq!(words.of(&t) & WORD_COMMENTS, 0);
            assert_eq!(hints.of(&t, false).weight, -25);
        }
    }

    /// Issue 33, finding 6: the memories of token verdicts keep short tokens only, so long class lists (each up to
    /// `html::VALUE_BYTES_MAX`) of tokens never repeated cost nothing kept; before, each distinct token was kept
    /// whole, up to `HINT_TOKENS_MAX` of them (here 800 KB in each memory).
    #[test]
    fn long_tokens_are_judged_but_not_remembered() {
        let tag = |class: String| Tag {
            name: "div".into(),
            attrs: vec![crate::html::Attr { name: "class".into(), value: class }],
            self_closing: false,
        };
        let mut hints = Hints::default();
        let mut words = Words::default();
        for i in 0..200 {
            let t = tag(format!("comments sidebar-{i}-{} content", "x".repeat(4_000)));
            assert_ne!(words.of(&t) & WORD_COMMENTS, 0);
            assert_eq!(hints.of(&t, true).weight, 0, "sidebar and content weigh each other out");
        }
        let kept = [hints.tokens.keys().map(|t| t.len()).sum::<usize>(), words.tokens.keys().map(|t| t.len()).sum()];
        for kept in kept {
            assert!(kept <= 3 * HINT_TOKEN_BYTES_MAX, "{kept} bytes of tokens kept");
        }
    }

    #[test]
    fn runs_of_plain_text_say_what_each_character_would() {
        // Plain runs go in at once; escapes, `_`, commas, whitespace and other characters one by one.
        let mut b = Builder::new(Options::default());
        b.push_text("  Plain words, a_b _c *d* [e] #f |g\\ x  \u{e9}t\u{e9}  y, z\u{ff0c} ");
        assert_eq!(b.cur, "Plain words, a_b \\_c \\*d\\* \\[e\\] \\#f \\|g\\\\ x \u{e9}t\u{e9} y, z\u{ff0c} ");
        assert_eq!((b.cur_text, b.cur_links, b.cur_commas), (35, 0, 3));
        // Inside a link every character of text counts as link text.
        b.depths.links = 1;
        b.push_text("ab c");
        assert_eq!((b.cur_text, b.cur_links), (38, 3));
        // At the text cap the run is cut where it no longer fits, and the block so far is kept.
        let mut b = Builder::new(Options::default());
        b.text_bytes = TEXT_BYTES_MAX - 5;
        b.push_text("abcdefgh");
        assert!(b.full && b.truncated);
        assert_eq!(b.blocks.last().map(|x| x.md.as_str()), Some("abcde"));
    }

    #[test]
    fn a_style_hides_with_display_none_however_spaced_or_cased() {
        for (style, hides) in [
            ("display:none", true),
            ("color: red; DISPLAY : None;", true),
            ("display: none !important", true),
            ("display:block", false),
            ("display:", false),
            ("visibility:hidden", false),
            ("displaynone", false),
        ] {
            assert_eq!(style_hides(style), hides, "{style}");
        }
    }
}
