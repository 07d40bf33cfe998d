//! Listings and collections: the items themselves (title, link, the item's own short text), not the controls
//! around them. A shop's category page sets its filters ("facets": brands, sizes, price ranges, each with a count)
//! beside its grid of products, inside the same region; they are lists of short entries that score like items.

use super::builder::{Block, Kind, Page, NO_NODE};

/// Words of a class or id naming a listing's filters (`facets`, `filter-panel`, `sidebarFacetFilters`,
/// `refinements`): matched inside tokens, case-insensitively.
const FACET_WORDS: &[&[u8]] = &[b"facet", b"filter", b"refinement"];

/// A token that holds a filter word but names what is filtered (`filterable-products`), not the filters.
const FILTERED_WORDS: &[&[u8]] = &[b"filterable", b"filtered"];

/// Whether a class or id token names a listing's filters (asked through `builder::Words`'s memory).
pub fn facet_token(t: &str) -> bool {
    let has = |words: &[&[u8]]| words.iter().any(|w| super::builder::contains_ignore_ascii_case(t.as_bytes(), w));
    has(FACET_WORDS) && !has(FILTERED_WORDS)
}

/// A paragraph this long with few links is prose, which no filter panel holds (an FAQ's answer in an accordion
/// styled by the same classes).
const PROSE_MIN: u32 = 150;

/// The share of the chosen region's text a container named for filters holds at most to be the filters; more, and
/// it is a wrapper that holds the products too (`filtering-and-pagination-container`).
const FACETS_SHARE_MAX: f64 = 0.5;

/// Per container: whether it sits inside a listing's filters, that is inside a container named for them that
/// holds neither the chosen region's root (`root`), nor the page's largest group of sibling containers of one
/// template (its products; a panel's options repeat too, but hold less text), nor prose, nor half the region's
/// text. `text`: each container's text with its whole subtree's (as `select::choose` sums it).
/// Linear: one pass over the blocks, one up the tree, one down.
pub fn in_facets(page: &Page, root: usize, text: &[u64]) -> Vec<bool> {
    let n = page.nodes.len();
    let mut holds = vec![false; n];
    for b in &page.blocks {
        let Some(h) = b.path.first().and_then(|&x| holds.get_mut(x as usize)) else { continue };
        if matches!(b.kind, Kind::Para) && b.text_len >= PROSE_MIN && b.link_len * 4 < b.text_len {
            *h = true;
        }
    }
    for x in page.ancestors(root).chain(largest_group(page, text).into_iter().flat_map(|g| page.ancestors(g))) {
        if let Some(h) = holds.get_mut(x) {
            *h = true;
        }
    }
    for i in (0..n).rev() {
        let here = holds.get(i).copied().unwrap_or(false);
        let parent = page.nodes.get(i).map_or(NO_NODE, |node| node.parent) as usize;
        if let Some(h) = holds.get_mut(parent).filter(|_| here && parent < i) {
            *h = true;
        }
        if let Some(h) = holds.get_mut(i) {
            *h = here;
        }
    }
    let region = text.get(root).copied().unwrap_or(0) as f64;
    let mut inside = vec![false; n];
    for i in 0..n {
        let Some(node) = page.nodes.get(i) else { break };
        let parent = node.parent as usize;
        let from_parent = parent < i && inside.get(parent).copied().unwrap_or(false);
        let own = node.facets
            && !holds.get(i).copied().unwrap_or(false)
            && (text.get(i).copied().unwrap_or(0) as f64) < FACETS_SHARE_MAX * region;
        if let Some(x) = inside.get_mut(i) {
            *x = from_parent || own;
        }
    }
    inside
}

/// The parent of the largest group of sibling containers built from one template (by their text), boilerplate or
/// not: a listing's products, which a panel of filters beside them, however named, does not hold.
fn largest_group(page: &Page, text: &[u64]) -> Option<usize> {
    let weight = |i: usize| text.get(i).copied().filter(|&t| t > 0);
    super::select::heaviest_group(page, weight, |_, count| count >= super::select::CARDS_MIN).map(|(parent, _)| parent)
}

/// Prefixes of class tokens that file an item under a taxonomy (WordPress and WooCommerce print one token per
/// category, tag, format and status of a post or product: `category-dinner`, `product_cat-shoes`, `tag-summer`).
const TAXONOMY_PREFIXES: &[&str] =
    &["category-", "tag-", "format-", "status-", "type-", "product_cat-", "product_tag-", "pa_", "post_tag-"];

/// A class token that says how an item is filed or labelled, not which template built it: a taxonomy's token, or
/// one or two characters (an index's letter, `vert_cats A`). The cards of one listing differ by it.
pub fn taxonomy_token(t: &str) -> bool {
    t.chars().count() <= 2 || TAXONOMY_PREFIXES.iter().any(|p| t.len() > p.len() && t.starts_with(p))
}

/// Characters of body text (paragraphs, list entries, table rows and cards' text, as `select::choose` counts it)
/// under which a page holds none of its own: a shell a script fills (an app, an empty search or listing).
const SHELL_BODY_MAX: u64 = 30;

/// Characters of visible text kept under which what a shell keeps is its furniture (a menu's headings, a
/// "no results" line, a cookie notice's title), not content.
const SHELL_KEPT_MAX: u64 = 300;

/// Whether the blocks kept (`keep`) are a shell's furniture: the page holds under `SHELL_BODY_MAX` characters of
/// body text (`body_text`) and they hold under `SHELL_KEPT_MAX`. Its extract is empty, as a page without main
/// content is, not a few headings and labels.
pub fn shell_furniture(page: &Page, body_text: u64, keep: &[usize]) -> bool {
    body_text < SHELL_BODY_MAX
        && keep.iter().filter_map(|&i| page.blocks.get(i)).map(|b| u64::from(b.text_len)).sum::<u64>() < SHELL_KEPT_MAX
}

/// Entries of one list, at least, that make it the page's items when it sits in the content region: an index of
/// linked names (a wiki's list of languages, a catalogue's categories) is what the page lists, where a menu or a
/// "see also" list is a few links.
const LONG_LIST_MIN: u32 = 10;

/// Per container: whether it is a list of at least `LONG_LIST_MIN` entries (list items directly inside it, or in
/// items without a class of their own). Linear: one count per container.
pub fn long_lists(page: &Page) -> Vec<bool> {
    let mut count = vec![0u32; page.nodes.len()];
    for b in &page.blocks {
        if let (Kind::Item { .. }, Some(c)) = (b.kind, b.path.first().and_then(|&x| count.get_mut(x as usize))) {
            *c += 1;
        }
    }
    count.into_iter().map(|c| c >= LONG_LIST_MIN).collect()
}

/// Whether a block is an entry of a long list in the content region (see `long_lists`).
pub fn in_long_list(b: &Block, long: &[bool]) -> bool {
    matches!(b.kind, Kind::Item { .. }) && b.content && !b.boiler && block_in(b, long)
}

/// Links a paragraph holds at least to be a row of links rather than an item's linked title.
const LINK_ROW_MIN: u32 = 2;

/// The share of a row of links' text its links hold at least, in tenths (the rest is separators).
const LINK_ROW_SHARE_MIN: u32 = 9;

/// Whether a paragraph is a row of links: at least `LINK_ROW_MIN` of them and nothing else (a product's variants,
/// a repository's topics, a post's categories). In a card that has a title of its own, the row is not the item.
pub fn link_row(b: &Block) -> bool {
    b.kind == Kind::Para && b.link_len * 10 >= b.text_len * LINK_ROW_SHARE_MIN && b.links >= LINK_ROW_MIN
}

/// Per container: whether the card it is or lies in (`card`: the cards of a listing, nearest first) holds a linked
/// title, a heading or paragraph of `CARD_TITLE_MIN` characters or more with a link that is not a row of links
/// (`link_row`): an item leading to its own page. A card that is nothing but a row of links (an index's letter and
/// its entries) is its row, and one titled without a link (a menu's column, a feature's heading) is a list of
/// links. Linear: one pass over the nodes, which come parents first, and one over the blocks.
pub fn titled_cards(page: &Page, card: &[bool]) -> Vec<bool> {
    let n = page.nodes.len();
    let mut nearest = vec![NO_NODE; n];
    for (i, node) in page.nodes.iter().enumerate() {
        let p = node.parent as usize;
        let here = if card.get(i).copied().unwrap_or(false) {
            i as u32
        } else if p < i {
            nearest.get(p).copied().unwrap_or(NO_NODE)
        } else {
            NO_NODE
        };
        if let Some(x) = nearest.get_mut(i) {
            *x = here;
        }
    }
    let mut titled = vec![false; n];
    for b in page.blocks.iter().filter(|b| {
        matches!(b.kind, Kind::Para | Kind::Heading(_))
            && b.text_len >= super::select::CARD_TITLE_MIN
            && b.link_len > 0
            && !link_row(b)
    }) {
        let c = b.path.first().and_then(|&x| nearest.get(x as usize)).copied().unwrap_or(NO_NODE);
        if let Some(t) = titled.get_mut(c as usize) {
            *t = true;
        }
    }
    (0..n).map(|i| nearest.get(i).and_then(|&c| titled.get(c as usize)).copied().unwrap_or(false)).collect()
}

/// Whether a block lies in a container a per-container answer (`in_facets`, `long_lists`, `titled_cards`) says yes
/// of.
pub fn block_in(b: &Block, per_node: &[bool]) -> bool {
    b.path.first().is_some_and(|&x| per_node.get(x as usize).copied().unwrap_or(false))
}

/// Characters of visible text above which a block is never one of a listing's controls.
const CONTROL_TEXT_MAX: u32 = 40;

/// What a listing's controls and its cards' buttons and badges say, alone in a block, as `visible_words` leaves
/// it without its spaces (lowercase letters and digits): the sort bar, the filter toggle, a card's calls to action,
/// merchandising badges, awards and delivery promises, a price's unit label ("/ per"), a cart drawer's headings,
/// and a widget's own labels (a placeholder's "Loading", a dialog's "Close", a share button). Never an item, and no
/// reference keeps them.
const CONTROL_LINES: &[&str] = &[
    "sortby",
    "sort",
    "sortandfilter",
    "filters",
    "resultslist",
    "compare",
    "addtocompare",
    "quickview",
    "viewdetails",
    "shopnow",
    "addtocart",
    "addtobag",
    "toprated",
    "bestseller",
    "newarrival",
    "backorder",
    "preordernow",
    "instock",
    "outofstock",
    "onsale",
    "limitededition",
    "hotseller",
    "awardwinner",
    "reviewerschoice",
    "moreoptions",
    "per",
    "calculateshipping",
    "yourcart",
    "yourcartisempty",
    "haveanaccount",
    "selectsize",
    "freeshipping",
    "freereturns",
    "sponsored",
    "recentlyviewed",
    "loading",
    "close",
    "share",
];

/// Words a count of a listing's items or pages is made of, besides its numbers ("Showing 70 results", "1-24 items of
/// 33", "Page 1/20"), and those of them one of which it names.
const COUNT_WORDS: &[&str] = &["showing", "loaded", "of", "results", "result", "products", "items", "page", "pageof"];
const COUNT_NOUNS: &[&str] = &["results", "result", "products", "items", "page", "pageof"];

/// Words of a count of items, at most.
const COUNT_WORDS_MAX: usize = 6;

/// A block's markdown as its visible words: letters and digits lowercased, every other character a space, link
/// targets (`](...)`) passed over.
fn visible_words(md: &str) -> impl Iterator<Item = char> + '_ {
    let mut target = false;
    let mut prev = ' ';
    md.chars().filter_map(move |c| {
        let was = std::mem::replace(&mut prev, c);
        if target {
            target = c != ')';
            return None;
        }
        target = c == '(' && was == ']';
        Some(if c.is_alphanumeric() { c.to_ascii_lowercase() } else { ' ' })
    })
}

/// Whether a short paragraph, heading or list entry is one of a listing's controls (`CONTROL_LINES`) or its count
/// of items or pages: furniture around and on the cards, not the items.
pub fn is_control(b: &Block) -> bool {
    if b.text_len > CONTROL_TEXT_MAX || !matches!(b.kind, Kind::Para | Kind::Heading(_) | Kind::Item { .. }) {
        return false;
    }
    // Once per block, then compared with each label and read as words.
    let words: String = visible_words(&b.md).collect();
    let letters: String = words.chars().filter(|&c| c != ' ').collect();
    if CONTROL_LINES.contains(&letters.as_str()) {
        return true;
    }
    let (mut count, mut number, mut noun) = (0, false, false);
    for w in words.split_whitespace() {
        count += 1;
        if w.bytes().all(|c| c.is_ascii_digit()) {
            number = true;
        } else if COUNT_WORDS.contains(&w) {
            noun |= COUNT_NOUNS.contains(&w);
        } else {
            return false;
        }
    }
    count <= COUNT_WORDS_MAX && number && noun
}

#[cfg(test)]
mod tests {
    use crate::{Extractor, Options};

    fn md(html: &str) -> String {
        Extractor::run(html.as_bytes(), Options::default()).markdown()
    }

    /// A shop's category page: an introduction, a panel of filters and a grid of products, all in one region.
    fn shop(filters_class: &str, grid_class: &str) -> String {
        let mut html = String::from(
            "<html><head><title>Walking Shoes</title></head><body><main>\
             <p>Our walking shoes, chosen for comfort on long days, in every size, width and colour we make.</p>",
        );
        html.push_str(&format!("<div class=\"{filters_class}\"><h3>Brand</h3><ul>"));
        for b in ["Acme Shoes (12)", "Bolt Footwear (8)", "Comet Runners (5)", "Dash Walkers (3)"] {
            html.push_str(&format!("<li class=\"option\">{b}</li>"));
        }
        html.push_str(&format!("</ul></div><div class=\"{grid_class}\">"));
        for (i, name) in ["Trail Walker Classic", "City Stroller Deluxe", "Forest Path Pro", "Harbour Loafer Lite"]
            .iter()
            .enumerate()
        {
            html.push_str(&format!(
                "<div class=\"product-card product-{i}\"><h3><a href=\"/p/{i}\">{name} walking shoe</a></h3>\
                 <p>Light and soft, for long walks.</p><p>$9{i}.00</p></div>"
            ));
        }
        html.push_str("</div></main></body></html>");
        html
    }

    #[test]
    fn a_listings_filters_are_left_out_not_its_products() {
        let out = md(&shop("search-facets", "product-grid"));
        assert!(out.contains("Forest Path Pro walking shoe") && out.contains("$92.00"), "{out}");
        assert!(out.contains("Our walking shoes"), "{out}");
        assert!(!out.contains("Bolt Footwear"), "{out}");
        // A wrapper named for its filters that holds the products too is not the filters.
        let out = md(&shop("filter-panel", "filtering-and-products"));
        assert!(out.contains("Forest Path Pro walking shoe") && !out.contains("Bolt Footwear"), "{out}");
    }

    #[test]
    fn a_listings_controls_and_card_badges_are_left_out() {
        let mut html = String::from(
            "<html><body><main><h1>Walking Shoes</h1><p>Showing <b>4</b> results</p><p>Sort by:</p>\
             <div class=\"grid\">",
        );
        for (i, name) in ["Trail Walker Classic", "City Stroller Deluxe", "Forest Path Pro", "Harbour Loafer Lite"]
            .iter()
            .enumerate()
        {
            html.push_str(&format!(
                "<div class=\"card\"><p>Top Rated</p><h3><a href=\"/p/{i}\">{name} walking shoe</a></h3>\
                 <p>$9{i}.00</p><p>/ per</p><p>In stock</p><p>Award Winner</p><p>More options</p>\
                 <p><a href=\"/p/{i}#cart\">Add to cart</a></p><p>Compare</p></div>"
            ));
        }
        html.push_str("</div><p>Page 1 of 3</p><p>Loading...</p><h2>Recently viewed</h2></main></body></html>");
        let out = md(&html);
        assert!(out.contains("Forest Path Pro walking shoe") && out.contains("$92.00"), "{out}");
        for furniture in [
            "Showing",
            "Sort by",
            "Top Rated",
            "In stock",
            "Award",
            "More options",
            "/ per",
            "Add to cart",
            "Compare",
            "Page 1",
            "Loading",
            "Recently",
        ] {
            assert!(!out.contains(furniture), "{furniture} kept in:\n{out}");
        }
    }

    #[test]
    fn a_cards_row_of_variant_links_is_left_out_unless_it_is_the_card() {
        let names = ["Trail Walker Classic", "City Stroller Deluxe", "Forest Path Pro", "Harbour Loafer Lite"];
        let mut html = String::from("<html><body><main><h1>Walking Shoes</h1><div class=\"grid\">");
        for (i, name) in names.iter().enumerate() {
            html.push_str(&format!(
                "<div class=\"card\"><h3><a href=\"/p/{i}\">{name} walking shoe</a></h3><p>$9{i}.00</p>\
                 <p><a href=\"/p/{i}?c=red\">Option: {name}, red</a> <a href=\"/p/{i}?c=blue\">Option: {name}, \
                 blue</a></p></div>"
            ));
        }
        html.push_str("</div></main></body></html>");
        let out = md(&html);
        assert!(out.contains("Forest Path Pro walking shoe") && out.contains("$92.00"), "{out}");
        assert!(!out.contains("Option:"), "{out}");
        // An index's cards, a letter and a row of entries each, are their rows.
        let mut html = String::from("<html><body><main><h1>Fasteners</h1>");
        for letter in ["A", "B", "C", "D"] {
            html.push_str(&format!(
                "<div class=\"cats {letter}\"><h2>{letter}</h2><p><a href=\"/{letter}1\">{letter}nchors and \
                 {letter}dapters</a> <a href=\"/{letter}2\">{letter}ligners</a> <a href=\"/{letter}3\">\
                 {letter}ttachments</a></p></div>"
            ));
        }
        html.push_str("</main></body></html>");
        let out = md(&html);
        assert!(out.contains("Cligners") && out.contains("Anchors"), "{out}");
    }

    #[test]
    fn a_filter_named_accordion_of_prose_is_kept() {
        let answer = "A walking shoe needs a soft heel, a flexible sole and room for the toes, and it should be \
                      light enough to wear all day without thinking about it, which is what we look for first.";
        let html = format!(
            "<html><body><main><div class=\"product-grid\">{}</div>\
             <div class=\"faq filters-accordion\"><h3>What makes a good walking shoe?</h3><p>{answer}</p></div>\
             </main></body></html>",
            (0..4)
                .map(|i| format!(
                    "<div class=\"card\"><h3><a href=\"/p/{i}\">Walking shoe number {i}</a></h3><p>$90</p></div>"
                ))
                .collect::<String>()
        );
        let out = md(&html);
        assert!(out.contains("a soft heel"), "{out}");
    }

    #[test]
    fn cards_filed_under_different_categories_are_one_template() {
        let titles = [
            "Banza Chicken Bowls with Chili Sauce",
            "Ridiculously Good Air Fryer Salmon",
            "Crispy Air Fryer Tofu with Peanut Sauce",
            "Perfect Air Fryer Sweet Potato Fries",
        ];
        // WordPress's post classes name each post's categories; an index's cards are told apart by a letter.
        let taxonomies = [
            "post type-post category-dinner category-quick",
            "post type-post category-fish",
            "post type-post category-lunch tag-summer",
            "post type-post category-snacks format-video",
        ];
        for classes in [taxonomies, ["group A", "group B", "group C", "group D"]] {
            let mut html = String::from(
                "<html><body><div class=\"page\"><p>Quick dinners from the air fryer, tested in our kitchen, \
                 with notes on timing, temperature and what to serve with them.</p><div class=\"grid\">",
            );
            for (i, (class, title)) in classes.iter().zip(titles).enumerate() {
                html.push_str(&format!(
                    "<article class=\"{class} post-{i}\"><h3><a href=\"/r/{i}\">{title}</a></h3></article>"
                ));
            }
            html.push_str("</div></div></body></html>");
            let out = md(&html);
            for title in titles {
                assert!(out.contains(title), "{title} missing from:\n{out}");
            }
        }
    }

    #[test]
    fn a_cms_archive_is_a_listing_whatever_open_graph_says() {
        let titles = [
            "Crispy Air Fryer Salmon Bowls",
            "Honey Chipotle Chicken Skewers",
            "Crispy Gochujang Chicken Thighs",
            "Smashed Potato Salad with Herbs",
        ];
        let cards: String = titles
            .iter()
            .enumerate()
            .map(|(i, t)| {
                format!(
                    "<article class=\"card post-{i}\"><a href=\"/r/{i}\"><div>{i}0 reviews / 5 average</div>\
                     <h3>{t}</h3></a></article>"
                )
            })
            .collect();
        let page = |body_class: &str| {
            format!(
                "<html><head><meta property=\"og:type\" content=\"article\"></head><body class=\"{body_class}\">\
                 <main><div class=\"intro\"><h1>Air Fryer Recipes</h1><p>I love a meal with crispiness and crunch, \
                 and these air fryer recipes deliver, from perfectly cooked proteins to the crispiest vegetables, \
                 every night of the week.</p></div><div class=\"grid\">{cards}</div></main></body></html>"
            )
        };
        let out = md(&page("archive category category-air-fryer"));
        for t in titles {
            assert!(out.contains(t), "{t} missing from:\n{out}");
        }
        assert!(out.contains("crispiness and crunch"), "{out}");
        // Without the archive's class the page is the article Open Graph says it is: its cards are teasers.
        let out = md(&page("single single-post"));
        assert!(!out.contains(titles[0]), "{out}");
    }

    #[test]
    fn a_shells_furniture_is_an_empty_extract() {
        let shell = |body: &str| {
            format!(
                "<html><head><title>Used boats for sale</title></head><body><div id=\"app\"><h2>Used boats</h2>\
                 <div class=\"toolbar\"><span>Sort by</span> <span>Newest</span></div><h3>Results</h3>{body}</div>\
                 <script>window.__STATE__ = {{}};</script></body></html>"
            )
        };
        assert_eq!(md(&shell("<div>Loading…</div>")), "");
        // A short page with a sentence of its own is not a shell.
        let out = md(&shell("<p>Two dinghies and a keelboat, all surveyed this spring, moored in Poole.</p>"));
        assert!(out.contains("all surveyed this spring"), "{out}");
    }

    #[test]
    fn a_long_list_of_links_in_the_content_is_the_pages_items() {
        let names = ["ABAP", "Ada", "Agda", "APL", "AWK", "BASIC", "Bash", "BCPL", "C", "COBOL", "Clojure", "Curl"];
        let entries: String =
            names.iter().map(|n| format!("<li><a href=\"https://example.org/wiki/{n}\">{n}</a></li>")).collect();
        let short: String = names
            .iter()
            .take(4)
            .map(|n| format!("<li><a href=\"https://example.org/see/{n}\">See {n}</a></li>"))
            .collect();
        let html = format!(
            "<html><head><meta property=\"og:type\" content=\"article\"></head><body>\
             <nav><ul><li><a href=\"/\">Home</a></li></ul></nav><main>\
             <p>This is an index to notable programming languages, in current or historical use, with their own pages.</p>\
             <ul>{entries}</ul><h2>See also</h2><ul>{short}</ul></main></body></html>"
        );
        let out = md(&html);
        for n in names {
            assert!(out.contains(&format!("[{n}]")), "{n} missing from:\n{out}");
        }
        // A short list of links is still a link list (on an article: elsewhere the top-level items of any list in
        // the content are kept, `select::content_link_item`).
        assert!(!out.contains("See ABAP"), "{out}");
    }
}
