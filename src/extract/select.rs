//! The deciding half: which blocks are the main content.
//!
//! Readability's idea, on blocks instead of a DOM: each substantial block scores its enclosing containers (the
//! parent fully, the grandparent half, further ancestors less), each container's score is discounted by its link
//! density and moved by its class/id hints, and the best container wins, with those of its siblings that score
//! close to it. Inside the chosen region, boilerplate blocks (navigation, share bars, link lists) are dropped.
//!
//! Page types, by general rules rather than per-site ones: a page that does not say it is an article (Open Graph,
//! schema.org) has its region widened until it holds most of the page's body text, so that a service page keeps
//! every section and a listing its items (sibling containers of one template, "cards", whose linked titles are the
//! items, not a link list); when a group of cards holds a good share of the body text, the region starts at the
//! container holding both the cards and the best-scoring prose (a listing's items score little, being short and
//! linked). An article keeps its container. A page that says it is a forum thread or a Q&A keeps
//! its posts even in a region named comments. A page that says it is a product leaves its customers' reviews out. Blocks said twice, unfilled template placeholders and bare URLs go.

use super::builder::{ends_ignore_ascii_case, starts_ignore_ascii_case, Block, Kind, Node, Page, NO_NODE};
use super::render;
use super::signals::{PageKind, Signals};
use super::{Extract, MARKDOWN_BYTES_MAX};

/// The share of the page's clean body text the chosen region holds at least (see `choose`).
const COVERAGE_MIN: f64 = 0.6;

/// The same for a region the page does not name as its content (neither its own tag or class nor those of a
/// wrapper around it alone say `main`, `article`, `content`...: `Node::weight` is not positive), on a page that says
/// nothing of its kind (a service or landing page, a listing): a page builder's sections are siblings of one
/// another, so the best one holds a part of the page, and only a container the page names as its content ends the
/// climb at `COVERAGE_MIN`.
const UNNAMED_COVERAGE_MIN: f64 = 0.8;

/// The most of a container's text that may be link text for the climb past `COVERAGE_MIN` to take it in: more is a
/// frame of menus and link lists around the region (a story's row beside a sidebar of categories and tags), not a
/// page of sections.
const CLIMB_LINK_SHARE_MAX: f64 = 0.5;

/// The same for a page that says it is an article or a forum thread: its body is one container (the article, the
/// thread's posts), and the text around it is teasers, promotions and lists of other threads.
const ARTICLE_COVERAGE_MIN: f64 = 0.35;

/// The most text a container just before the region may hold and still be taken in as the introduction of a
/// page of many items (a shop's category text above its grid); more is another section, which the coverage climb
/// decides about.
const INTRO_TEXT_MAX: u64 = 1200;

/// How many ancestors of the region are looked at for a container just before them (see `introduction`).
const INTRO_LEVELS_MAX: usize = 3;

/// The most of the introduction's text that may be link text (a filter's or a menu's list is all links).
const INTRO_LINK_SHARE_MAX: f64 = 0.25;

/// The most text the page's header (the container before the region holding the page's `h1`) may hold, as a share
/// of the region's body text, to be taken in as its introduction: a title, a summary, prerequisites; more is a
/// landing page's own section (a hero beside its features).
const INTRO_HEADER_SHARE_MAX: f64 = 0.2;

/// The most of the page's header's text that may be link text (a summary citing the terms it uses; a header of
/// category links and tags is more).
const INTRO_HEADER_LINK_SHARE_MAX: f64 = 0.5;

/// The least text of the introduction's longest paragraph: a sentence or two, not a heading or a count alone.
const INTRO_TEXT_MIN: u64 = 100;

/// Whether the page says it is a forum thread or a question with answers.
fn is_forum(s: &Signals) -> bool {
    s.kind() == PageKind::Forum
}

/// Whether the page says it is an article (Open Graph or schema.org).
fn is_article(s: &Signals) -> bool {
    s.kind() == PageKind::Article
}

/// The share of the page's body text below which a best container inside boilerplate gives way to the best one
/// outside it.
const BOILER_BEST_SHARE_MAX: f64 = 0.25;

/// Characters of its own (besides its links) that keep a linked entry inside a region marked as content (a
/// wiki's list of references: a linked title, then "by" and its authors).
const LINKED_ITEM_OWN_MIN: u32 = 12;

/// Characters under which a block of a form inside the chosen region is a form's label, prompt or choice.
const FORM_LINE_MAX: u32 = 60;

/// A block shorter than this does not score its containers.
const SCORING_TEXT_MIN: u32 = 25;

/// Characters of body text a container holds at least to count as holding some (see `choose`: boilerplate
/// containers compete only when no other holds this much).
const HOLDS_BODY_MIN: u64 = 200;

/// The share of a page's text in boilerplate by page builders' widget classes alone (`Block::widget`) from which
/// those classes are the page's every block, not its sidebar's.
const BUILDER_PAGE_SHARE_MIN: f64 = 0.5;

pub fn extract(mut page: Page) -> Extract {
    if page.veiled {
        unveil(&mut page);
    }
    page.signals.replies = super::forum::replies_outweigh(&page.blocks);
    // On a forum or a Q&A page the posts are the content, even in a region named comments.
    if is_forum(&page.signals) && !super::forum::comments_are_remarks(&page) {
        for b in &mut page.blocks {
            (b.boiler, b.content) = b.plain;
        }
        for n in &mut page.nodes {
            (n.boiler, n.content) = n.plain;
        }
    }
    if is_forum(&page.signals) {
        super::forum::leave_poster_details_out(&mut page);
    }
    // A page builder that names every block a widget (Amazon's `celwidget`) names the page's text so too: on a page
    // of no declared kind (a shop's category, a landing page) whose text is mostly boilerplate by those classes
    // alone, they say nothing. (An article's builder blocks are left to the choice among boilerplate.)
    let widget_text: u64 = page.blocks.iter().filter(|b| b.widget).map(|b| u64::from(b.text_len)).sum();
    let all_text: u64 = page.blocks.iter().map(|b| u64::from(b.text_len)).sum();
    if page.signals.kind() == PageKind::Other && widget_text as f64 >= BUILDER_PAGE_SHARE_MIN * all_text as f64 {
        for b in page.blocks.iter_mut().filter(|b| b.widget) {
            (b.boiler, b.plain.0) = (false, false);
        }
        for n in page.nodes.iter_mut().filter(|n| n.widget) {
            (n.boiler, n.plain.0) = (false, false);
        }
    }
    // On a product page, what customers say of it (reviews, ratings) is not the product's description.
    if page.signals.kind() == PageKind::Product {
        for b in page.blocks.iter_mut().filter(|b| b.reviews) {
            (b.boiler, b.content) = (true, false);
        }
    }
    let title = page.og_title.clone().or_else(|| page.title.clone()).map(|t| clean_title(&t, page.title.as_deref()));
    let chosen = choose(&page);
    let mut blocks: Vec<&Block> = chosen.iter().filter_map(|&i| page.blocks.get(i)).collect();
    // The title is shown once, first: headings that repeat it go, and paragraphs that are nothing but it (a
    // template's second title line, a gallery's caption bar). So do an advertisement's label ("Advertisement",
    // "Story continues below"), whatever the page, and an article's dateline ("Updated 10:01 pm PST, Tuesday,
    // November 19, 2019"): it says when, not what.
    let t = title.as_deref().map(|title| (title.len(), normalized(title)));
    let article = is_article(&page.signals);
    blocks.retain(|b| {
        !(t.as_ref().is_some_and(|(bytes, t)| repeats_title(b, *bytes, t))
            || is_ad_label(b)
            || article && b.kind == Kind::Para && is_dateline(&b.md)
            || article && b.kind == Kind::Para && is_credit_line(&b.md)
            || says_nothing(b))
    });
    let mut out = Vec::with_capacity(blocks.len() + 1);
    // The title's line and the blank line after it count towards the cap too.
    let title_bytes = title.as_ref().map_or(0, |t| "# ".len() + t.len() + "\n\n".len());
    let (rendered, cut) = render::render(&blocks, MARKDOWN_BYTES_MAX.saturating_sub(title_bytes));
    // A page without main content (an error page, a script's empty shell) is an empty extract, not a lone title.
    if let Some(t) = title.as_ref().filter(|_| !rendered.is_empty()) {
        out.push(format!("# {t}"));
    }
    out.extend(rendered);
    Extract { title, blocks: out, truncated: page.truncated || cut }
}

/// Characters of body text the page's hidden wrappers (`Block::veiled`) hold at least for the extract to read
/// them: a page's worth, not a modal's few lines.
const VEILED_BODY_MIN: u64 = 1_000;

/// How many times the visible page's body text the hidden wrappers hold at least for the extract to read them: a
/// page hidden until a script shows it shows next to nothing (a header, a notice), where a page's own text
/// outweighs a cookie banner's or a cart drawer's.
const VEILED_BODY_RATIO_MIN: u64 = 3;

/// Reads what the page hides in wrappers until a script shows it only when the visible page says next to nothing
/// beside it; otherwise leaves it out, as if it had been skipped (the blocks and containers go, and the
/// containers after them are renumbered): one pass over each.
fn unveil(page: &mut Page) {
    let (mut visible, mut veiled) = (0u64, 0u64);
    for b in page.blocks.iter().filter(|b| is_body(b)) {
        *if b.veiled { &mut veiled } else { &mut visible } += u64::from(b.text_len);
    }

    if veiled >= VEILED_BODY_MIN && veiled >= VEILED_BODY_RATIO_MIN * visible {
        return;
    }
    let mut index = Vec::with_capacity(page.nodes.len());
    let mut next = 0u32;
    for n in &page.nodes {
        index.push(if n.veiled { NO_NODE } else { next });
        next += u32::from(!n.veiled);
    }
    let at = |x: u32| index.get(x as usize).copied().unwrap_or(NO_NODE);
    page.nodes.retain(|n| !n.veiled);
    for n in &mut page.nodes {
        n.parent = at(n.parent);
    }
    page.blocks.retain(|b| !b.veiled);
    for b in &mut page.blocks {
        for x in &mut b.path {
            *x = at(*x);
        }
    }
}

/// A heading that repeats the title (`normalized` as `t`, of `bytes` bytes), or a paragraph that is nothing but it.
/// A paragraph's markdown more than twice the title's bytes (emphasis, escapes) is not the title: only short ones
/// are compared, letter by letter up to the first that differs (no copy of each paragraph).
fn repeats_title(b: &Block, bytes: usize, t: &str) -> bool {
    match b.kind {
        Kind::Heading(_) => same_text(&normalized(&b.md), t),
        Kind::Para => !t.is_empty() && b.md.len() <= 2 * bytes && letters(&b.md).eq(t.chars()),
        _ => false,
    }
}

/// Bytes of a paragraph's markdown that can be a news agency's credit line; a longer one is the story's text.
const CREDIT_LINE_BYTES_MAX: usize = 400;

/// How a news agency's credit line opens (lowercase), after any marks: who reported, wrote and edited the story.
const CREDIT_OPENINGS: &[&str] =
    &["reporting by", "additional reporting by", "writing by", "editing by", "compiled by"];

/// How the other form of credit line ends (lowercase), before any marks.
const CREDIT_ENDING: &str = "contributed to this report";

/// A short paragraph that credits a story's reporters and editors, as the news agencies print it at its end
/// ("Reporting by Jane Roe; Editing by John Doe", "Associated Press writer Ann Lee contributed to this report."):
/// who made the story, not what it says.
fn is_credit_line(md: &str) -> bool {
    if md.len() > CREDIT_LINE_BYTES_MAX {
        return false;
    }
    let text = md.trim_matches(|c: char| !c.is_alphanumeric());
    CREDIT_OPENINGS.iter().any(|w| starts_ignore_ascii_case(text, w))
        || ends_ignore_ascii_case(text.as_bytes(), CREDIT_ENDING.as_bytes())
}

/// The longest line (in bytes of markdown, its links' targets included) that `is_page_date` looks at.
const PAGE_DATE_BYTES_MAX: usize = 400;

/// How a page's note of its last change opens (MDN's and MediaWiki's "This page was last modified on ... by",
/// Docsy's "Last modified ...: commit"); a post's "Last edited by" note is its thread's business.
const PAGE_DATE_OPENINGS: &[&str] = &["this page was last modified", "this page was last edited", "last modified"];

/// A paragraph that says when the page last changed: the site's record, not what the page says.
fn is_page_date(b: &Block) -> bool {
    b.kind == Kind::Para
        && b.md.len() <= PAGE_DATE_BYTES_MAX
        && PAGE_DATE_OPENINGS.iter().any(|w| starts_ignore_ascii_case(&b.md, w))
}

/// A paragraph, heading or list item without a letter or a digit: a rule drawn in text (`___`, `* * *`) or a lone
/// mark, which says nothing (code and table rows keep their punctuation).
fn says_nothing(b: &Block) -> bool {
    matches!(b.kind, Kind::Para | Kind::Heading(_) | Kind::Item { .. }) && !b.md.chars().any(char::is_alphanumeric)
}

/// Bytes of a block's markdown that can be an advertisement's label (the longest of `AD_LABELS` with marks).
const AD_LABEL_BYTES_MAX: usize = 48;

/// What pages print over, under or in place of an advertisement, as `normalized` leaves it (lowercase letters and
/// digits only), in the languages of the benchmarks' pages.
const AD_LABELS: &[&str] = &[
    "advertisement",
    "advert",
    "advertising",
    "ads",
    "anzeige",
    "werbung",
    "publicidade",
    "publicidad",
    "publicité",
    "pubblicità",
    "iklan",
    "reklama",
    "реклама",
    "storycontinuesbelow",
    "storycontinuesbelowadvertisement",
    "articlecontinuesbelow",
    "continuereadingbelow",
    "scrolltocontinue",
    "scrolltocontinuewithcontent",
];

/// A paragraph or heading that is nothing but an advertisement's label: the ad's frame, not the page's text.
fn is_ad_label(b: &Block) -> bool {
    matches!(b.kind, Kind::Para | Kind::Heading(_))
        && b.md.len() <= AD_LABEL_BYTES_MAX
        && AD_LABELS.iter().any(|label| letters(&b.md).eq(label.chars()))
}

/// Bytes of a paragraph's markdown that can be a dateline: a longer one is text that happens to start with a word
/// of `DATELINE_WORDS`.
const DATELINE_BYTES_MAX: usize = 100;

/// Words that open a dateline, lowercase (a news system prints when a story was published or last changed).
const DATELINE_WORDS: &[&str] = &[
    "updated",
    "published",
    "posted",
    "last updated",
    "last modified",
    "publicado",
    "atualizado",
    "actualizado",
    "aktualisiert",
    "veröffentlicht",
    "publié",
    "mis à jour",
];

/// A short paragraph (emphasis marks aside) that is a word of `DATELINE_WORDS`, then a space or a colon, then a text
/// with a digit in it: the time or date of the story, not its text.
fn is_dateline(md: &str) -> bool {
    if md.len() > DATELINE_BYTES_MAX {
        return false;
    }
    let text = md.trim_start_matches(['*', '_', ' ']);
    DATELINE_WORDS.iter().any(|w| {
        starts_ignore_ascii_case(text, w)
            && text
                .get(w.len()..)
                .is_some_and(|rest| rest.starts_with([' ', ':']) && rest.bytes().any(|c| c.is_ascii_digit()))
    })
}

/// Letters and digits, lowercased: what two texts are compared on.
fn normalized(s: &str) -> String {
    letters(s).collect()
}

/// The letters and digits of `s`, lowercased, one by one: `normalized` without the copy.
fn letters(s: &str) -> impl Iterator<Item = char> + '_ {
    s.chars().filter(|c| c.is_alphanumeric()).flat_map(char::to_lowercase)
}

/// Whether two normalized texts are the same, or one begins the other.
fn same_text(a: &str, b: &str) -> bool {
    !a.is_empty() && (a == b || b.starts_with(a) || a.starts_with(b))
}

/// Strips a site name appended to a title ("Story - Site", "Story | Site") when the `<title>` has one.
fn clean_title(t: &str, html_title: Option<&str>) -> String {
    let t = crate::html::collapse_whitespace(t);
    let Some(_) = html_title else { return t };
    for sep in [" | ", " - ", " — ", " – ", " :: "] {
        if let Some((head, tail)) = t.rsplit_once(sep) {
            if head.split_whitespace().count() >= 3 && tail.split_whitespace().count() <= 4 {
                return head.to_owned();
            }
        }
    }
    t
}

fn link_density(b: &Block) -> f64 {
    if b.text_len == 0 {
        return 0.0;
    }
    f64::from(b.link_len) / f64::from(b.text_len)
}

/// Whether a block is body text: a paragraph (or code, or a list item) that is not mostly links.
fn is_body(b: &Block) -> bool {
    body_kind(b) && link_density(b) < 0.3 && (!b.boiler || b.content)
}

/// Characters from which a heading is a paragraph set in a heading's type (a landing page's introduction in an
/// `h4`): it counts as body text.
const LONG_HEADING_MIN: u32 = 120;

fn long_heading(b: &Block) -> bool {
    matches!(b.kind, Kind::Heading(_)) && b.text_len >= LONG_HEADING_MIN
}

/// A paragraph, code, a list item, a table row, or a long heading: the kinds of block that are body text and vote.
fn body_kind(b: &Block) -> bool {
    matches!(b.kind, Kind::Para | Kind::Pre | Kind::Item { .. } | Kind::Row { .. }) || long_heading(b)
}

/// Indices of the blocks to keep, in order.
fn choose(page: &Page) -> Vec<usize> {
    let n = page.nodes.len();
    let mut score = vec![0f64; n];
    let mut text = vec![0u64; n];
    let mut links = vec![0u64; n];
    let mut body = vec![0u64; n];
    // An article's cards are teasers for other articles, not its content.
    let card = if is_article(&page.signals) { vec![false; n] } else { cards(page) };
    let in_card = |b: &Block| b.path.iter().any(|&x| card.get(x as usize).copied().unwrap_or(false));
    // What a block of a card holds as the item's own (its linked title, its price) may lie deeper than a block's
    // path reaches, on a page of many items (`within_cards` holds every block `in_card` finds, whose card is at most
    // `PATH_LEN - 1` containers up); a product's rails and a thread's posts keep to the path.
    let within = (page.signals.kind() == PageKind::Other).then(|| within_cards(page, &card));
    let card_own = |b: &Block| match &within {
        Some(w) => b.path.first().is_some_and(|&x| w.get(x as usize).copied().unwrap_or(false)),
        None => in_card(b),
    };
    for b in &page.blocks {
        // Counted on the innermost container, then summed up the tree below.
        if let Some(&node) = b.path.first().filter(|&&n| n != NO_NODE) {
            let i = node as usize;
            if let (Some(t), Some(l), Some(g)) = (text.get_mut(i), links.get_mut(i), body.get_mut(i)) {
                *t += u64::from(b.text_len);
                *l += u64::from(b.link_len);
                if is_body(b) || in_card(b) && !b.boiler {
                    *g += u64::from(b.text_len);
                }
            }
        }
        // Only body-like blocks vote: paragraphs, code, items and the rows of data tables; headings do not.
        if b.text_len < SCORING_TEXT_MIN || !body_kind(b) {
            continue;
        }
        let s =
            (1.0 + f64::from(b.commas).min(10.0) + (f64::from(b.text_len) / 100.0).min(3.0)) * (1.0 - link_density(b));
        for (level, &node) in b.path.iter().enumerate().take_while(|(_, &n)| n != NO_NODE) {
            let divider = match level {
                0 => 1.0,
                1 => 2.0,
                l => l as f64 * 3.0,
            };
            if let Some(x) = score.get_mut(node as usize) {
                *x += s / divider;
            }
        }
    }
    // Containers are numbered in document order, a parent before its children: one pass from the end gives every
    // container the totals of its whole subtree.
    for i in (0..n).rev() {
        let Some(parent) = page.nodes.get(i).map(|x| x.parent as usize).filter(|&p| p < i) else { continue };
        for v in [&mut text, &mut links, &mut body] {
            let own = v.get(i).copied().unwrap_or(0);
            if let Some(x) = v.get_mut(parent) {
                *x += own;
            }
        }
    }
    let final_score = |i: usize| -> f64 {
        let t = text.get(i).copied().unwrap_or(0);
        let l = links.get(i).copied().unwrap_or(0);
        let density = if t == 0 { 0.0 } else { l as f64 / t as f64 };
        let Some(node) = page.nodes.get(i) else { return 0.0 };
        let mut s = (score.get(i).copied().unwrap_or(0.0) + f64::from(node.weight) * 0.4) * (1.0 - density);
        if node.boiler && !node.content {
            s *= 0.2;
        } else if node.content && !node.boiler {
            s *= 1.5;
        }
        s
    };
    // Boilerplate containers (comments, sidebars) compete only when nothing else holds body text.
    let clean = |i: &usize| page.nodes.get(*i).is_some_and(|n| !n.boiler || n.content);
    let holds_body = |i: usize| body.get(i).copied().unwrap_or(0) >= HOLDS_BODY_MIN;
    let has_clean = (0..n).any(|i| clean(&i) && holds_body(i));
    let has_outside = (0..n).any(|i| page.nodes.get(i).is_some_and(|x| !x.boiler) && holds_body(i));
    let pick = |strict: bool| {
        (0..n)
            .filter(|&i| score.get(i).copied().unwrap_or(0.0) > 0.0)
            .filter(|i| !has_clean || clean(i))
            .filter(|i| !strict || page.nodes.get(*i).is_some_and(|n| !n.boiler))
            .max_by(|&a, &b| final_score(a).partial_cmp(&final_score(b)).unwrap_or(std::cmp::Ordering::Equal))
    };
    let page_body: u64 =
        page.blocks.iter().filter(|b| is_body(b) || in_card(b) && !b.boiler).map(|b| u64::from(b.text_len)).sum();
    // A content hint inside boilerplate (a quote styled as content in a testimonials carousel) can score best
    // while holding a sliver of the page: the region cannot grow out of the boilerplate around it, so the best
    // container outside boilerplate is taken instead (when one holds body text).
    let best = match pick(false) {
        Some(b)
            if page.nodes.get(b).is_some_and(|n| n.boiler)
                && (body.get(b).copied().unwrap_or(0) as f64) < BOILER_BEST_SHARE_MAX * page_body as f64 =>
        {
            pick(true).filter(|_| has_outside).or(Some(b))
        }
        best => best,
    };
    // A listing's items are short and mostly links, so they score little: when one group of cards holds more body
    // text than the best-scoring container, the region starts at the cards' parent.
    let grid =
        largest_card_group(page, &card, &body).filter(|&(_, text)| text as f64 >= GRID_SHARE_MIN * page_body as f64);
    let best = match (best, grid) {
        // Both the cards and the best prose (a listing's introduction), in the container that holds both.
        (Some(b), Some((parent, _))) => Some(page.common_ancestor(b, [parent])),
        (None, Some((parent, _))) => Some(parent),
        (best, _) => best,
    };
    let Some(mut best) = best else {
        // Nothing scored (a short page): keep every non-boilerplate block.
        let all: Vec<usize> = page.blocks.iter().enumerate().filter(|(_, b)| !b.boiler).map(|(i, _)| i).collect();
        return if super::listing::shell_furniture(page, page_body, &all) { Vec::new() } else { all };
    };
    // Promote to the parent while the chosen container holds too little of the parent's body text: an article
    // split across sibling containers, or a summary beside the body.
    for _ in 0..3 {
        let Some(parent) = page.nodes.get(best).map(|n| n.parent).filter(|p| *p != NO_NODE) else { break };
        let (own, theirs) = (body.get(best).copied().unwrap_or(0), body.get(parent as usize).copied().unwrap_or(0));
        let parent_node = page.nodes.get(parent as usize);
        if parent_node.is_some_and(|p| p.boiler && !p.content) || theirs == 0 || own as f64 >= 0.75 * theirs as f64 {
            break;
        }
        best = parent as usize;
    }
    // A page of many sections (a service or landing page, a product page, a listing) has no one container that
    // holds most of its text: climb until the region holds most of the page's clean body text, so that every
    // section is kept (boilerplate inside it is still dropped below).
    // The floor is higher on a page of no kind while the region is not one the page names as its content, by its
    // own tag or class or by a wrapper's around it alone.
    let kind = page.signals.kind();
    let named = |i: usize, node: &Node| {
        node.weight > 0
            || page.nodes.get(node.parent as usize).is_some_and(|p| p.weight > 0)
                && body.get(node.parent as usize) == body.get(i)
    };
    let coverage = |i: usize, node: &Node| match kind {
        PageKind::Article | PageKind::Forum => ARTICLE_COVERAGE_MIN,
        PageKind::Other if !named(i, node) => UNNAMED_COVERAGE_MIN,
        _ => COVERAGE_MIN,
    };
    for _ in 0..super::DEPTH_MAX {
        let Some(node) = page.nodes.get(best) else { break };
        let parent = node.parent as usize;
        let Some(parent_node) = page.nodes.get(parent) else { break };
        let own = body.get(best).copied().unwrap_or(0) as f64;
        if own >= coverage(best, node) * page_body as f64 || parent_node.boiler && !parent_node.content {
            break;
        }
        let parent_links = links.get(parent).copied().unwrap_or(0) as f64;
        let parent_text = text.get(parent).copied().unwrap_or(0) as f64;
        if own >= COVERAGE_MIN * page_body as f64 && parent_links > CLIMB_LINK_SHARE_MAX * parent_text {
            break;
        }
        best = parent;
    }
    if is_forum(&page.signals) {
        best = super::forum::thread_region(page, best);
    }
    let intro = if page.signals.kind() == PageKind::Other { introduction(page, best, &body) } else { None };
    let best_score = final_score(best);
    let parent = page.nodes.get(best).map_or(NO_NODE, |n| n.parent);
    // Siblings of the best container that hold content too.
    let threshold = (best_score * 0.2).max(10.0);
    let mut chosen_nodes = vec![best as u32];
    chosen_nodes.extend(intro.map(|i| i as u32));
    if parent != NO_NODE {
        for (i, node) in page.nodes.iter().enumerate() {
            if i != best && node.parent == parent && final_score(i) >= threshold {
                chosen_nodes.push(i as u32);
            }
        }
    }
    // Containers built from the same template as the best one (same tag and class) hold the rest of a split body.
    let key = page.nodes.get(best).map_or(0, |n| n.class_key);
    if key != 0 {
        for (i, node) in page.nodes.iter().enumerate() {
            if node.class_key == key && (!node.boiler || node.content) && body.get(i).copied().unwrap_or(0) >= 100 {
                chosen_nodes.push(i as u32);
            }
        }
    }
    let best_boiler = page.nodes.get(best).is_some_and(|n| n.boiler);
    // As a set: a page of many similar siblings can choose thousands, and every block asks.
    let mut chosen = vec![false; n];
    for &c in &chosen_nodes {
        if let Some(x) = chosen.get_mut(c as usize) {
            *x = true;
        }
    }
    // Inside a chosen container at any depth: parents come before their children.
    for i in 0..n {
        let parent = page.nodes.get(i).map_or(NO_NODE, |x| x.parent) as usize;
        if parent < i && chosen.get(parent).copied().unwrap_or(false) {
            if let Some(x) = chosen.get_mut(i) {
                *x = true;
            }
        }
    }
    let facets = super::listing::in_facets(page, best, &text);
    let titled = super::listing::titled_cards(page, &card);
    let long_lists = super::listing::long_lists(page);
    let mut keep = Vec::new();
    let mut seen = std::collections::HashSet::new();
    let article = is_article(&page.signals);
    let product = page.signals.kind() == PageKind::Product;
    let in_form = page.ancestors(best).any(|x| page.nodes.get(x).is_some_and(|n| n.form));
    for (i, b) in page.blocks.iter().enumerate() {
        let inside = b.path.first().is_some_and(|&n| chosen.get(n as usize).copied().unwrap_or(false));
        let sibling_paragraph =
            parent != NO_NODE && b.path.first() == Some(&parent) && b.text_len >= 80 && link_density(b) < 0.25;
        if !(inside || sibling_paragraph) {
            continue;
        }
        if b.boiler && !best_boiler && !b.content || super::listing::block_in(b, &facets) {
            continue;
        }
        let ld = link_density(b);
        let is_heading = matches!(b.kind, Kind::Heading(_));
        // A card's row of several links (its variants, tags or categories) is not its title.
        if card_own(b) && super::listing::link_row(b) && super::listing::block_in(b, &titled) {
            continue;
        }
        // Mostly links is a link list's block, unless the links lead a sentence of the block's own (a numbered
        // digest of stories: a linked headline, then what it says). Lengths count visible characters, not spaces.
        // In a card of a listing, the linked title is the item.
        let own_words = b.text_len.saturating_sub(b.link_len);
        let own_sentence = own_words >= 45
            || card_own(b) && b.text_len >= CARD_TITLE_MIN
            || !article && b.content && !b.boiler && own_words >= LINKED_ITEM_OWN_MIN
            || content_link_item(b, article)
            || super::listing::in_long_list(b, &long_lists);
        if !is_heading && ld > 0.5 && b.text_len < 200 && !own_sentence {
            continue;
        }
        if matches!(b.kind, Kind::Item { .. }) && ld > 0.35 && !own_sentence {
            continue;
        }
        // A form's short lines (its labels, prompts and choices) are not the page's text, even in its content
        // region (a newsletter or contact form inside `<main>`); a product page's form is its options and price,
        // and a form around the whole region is the page's frame (ASP.NET's `aspnetForm` around every page).
        if b.form && b.text_len < FORM_LINE_MAX && !product && !in_form {
            continue;
        }
        // A card's short lines (a price, a date) are the item's own, and a table's row is data (a row of numbers
        // is not a bare date line; a table of furniture, a pager or a calendar, goes by its links or its region).
        if !card_own(b) && !matches!(b.kind, Kind::Row { .. }) && is_chrome(b)
            || is_residue(b)
            || is_page_date(b)
            || super::listing::is_control(b)
        {
            continue;
        }
        // The same text again (a promise repeated in a banner, a price box and a footer note) is said once; code
        // is not (a doc page shows the same command again where it is used), nor a table's row (a doc page's
        // tables of parameters share their columns' names and some rows; a table of readings can hold the same
        // row twice): every row of a data table is kept.
        if b.text_len >= REPEAT_TEXT_MIN
            && !matches!(b.kind, Kind::Heading(_) | Kind::Pre | Kind::Row { .. })
            && !seen.insert(b.md.as_str())
        {
            continue;
        }
        keep.push(i);
    }
    // A marker with a few teasers, after which the article goes on, is a promotion set into it.
    if !grid_listing_of(page, grid.is_some()) {
        leave_inline_promotions_out(page, &mut keep);
    }
    // A "more stories" marker ends the article: it and what follows are related content. It counts in the second
    // half, or anywhere as a heading once the article has said something (teasers can outweigh a short article).
    let half = keep.len() / 2;
    let mut said = 0;
    // On a listing (a grid of cards chose the region), "most popular" is one more list of its items.
    let grid_listing = grid_listing_of(page, grid.is_some());
    let cut = if grid_listing {
        None
    } else {
        keep.iter().enumerate().find_map(|(pos, &i)| {
            let b = page.blocks.get(i)?;
            let marker = pos >= half.max(1) || matches!(b.kind, Kind::Heading(_)) && said >= 300;
            said += b.text_len;
            (marker && is_tail_marker(b)).then_some(pos)
        })
    };
    if let Some(cut) = cut {
        keep.truncate(cut);
    }
    // Runs of three or more headings with no text between them are lists of teasers.
    // (A listing's cards titled by headings are its items, not teasers.)
    // (A long heading is a paragraph in a heading's type, not a title.)
    let is_heading = |i: &usize| {
        page.blocks.get(*i).is_some_and(|b| matches!(b.kind, Kind::Heading(_)) && !in_card(b) && !long_heading(b))
    };
    let mut drop = vec![false; keep.len()];
    let mut run_start = 0;
    for pos in 0..=keep.len() {
        let heading = keep.get(pos).is_some_and(is_heading);
        if !heading {
            if pos - run_start >= 3 {
                drop.iter_mut().take(pos).skip(run_start).for_each(|d| *d = true);
            }
            run_start = pos + 1;
        }
    }
    let mut keep: Vec<usize> = keep.into_iter().zip(drop).filter(|(_, d)| !d).map(|(i, _)| i).collect();
    if is_forum(&page.signals) {
        super::forum::end_at_last_post(page, &mut keep);
        super::forum::leave_furniture_out(page, &mut keep);
    }
    // Headings with no body text after them (a "Related" or "Topics" tail) go too.
    while keep.last().is_some_and(is_heading) {
        keep.pop();
    }
    if super::listing::shell_furniture(page, page_body, &keep) {
        keep.clear();
    }
    keep
}

/// A top-level item of a list inside a region marked as content, on a page that is not an article: a doc page's
/// list of its topics, its guides or its further reading, whose entries are links and are the page's text (an
/// article's lists of links are teasers; nested lists of links are a table of contents).
fn content_link_item(b: &Block, article: bool) -> bool {
    !article && b.content && !b.boiler && matches!(b.kind, Kind::Item { depth: 1, .. })
}

/// Whether a page of no declared type had its region chosen by a grid of cards (`grid`): a listing.
fn grid_listing_of(page: &Page, grid: bool) -> bool {
    grid && page.signals.kind() == PageKind::Other
}

/// How many blocks of teasers may follow a marker before the article goes on (see `leave_inline_promotions_out`).
const PROMOTION_BLOCKS_MAX: usize = 8;

/// Characters of the body text after a promotion that say the article goes on: a sentence, not a label or a value
/// of the list the marker's word happens to be in ("Recommended power level", then "250mW").
const PROMOTION_RESUME_TEXT_MIN: u32 = 50;

/// A marker that announces other stories (its own block, or the first line of a block of linked headlines: "DON'T
/// MISS"), then at most `PROMOTION_BLOCKS_MAX` blocks that are mostly links (its teasers, kept or not), then the
/// next kept block is body text in a container built from the same template as the marker's: the article goes
/// on after a promotion set into it. The marker goes (its teasers, mostly links, are not kept), and the article is
/// not cut there.
fn leave_inline_promotions_out(page: &Page, keep: &mut Vec<usize>) {
    let template = |b: &Block| b.path.first().and_then(|&x| page.nodes.get(x as usize)).map_or(0, |n| n.class_key);
    let teaser = |b: &Block| b.link_len * 2 > b.text_len;
    let promotion = |pair: &[usize]| {
        let [at, next] = *pair else { return false };
        let (Some(b), Some(n), Some(between)) =
            (page.blocks.get(at), page.blocks.get(next), page.blocks.get(at + 1..next))
        else {
            return false;
        };
        // The cheap tests first: every kept block is asked.
        if between.len() > PROMOTION_BLOCKS_MAX
            || !(is_body(n)
                && n.text_len >= PROMOTION_RESUME_TEXT_MIN
                && template(b) != 0
                && template(n) == template(b))
            || !between.iter().all(teaser)
        {
            return false;
        }
        let line_marker = teaser(b) && b.md.split_once("  \n").is_some_and(|(line, _)| marker_text(line));
        let teasers = between.len() + usize::from(line_marker);
        (1..=PROMOTION_BLOCKS_MAX).contains(&teasers) && (line_marker || is_tail_marker(b))
    };
    let drop: Vec<bool> = keep.windows(2).map(promotion).collect();
    let mut flags = drop.into_iter();
    keep.retain(|_| !flags.next().unwrap_or(false));
}

/// A short block that announces related content rather than more of the article.
fn is_tail_marker(b: &Block) -> bool {
    b.link_len * 2 <= b.text_len && marker_text(&b.md)
}

/// A short text that announces related content (see `is_tail_marker`).
fn marker_text(md: &str) -> bool {
    if md.split_whitespace().nth(6).is_some() {
        return false;
    }
    let lower = md.to_lowercase();
    const MARKERS: &[&str] = &[
        "more great",
        "more stories",
        "more from",
        "you may also like",
        "you might also like",
        "you may like",
        "related stories",
        "related articles",
        "related posts",
        "similar threads",
        "related threads",
        "related questions",
        "read next",
        "recommended",
        "most popular",
        "trending",
        "don't miss",
        "don’t miss",
        "also read",
        "more news",
        "latest news",
        "top stories",
        "você pode gostar",
        "leia também",
        "veja também",
        "lee también",
        "más noticias",
        "самые популярные",
        "читайте также",
        "похожие",
        "отзывы",
        "добавить отзыв",
        "관련 기사",
        "関連記事",
        "こちらもおすすめ",
    ];
    MARKERS.iter().any(|m| lower.contains(m))
}

/// Sibling containers of one template (tag and class) that make a listing's cards.
pub(super) const CARDS_MIN: u32 = 4;

/// Characters of a card's linked title that make it an item rather than a link list's entry.
pub(super) const CARD_TITLE_MIN: u32 = 15;

/// The containers that are cards of a listing: at least `CARDS_MIN` siblings built from one template, outside
/// boilerplate, each holding some text. Linear: one count per (parent, template).
fn cards(page: &Page) -> Vec<bool> {
    // Marked on each block's innermost container, then up the tree (children come after their parents): a card's
    // text may lie deeper than a block's path reaches.
    let mut holds_text = vec![false; page.nodes.len()];
    for b in &page.blocks {
        if let Some(h) = b.path.first().and_then(|&x| holds_text.get_mut(x as usize)) {
            *h = true;
        }
    }
    for (i, node) in page.nodes.iter().enumerate().rev() {
        let p = node.parent as usize;
        if p < i && holds_text.get(i).copied().unwrap_or(false) {
            if let Some(h) = holds_text.get_mut(p) {
                *h = true;
            }
        }
    }
    let mut counts: std::collections::HashMap<(u32, u64), u32> = std::collections::HashMap::new();
    for (i, node) in page.nodes.iter().enumerate() {
        if node.card_key != 0 && !node.boiler && holds_text.get(i).copied().unwrap_or(false) {
            *counts.entry((node.parent, node.card_key)).or_insert(0) += 1;
        }
    }
    page.nodes
        .iter()
        .enumerate()
        .map(|(i, node)| {
            node.card_key != 0
                && !node.boiler
                && holds_text.get(i).copied().unwrap_or(false)
                && counts.get(&(node.parent, node.card_key)).is_some_and(|&c| c >= CARDS_MIN)
        })
        .collect()
}

/// How many containers below a card its contents may lie and still be the card's own: a shop's grid nests the
/// item's linked title a dozen wrappers deep, under its cell, its badge and its faceout.
const CARD_DEPTH_MAX: u32 = 16;

/// The containers that are a card or lie inside one, at most `CARD_DEPTH_MAX` containers below it. One pass over
/// the nodes, which come parents first.
fn within_cards(page: &Page, card: &[bool]) -> Vec<bool> {
    // Containers below the nearest card, for each node; `u32::MAX` outside every card.
    let mut below = vec![u32::MAX; page.nodes.len()];
    for (i, node) in page.nodes.iter().enumerate() {
        let here = if card.get(i).copied().unwrap_or(false) {
            0
        } else {
            let p = node.parent as usize;
            match below.get(p) {
                Some(&d) if p < i && d < CARD_DEPTH_MAX => d + 1,
                _ => u32::MAX,
            }
        };
        if let Some(b) = below.get_mut(i) {
            *b = here;
        }
    }
    below.into_iter().map(|d| d != u32::MAX).collect()
}

/// The share of the page's body text a group of cards holds at least to be the listing.
const GRID_SHARE_MIN: f64 = 0.25;

/// The container just before the region, or just before the nearest of its `INTRO_LEVELS_MAX` ancestors that has
/// one, that introduces it on a page of many items or sections: a shop category's text beside its product grid, in a
/// sibling container the coverage climb stopped short of. Siblings that are the frame's or hold no body text (a
/// table of contents in an aside between) are passed over. Clean (not the frame), prose (a paragraph of
/// `INTRO_TEXT_MIN` characters or more) and short (`INTRO_TEXT_MAX` characters at most, under
/// `INTRO_LINK_SHARE_MAX` of link text, less than the region's body text), or the page's header holding its `h1`
/// (under `INTRO_HEADER_SHARE_MAX` of the region's text and `INTRO_HEADER_LINK_SHARE_MAX` of links). One pass over
/// the nodes and one over the blocks.
fn introduction(page: &Page, best: usize, body: &[u64]) -> Option<usize> {
    // The region and its ancestors, nearest first; nodes come in document order, parents first.
    let mut chain = [NO_NODE; INTRO_LEVELS_MAX + 1];
    let mut at = best as u32;
    for slot in chain.iter_mut() {
        let Some(node) = page.nodes.get(at as usize).filter(|n| n.parent != NO_NODE) else { break };
        *slot = at;
        at = node.parent;
    }
    let parents = chain.map(|c| page.nodes.get(c as usize).map_or(NO_NODE, |n| n.parent));
    // The last sibling before each of them that is not a part of the frame (a doc page's table of contents in
    // an aside between its introduction and its body).
    let mut before = [None; INTRO_LEVELS_MAX + 1];
    for (i, node) in page.nodes.iter().enumerate().take(best) {
        if node.boiler && !node.content || body.get(i).is_none_or(|&t| t == 0) {
            continue;
        }
        for ((b, &c), &parent) in before.iter_mut().zip(&chain).zip(&parents) {
            if c != NO_NODE && i < c as usize && node.parent == parent {
                *b = Some(i);
            }
        }
    }
    let own = body.get(best).copied().unwrap_or(0);
    let (level, i) = before.into_iter().enumerate().find_map(|(level, b)| b.map(|i| (level, i)))?;
    if page.nodes.get(i).is_none_or(|n| n.boiler && !n.content) {
        return None;
    }
    // Its blocks are those of the nodes from it to the ancestor it comes before: prose, a paragraph at least, and
    // few links (not a filter's or a menu's list).
    let end = chain.get(level).map_or(i, |&c| c as usize);
    let (mut text, mut links, mut prose, mut titled) = (0u64, 0u64, false, false);
    for b in page
        .blocks
        .iter()
        .filter(|b| (!b.boiler || b.content) && b.path.first().is_some_and(|&n| (i..end).contains(&(n as usize))))
    {
        text += u64::from(b.text_len);
        links += u64::from(b.link_len);
        prose |= matches!(b.kind, Kind::Para) && u64::from(b.text_len) >= INTRO_TEXT_MIN;
        titled |= matches!(b.kind, Kind::Heading(1));
    }
    let short = text <= INTRO_TEXT_MAX && (links as f64) < INTRO_LINK_SHARE_MAX * text as f64;
    // The page's header holding its `h1` (a doc page's title, its summary and prerequisites, in a container of
    // their own before the body's) may be longer and cite more links.
    let header = titled
        && (text as f64) < INTRO_HEADER_SHARE_MAX * own as f64
        && (links as f64) < INTRO_HEADER_LINK_SHARE_MAX * text as f64;
    (prose && (short || header) && text < own).then_some(i)
}

/// The parent of the group of cards (siblings of one template) holding the most body text, and that text; not a
/// group inside boilerplate.
fn largest_card_group(page: &Page, card: &[bool], body: &[u64]) -> Option<(usize, u64)> {
    heaviest_group(
        page,
        |i| card.get(i).copied().unwrap_or(false).then(|| body.get(i).copied().unwrap_or(0)),
        |parent, _| page.nodes.get(parent).is_some_and(|p| !p.boiler || p.content),
    )
}

/// The parent of the heaviest group of sibling containers of one template (`Node::card_key`), and its weight: the
/// members are the containers `weight` gives a weight, a group's weight is the sum of its members', and only the
/// groups `accept` takes (given their parent and how many members they have) compete; ties go to the earlier
/// parent. Linear: one sum per (parent, template).
pub(super) fn heaviest_group(
    page: &Page,
    weight: impl Fn(usize) -> Option<u64>,
    accept: impl Fn(usize, u32) -> bool,
) -> Option<(usize, u64)> {
    let mut groups: std::collections::HashMap<(u32, u64), (u32, u64)> = std::collections::HashMap::new();
    for (i, node) in page.nodes.iter().enumerate() {
        if node.card_key == 0 || node.parent == NO_NODE {
            continue;
        }
        if let Some(w) = weight(i) {
            let g = groups.entry((node.parent, node.card_key)).or_insert((0, 0));
            *g = (g.0 + 1, g.1 + w);
        }
    }
    groups
        .into_iter()
        .filter(|&((parent, _), (count, _))| accept(parent as usize, count))
        .max_by_key(|&((parent, key), (_, w))| (w, std::cmp::Reverse((parent, key))))
        .map(|((parent, _), (_, w))| (parent as usize, w))
}

/// Blocks of this many characters or more are said once.
const REPEAT_TEXT_MIN: u32 = 20;

/// What a page's scripts were meant to replace or use, left in the HTML: unfilled template placeholders
/// (`{{price.total}}`), and a bare URL alone in a block (an image list, a data attribute printed as text).
fn is_residue(b: &Block) -> bool {
    let t = b.md.trim();
    if t.contains("{{") && t.contains("}}") {
        // The text outside the placeholders is what is left to say.
        let mut outside = 0usize;
        let mut depth = 0u32;
        let mut rest = t;
        while !rest.is_empty() {
            if let Some(r) = rest.strip_prefix("{{") {
                depth += 1;
                rest = r;
            } else if let Some(r) = rest.strip_prefix("}}") {
                depth = depth.saturating_sub(1);
                rest = r;
            } else {
                let mut chars = rest.chars();
                if chars.next().is_some_and(char::is_alphanumeric) && depth == 0 {
                    outside += 1;
                }
                rest = chars.as_str();
            }
        }
        if outside * 2 < b.text_len as usize {
            return true;
        }
    }
    !t.contains(char::is_whitespace) && (t.starts_with("http://") || t.starts_with("https://"))
}

/// Words of a `<noscript>` block that can still be a notice about scripts (longer ones are text served there).
const NOSCRIPT_NOTICE_WORDS_MAX: usize = 30;

/// Short blocks that are page furniture: ad labels, share and follow prompts, bare dates.
fn is_chrome(b: &Block) -> bool {
    let words = b.md.split_whitespace().count();
    if words > NOSCRIPT_NOTICE_WORDS_MAX || (words > 8 && !b.noscript) {
        return false;
    }
    let lower = b.md.to_lowercase();
    // What a page says inside `<noscript>` about its scripts (`<noscript>` is read: some sites serve their whole
    // text there, so only its short notices go).
    if b.noscript
        && lower.contains("javascript")
        && ["enable", "disabled", "requires", "required", "turn on", "switch on", "activate"]
            .iter()
            .any(|w| lower.contains(w))
    {
        return true;
    }
    if words > 8 {
        return false;
    }
    let lower = lower.trim_matches(|c: char| !c.is_alphanumeric());
    const PHRASES: &[&str] = &[
        "advertisement",
        "advertising",
        "sponsored",
        "share this",
        "share on",
        "share it",
        "follow us",
        "follow ",
        "sign up",
        "subscribe",
        "read more",
        "related",
        "trending",
        "topics",
        "more from",
        "recommended",
        "most popular",
        "newsletter",
        "like this story",
        "click here",
        "comments",
        "leave a comment",
        "print",
        "email",
        "tweet",
        "copy link",
        "back to top",
        "skip to",
        "see also",
        "you may also like",
        "image source",
        "getty images",
        "photo:",
        "credit:",
    ];
    if PHRASES.iter().any(|p| lower.starts_with(p) || lower == p.trim()) {
        return true;
    }
    // A bare date or time line.
    let digits = b.md.chars().filter(char::is_ascii_digit).count();
    words <= 5 && digits * 2 >= b.text_len as usize
}
