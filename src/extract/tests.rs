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
