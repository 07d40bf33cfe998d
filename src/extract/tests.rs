use super::*;

fn md(html: &str) -> String {
    let whole = Extractor::run(html.as_bytes(), Options::default());
    for size in [1, 2, 3, 7, 64] {
        let mut e = Extractor::new(Options::default());
        for chunk in html.as_bytes().chunks(size) {
            e.feed(chunk);
        }
        assert_eq!(e.finish(), whole, "chunk size {size}");
    }
    whole.markdown()
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
    // Escapes count: `*` is written `\*`.
    let stars = run_large(format!("<p>{}</p>", "*".repeat(TEXT_BYTES_MAX / 2 + 1)).as_bytes());
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
    for (name, html) in shapes {
        let started = std::time::Instant::now();
        let e = Extractor::run(
            &html,
            Options { base_url: Some(format!("https://example.com/{}", "d/".repeat(500))), ..Options::default() },
        );
        let elapsed = started.elapsed();
        eprintln!("{name}: {} bytes in {elapsed:?}, {} blocks", html.len(), e.blocks.len());
        assert!(elapsed < std::time::Duration::from_secs(5), "{name}: {elapsed:?}");
        assert!(e.markdown().len() <= MARKDOWN_BYTES_MAX + 64 * 1_024, "{name}");
    }
}
