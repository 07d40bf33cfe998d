use super::*;

/// The extract of `html`, the same whole and fed in chunks of 1, 2, 3, 7 and 64 bytes.
#[track_caller]
fn run(html: &[u8]) -> Extract {
    let whole = Extractor::run(html, Options::default());
    for size in [1, 2, 3, 7, 64] {
        let mut e = Extractor::new(Options::default());
        for chunk in html.chunks(size) {
            e.feed(chunk);
        }
        assert_eq!(e.finish(), whole, "chunk size {size}");
    }
    whole
}

#[track_caller]
fn md(html: &str) -> String {
    run(html.as_bytes()).markdown()
}

/// Extracts a fixture and checks that each of `parts` is in its markdown and none of `junk` is.
#[track_caller]
fn check_fixture(name: &str, parts: &[&str], junk: &[&str]) {
    let md = run(&fixture(name)).markdown();
    for part in parts {
        assert!(md.contains(part), "{part:?} missing from:\n{md}");
    }
    for junk in junk {
        assert!(!md.contains(junk), "{junk:?} leaked into:\n{md}");
    }
}

/// A fixture of `fixtures/extract/` (regressions found on real pages, issue 14).
fn fixture(name: &str) -> Vec<u8> {
    let path = format!("{}/../../fixtures/extract/{name}", env!("CARGO_MANIFEST_DIR"));
    std::fs::read(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
}

#[test]
fn a_simple_article() {
    let html = r#"<html><head><title>A Story About Things - Example News</title></head><body>
<nav><ul><li><a href="/">Home</a></li><li><a href="/world">World</a></li></ul></nav>
<article><h1>A Story About Things</h1>
<p>The first paragraph, with enough words to count, and a comma or two, to be a real paragraph.</p>
<p>A second paragraph with <a href="https://example.org/x">a link</a> and <strong>bold</strong> text, also long enough.</p>
<ul><li>first point</li><li>second point</li></ul>
<pre>let x = 1;
let y = 2;</pre>
</article>
<footer><p>Copyright 2026 Example News, all rights reserved, every single one of them.</p></footer>
</body></html>"#;
    let out = md(html);
    assert!(out.starts_with("# A Story About Things\n\nThe first paragraph"), "{out}");
    assert!(out.contains("[a link](https://example.org/x)"), "{out}");
    assert!(out.contains("**bold**"), "{out}");
    assert!(out.contains("- first point\n- second point"), "{out}");
    assert!(out.contains("```\nlet x = 1;\nlet y = 2;\n```"), "{out}");
    assert!(!out.contains("Home") && !out.contains("Copyright"), "{out}");
}

/// Runs a large input whole and at a few chunk sizes (1 byte at a time is too slow for a megabyte in a debug build).
fn run_large(html: &[u8]) -> Extract {
    let whole = Extractor::run(html, Options::default());
    for size in [7, 4_096, 70_000] {
        let mut e = Extractor::new(Options::default());
        for chunk in html.chunks(size) {
            e.feed(chunk);
        }
        assert_eq!(e.finish(), whole, "chunk size {size}");
    }
    whole
}

#[test]
fn blocks_are_capped() {
    let at = run_large(&b"<p>a".repeat(BLOCKS_MAX));
    assert_eq!((at.blocks.len(), at.truncated), (BLOCKS_MAX, false));
    let over = run_large(&b"<p>a".repeat(BLOCKS_MAX + 1));
    assert_eq!((over.blocks.len(), over.truncated), (BLOCKS_MAX, true));
    assert_eq!(over.blocks, at.blocks);
}

#[test]
fn containers_are_capped() {
    let text = "<p>A paragraph long enough to score its container, with a comma, and more.</p>";
    let page = |divs: usize| format!("{}<div>{text}</div>", "<div></div>".repeat(divs));
    let at = run_large(page(NODES_MAX - 1).as_bytes());
    assert!(!at.truncated && at.markdown().starts_with("A paragraph long enough"), "{at:?}");
    // The paragraph's container is one too many: the page is collected up to it.
    let over = run_large(page(NODES_MAX).as_bytes());
    assert!(over.truncated && over.blocks.is_empty(), "{over:?}");
}

#[test]
fn text_is_capped_and_the_block_being_filled_is_kept_up_to_the_cap() {
    let page = |bytes: usize| format!("<p>{}</p><p>after</p>", "a".repeat(bytes));
    let at = run_large(page(TEXT_BYTES_MAX - "after".len()).as_bytes());
    assert!(!at.truncated && at.markdown().ends_with("a\n\nafter"), "{}", at.blocks.len());
    let over = run_large(page(TEXT_BYTES_MAX).as_bytes());
    assert!(over.truncated, "{}", over.blocks.len());
    assert_eq!(over.blocks, vec!["a".repeat(TEXT_BYTES_MAX)]);
    // Escapes count: `*` is written `\*` (after two letters: a paragraph of marks alone says nothing).
    let stars = run_large(format!("<p>aa{}</p>", "*".repeat(TEXT_BYTES_MAX / 2)).as_bytes());
    assert!(stars.truncated && stars.blocks.first().is_some_and(|b| b.len() == TEXT_BYTES_MAX), "{}", stars.truncated);
}

#[test]
fn quoted_blocks_pay_for_their_prefixes() {
    // A preformatted block of newlines, ten blockquotes deep, would render 16 bytes of `> > ...` per line.
    let lines = TEXT_BYTES_MAX / 8;
    let page = format!("{}<pre>x{}x</pre>", "<blockquote>".repeat(10), "<br>".repeat(lines));
    let e = run_large(page.as_bytes());
    assert!(e.truncated && e.blocks.is_empty(), "{}", e.blocks.len());
    assert!(e.markdown().len() <= MARKDOWN_BYTES_MAX);
}

#[test]
fn cells_are_capped_per_row() {
    let row = |cells: usize| format!("<table><tr>{}</tr><tr><td>b</td></tr></table>", "<td>a</td>".repeat(cells));
    let at = md(&row(CELLS_MAX));
    assert_eq!(at.lines().next().map(|l| l.matches(" a ").count()), Some(CELLS_MAX));
    let over = Extractor::run(row(CELLS_MAX + 1).as_bytes(), Options::default());
    assert!(over.truncated);
    assert_eq!(over.markdown(), at);
    assert!(!Extractor::run(row(CELLS_MAX).as_bytes(), Options::default()).truncated);
}

#[test]
fn titles_are_capped() {
    let page = |t: &str| format!("<title>{t}</title><p>x</p>");
    let e = Extractor::run(page(&"é".repeat(TITLE_BYTES_MAX)).as_bytes(), Options::default());
    // Two bytes a character: the cut falls on a character boundary.
    assert_eq!(e.title, Some("é".repeat(TITLE_BYTES_MAX / 2)));
    let e = Extractor::run(page(&"a".repeat(TITLE_BYTES_MAX)).as_bytes(), Options::default());
    assert_eq!(e.title.map(|t| t.len()), Some(TITLE_BYTES_MAX));
}

#[test]
fn an_extractor_past_its_deadline_does_no_more_work() {
    let html = b"<p>The first paragraph, with enough words to count.</p>";
    let mut late = Extractor::with_deadline(Options::default(), std::time::Instant::now());
    late.feed(html);
    assert!(late.timed_out());
    assert!(late.finish().blocks.is_empty());
    let far = std::time::Instant::now() + std::time::Duration::from_secs(3_600);
    let mut on_time = Extractor::with_deadline(Options::default(), far);
    on_time.feed(html);
    assert!(!on_time.timed_out());
    assert_eq!(on_time.finish(), Extractor::run(html, Options::default()));
}

/// Each shape once made some step of the extractor superlinear; each must now take time linear in its size. The
/// bound is generous (a debug build on a loaded machine); the shapes that were quadratic took tens of seconds.
#[test]
fn hostile_shapes_take_linear_time() {
    let shapes: Vec<(&str, Vec<u8>)> = vec![
        ("attributes", format!("<div{}>x</div>", (0..200_000).map(|i| format!(" a{i}")).collect::<String>()).into()),
        (
            "classes",
            format!("<div class=\"{}\">x</div>", (0..200_000).map(|i| format!("c{i} ")).collect::<String>()).into(),
        ),
        ("text run", "word, ".repeat(400_000).into_bytes()),
        ("nesting", [b"<div>".repeat(300_000), b"</x>".repeat(300_000)].concat()),
        ("cells", [b"<table><tr>".to_vec(), b"<td>a".repeat(400_000)].concat()),
        ("tables", b"<table><tr><td>a</td></tr></table>".repeat(60_000)),
        ("siblings", b"<div><p>A paragraph long enough to score its container, with a comma.</p></div>".repeat(30_000)),
        ("headings", [b"<title>a title</title>".to_vec(), b"<h2>a title</h2>".repeat(150_000)].concat()),
        ("links", b"<a href=x>y</a>".repeat(150_000)),
    ];
    // This thread's CPU time, not the wall clock: a loaded machine stretches the wall time of a debug build (the
    // slowest shapes take about 1 s of CPU here, and over 5 s of wall time was seen with both cores busy), while a
    // quadratic pass over 200,000 items would take minutes of CPU.
    fn cpu() -> std::time::Duration {
        let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
        // SAFETY: clock_gettime writes the timespec it is given, which lives on this frame.
        let rc = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
        assert_eq!(rc, 0, "clock_gettime(CLOCK_THREAD_CPUTIME_ID)");
        std::time::Duration::new(ts.tv_sec as u64, ts.tv_nsec as u32)
    }
    for (name, html) in shapes {
        let started = cpu();
        let e = Extractor::run(
            &html,
            Options { base_url: Some(format!("https://example.com/{}", "d/".repeat(500))), ..Options::default() },
        );
        let elapsed = cpu() - started;
        eprintln!("{name}: {} bytes in {elapsed:?} of CPU, {} blocks", html.len(), e.blocks.len());
        assert!(elapsed < std::time::Duration::from_secs(10), "{name}: {elapsed:?} of CPU");
        assert!(e.markdown().len() <= MARKDOWN_BYTES_MAX, "{name}");
    }
}

/// Only `<noscript>` notices about scripts go: a short sentence about JavaScript in the page's own text stays.
#[test]
fn script_notices_go_only_from_noscript() {
    let body = "<p>Modules are loaded once and cached by the runtime, whatever the number of imports, so that \
                each one runs its top level a single time.</p>";
    let html = format!(
        "<html><body><article><h1>Strict mode</h1><noscript><p>Please enable JavaScript to use this site.</p>\
         </noscript><p>To enable strict mode in JavaScript, add the directive first.</p>{body}{body}</article>\
         </body></html>"
    );
    let out = md(&html);
    assert!(out.contains("To enable strict mode in JavaScript"), "{out}");
    assert!(!out.contains("Please enable JavaScript"), "{out}");
}

// Faults found on real pages (issue 14), each on a small fixture of its own, named after what broke.
#[test]
fn a_document_without_a_head_end_tag_keeps_its_body() {
    let md = run(&fixture("no_head_end.html")).markdown();
    assert!(md.starts_with("# Tide tables without a closing head\n\nThe end tag of the head element"), "{md}");
    assert!(md.contains("every paragraph in place."), "{md}");
    assert!(!md.contains("Harbour office"), "{md}");
}

#[test]
fn a_product_page_leaves_its_customers_reviews_out() {
    check_fixture(
        "product_reviews.html",
        &["# Trail 25 Daypack", "padded back panel", "rain cover is stowed", "| Weight | 820 g |"],
        &["every weekend walk", "four stars from me", "Customer reviews"],
    );
}

#[test]
fn a_streamed_react_segment_is_read_although_hidden() {
    check_fixture(
        "react_streamed.html",
        &["React streams a server-rendered page", "an extractor should read it there"],
        &["Modal dialog", "Loading"],
    );
}

/// Issue 39: a row of numbers is a table's data, not a bare date line; the furniture beside it (a pager of links, a
/// sidebar's calendar) goes by its structure (links, the sidebar), not by its digits.
#[test]
fn a_table_of_numbers_keeps_every_row() {
    let page = run(&fixture("table_of_numbers.html")).markdown();
    let rows = "| Year | Rain | Days |\n| --- | --- | --- |\n| 2020 | 1,200 | 3,400 |\n| 2021 | 1,250 | 3,100 |\n\
                | 2022 | 2.7 | 300 |\n| 2023 | $1,300 | 3,000 |\n| 2024 | 1,200 | 3,400 |";
    assert!(page.contains(rows), "{page}");
    for furniture in ["?p=2", "| 11 |", "March 2024", "| M | T |"] {
        assert!(!page.contains(furniture), "{furniture:?} leaked into:\n{page}");
    }
    // The same row twice is two rows of data (the same text in two paragraphs is still said once).
    let html =
        "<main><p>Two readings a day, both kept in the log, which the station sends in every evening.</p><table>\
                <tr><th>Day</th><th>Reading</th></tr><tr><td>Monday 4 March</td><td>1,200.5 mm</td></tr>\
                <tr><td>Monday 4 March</td><td>1,200.5 mm</td></tr></table></main>";
    let twice = md(html);
    assert_eq!(twice.matches("| Monday 4 March | 1,200.5 mm |").count(), 2, "{twice}");
}

#[test]
fn a_table_of_content_wins_over_the_paragraphs_below_it() {
    let md = run(&fixture("table_content.html")).markdown();
    assert!(md.starts_with("# Release history\n\n| Version | Date | Changes |"), "{md}");
    assert!(md.contains("| 3.1.1 | 2026-04-09 |"), "{md}");
}

#[test]
fn a_page_without_main_content_is_empty_not_a_lone_title() {
    let e = run(&fixture("empty_shell.html"));
    assert_eq!(e.title.as_deref(), Some("Dashboard | Example App"));
    assert!(e.blocks.is_empty(), "{:?}", e.blocks);
    assert_eq!(e.markdown(), "");
}

#[test]
fn a_first_block_over_the_budget_is_cut_at_a_sentence_end() {
    let e = run(&fixture("long_first_paragraph.html"));
    let fitted = budget::fit(&e.blocks, 30);
    assert!(fitted.truncated && fitted.tokens <= 30, "{fitted:?}");
    assert!(fitted.markdown.starts_with("# Budgets\n\nA budget is a promise about size."), "{fitted:?}");
    assert!(fitted.markdown.ends_with('.'), "{fitted:?}");
    // No sentence fits: a word boundary, never mid-word.
    let fitted = budget::fit(&e.blocks, 8);
    assert!(fitted.markdown.starts_with("# Budgets\n\nA budget"), "{fitted:?}");
    assert!(!fitted.markdown.contains("promise about size."), "{fitted:?}");
    let text = String::from_utf8_lossy(&fixture("long_first_paragraph.html")).into_owned();
    let last = fitted.markdown.split_whitespace().last().unwrap();
    assert!(text.contains(&format!(" {last} ")), "{last:?} is not a whole word");
}

#[test]
fn a_service_page_keeps_every_section() {
    check_fixture(
        "service_sections.html",
        &[
            "We clean offices",
            "## Offices",
            "Hull, deck and cabin",
            "Degreasing",
            "## Prices",
            "90 euros",
            "photographs",
        ],
        &["Contact", "All rights reserved"],
    );
}

#[test]
fn a_service_page_keeps_a_section_of_short_lines_beside_its_prose() {
    // Three quarters of the body text is prose in one section; the rest is a list of services in another, too
    // short to score: the page names no container as its content, so the region climbs to hold both.
    let prose =
        "We clean the hulls, decks and cabins of sailing boats, motor yachts and barges, in the water or ashore, \
                 with brushes and soaps that leave no trace in the harbour. ";
    let html = format!(
        "<html><body><div class=\"wrap\"><div class=\"about\"><h2>About us</h2><p>{p}</p><p>{p}</p><p>{p}</p>\
         </div><div class=\"list\"><h2>Services</h2><ul><li>Hull scrubbing</li><li>Deck teak oiling</li>\
         <li>Cabin steam cleaning</li><li>Antifouling paint</li><li>Bilge pumping out</li><li>Sail washing</li>\
         <li>Winter covers</li><li>Brightwork varnish</li></ul></div></div>\
         <footer><p>All rights reserved, Harbour Cleaners.</p></footer></body></html>",
        p = prose
    );
    let md = md(&html);
    assert!(md.contains("Cabin steam cleaning") && md.contains("Brightwork varnish"), "{md}");
    assert!(md.contains("motor yachts") && !md.contains("All rights reserved"), "{md}");
}

#[test]
fn the_climb_for_a_pages_sections_leaves_a_sidebar_of_links_out() {
    // A story of no kind in a row beside a sidebar of category links and a note: the story holds under
    // `UNNAMED_COVERAGE_MIN` of the page's body text, but the row around it is mostly links, a frame, not sections.
    let prose = "The harbour office opened the new pontoon on Monday, after two winters of works, with room for forty \
                 boats, fresh water and power at every berth, and a slipway for the dinghies of the sailing school. ";
    let links: String = (10..50).map(|i| format!("<li><a href=\"/c/{i}\">Category number {i} news</a></li>")).collect();
    let html = format!(
        "<html><body><div class=\"notice\"><p>Office hours change in winter: mornings only, from nine to noon.</p>\
         <p>Call us first.</p></div><div class=\"row\"><div class=\"col-9\"><p>{prose}</p><p>{prose}</p>\
         <p>{prose}</p></div><div class=\"col-3\"><ul>{links}</ul><p>Our town is twinned with three ports on \
         the Baltic, and a choir sings at the quay every summer evening.</p></div></div></body></html>"
    );
    let md = md(&html);
    assert!(md.contains("new pontoon") && !md.contains("twinned"), "{md}");
}

#[test]
fn a_region_named_by_its_wrapper_alone_does_not_climb_into_its_templates_other_boxes() {
    // A press release in a `div.text` of its own, and the company's standing note in another box of that template:
    // the wrapper names the release as the content, so the climb stops there and the note stays out.
    let prose = "The harbour company signed a contract with the ferry line on Monday, for ten years of berths, fuel \
                 and repairs, with two new cranes on the quay and a second slipway for the winter overhauls. ";
    let html = format!(
        "<html><body><div class=\"press\"><div class=\"text\"><div><p>{prose}</p><p>Second: {prose}</p>\
         <p>Third: {prose}</p><p>Fourth: {prose}</p><p>Fifth: {prose}</p></div></div><div class=\"text\"><div>\
         <p>About the harbour company: founded in 1901, it runs the docks, the cranes and the marina of the town, \
         and employs two hundred people, with offices in three ports.</p>\
         <p>Its shares, listed since 1998, are held by the town, the region and its staff, in equal parts.</p>\
         </div></div></div></body></html>"
    );
    let md = md(&html);
    assert!(md.contains("ferry line") && !md.contains("founded in 1901"), "{md}");
}

#[test]
fn a_forum_thread_keeps_its_replies_in_a_region_named_comments() {
    check_fixture(
        "forum_comments.html",
        &["My anchor keeps dragging", "A plough is poor in soft mud", "let it settle for a minute"],
        &["volunteers"],
    );
}

#[test]
fn a_thread_served_inside_noscript_is_read() {
    // Discourse serves readers without scripts (and crawlers) the whole thread inside `<noscript>`.
    check_fixture("noscript_thread.html", &["renewed twice a night", "Keep the timer."], &["JavaScript"]);
}

#[test]
fn a_listing_keeps_its_items_and_not_its_filters() {
    check_fixture(
        "listing_cards.html",
        &["Coastal navigation", "Charts, tides and pilotage", "Marine diesel engines", "Reading the weather"],
        &["Beginner", "About", "Quay 2"],
    );
}

#[test]
fn a_listing_of_list_items_keeps_its_items() {
    check_fixture(
        "listing_items.html",
        &["Braided polyester sheet line", "£2.40 per metre", "Waxed whipping twine reel", "£4.50 each"],
        &["About us", "Harbour Road"],
    );
}

#[test]
fn a_page_hidden_until_its_scripts_run_is_read() {
    check_fixture("anti_flicker_wrapper.html", &["Start with the bowline"], &["cookie dialog"]);
}

#[test]
fn a_shop_hidden_until_its_scripts_run_is_read() {
    // The whole grid sits in a wrapper hidden by `display: none` until a script reveals it (an app that locks a
    // shop, a page builder's loader): the visible page says nothing, so the hidden wrapper is read.
    let cards: String = (1..=20)
        .map(|n| {
            format!(
                "<li class=\"card\"><h3><a href=\"/p/{n}\">Dark roast coffee number {n}</a></h3>\
                 <p>Whole beans from farms we know, roasted in small batches every week: ${n}.99</p></li>"
            )
        })
        .collect();
    let page = |hide: &str| {
        format!(
            "<html><head><title>Coffee beans</title></head><body><header><nav><a href=\"/\">Home</a> \
             <a href=\"/shop\">Shop</a></nav></header><div class=\"lockdown\" {hide}><main><h1>Coffee beans</h1>\
             <ul class=\"grid\">{cards}</ul></main></div><footer><p>Harbour Road 1, Portsmouth</p></footer>\
             </body></html>"
        )
    };
    for hide in ["style=\"display:none\"", "aria-hidden=\"true\"", "hidden"] {
        let out = md(&page(hide));
        assert!(out.contains("Dark roast coffee number 1"), "{hide}: {out}");
        assert!(out.contains("roasted in small batches every week: $20.99"), "{hide}: {out}");
        assert_eq!(out, md(&page("")), "{hide}: {out}");
    }
}

#[test]
fn a_large_hidden_wrapper_leaves_the_caps_to_the_visible_page() {
    // A hidden wrapper near the top is read (it may be the page), but only up to half of each cap: one holding more
    // containers, blocks or text than the caps allow must not stop the page before its visible article.
    let article = "<article><h1>Tying a bowline</h1><p>Form a small loop in the standing part, pass the end up \
                   through it, round the back of the standing part and down through the loop again.</p></article>";
    let page = |hidden: &str| {
        format!(
            "<html><head><title>Tying a bowline</title></head><body><div style=\"display:none\">{hidden}</div>\
             {article}</body></html>"
        )
    };
    let plain = md(&page(""));
    assert!(plain.contains("round the back of the standing part"), "{plain}");
    let containers = "<div></div>".repeat(super::NODES_MAX + 10);
    let blocks = "<p>x</p>".repeat(super::BLOCKS_MAX + 10);
    let text = format!("<pre>{}</pre>", "xy ".repeat(super::TEXT_BYTES_MAX / 3 + 10));
    assert_eq!(md(&page(&containers)), plain);
    // Blocks and text of a page's worth are read, and the visible article stays with them.
    for hidden in [blocks, text] {
        let out = md(&page(&hidden));
        assert!(
            out.contains("round the back of the standing part and down through the loop again."),
            "{}",
            &hidden[..20]
        );
    }
}

#[test]
fn a_hidden_empty_paragraph_ends_at_the_next_one() {
    // `<p style="display: none">&nbsp;<p>`: the next paragraph ends the hidden one (as a browser reads it), so the
    // article after it is not hidden with it.
    let out = md("<html><head><title>Trimming a sail</title></head><body><article><h1>Trimming a sail</h1>\
                  <p style=\"display: none;\">&nbsp;<p>Ease the sheet until the luff just lifts, then pull it in \
                  until it stops, and watch the telltales on both sides.</p><p>A sail trimmed too tight stalls, \
                  one too loose flaps: between the two is speed.</p></article></body></html>");
    assert!(out.contains("Ease the sheet") && out.contains("between the two is speed"), "{out}");
}

#[test]
fn a_hidden_dialog_beside_a_page_stays_out() {
    // A cookie settings dialog hidden near the top of the page holds more than a few lines, but the visible
    // article says more: the dialog stays out, and the extract is the same as without it.
    let article = "<main><h1>Rigging a dinghy</h1><p>Step the mast, then hook the forestay and the shrouds, and \
                   tension them until the mast stands straight from every side, with a little rake aft.</p>"
        .to_owned()
        + &"<p>Reeve the main halyard, bend the sail on, and check every shackle twice before launching.</p>"
            .repeat(12)
        + "</main>";
    let dialog = format!(
        "<div class=\"settings\" style=\"display: none\">{}</div>",
        "<p>This website uses cookies to improve your experience while you navigate through it, and to measure.</p>"
            .repeat(12)
    );
    let page = |dialog: &str| format!("<html><head><title>Rigging</title></head><body>{article}{dialog}</body></html>");
    let out = md(&page(&dialog));
    assert!(out.contains("Step the mast") && !out.contains("cookies"), "{out}");
    assert_eq!(out, md(&page("")));
    // Alone on a page, a modal (by its role or its class) is still not read: it is never the page.
    for window in ["role=\"dialog\"", "class=\"modal\""] {
        let alone = dialog.replace("class=\"settings\"", window);
        let out = md(&format!("<html><head><title>Rigging</title></head><body>{alone}</body></html>"));
        assert_eq!(out, "", "{window}");
    }
}

#[test]
fn a_collection_of_articles_is_not_read_as_an_article() {
    // `og:type` says article, but the page's own JSON-LD type is a CollectionPage (its NewsArticles are its items):
    // the teasers are the content, not the related links around one article.
    check_fixture(
        "collection_of_articles.html",
        &["Everything that happened", "New pontoons open on the east quay", "Harbour dues rise by two percent"],
        &["printed weekly"],
    );
}

#[test]
fn a_listing_keeps_its_introduction_and_every_card() {
    // The cards score little (short, linked titles) beside the introduction's prose: the region holds both. The
    // grid's wrapper is `overflow-hidden` (a utility class, not a hidden element), the body's class names the
    // layout (`has-sidebar`, not a sidebar), and cards titled by headings alone are items, not a run of teasers.
    check_fixture(
        "listing_with_intro.html",
        &[
            "An oilskin keeps a sailor dry",
            "Coastal jacket, red",
            "$189.00",
            "Offshore jacket, yellow",
            "$329.00",
            "Ocean smock, orange",
            "Sou'wester hat, yellow",
        ],
        &["Help and returns", "Harbour Road"],
    );
}

#[test]
fn collapsed_sections_are_read_and_hidden_popups_are_not() {
    // An accordion's panels are hidden until a reader opens them: they are the page's text.
    check_fixture(
        "collapsed_sections.html",
        &["We lift, wash and store boats", "with power and water at every", "your own policy covers"],
        &["newsletter"],
    );
}

#[test]
fn panels_hidden_by_aria_or_style_until_opened_are_read() {
    // A doc page's code tabs (the other languages) and a FAQ's answers are hidden by `aria-hidden` or `display:
    // none` until a reader opens them; a hidden popup is not the page's.
    check_fixture(
        "doc_tabs.html",
        &[
            "pip install example-client",
            "npm install example-client-node",
            "go get example.org/client-go",
            "within two seconds",
        ],
        &["newsletter"],
    );
}

#[test]
fn a_doc_pages_lists_of_links_are_its_text() {
    // A page that is not an article, whose content region lists its topics as links: the lists are the page.
    check_fixture(
        "doc_link_lists.html",
        &["- Planner statistics", "- Using EXPLAIN", "- Logging checkpoints", "[Configuring the server]"],
        &["Recent changes"],
    );
}

#[test]
fn image_captions_and_credits_are_left_out() {
    let out = md(r#"<html><head><title>Harbour works begin</title></head><body><article>
<p>Work on the new harbour wall began on Monday, with two cranes lifting the first concrete blocks into place.</p>
<div class="InlineImage-wrapper"><img src="a.jpg" alt=""><div class="InlineImage-imageEmbedCaption">A crane lifts a
block onto the wall on Monday morning.</div><div class="InlineImage-imageEmbedCredit">Jane Doe | Example Agency</div>
</div>
<p class="text-caption">The wall will be finished in the spring of next year, the council says, at a cost of four million.</p>
<div class="caption">Workers on the quay at dawn.</div>
<div id="attachment_7" class="wp-caption aligncenter"><img src="b.jpg" alt="">
<p class="wp-caption-text">The harbour master on the new wall.</p></div>
</article></body></html>"#);
    assert!(out.contains("two cranes") && out.contains("spring of next year"), "{out}");
    assert!(!out.contains("crane lifts") && !out.contains("Jane Doe") && !out.contains("at dawn"), "{out}");
    assert!(!out.contains("harbour master"), "{out}");
    // A caption in a span inside the text's paragraph, by its class alone.
    let out = md(r#"<html><head><title>Harbour works begin</title></head><body><article>
<p>Work on the new harbour wall began on Monday, with two cranes lifting the first concrete blocks into place.</p>
<p><img src="c.jpg" alt=""><span class="newsCaption">The cranes at work (Image: Agency)</span></p>
<p>The wall will be finished in the spring of next year, the council says, at a cost of four million.</p>
</article></body></html>"#);
    assert!(out.contains("two cranes") && out.contains("spring of next year"), "{out}");
    assert!(!out.contains("cranes at work"), "{out}");
}

#[test]
fn a_forms_outcome_messages_are_left_out() {
    let out = md(r#"<html><head><title>Pest control in Phoenix</title></head><body><main>
<h2>Pest control that lasts</h2>
<p>Our technicians treat the inside and the outside of your home, and come back free of charge if the pests do.</p>
<p>Every plan starts with an inspection, a written report and a quote, with no obligation to go ahead with it.</p>
<div class="w-form"><form><input name="email"><input type="submit" value="Book an inspection"></form>
<div class="w-form-done"><div>Thank you! Your submission has been received!</div></div>
<div class="w-form-fail"><div>Oops! Something went wrong while submitting the form.</div></div></div>
<p class="form-note">We answer within one working day, and never share your address with anyone else.</p>
</main></body></html>"#);
    assert!(out.contains("free of charge") && out.contains("never share your address"), "{out}");
    assert!(!out.contains("Thank you!") && !out.contains("Oops!"), "{out}");
}

#[test]
fn markdown_is_capped_whatever_the_last_block() {
    // Short rows padded to a wide header render far more than they cost: the table renders to just under the cap,
    // and a large paragraph after it must not carry the markdown past it.
    let mut html = format!("<div><table><tr>{}</tr>", "<td>h</td>".repeat(CELLS_MAX));
    html.push_str(&"<tr><td>a</td></tr>".repeat(10_000));
    html.push_str(&format!("</table><p>{}</p></div>", "b, ".repeat(100_000)));
    let e = run_large(html.as_bytes());
    assert!(e.truncated);
    assert!(e.markdown().len() <= MARKDOWN_BYTES_MAX, "{}", e.markdown().len());
}

#[test]
fn a_listing_whose_cards_are_numbered_keeps_its_items() {
    // Each card's class names its post (`post-15859`) and its place in the row (`first`, `last`) beside the
    // template's own class: the cards are still one template, and their linked titles are the items.
    check_fixture(
        "listing_numbered_cards.html",
        &["Stoneware mug, sea green", "Porcelain cup, chalk white", "Espresso cup, iron red", "Tall latte mug, slate"],
        &["About us", "Mill Lane"],
    );
}

#[test]
fn a_listing_keeps_what_its_cards_hold_deep_inside() {
    // A shop's grid nests each item's lines a dozen wrappers below its cell (column, card, faceout, price box):
    // deeper than a block's path reaches, and a price there is still the item's own, not a bare number of chrome.
    let card = |(t, p): &(&str, u32)| {
        format!(
            r#"<li class="cell"><div class="col"><div class="ui"><div class="wrap"><div class="face"><div class="inner">
<h3><a href="/dp/{p}">{t}</a></h3><p>The {t}, hand-thrown and glazed in small batches at the pottery.</p>
<div class="buy"><div class="box"><div class="amount"><div class="now">&euro;{p}</div></div></div></div>
</div></div></div></div></div></div></li>"#
        )
    };
    let cards: String = [("Stoneware mug", 88), ("Porcelain cup", 114), ("Espresso cup", 26), ("Latte bowl", 28)]
        .iter()
        .map(card)
        .collect();
    let html = format!(
        r#"<html><head><title>Cups and mugs</title></head><body><main><h1>Cups and mugs</h1><ol>{cards}</ol>
</main></body></html>"#
    );
    let out = md(&html);
    assert!(out.contains("€88") && out.contains("€28") && out.contains("Latte bowl"), "{out}");
}

#[test]
fn a_listing_reads_on_past_a_latest_news_heading() {
    // On an article, "Latest news" starts the related links after it; on a listing it is one more list of items.
    let card =
        |t: &str| format!(r#"<div class="card"><a href="/s/{t}">{t}, the whole story</a><p>By a reporter</p></div>"#);
    let first: String = ["Harbour dues rise", "New pontoons open", "Ferry timetable changes", "Lifeboat day"]
        .iter()
        .map(|t| card(t))
        .collect();
    let second: String = ["Tide gauge fixed", "Quay lights renewed", "Crane hire resumes", "Fuel berth moves"]
        .iter()
        .map(|t| card(t))
        .collect();
    let html = format!(
        r#"<html><head><title>Harbour news</title></head><body><main><h1>Harbour news</h1>
<div class="grid">{first}</div><h2>Latest news</h2><div class="grid">{second}</div></main></body></html>"#
    );
    let out = md(&html);
    assert!(out.contains("Harbour dues rise") && out.contains("Fuel berth moves"), "{out}");
}

#[test]
fn a_cookie_banner_is_left_out_whatever_its_classes_say() {
    // OneTrust's preference centre holds its text in `#ot-pc-content`, a content hint inside the consent banner: a
    // banner that is both boilerplate and content was kept. The consent words in its id win.
    check_fixture(
        "consent_banner.html",
        &["Our yard lifts boats", "Swinging moorings"],
        &["cookies", "advertising partners", "privacy centre"],
    );
}

#[test]
fn a_forum_thread_keeps_its_posts_not_the_text_beside_them() {
    // A thread is one body, like an article: its region need not hold most of the page's text, so the promotion
    // beside the posts stays out.
    check_fixture(
        "forum_beside_promo.html",
        &["I am fifty and have never sailed", "Join a club first", "A stable two-person boat"],
        &["Premium", "yearbook"],
    );
}

#[test]
fn a_quote_in_a_carousel_does_not_stand_for_the_page() {
    // The testimonial scores best (commas, a content hint) but sits in a widget: the region could not
    // grow out of it, and the page's sections were lost.
    check_fixture(
        "service_with_quote_carousel.html",
        &["We lift, wash and antifoul", "pressure washed", "Two coats", "check the seacocks"],
        &[],
    );
}

#[test]
fn a_reading_list_inside_the_content_is_kept() {
    // Each entry is mostly its link, as a menu's is; but it sits in the region marked as content and says
    // something of its own (its author), so it is the page's list, not navigation.
    check_fixture(
        "wiki_reading_list.html",
        &["Choosing wire for stays", "by Ann Marshall", "Tuning a fractional rig"],
        &["Recent changes"],
    );
}

/// A text run of 3 MB, which the tokenizer delivers in pieces (`html::TEXT_RUN_BYTES_MAX`), extracts as it did when
/// the run came whole: the reference here joins the pieces again before the builder sees them. One run is mostly
/// whitespace (under the text cap), one is dense text (over it); both hold references and wide characters.
#[test]
fn a_text_run_of_three_megabytes_extracts_as_one_piece() {
    use crate::html::Sink as _;
    /// Passes tokens on to the builder, each text run in one piece.
    struct Joined(builder::Builder, String);
    impl Joined {
        fn flush(&mut self) {
            if !self.1.is_empty() {
                self.0.text(&self.1);
                self.1.clear();
            }
        }
    }
    impl crate::html::Sink for Joined {
        fn start_tag(&mut self, tag: &crate::html::Tag) {
            self.flush();
            self.0.start_tag(tag);
        }
        fn end_tag(&mut self, name: &str) {
            self.flush();
            self.0.end_tag(name);
        }
        fn text(&mut self, text: &str) {
            self.1.push_str(text);
        }
        fn comment(&mut self, text: &str) {
            self.flush();
            self.0.comment(text);
        }
        fn wants_raw_text(&self) -> bool {
            self.0.wants_raw_text()
        }
    }
    let sparse = "word &amp; w\u{f6}rd \u{65e5}&#x1F600; ".to_owned() + &" \n".repeat(100);
    let dense = "Dense, text &lt;with&gt; a comma; x&#128;y \u{65e5}\u{672c}\u{8a9e} and more words here. ";
    for unit in [sparse.as_str(), dense] {
        let run = unit.repeat(3_000_000 / unit.len() + 1);
        let html = format!("<html><title>T</title><body><div><p>{run}</p><p>after</p></div></body></html>");
        let mut joined = Joined(builder::Builder::new(Options::default()), String::new());
        crate::html::Tokenizer::run(html.as_bytes(), &mut joined);
        joined.flush();
        let expected = select::extract(joined.0.finish());
        assert!(expected.markdown().len() > 100_000, "{}", expected.markdown().len());
        assert!(run_large(html.as_bytes()) == expected, "the extract of a {} byte run changed", run.len());
    }
}

#[test]
fn an_undated_web_page_with_open_graph_article_is_not_read_as_an_article() {
    // A CMS's service page: `og:type` article on every page, but schema.org says WebPage and nothing dates it.
    let head =
        r#"<meta property="og:type" content="article"><script type="application/ld+json">{"@type":"WebPage"}</script>"#;
    let html = |extra: &str| {
        format!(
            r#"<html><head>{head}{extra}</head><body><main><h1>Services</h1>
<p>We repair boats, engines and sails, in our yard or at your mooring, all year round and at fair prices.</p>
<ul><li><a href="/hulls">Hull repairs</a></li><li><a href="/engines">Engine servicing</a></li></ul></main></body></html>"#
        )
    };
    // Its list of services (links in the content region, off articles) is its text.
    let out = md(&html(""));
    assert!(out.contains("Hull repairs") && out.contains("Engine servicing"), "{out}");
    // Dated, it is an article, whose lists of links are teasers.
    let dated = md(&html(r#"<meta property="article:published_time" content="2026-01-02">"#));
    assert!(dated.contains("We repair boats") && !dated.contains("Hull repairs"), "{dated}");
}

#[test]
fn a_forms_short_lines_are_left_out_of_the_content() {
    let html = r#"<html><body><main><h1>Our services</h1>
<p>We repair boats, engines and sails, in our yard or at your mooring, all year round and at fair prices.</p>
<p>Every repair is guaranteed for two years, parts and labour, whatever the boat and wherever it sails.</p>
<form><h3>Get a quote</h3><label>Your name</label><input name="n"><label>Your email address</label><input name="e">
<p>Tell us about your boat, its engine and what needs doing, and we will answer within a day with a price.</p></form>
</main></body></html>"#;
    let out = md(html);
    assert!(out.contains("We repair boats") && out.contains("guaranteed for two years"), "{out}");
    assert!(!out.contains("Your name") && !out.contains("Your email") && !out.contains("Get a quote"), "{out}");
    // A form's longer text is kept.
    assert!(out.contains("Tell us about your boat"), "{out}");
    // On a product page the form is the product's options.
    let product = html.replace("<html>", r#"<html><head><meta property="og:type" content="product"></head>"#);
    assert!(md(&product).contains("Your name"), "{}", md(&product));
    // A form around the whole page (ASP.NET's) is its frame, not a form in its content.
    let framed = html
        .replace("<main>", "<form id=\"aspnetForm\"><main>")
        .replace("<form>", "<div>")
        .replace("</form>", "</div></form>");
    assert!(md(&framed).contains("Your name"), "{}", md(&framed));
}

#[test]
fn a_form_right_inside_the_body_is_the_pages_frame() {
    // ASP.NET WebForms wraps every page in a form right inside `body`: with no `main` in it, the whole page was
    // boilerplate by that form, and its text was passed over for a line of the header.
    let html = r#"<html><head><title>Moorings</title></head><body><form method="post" id="aspnetForm">
<div class="top">Questions? Call us on 0800 123 456</div>
<div class="page"><h1>Moorings</h1>
<p>Our swinging moorings lie in the sheltered upper harbour, each laid and inspected by our own divers every spring.</p>
<p>Pontoon berths have water and power, and a launch runs to the swinging moorings from eight until dusk.</p>
<p>Visitors are welcome for a night or a season: call the office, or ask the harbour master on channel twelve.</p>
</div></form></body></html>"#;
    let out = md(html);
    assert!(out.contains("sheltered upper harbour") && out.contains("channel twelve"), "{out}");
}

#[test]
fn a_caption_inside_a_link_is_a_cards_text() {
    // Bootstrap's thumbnail card holds its title and price in `div.caption`, here inside the item's link: that is
    // the item, not an image's caption.
    let card = |(t, p): &(&str, u32)| {
        format!(
            r#"<div class="product"><a href="/p/{p}"><img src="/i/{p}.jpg" alt=""></a><a class="box" href="/p/{p}">
<div class="caption"><div class="name">{t}, laid by our divers</div><div class="price">Price: ${p}.00</div></div></a>
</div>"#
        )
    };
    let cards: String =
        [("Swinging mooring", 900), ("Pontoon berth", 2400), ("Drying berth", 450), ("Winter hardstanding", 600)]
            .iter()
            .map(card)
            .collect();
    let html = format!(
        r#"<html><head><title>Berths</title></head><body><main><h1>Berths</h1><div class="grid">{cards}</div>
</main></body></html>"#
    );
    let out = md(&html);
    assert!(out.contains("Pontoon berth, laid by our divers") && out.contains("Winter hardstanding, laid"), "{out}");
}

#[test]
fn code_with_a_div_per_line_is_one_block_and_is_never_dropped_as_repeated() {
    let code = r#"<pre><code><div class="line">cargo build --release</div><div class="line">cargo test</div><div class="line"></div><div class="line">cargo bench</div></code></pre>"#;
    let html = format!(
        "<html><body><article><h1>Building</h1><p>Build the project, then run its tests and its benches, from the checkout's root directory.</p>{code}<p>Run the same commands again after every change, in that order, before you commit anything.</p>{code}</article></body></html>"
    );
    let out = md(&html);
    let block = "```\ncargo build --release\ncargo test\ncargo bench\n```";
    assert_eq!(out.matches(block).count(), 2, "{out}");
}

#[test]
fn a_paragraph_set_as_a_heading_is_body_text() {
    // A landing page's introduction in an `h4`, in a section of its own beside the page's other section.
    let intro = "For more than forty years we have offered a vast selection of handmade gifts, where you will surely find something for everyone on your list, including yourself.";
    let html = format!(
        r#"<html><body><div class="page"><div class="intro"><h2>Welcome</h2><h4>{intro}</h4></div>
<div class="visit"><h2>Plan your visit</h2><p>Visit the gallery in the village, a storybook place with colonial buildings and gardens.</p>
<p>We are open every day of the year but three, and gift cards are sold at the desk or by phone.</p></div>
</div></body></html>"#
    );
    let out = md(&html);
    assert!(out.contains("#### For more than forty years") && out.contains("Visit the gallery"), "{out}");
}

#[test]
fn a_boilerplate_section_inside_the_main_landmark_is_left_out() {
    // A shop's theme puts its "related products" grid inside `<main>`: the section's own class says what it is,
    // which the landmark around it does not undo (nor do the `<article>` cards inside it).
    let card = |n: u32| {
        format!(
            r#"<article class="product"><h3><a href="/p/{n}">Linen Summer Dress number {n}</a></h3>
<p class="price">A dress of washed linen, cut loose, in four colours and six sizes, number {n}.</p></article>"#
        )
    };
    let cards: String = (1..=6).map(card).collect();
    let html = format!(
        r#"<html><head><title>Hemp Dress</title></head><body><main>
<div class="product-summary"><h1>Hemp Dress</h1>
<p>A dress of three layers of hemp, dyed without azo dyes, with a pocket on the right side and a side zip.</p>
<p>Made to order: it ships within eight to fourteen days, from the workshop where it is sewn by hand.</p></div>
<section class="related products"><h2>Related products</h2>{cards}</section>
</main></body></html>"#
    );
    let out = md(&html);
    assert!(out.contains("three layers of hemp") && out.contains("Made to order"), "{out}");
    assert!(!out.contains("Linen Summer Dress") && !out.contains("washed linen"), "{out}");
    // So does a modal's prose inside `<article>`; a page builder's `widget` class on every block says nothing.
    let html = r#"<html><head><title>Hull Cleaning</title></head><body><article>
<div class="widget text"><p>We clean hulls of sailing boats and motor boats in the harbour, by hand and without any solvents.</p>
<p>A hull of ten metres takes half a day, and we send photographs of the hull before and after the work.</p></div>
<div class="modal"><p>Before you go: leave us your address and we will send you our seasonal offers and our news by post.</p></div>
</article></body></html>"#;
    let out = md(html);
    assert!(out.contains("without any solvents") && out.contains("half a day"), "{out}");
    assert!(!out.contains("Before you go"), "{out}");
}

#[test]
fn a_content_class_inside_the_pages_frame_is_the_frames() {
    // A theme names every block of its header and footer `component-content`: the offers there are the frame's,
    // not the page's, where a `<header>` inside an `<article>` is the article's own.
    let offer = |what: &str| {
        format!(
            "<div class=\"component-content\"><p>{what}: ten dollars off your first order of fifty dollars or more, \
             valid this week only, with free store pickup and free returns to any of our stores.</p></div>"
        )
    };
    let cards: String = (1..=4)
        .map(|n| {
            format!(
                "<div class=\"product-tile\"><h3><a href=\"/p/{n}\">Classic Clog number {n} in bright colours</a></h3>\
                 <p>$4{n}.99</p></div>"
            )
        })
        .collect();
    let html = format!(
        "<html><head><title>Classic Clogs</title></head><body><div id=\"wrapper\"><header>{}</header>\
         <div class=\"listing\"><h1>Classic Clogs</h1><p>Light, comfortable and easy to clean, our classic clogs come in \
         every colour and in sizes for the whole family.</p><div class=\"grid\">{cards}</div></div>\
         <footer>{}</footer></div></body></html>",
        offer("Header offer"),
        offer("Footer offer")
    );
    let out = md(&html);
    assert!(out.contains("Classic Clog number 3") && out.contains("easy to clean"), "{out}");
    assert!(!out.contains("Header offer") && !out.contains("Footer offer"), "{out}");
    let html = "<html><body><nav><a href=\"/\">Home</a></nav><article><header class=\"entry-header\">\
                <p class=\"entry-content\">By Ann Lee, who has tested clogs, sandals and boots for twelve years, in \
                the shop and on the trail.</p></header><p>Clogs are light and comfortable and easy to clean, and they \
                come in every colour and in sizes for the whole family, from toddlers to grandparents.</p>\
                </article></body></html>";
    let out = md(html);
    assert!(out.contains("By Ann Lee") && out.contains("easy to clean"), "{out}");
}

#[test]
fn a_paragraph_repeating_the_title_is_left_out() {
    // A template prints the title again as a paragraph (a second title line, a gallery's caption bar): the title
    // is shown once, first. A paragraph that only begins with the title's words is the text's own.
    let html = r#"<html><head><title>Storm Closes the Harbour</title></head><body><article>
<div class="titulo"><p>Storm Closes the Harbour</p></div>
<p>The harbour was closed on Monday morning as the storm reached the coast, and the ferries stayed in port.</p>
<p>Storm closes the harbour for the third time this year, the harbour master said, and it will open on Friday.</p>
<div class="gallery-bar"><p><strong>Storm closes the harbour</strong></p></div>
</article></body></html>"#;
    let out = md(html);
    assert_eq!(out.matches("Storm Closes the Harbour").count() + out.matches("**Storm closes").count(), 1, "{out}");
    assert!(out.contains("ferries stayed in port") && out.contains("for the third time this year"), "{out}");
}

#[test]
fn an_articles_dateline_is_left_out() {
    // A news system prints when the story was published or changed as a paragraph of its own: on an article it is
    // left out; a paragraph that starts with such a word and goes on is the story's text.
    let html = r#"<html><head><title>Ferry Service Resumes</title><meta property="og:type" content="article"></head>
<body><article><h1>Ferry Service Resumes</h1>
<p>Updated 10:01 pm PST, Tuesday, November 19, 2019</p>
<p><em>Published: Nov 19, 2019</em></p>
<p>The ferries to the islands sailed again on Tuesday after three days in port, the operator said in a statement.</p>
<p>Published in 1998, the timetable has not changed since, and the first boat still leaves at seven in the morning.</p>
</article></body></html>"#;
    let out = md(html);
    assert!(out.contains("sailed again on Tuesday") && out.contains("Published in 1998, the timetable"), "{out}");
    assert!(!out.contains("10:01 pm") && !out.contains("Nov 19, 2019"), "{out}");
}

#[test]
fn an_articles_byline_footer_and_teasers_are_left_out() {
    // Inside the article's own container: who wrote it (by a class part `byline`), the article's `<footer>`, and
    // other stories' teasers in a rail named by a class part (`rail--trending`), where an id of that word names
    // the one element around the text.
    let html = r#"<html><head><title>Harbour Reopens</title></head><body><article><h1>Harbour Reopens</h1>
<div class="byline-section"><span class="author">Jane Roe and John Doe, Harbour Times</span></div>
<p>The harbour reopened on Friday after the storm, and the fishing boats went out before dawn for the first time.</p>
<div class="rail rail--trending"><h3>Most read</h3><p>Ferry operator fined for sailing in the storm, the court said.</p>
<p>A new lighthouse keeper is appointed for the winter months, after a search of a year.</p></div>
<p>The ferries follow on Monday, the operator said, with the first boat leaving at seven in the morning.</p>
<footer><p>Filed under harbour, storms and ferries; share this story with your friends and family.</p></footer>
</article></body></html>"#;
    let out = md(html);
    assert!(out.contains("before dawn") && out.contains("the first boat"), "{out}");
    assert!(!out.contains("Jane Roe") && !out.contains("Ferry operator") && !out.contains("Filed under"), "{out}");
    let html = r#"<html><head><title>Legal Aid</title></head><body><main><div id="map-and-related">
<p>The harbour reopened on Friday after the storm, and the fishing boats went out before dawn for the first time.</p>
<p>The ferries follow on Monday, the operator said, with the first boat leaving at seven in the morning.</p>
</div></main></body></html>"#;
    let out = md(html);
    assert!(out.contains("before dawn") && out.contains("the first boat"), "{out}");
}

#[test]
fn text_for_screen_readers_only_is_left_out() {
    // Labels clipped off screen for screen readers: a listing's "Sort and Filter" heading, a control's name.
    let cards: String = (1..=4)
        .map(|n| {
            format!(
                "<div class=\"product-tile\"><h3><a href=\"/p/{n}\">Oak Bookcase number {n} with five shelves</a></h3>\
                 <p><span class=\"sr-only\">Open the options of this bookcase</span>$4{n}9.00</p></div>"
            )
        })
        .collect();
    let html = format!(
        "<html><head><title>Bookcases</title></head><body><main><h1>Bookcases</h1>\
         <h2 class=\"visually-hidden\">Sort and Filter</h2><p>Solid oak bookcases, oiled by hand, in four widths and \
         three heights for every room.</p><div class=\"grid\">{cards}</div></main></body></html>"
    );
    let out = md(&html);
    assert!(out.contains("Oak Bookcase number 3") && out.contains("oiled by hand") && out.contains("$429.00"), "{out}");
    assert!(!out.contains("Sort and Filter") && !out.contains("Open the options"), "{out}");
}

#[test]
fn text_for_screen_readers_stands_for_what_is_hidden_from_them() {
    // WooCommerce shows a sale's prices to sighted readers only (`aria-hidden`) and says them again for screen
    // readers: the latter are the prices left; a control's label after a visible one still goes.
    let cards: String = (1..=4)
        .map(|n| {
            format!(
                "<li class=\"product\"><h2><a href=\"/p/{n}\">Canvas gear bag number {n} with straps</a></h2>\
                 <span class=\"price\"><del aria-hidden=\"true\"><bdi>$3{n}.00</bdi></del> \
                 <span class=\"screen-reader-text\">Original price was: $3{n}.00.</span>\
                 <ins aria-hidden=\"true\"><bdi>$2{n}.00</bdi></ins>\
                 <span class=\"screen-reader-text\">Current price is: $2{n}.00.</span></span>\
                 <p><span>Add</span><span class=\"screen-reader-text\">to your cart</span></p></li>"
            )
        })
        .collect();
    let html = format!(
        "<html><head><title>Gear bags</title></head><body><main><h1>Gear bags</h1><p>Bags of waxed canvas for \
         every vehicle, sewn in our own workshop.</p><ul class=\"products\">{cards}</ul></main></body></html>"
    );
    let out = md(&html);
    assert!(out.contains("Original price was: $33.00.") && out.contains("Current price is: $23.00."), "{out}");
    assert!(!out.contains("to your cart"), "{out}");
}

#[test]
fn a_promotion_set_into_an_article_does_not_end_it() {
    // A marker and its linked headlines between two parts of the story: the marker goes, the story goes on.
    let part = |n: u32| {
        format!(
            "<div class=\"text-description\"><p>Paragraph {n} of the report says what the council decided about the \
             harbour, who voted for it, and what it will cost the town.</p><p>The second paragraph of part {n} \
             quotes the mayor, who said the work would start in the spring.</p></div>"
        )
    };
    let html = format!(
        "<html><head><title>Harbour plan</title><meta property=\"og:type\" content=\"article\"></head><body>\
         <article>{}{}<div class=\"text-description\"><p><strong>DON'T MISS</strong></p><p><a href=\"/a\">Storm \
         closes the bridge</a> [VIDEO] <a href=\"/b\">Ferry fares rise again this winter</a> [INSIGHT]</p></div>\
         {}<div class=\"text-description\"><p><strong>DON'T MISS</strong><br><a href=\"/c\">Council elects a new \
         leader after the vote</a><br><a href=\"/d\">Fishermen protest the quota</a></p></div>{}</article>\
         </body></html>",
        part(1),
        part(2),
        part(3),
        part(4)
    );
    let out = md(&html);
    assert!(out.contains("Paragraph 3 of the report") && out.contains("part 4 quotes the mayor"), "{out}");
    assert!(!out.contains("DON'T MISS") && !out.contains("Storm closes") && !out.contains("Fishermen"), "{out}");
}

#[test]
fn a_news_agencys_credit_line_is_left_out() {
    // Who reported and edited a story, as the agencies print it at its end.
    let html = r#"<html><head><title>Ferry Service Resumes</title><meta property="og:type" content="article"></head>
<body><article><h1>Ferry Service Resumes</h1>
<p>The ferries to the islands sailed again on Tuesday after three days in port, the operator said in a statement.</p>
<p>The harbour board took a year over the new timetable, which has the first boat leaving at seven in the morning.</p>
<p><em>Reporting by Jane Roe; additional reporting by Ann Lee; Editing by John Doe</em></p>
<p>Associated Press writer Sam Poe contributed to this report.</p>
</article></body></html>"#;
    let out = md(html);
    assert!(out.contains("three days in port") && out.contains("took a year"), "{out}");
    assert!(!out.contains("Jane Roe") && !out.contains("Sam Poe"), "{out}");
}

#[test]
fn a_rule_drawn_in_text_is_left_out() {
    // A news wire separates a story's parts with a paragraph of underscores; a heading of them is a rule too.
    let html = r#"<html><head><title>Harbour Reopens</title></head><body><article><h1>Harbour Reopens</h1>
<p>The harbour reopened on Friday after the storm, and the fishing boats went out before dawn for the first time.</p>
<p>___</p>
<h2>____________</h2>
<p>The ferries follow on Monday, the operator said, with the first boat leaving at seven in the morning.</p>
<p>* * *</p>
</article></body></html>"#;
    let out = md(html);
    assert!(out.contains("before dawn") && out.contains("the first boat"), "{out}");
    assert!(!out.contains("\\_") && !out.contains("\\*"), "{out}");
}

#[test]
fn an_advertisements_label_is_left_out() {
    // What frames an ad inside the text ("Advertisement", "Story continues below") is not the text; a sentence
    // that speaks of advertising is.
    let html = r#"<html><head><title>The Harbour Reopens</title></head><body><article><h1>The Harbour Reopens</h1>
<p>The harbour reopened on Friday after the storm, and the fishing boats went out before dawn for the first time.</p>
<p>ADVERTISEMENT</p>
<p><strong>Story continues below</strong></p>
<h3>Advert</h3>
<p>The town council will spend its advertising budget on the harbour festival in June, the mayor said.</p>
</article></body></html>"#;
    let out = md(html);
    assert!(out.contains("before dawn") && out.contains("advertising budget"), "{out}");
    assert!(!out.contains("ADVERTISEMENT") && !out.contains("Story continues") && !out.contains("Advert\n"), "{out}");
}

#[test]
fn a_categorys_introduction_beside_the_region_is_kept() {
    // A shop category: its introduction in one container, its longer text (where the region settles) in the next
    // one, a few levels deep; the introduction is kept, the filters and the footer are not.
    let para = "Standing desks let you change position through the day, which eases the strain on your back, your \
                neck and your wrists, and keeps you alert in the long afternoon hours at work. ";
    let long = format!("<p>{}</p>", para.repeat(2)).repeat(5);
    let html = format!(
        "<html><body><aside class=\"sidebar\"><ul><li><a href=\"/f1\">Under $500</a></li>\
         <li><a href=\"/f2\">In stock</a></li></ul></aside>\
         <div><h1>Standing Desks</h1><div class=\"intro-wrap\"><div class=\"txt\"><p>Our standing desks are chosen \
         by our ergonomist for people who sit too long: sturdy frames, quiet motors and tops in every size.</p>\
         <a href=\"#more\">learn more</a></div></div>\
         <div id=\"more\"><div class=\"row\"><div class=\"columns\"><h2>Learn more about standing desks</h2>{long}\
         </div></div></div></div>\
         <footer><p>Copyright Desk Shop, all rights reserved, call us any day of the week.</p></footer></body></html>"
    );
    let md = md(&html);
    assert!(md.contains("Our standing desks are chosen"), "{md}");
    assert!(md.contains("Learn more about standing desks"), "{md}");
    assert!(!md.contains("Under $500") && !md.contains("Copyright"), "{md}");
}

#[test]
fn every_table_keeps_its_header_row() {
    // A doc page's tables of parameters share their columns' names: the header row said again is each table's
    // own, not a repeated line; so is a row of data that two tables share (issue 39: every row of a data table is
    // kept; a row led by a `th` naming it is data).
    let table = |name: &str, about: &str| {
        format!(
            "<table><tr><th>Attribute</th><th>Data type</th><th>Description</th></tr>\
             <tr><th>{name}</th><td>String</td><td>{about}</td></tr>\
             <tr><th>Required field</th><td>Yes</td><td>Every feed must supply this one, or it is refused</td></tr>\
             </table>"
        )
    };
    let html = format!(
        "<html><head><title>Feed specification</title></head><body><main><h1>Feed specification</h1>\
         <p>Each table below groups the attributes of a feed by category, with their types and what they mean.</p>\
         <h2>Basic data</h2>{}<h2>Media</h2>{}</main></body></html>",
        table("item_id", "The merchant's own identifier of the item, stable over time"),
        table("image_url", "The address of the item's main image, served over HTTPS")
    );
    let out = md(&html);
    assert_eq!(out.matches("| Attribute | Data type | Description |\n| --- |").count(), 2, "{out}");
    assert_eq!(out.matches("| Required field | Yes |").count(), 2, "{out}");
}

#[test]
fn a_doc_pages_header_before_its_table_of_contents_is_kept() {
    // A doc generator's layout: the title, the summary and the prerequisites in a header container of their own
    // (longer than a shop's introduction), the table of contents in an aside, then the body. The header is the
    // page's introduction; the table of contents is not.
    let para = "Each call returns a promise at once, and the handlers attached to it run when the operation ends, \
                whether it succeeded or failed, so that the caller never waits on the network itself. ";
    let body: String =
        (1..=12).map(|i| format!("<h2>Using the API, part {i}</h2><p>In part {i}: {}</p>", para.repeat(4))).collect();
    let needs = "You should know how to write a function, how to call one and what a callback is, and have read the \
                 earlier lessons on events and timers. ";
    let html = format!(
        "<html><head><title>Using promises</title></head><body><main><div class=\"layout-header\">\
         <h1>Using promises</h1><section><p>A <a href=\"/promise\">promise</a> is an object returned by an \
         asynchronous function, which represents the current state of the operation when it is returned.</p>\
         <p>Prerequisites: {}</p></section></div>\
         <aside class=\"toc\"><h2>In this article</h2><ul><li><a href=\"#using\">Using the API</a></li>\
         <li><a href=\"#chaining\">Chaining promises</a></li></ul></aside>\
         <div class=\"layout-body\">{body}</div></main></body></html>",
        needs.repeat(8)
    );
    let out = md(&html);
    assert!(out.contains("is an object returned by an") && out.contains("Prerequisites: You should"), "{out}");
    assert!(out.contains("so that the caller never waits"), "{out}");
    assert!(!out.contains("In this article"), "{out}");
}

#[test]
fn an_underscore_inside_a_word_is_not_escaped() {
    // Code names in documentation (`send_sms`, `__init__`) are one word: only an `_` that could open emphasis, one
    // not preceded by a letter or digit, is escaped.
    let html = r#"<html><head><title>Sending a Message</title></head><body><main><h1>Sending a Message</h1>
<p>Call send_sms with the account_sid and the auth_token of your account, as the quickstart showed before.</p>
<p>The class defines __init__ and _private_helper, and keeps the snake__case names the library always used.</p>
</main></body></html>"#;
    let out = md(html);
    assert!(out.contains("Call send_sms with the account_sid and the auth_token of"), "{out}");
    assert!(out.contains(r"defines \_\_init__ and \_private_helper, and keeps the snake__case names"), "{out}");
}

#[test]
fn spans_side_by_side_are_separate_words() {
    // An API reference sets a field's name and its type in two spans a flex row lays apart, with no space between
    // them in the HTML: they are two words, not `idstring`. A highlighter's spans in code stay as they are.
    let html = r#"<html><head><title>The Charge Object</title></head><body><main><h1>The Charge Object</h1>
<ul><li><h4><span><span>id</span><span>string</span></span></h4><p>Unique identifier for the object, given when the charge is created by the API.</p></li>
<li><h4><span><span>amount</span><span>integer</span></span></h4><p>Amount intended to be collected by this payment, in the smallest currency unit.</p></li></ul>
<p>Charges cost <span>$</span><span>1,299</span> a <span>year</span><span>.</span> Quoted as <span>“</span><span>Atomic</span><span>”</span> in the <span>terms.</span><span>See</span> them.</p>
<pre><span>charge</span><span>.id</span></pre>
</main></body></html>"#;
    let out = md(html);
    assert!(out.contains("id string") && out.contains("amount integer"), "{out}");
    // Not before punctuation, nor after a currency sign or an opening quote; after a sentence's end, yes.
    assert!(out.contains("cost $1,299 a year. Quoted as “Atomic” in the terms. See them."), "{out}");
    assert!(out.contains("charge.id"), "{out}");
}

#[test]
fn a_pages_last_modified_line_is_left_out() {
    // Doc sites close a page with when it last changed (MDN, MediaWiki, Docsy): the site's record, not the text.
    let html = r#"<html><head><title>Using Fetch</title></head><body><main><h1>Using Fetch</h1>
<p>The Fetch API provides a JavaScript interface for making HTTP requests and processing the responses they return.</p>
<p>Fetch is the modern replacement for XMLHttpRequest, and it uses promises instead of callbacks throughout.</p>
<h2>Help improve the docs</h2>
<p>This page was last modified on Aug 20, 2025 by <a href="/contributors.txt">the contributors</a>.</p>
</main></body></html>"#;
    let out = md(html);
    assert!(out.contains("uses promises instead of callbacks"), "{out}");
    assert!(!out.contains("last modified") && !out.contains("Help improve"), "{out}");
}

#[test]
fn a_page_builders_widget_of_post_content_is_content() {
    // Elementor names every block a widget; the one holding the post names it a widget of post content, and its
    // text is the page's, where a sidebar's widgets are the frame's.
    let html = r#"<html><head><title>Why Personalization Matters</title></head><body><div class="elementor">
<div class="elementor-element elementor-widget elementor-widget-heading"><div class="elementor-widget-container">
<h1>Why Personalization Matters</h1></div></div>
<div class="elementor-element post_content elementor-widget elementor-widget-theme-post-content">
<div class="elementor-widget-container">
<p>Shoppers expect brands to know their preferences, anticipate their needs, and deliver tailored experiences.</p>
<p>Done right, personalization creates a connection that feels genuine, driving satisfaction and retention.</p>
<p>Studies show that customers are more likely to buy from brands that offer tailored experiences, by far.</p>
</div></div>
<div class="elementor-element elementor-widget elementor-widget-sidebar"><div class="elementor-widget-container">
<p>Subscribe to our weekly letter of the best ideas on commerce, search, merchandising and much more besides.</p>
</div></div></div>
<div class="site-info"><p>Our company helps brands of every size sell more online, with search, merchandising, content
management and personalization in one platform, trusted by the largest retailers of the world since the year 2000.</p></div>
</body></html>"#;
    let out = md(html);
    assert!(out.contains("know their preferences") && out.contains("tailored experiences, by far"), "{out}");
    assert!(!out.contains("weekly letter"), "{out}");
}

#[test]
fn a_page_whose_every_block_is_a_widget_keeps_its_grid() {
    // Amazon names every block of a page `celwidget`, its grid of best sellers as its menus: most of the page's text
    // is "widgets", so the word says nothing of any of them.
    let items: String = (1..=6)
        .map(|n| {
            format!(
                "<li class=\"grid-item\"><div class=\"faceout\"><a href=\"/dp/{n}\">Wireless earbuds model {n} with \
                 noise cancelling and a charging case</a><span>4.{n} out of 5 stars</span><span>${n}9.99</span></div></li>"
            )
        })
        .collect();
    let html = format!(
        r#"<html><head><title>Best Sellers in Electronics</title></head><body>
<header><nav><a href="/">Home</a> <a href="/deals">Deals</a></nav></header>
<div class="celwidget"><p>Our most popular products based on sales, updated frequently through the day.</p></div>
<div class="celwidget"><h1>Best Sellers in Electronics</h1><ol class="grid-row">{items}</ol></div>
</body></html>"#
    );
    let out = md(&html);
    assert!(out.contains("Wireless earbuds model 1") && out.contains("Wireless earbuds model 6"), "{out}");
    assert!(out.contains("4.3 out of 5 stars"), "{out}");
    assert!(!out.contains("Deals"), "{out}");
}
