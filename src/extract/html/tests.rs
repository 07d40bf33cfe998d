use super::*;

/// Records tokens as lines, merging adjacent text pieces (how text is split is not part of the contract).
#[derive(Default)]
struct Record(Vec<String>);

impl Sink for Record {
    fn start_tag(&mut self, tag: &Tag) {
        let attrs: Vec<String> = tag.attrs.iter().map(|a| format!(" {}={:?}", a.name, a.value)).collect();
        let close = if tag.self_closing { "/" } else { "" };
        self.0.push(format!("<{}{}{close}>", tag.name, attrs.concat()));
    }
    fn end_tag(&mut self, name: &str) {
        self.0.push(format!("</{name}>"));
    }
    fn text(&mut self, text: &str) {
        match self.0.last_mut() {
            Some(last) if last.starts_with('"') => {
                last.pop();
                last.push_str(&format!("{text}\""));
            }
            _ => self.0.push(format!("\"{text}\"")),
        }
    }
    fn comment(&mut self, text: &str) {
        self.0.push(format!("<!--{text}-->"));
    }
}

fn tokens_chunked(input: &[u8], chunk: usize) -> Vec<String> {
    let mut t = Tokenizer::new();
    let mut r = Record::default();
    for piece in input.chunks(chunk.max(1)) {
        t.feed(piece, &mut r);
    }
    t.finish(&mut r);
    r.0
}

/// Tokenizes at chunk sizes 1, 2, 3, 7, 64 and whole; asserts they agree and returns the tokens.
#[track_caller]
fn check(input: &str, expected: &[&str]) {
    let whole = tokens_chunked(input.as_bytes(), input.len());
    for size in [1, 2, 3, 7, 64] {
        assert_eq!(tokens_chunked(input.as_bytes(), size), whole, "chunk size {size} differs for {input:?}");
    }
    assert_eq!(whole, expected, "input {input:?}");
}

#[test]
fn attribute_quoting() {
    check(
        r#"<a href=x class='y z' data-q="a&amp;b" checked title=t&gt;>"#,
        &[r#"<a href="x" class="y z" data-q="a&b" checked="" title="t>">"#],
    );
    check("<img src=a.png/>", &[r#"<img src="a.png/">"#]);
    check("<br/><input disabled/>", &["<br/>", r#"<input disabled=""/>"#]);
    check(r#"<p a="1" a="2">"#, &[r#"<p a="1">"#]);
    check("<DIV CLASS=Big>x</DIV>", &[r#"<div class="Big">"#, "\"x\"", "</div>"]);
}

#[test]
fn character_references() {
    check("&lt;&#65;&#x42;&#X43;&copy;&amp", &["\"<ABC©&\""]);
    check("&notit; &nosuch; & &#; &#x;", &["\"¬it; &nosuch; & &#; &#x;\""]);
    check("&#0;&#x110000;&#128;&#150;", &["\"\u{FFFD}\u{FFFD}€–\""]);
    check("&NotEqualTilde; &nbsp;", &["\"≂̸ \u{a0}\""]);
    // Without `;`, the longest legacy name that starts the run of letters and digits, however long the run.
    check("&frac12345 &middotted &ampersand &quotes &ltgt", &["\"½345 ·ted &ersand \"es <gt\""]);
    // In attributes a legacy reference followed by `=` or a letter stays as written.
    check(r#"<a href="?a=1&copy=2&amp;b=&lt3&gt;">"#, &[r#"<a href="?a=1&copy=2&b=&lt3>">"#]);
}

#[test]
fn comments_and_markup_declarations() {
    check("a<!-- b -- c -->d", &["\"a\"", "<!-- b -- c -->", "\"d\""]);
    check("<!DOCTYPE html><?xml x?><p>", &["<p>"]);
    check("<!---->x", &["<!---->", "\"x\""]);
    check("<!-- unterminated", &["<!-- unterminated-->"]);
}

#[test]
fn names_read_in_runs_say_what_byte_by_byte_did() {
    check("<DiV ClAsS=a dAtA-X=\"1\" a=b=c\tB/>", &[r#"<div class="a" data-x="1" a="b=c" b=""/>"#]);
    check("<sPaN\nid=x>y</SpAn\t>", &[r#"<span id="x">"#, "\"y\"", "</span>"]);
}

#[test]
fn raw_text_elements() {
    check(
        r#"<script>if (a<b && c) { s = "</scr" + "ipt>"; }</script>x"#,
        &["<script>", "\"if (a<b && c) { s = \"</scr\" + \"ipt>\"; }\"", "</script>", "\"x\""],
    );
    check("<style>p > a { }</STYLE >y", &["<style>", "\"p > a { }\"", "</style>", "\"y\""]);
    check("<title>A &amp; <b>B</title>", &["<title>", "\"A & <b>B\"", "</title>"]);
    check("<script>x</scrip", &["<script>", "\"x</scrip\""]);
    check("<script/>text", &["<script/>", "\"text\""]);
}

#[test]
fn malformed_input_becomes_text_or_is_dropped() {
    check("a < b <3 c", &["\"a < b <3 c\""]);
    check("x</>y", &["\"xy\""]);
    check("</ bogus>z", &["\"z\""]);
    check("<div class=\"x", &[]);
    check("<a <b>", &[r#"<a <b="">"#]);
    check("t<", &["\"t<\""]);
    check("t</", &["\"t</\""]);
}

#[test]
fn utf8_split_across_chunks() {
    check("<p>héllo wörld – 日本</p>", &["<p>", "\"héllo wörld – 日本\"", "</p>"]);
    // Invalid UTF-8 becomes U+FFFD, identically at every chunk size.
    let bytes = b"<p>a\xffb</p>";
    let whole = tokens_chunked(bytes, bytes.len());
    assert_eq!(whole, vec!["<p>", "\"a\u{FFFD}b\"", "</p>"]);
    assert_eq!(tokens_chunked(bytes, 1), whole);
}

#[test]
fn whitespace_collapse() {
    assert_eq!(collapse_whitespace("  a \n\t b\u{a0}\u{a0}c  "), "a b c");
    assert_eq!(collapse_whitespace(""), "");
}

#[test]
fn find_agrees_with_a_plain_scan() {
    // Every length around the eight-byte word, the byte at every place, bytes that differ in one bit, high bytes.
    for len in 0..40 {
        for at in 0..=len {
            for (byte, filler) in [(b'<', b'='), (b'"', b'\xa2'), (0x80, 0x00), (b'\'', b'&')] {
                let mut hay = vec![filler; len];
                if let Some(b) = hay.get_mut(at) {
                    *b = byte;
                }
                assert_eq!(super::find(&hay, byte), hay.iter().position(|&b| b == byte), "{len} {at} {byte}");
            }
        }
    }
    assert_eq!(super::find(b"aaaaaaaa<<<<<<<<", b'<'), Some(8));
    assert_eq!(super::find(b"\x3c\x3d\x3b\x3c", b'<'), Some(0));
}

#[test]
fn raw_text_a_sink_does_not_want_is_skipped_but_ends_the_element() {
    struct NoRaw(Vec<String>);
    impl Sink for NoRaw {
        fn start_tag(&mut self, tag: &Tag) {
            self.0.push(format!("<{}>", tag.name));
        }
        fn end_tag(&mut self, name: &str) {
            self.0.push(format!("</{name}>"));
        }
        fn text(&mut self, text: &str) {
            self.0.push(text.to_owned());
        }
        fn wants_raw_text(&self) -> bool {
            false
        }
    }
    let html = b"<script>if (a </s) { x = '</scr' }</script>t<title>a &amp; b</title>";
    for size in [1, 2, 3, 7, html.len()] {
        let mut sink = NoRaw(Vec::new());
        let mut t = Tokenizer::new();
        for chunk in html.chunks(size) {
            t.feed(chunk, &mut sink);
        }
        t.finish(&mut sink);
        assert_eq!(sink.0, ["<script>", "</script>", "t", "<title>", "a & b", "</title>"], "chunk size {size}");
    }
}

#[test]
fn the_packed_entity_table() {
    assert_eq!(entities::OFFSETS.len(), 2231);
    let mut previous = "";
    let (mut legacy_longest, mut longest) = (0, 0);
    for i in 0..entities::OFFSETS.len() {
        let (name, value) = entities::entry(i).unwrap();
        assert!(name > previous, "sorted at {i}: {previous} then {name}");
        longest = longest.max(name.len());
        if !name.ends_with(';') {
            legacy_longest = legacy_longest.max(name.len());
        }
        assert!(!value.is_empty());
        assert_eq!(entities::lookup(name), Some(value));
        previous = name;
    }
    assert_eq!(legacy_longest, entities::LEGACY_NAME_MAX, "the legacy forms' longest name");
    assert_eq!(longest, entities::NAME_MAX, "the longest name");
    assert_eq!(entities::lookup("amp;"), Some("&"));
    assert_eq!(entities::lookup("AElig"), Some("\u{c6}"));
    assert_eq!(entities::lookup("NotNestedGreaterGreater;"), Some("\u{2aa2}\u{338}"));
    assert_eq!(entities::lookup("zwnj;"), Some("\u{200c}"));
    assert_eq!(entities::lookup("nosuch;"), None);
    assert_eq!(entities::lookup(""), None);
}

#[test]
fn attributes_are_capped_per_tag() {
    let tag = |n: usize, extra: &str| format!("<p{}{extra}>", (0..n).map(|i| format!(" a{i}=v")).collect::<String>());
    let kept = |input: &str| {
        let mut r = Record::default();
        Tokenizer::run(input.as_bytes(), &mut r);
        r.0.first().map(|t| t.matches('=').count()).unwrap_or(0)
    };
    assert_eq!(kept(&tag(ATTRS_MAX, "")), ATTRS_MAX);
    assert_eq!(kept(&tag(ATTRS_MAX + 1, "")), ATTRS_MAX);
    // Below the cap a repeat is ignored and leaves room; past it every attribute is dropped.
    assert_eq!(kept(&tag(ATTRS_MAX - 1, " a0=w last=x")), ATTRS_MAX);
    check(
        &tag(ATTRS_MAX - 1, " a0=w last=x b=y"),
        &[&tag(ATTRS_MAX - 1, " last=x").replace("=v", "=\"v\"").replace("=x", "=\"x\"")],
    );
}

#[test]
fn a_tag_with_forty_thousand_attributes_takes_linear_time() {
    // The duplicate check once scanned every earlier attribute: 3.65 s of CPU for this tag in a release build.
    let input = format!("<div{}>x</div>", (0..40_000).map(|i| format!(" a{i}")).collect::<String>());
    let started = std::time::Instant::now();
    let tokens = tokens_chunked(input.as_bytes(), input.len());
    // Quadratic, this debug build takes far more than 10 s; linear, a few milliseconds, even on a loaded machine.
    assert!(started.elapsed() < std::time::Duration::from_secs(10), "{:?}", started.elapsed());
    assert_eq!(tokens.len(), 3);
}

/// A text run of 3 MB comes in pieces of at most `TEXT_RUN_BYTES_MAX` bytes (each at most three times that once
/// decoded: an invalid byte becomes U+FFFD) that decode to the run, at any chunk size: ASCII text, references and
/// characters at every distance from a cut, stretches of letters or of wide characters with no byte that ends a
/// piece, and raw text. The tokenizer once buffered the run whole (and its decoded copy).
#[test]
fn a_long_text_run_comes_in_pieces_that_decode_to_it() {
    #[derive(Default)]
    struct Pieces(Vec<String>);
    impl Sink for Pieces {
        fn start_tag(&mut self, _tag: &Tag) {}
        fn end_tag(&mut self, _name: &str) {}
        fn text(&mut self, text: &str) {
            self.0.push(text.to_owned());
        }
    }
    let parts: [&[u8]; 7] =
        [b"word &amp; w\xc3\xb6rd ", b"&#x1F600;&lt", b"\xe6\x97\xa5\xff", b"&#128;x", b"&notin", b"; ", b"\n\t"];
    let mut run = Vec::new();
    let mut i = 0usize;
    while run.len() < 3_000_000 {
        run.extend_from_slice(parts.get(i % parts.len()).copied().unwrap_or_default());
        match i % 997 {
            0 => run.extend(std::iter::repeat_n(b'x', 70_000 + i % 13)),
            1 => run.extend(std::iter::repeat_n("日".as_bytes(), 30_000 + i % 7).flatten()),
            2 => run.extend(b"&".iter().chain(std::iter::repeat_n(&b'y', 40_000 + i % 5))),
            _ => {}
        }
        i += 1;
    }
    let mut expected = String::new();
    decode_into(&run, false, &mut expected);
    for (open, close, expected) in
        [("<p>", "</p>", expected), ("<script>", "</script>", String::from_utf8_lossy(&run).into_owned())]
    {
        let html = [open.as_bytes(), &run, close.as_bytes()].concat();
        for size in [html.len(), 4_096, 7, 1] {
            let mut pieces = Pieces::default();
            let mut t = Tokenizer::new();
            for chunk in html.chunks(size) {
                t.feed(chunk, &mut pieces);
            }
            t.finish(&mut pieces);
            assert!(pieces.0.len() >= run.len() / TEXT_RUN_BYTES_MAX, "{open} {size}: {} pieces", pieces.0.len());
            let longest = pieces.0.iter().map(String::len).max().unwrap_or(0);
            assert!(longest <= 3 * TEXT_RUN_BYTES_MAX, "{open} {size}: a piece of {longest} bytes");
            assert!(pieces.0.concat() == expected, "{open} chunk size {size}: the pieces differ from the run");
        }
    }
}

/// Names are cut to `NAME_BYTES_MAX` bytes and a value longer than `VALUE_BYTES_MAX` is dropped (the attribute kept,
/// empty), quoted or not, at every chunk size; a cut tag name still ends its element.
#[test]
fn names_are_cut_and_long_values_dropped() {
    let name = "x".repeat(NAME_BYTES_MAX);
    check(&format!("<{name}yyy a=1>t</{name}zz>"), &[&format!("<{name} a=\"1\">"), "\"t\"", &format!("</{name}>")]);
    check(&format!("<p {name}QQQ=1 b=2>"), &[&format!("<p {name}=\"1\" b=\"2\">")]);
    let fits = "v".repeat(VALUE_BYTES_MAX);
    let over = "v".repeat(VALUE_BYTES_MAX + 1);
    for (quote, tail) in [("\"", ""), ("'", ""), ("", " ")] {
        check(&format!("<a href={quote}{fits}{quote}{tail} class=k>"), &[&format!("<a href=\"{fits}\" class=\"k\">")]);
        check(&format!("<a href={quote}{over}{quote}{tail} class=k>"), &["<a href=\"\" class=\"k\">"]);
        check(&format!("<p hidden={quote}{over}{quote}{tail}>x"), &["<p hidden=\"\">", "\"x\""]);
    }
    // The value is counted before decoding: references that decode shorter do not let more in.
    let refs = "&amp;".repeat(VALUE_BYTES_MAX / 5 + 1);
    check(&format!("<a title=\"{refs}\">"), &["<a title=\"\">"]);
}

/// Issue 33, finding 6: a tag whose one `href` is 3 MB (or whose name is) costs the tokenizer its caps, not the
/// value's bytes: the buffers once grew to the whole value, and its decoded copy beside them.
#[test]
fn a_tag_of_megabytes_costs_the_caps() {
    let huge = "h".repeat(3_000_000);
    for page in [format!("<a href=\"{huge}\">x</a>"), format!("<a href={huge}>x</a>"), format!("<a{huge} b{huge}=1>")] {
        for size in [page.len(), 65_536, 7] {
            let mut t = Tokenizer::new();
            let mut r = Record::default();
            for piece in page.as_bytes().chunks(size) {
                t.feed(piece, &mut r);
            }
            t.finish(&mut r);
            let held = t.name.capacity()
                + t.attr_name.capacity()
                + t.attr_value.capacity()
                + t.tag.name.capacity()
                + t.tag.attrs.iter().chain(&t.spare).map(|a| a.name.capacity() + a.value.capacity()).sum::<usize>();
            assert!(held <= 4 * (NAME_BYTES_MAX + VALUE_BYTES_MAX), "chunks of {size}: {held} bytes held");
        }
    }
}

/// The recorded search pages (the project's `fixtures/search/`) tokenize the same whatever the chunking.
#[test]
fn recorded_search_pages_tokenize_the_same_in_any_chunks() {
    for name in ["ddg_html_results.html", "ddg_lite_results.html", "mojeek_results.html", "ddg_anomaly.html"] {
        let path = format!("{}/../../fixtures/search/{name}", env!("CARGO_MANIFEST_DIR"));
        let page = std::fs::read(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
        let whole = tokens_chunked(&page, page.len());
        for size in [1, 2, 3, 7, 64] {
            assert_eq!(tokens_chunked(&page, size), whole, "{name} at chunk size {size}");
        }
    }
}

#[test]
fn the_floor_of_a_byte_is_a_character_boundary() {
    let s = "aé日b"; // a (0), é (1..3), 日 (3..6), b (6..7)
    let floors: Vec<usize> = (0..10).map(|at| floor_char_boundary(s, at)).collect();
    assert_eq!(floors, [0, 1, 1, 3, 3, 3, 6, 7, 7, 7]);
    assert_eq!(floor_char_boundary("", 5), 0);
}
