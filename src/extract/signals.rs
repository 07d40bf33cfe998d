//! What a page says it is: its Open Graph type and its schema.org types (JSON-LD `@type`, microdata `itemtype`),
//! each marked as the page's own (top level) or as something the page holds (nested: the `NewsArticle` items of an
//! `ItemList`, the `Comment`s of a posting, a product's `Offer`). `Signals::kind` turns them into a page kind.
//!
//! JSON-LD is read as it streams by a small state machine (`LdScanner`), not parsed: linear, bounded memory (a key
//! or type name longer than `NAME_BYTES_MAX` is ignored, nesting past `LD_DEPTH_MAX` is counted, not stored), and
//! text cut anywhere leaves what was read so far.

/// Distinct schema.org types kept from one page.
const TYPES_MAX: usize = 32;

/// Bytes of a JSON key or type name kept; longer strings are values of no interest here.
const NAME_BYTES_MAX: usize = 64;

/// JSON nesting kept on the scanner's stack; deeper containers are counted and are never the page's own.
const LD_DEPTH_MAX: usize = 32;

/// What the page says it is.
#[derive(Debug, Clone, Default)]
pub struct Signals {
    pub og_type: Option<String>,
    /// The page has an `article:published_time` meta tag: Open Graph's date of an article.
    pub published: bool,
    /// The page's own JSON-LD says it is a `WebPage` (microdata's `WebPage` is a theme's default on every page's
    /// `body`, posts included, and does not count).
    pub ld_web_page: bool,
    /// The page's `body` has the class of a CMS's archive template (`builder::ARCHIVE_CLASS`): it lists posts or
    /// products.
    pub archive: bool,
    /// The page's own schema.org types (top-level JSON-LD objects, members of `@graph`, the `mainEntity` of one:
    /// what the page is about, as a `WebPage`'s thread or question; microdata items that are no other item's
    /// property), lowercase, without their vocabulary prefix.
    pub types: Vec<String>,
    /// Types of things the page holds (nested objects, microdata items that are a property of another).
    pub nested: Vec<String>,
    /// Posts marked up the way forum software marks them (see `forum::post_token`), none inside another: a page
    /// with `FORUM_POSTS_MIN` of them is a thread whatever it says of itself.
    pub forum_posts: u32,
    /// The page's comments hold more of its text than the rest of it (`forum::replies_outweigh`): a discussion
    /// whatever the page says of itself.
    pub replies: bool,
}

/// The kinds of page extracted differently.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PageKind {
    /// One long body: keep its container, not the teasers around it.
    Article,
    /// A thread of posts: keep every post, even in a region named comments.
    Forum,
    /// One product: its name, description, specifications and price, not its customers' reviews.
    Product,
    /// Many items or sections: keep the whole region.
    Other,
}

const FORUM_TYPES: &[&str] = &["discussionforumposting", "qapage"];
/// Posts marked up by forum software (`Signals::forum_posts`) that make a page a thread: a question and a reply.
const FORUM_POSTS_MIN: u32 = 2;
const PRODUCT_TYPES: &[&str] = &["product", "productgroup", "individualproduct", "productmodel"];
const ARTICLE_TYPES: &[&str] =
    &["article", "newsarticle", "blogposting", "reportagenewsarticle", "analysisnewsarticle", "techarticle"];
/// Page types that are not one article: a page saying it is one of these is not an article whatever its Open
/// Graph type says (sites set `og:type` to `article` on every page).
const NOT_ARTICLE_TYPES: &[&str] = &[
    "collectionpage",
    "itemlist",
    "searchresultspage",
    "offercatalog",
    "product",
    "productgroup",
    "profilepage",
    "contactpage",
    "aboutpage",
];

impl Signals {
    /// Whether the page's own types include one of `types`.
    pub fn has(&self, types: &[&str]) -> bool {
        self.types.iter().any(|t| types.contains(&t.as_str()))
    }

    /// The page's kind: a forum or Q&A by its own types or Open Graph, or by the posts forum software marks up
    /// (at least `FORUM_POSTS_MIN`) unless its own types say it is an article or a product (whose readers'
    /// comments or customers' reviews a forum's software may print), or by its comments outweighing the rest of it
    /// (`replies`) unless it is a product or Open Graph dates it as an article (`published`: a blog's post with
    /// many readers' comments); an article by its own types, or by Open
    /// Graph unless its own types say otherwise (`not_article`); a product by its own types or Open
    /// Graph. Types of what the page holds do not count (an `ItemList` of `NewsArticle`s is a listing, a
    /// collection's `Product` items do not make it a product page).
    pub fn kind(&self) -> PageKind {
        if self.og_type.as_deref() == Some("forum") || self.has(FORUM_TYPES) {
            return PageKind::Forum;
        }
        if self.forum_posts >= FORUM_POSTS_MIN && !self.has(ARTICLE_TYPES) && !self.has(PRODUCT_TYPES) {
            return PageKind::Forum;
        }
        if self.replies && !self.published && !self.has(PRODUCT_TYPES) {
            return PageKind::Forum;
        }
        if self.has(ARTICLE_TYPES) || self.og_type.as_deref() == Some("article") && !self.not_article() {
            return PageKind::Article;
        }
        if self.has(PRODUCT_TYPES) || self.og_type.as_deref().is_some_and(|t| t == "product" || t == "og:product") {
            return PageKind::Product;
        }
        PageKind::Other
    }

    /// Whether the page's own types say it is not an article whatever its Open Graph type says: a collection, a
    /// list or a product, a CMS's archive of posts (`archive`), or a plain `WebPage` by its JSON-LD without an
    /// article's publication date (a CMS sets `og:type` article on its service and landing pages too, but dates only
    /// what it publishes as articles).
    fn not_article(&self) -> bool {
        self.has(NOT_ARTICLE_TYPES) || self.ld_web_page && !self.published || self.archive
    }

    /// Adds a type (its last path segment, lowercase), as the page's own or as nested, unless known or past
    /// `TYPES_MAX`.
    pub fn add(&mut self, raw: &str, own: bool) {
        let t = type_name(raw);
        let list = if own { &mut self.types } else { &mut self.nested };
        if !t.is_empty() && t.len() <= NAME_BYTES_MAX && list.len() < TYPES_MAX && !list.contains(&t) {
            list.push(t);
        }
    }
}

/// A type's name: its last path segment, lowercase (`https://schema.org/WebPage` is `webpage`).
fn type_name(raw: &str) -> String {
    raw.trim().rsplit(['/', '#', ':']).next().unwrap_or("").to_ascii_lowercase()
}

/// One open JSON object or array.
#[derive(Debug, Clone, Copy)]
struct Frame {
    object: bool,
    /// Objects here are the page's own (the root, `@graph`, an array of them).
    own: bool,
    /// An array that is the value of `@type`.
    types: bool,
}

/// Reads the `@type` values of one JSON-LD script as it streams, telling the page's own from nested ones.
#[derive(Debug, Default)]
pub struct LdScanner {
    stack: Vec<Frame>,
    /// Containers nested past `LD_DEPTH_MAX`.
    overflow: usize,
    in_string: bool,
    escape: bool,
    /// The string being read (at most `NAME_BYTES_MAX` bytes; `long` once it was longer).
    buf: String,
    long: bool,
    /// In an object: the last key read, and whether its value comes next (after `:`).
    key: String,
    after_colon: bool,
}

impl LdScanner {
    /// Starts a new script.
    pub fn reset(&mut self) {
        self.stack.clear();
        self.overflow = 0;
        self.in_string = false;
        self.escape = false;
        self.buf.clear();
        self.long = false;
        self.key.clear();
        self.after_colon = false;
    }

    pub fn feed(&mut self, text: &str, signals: &mut Signals) {
        for c in text.chars() {
            if self.in_string {
                if self.escape {
                    self.escape = false;
                    self.push_char(c);
                } else if c == '\\' {
                    self.escape = true;
                } else if c == '"' {
                    self.in_string = false;
                    self.string_end(signals);
                } else {
                    self.push_char(c);
                }
                continue;
            }
            match c {
                '"' => {
                    self.in_string = true;
                    self.buf.clear();
                    self.long = false;
                }
                ':' => self.after_colon = true,
                ',' => {
                    self.after_colon = false;
                    self.key.clear();
                }
                '{' | '[' => self.open(c == '{'),
                '}' | ']' => {
                    if self.overflow > 0 {
                        self.overflow -= 1;
                    } else {
                        self.stack.pop();
                    }
                    self.after_colon = false;
                    self.key.clear();
                }
                _ => {}
            }
        }
    }

    fn push_char(&mut self, c: char) {
        if self.buf.len() + c.len_utf8() > NAME_BYTES_MAX {
            self.long = true;
        } else if !self.long {
            self.buf.push(c);
        }
    }

    fn open(&mut self, object: bool) {
        if self.overflow > 0 || self.stack.len() >= LD_DEPTH_MAX {
            self.overflow += 1;
            return;
        }
        let frame = match self.stack.last() {
            None => Frame { object, own: true, types: false },
            Some(parent) if parent.object => Frame {
                object,
                own: parent.own && self.after_colon && (self.key == "@graph" || self.key == "mainEntity"),
                types: !object && self.after_colon && self.key == "@type",
            },
            Some(parent) => Frame { object, own: parent.own, types: false },
        };
        self.stack.push(frame);
        self.after_colon = false;
        self.key.clear();
    }

    fn string_end(&mut self, signals: &mut Signals) {
        let Some(top) = self.stack.last().copied() else { return };
        if self.long || self.overflow > 0 {
            return;
        }
        if top.object && !self.after_colon {
            self.key.clone_from(&self.buf);
        } else if top.object && self.key == "@type" {
            self.add_type(signals, top.own);
        } else if top.types {
            // The array's object is the frame below it.
            let own = self.stack.iter().rev().nth(1).is_some_and(|f| f.own);
            self.add_type(signals, own);
        }
    }

    fn add_type(&self, signals: &mut Signals, own: bool) {
        signals.add(&self.buf, own);
        signals.ld_web_page |= own && type_name(&self.buf) == "webpage";
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn strings(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| (*s).to_owned()).collect()
    }

    #[track_caller]
    fn check(json: &str, own: &[&str], nested: &[&str]) {
        // Fed whole and a character at a time: the same.
        for whole in [true, false] {
            let mut s = Signals::default();
            let mut scanner = LdScanner::default();
            if whole {
                scanner.feed(json, &mut s);
            } else {
                for c in json.chars() {
                    scanner.feed(c.encode_utf8(&mut [0; 4]), &mut s);
                }
            }
            assert_eq!((&s.types, &s.nested), (&strings(own), &strings(nested)), "{json}");
        }
    }

    #[test]
    fn own_types_are_told_from_nested_ones() {
        check(
            r#"{"@context":"https://schema.org","@type":"NewsArticle","author":{"@type":"Person"}}"#,
            &["newsarticle"],
            &["person"],
        );
        check(
            r#"{"@graph":[{"@type":["WebPage","FAQPage"]},{"@type":"Organization","logo":{"@type":"ImageObject"}}]}"#,
            &["webpage", "faqpage", "organization"],
            &["imageobject"],
        );
        check(
            r#"[{"@type":"ItemList","itemListElement":[{"@type":"ListItem","item":{"@type":"NewsArticle"}}]}]"#,
            &["itemlist"],
            &["listitem", "newsarticle"],
        );
        // Keys and strings with escapes, a type cut off, text that is not JSON.
        check(r#"{"name":"a \"@type\": \"Product\"","@type":"schema:Product"}"#, &["product"], &[]);
        check(r#"{"@type":"Recipe","x":{"@type":"Per"#, &["recipe"], &[]);
        check("not json at all", &[], &[]);
    }

    #[test]
    fn deep_nesting_is_counted_not_stored() {
        let deep = format!("{{\"@type\":\"A\",\"x\":{}{}}}", "[".repeat(10_000), "]".repeat(10_000));
        check(&deep, &["a"], &[]);
        let mut scanner = LdScanner::default();
        scanner.feed(&"{\"a\":".repeat(10_000), &mut Signals::default());
        assert!(scanner.stack.len() <= LD_DEPTH_MAX);
    }

    #[test]
    fn a_list_of_articles_is_not_an_article() {
        let mut s = Signals { og_type: Some("article".into()), ..Signals::default() };
        assert_eq!(s.kind(), PageKind::Article);
        LdScanner::default().feed(
            r#"{"@type":"CollectionPage","mainEntity":{"@type":"ItemList","itemListElement":[{"@type":"NewsArticle"}]}}"#,
            &mut s,
        );
        assert_eq!(s.kind(), PageKind::Other, "{s:?}");
        s.types.push("blogposting".into());
        assert_eq!(s.kind(), PageKind::Article);
        s.types.push("qapage".into());
        assert_eq!(s.kind(), PageKind::Forum);
    }

    #[test]
    fn a_product_page_by_its_own_types() {
        let mut s = Signals::default();
        LdScanner::default().feed(r#"{"@type":"ItemList","itemListElement":[{"@type":"Product"}]}"#, &mut s);
        assert_eq!(s.kind(), PageKind::Other, "{s:?}");
        LdScanner::default().feed(r#"{"@type":"Product","offers":{"@type":"Offer"}}"#, &mut s);
        assert_eq!(s.kind(), PageKind::Product, "{s:?}");
        let og = Signals { og_type: Some("product".into()), ..Signals::default() };
        assert_eq!(og.kind(), PageKind::Product);
    }

    #[test]
    fn posts_marked_by_forum_software_make_a_thread_unless_the_page_says_otherwise() {
        let mut s = Signals { forum_posts: 1, ..Signals::default() };
        assert_eq!(s.kind(), PageKind::Other);
        s.forum_posts = 2;
        assert_eq!(s.kind(), PageKind::Forum);
        s.og_type = Some("article".into());
        assert_eq!(s.kind(), PageKind::Forum, "Open Graph says article on every page");
        for own in ["newsarticle", "product"] {
            let s = Signals { forum_posts: 5, types: vec![own.into()], ..Signals::default() };
            assert_ne!(s.kind(), PageKind::Forum, "{own}");
        }
    }

    #[test]
    fn an_undated_web_page_is_not_an_article_whatever_its_open_graph_type() {
        let mut s = Signals { og_type: Some("article".into()), ..Signals::default() };
        LdScanner::default().feed(r#"{"@graph":[{"@type":"WebPage"},{"@type":"Organization"}]}"#, &mut s);
        assert_eq!(s.kind(), PageKind::Other, "{s:?}");
        s.published = true;
        assert_eq!(s.kind(), PageKind::Article, "{s:?}");
        // Without schema.org types, Open Graph alone still says article; so it does beside microdata's WebPage.
        let mut og = Signals { og_type: Some("article".into()), ..Signals::default() };
        assert_eq!(og.kind(), PageKind::Article);
        og.add("https://schema.org/WebPage", true);
        assert_eq!(og.kind(), PageKind::Article);
    }

    #[test]
    fn a_pages_main_entity_is_what_the_page_is() {
        // XenForo's threads: a WebPage whose mainEntity is the posting; the posting's author is still nested.
        check(
            r#"{"@type":"WebPage","mainEntity":{"@type":"DiscussionForumPosting","author":{"@type":"Person"}}}"#,
            &["webpage", "discussionforumposting"],
            &["person"],
        );
        let mut s = Signals::default();
        LdScanner::default().feed(r#"{"@type":"WebPage","mainEntity":{"@type":"DiscussionForumPosting"}}"#, &mut s);
        assert_eq!(s.kind(), PageKind::Forum, "{s:?}");
    }
}
