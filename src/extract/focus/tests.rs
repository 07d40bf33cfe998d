use super::*;

/// The blocks of a page written as markdown (blocks apart by a blank line, as `Extract::markdown` joins them).
fn blocks(page: &str) -> Vec<String> {
    page.trim_end().split("\n\n").map(str::to_owned).collect()
}

/// Checks the cuts of `fixtures/cut/NAME.md` against `NAME.expected`: for each case, a line `==== BUDGET | QUERY`,
/// then the cut (`none`, `head`, `query`) and the markdown expected. `UPDATE_EXPECT=1` writes what the cut gives
/// instead (review the diff).
#[track_caller]
fn check_cases(name: &str) {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/cut");
    let page = std::fs::read_to_string(dir.join(format!("{name}.md"))).unwrap();
    let path = dir.join(format!("{name}.expected"));
    let expected = std::fs::read_to_string(&path).unwrap();
    let mut actual = String::new();
    for case in expected.split("==== ").skip(1) {
        let head = case.lines().next().unwrap();
        let (budget, query) = head.split_once('|').unwrap_or((head, ""));
        let budget: usize = budget.trim().parse().unwrap();
        let fitted = fit(&blocks(&page), budget, query.trim());
        // The estimate of what is served is what the cut says it spent, within the budget.
        assert_eq!(fitted.tokens, estimate(&fitted.markdown), "{head}");
        assert!(budget == 0 || fitted.tokens <= budget, "{head}");
        actual.push_str(&format!("==== {head}\n{}\n{}\n\n", fitted.cut.name(), fitted.markdown));
    }
    if std::env::var_os("UPDATE_EXPECT").is_some() {
        std::fs::write(&path, &actual).unwrap();
    } else {
        assert_eq!(actual, expected, "{name}: UPDATE_EXPECT=1 writes what the cut gives");
    }
}

/// Sections, a table and a list: each query keeps the title, the lead and the passages that answer it, with their
/// headings (a row with its table's header), and a marker where text was left out; a query of stop words or of
/// words the page lacks, and no query, cut the head; a page within its budget is whole.
#[test]
fn a_page_of_sections_keeps_what_was_asked() {
    check_cases("tides");
}

/// One long paragraph, read as runs of sentences: what is left out between two kept runs is marked in the line.
#[test]
fn a_long_paragraph_keeps_its_sentences_asked_about() {
    check_cases("lighthouse");
}

#[test]
fn the_marker_costs_what_it_is_counted() {
    assert_eq!(estimate(MARKER) + 1, MARKER_TOKENS);
}

#[test]
fn a_query_is_its_telling_words() {
    let check = |q: &str, expected: &[&str]| assert_eq!(terms(q), expected, "{q:?}");
    check("What is the price of tides?", &["price", "tide"]);
    check("glass bus analysis prices", &["glass", "bus", "analysis", "price"]);
    check("what is the", &[]);
    check("Tide TIDES tide", &["tide"]);
    check("東京の天気", &["東", "京", "の", "天", "気"]);
    check("[a link](https://example.com/skipped) word", &["link", "word"]);
    let many: String = (0..40).map(|i| format!("w{i} ")).collect();
    assert_eq!(terms(&many).len(), QUERY_TERMS_MAX);
}

#[test]
fn a_paragraph_is_read_as_runs_of_sentences() {
    let sentence = "A sentence of fifty-eight bytes, said once and then again. ";
    let line = sentence.repeat(12);
    let runs: Vec<&str> = sentences(line.trim_end()).collect();
    // Five sentences make a run within `PASSAGE_BYTES`; twelve, three runs.
    assert_eq!(runs.iter().map(|r| r.len()).collect::<Vec<_>>(), [294, 294, 117]);
    assert_eq!(runs.join(" "), line.trim_end());
    // Never inside a link's brackets; a sentence that does not end is cut at a space past `PASSAGE_BYTES_MAX`.
    let linked = format!("{} [see the notes. Then more](https://e.com/a. b) here.", "x ".repeat(200));
    assert!(sentences(&linked).all(|r| r.matches('[').count() == r.matches(']').count()), "{linked}");
    // A bracket that never closes still lets a long line be cut at a space.
    let open = format!("(an aside that never closes. {}", "word ".repeat(400));
    assert!(sentences(open.trim_end()).all(|r| r.len() <= PASSAGE_BYTES_MAX), "{open}");
    let endless = "word ".repeat(1_000);
    let runs: Vec<&str> = sentences(endless.trim_end()).collect();
    assert!(runs.iter().all(|r| r.len() <= PASSAGE_BYTES_MAX && !r.ends_with(' ')), "{}", runs.len());
    assert_eq!(runs.concat().len() + runs.len() - 1, endless.trim_end().len());
}

/// On real pages, for any budget and query: within the budget, never a word cut, and the whole page unchanged when
/// it fits.
#[test]
fn the_cut_stays_within_its_budget_and_cuts_no_word() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures");
    let pages = ["extract_article.html", "extract/service_sections.html", "extract/table_content.html"];
    for name in pages {
        let e = crate::Extractor::run(&std::fs::read(dir.join(name)).unwrap(), crate::Options::default());
        let whole = e.markdown();
        let known: std::collections::HashSet<&str> = whole.split_whitespace().collect();
        let words: Vec<&str> = whole.split_whitespace().filter(|w| w.len() > 4).collect();
        for budget in (20..600).step_by(7) {
            let query = words.iter().skip(budget % words.len().max(1)).take(3).copied().collect::<Vec<_>>().join(" ");
            let fitted = fit(&e.blocks, budget, &query);
            assert!(fitted.tokens <= budget && fitted.tokens == estimate(&fitted.markdown), "{name} {budget}");
            for w in fitted.markdown.split_whitespace().filter(|&w| w != MARKER) {
                assert!(known.contains(w), "{name} {budget} {query:?}: {w:?} is not a word of the page");
            }
        }
        let fitted = fit(&e.blocks, estimate(&whole) + 50, "anything");
        assert_eq!((fitted.markdown.as_str(), fitted.cut), (whole.as_str(), Cut::None), "{name}");
    }
}

/// A megabyte of text: one paragraph without a sentence end, a list of as many items as passages can be, and both
/// with a query that every passage matches.
#[test]
fn the_cut_is_linear_in_the_page() {
    let started = std::time::Instant::now();
    let paragraph = "tide ".repeat(200_000);
    let list: String = (0..2 * PASSAGES_MAX).map(|i| format!("- tide {i}\n")).collect();
    for page in [vec!["# T".to_owned(), paragraph], vec!["# T".to_owned(), list]] {
        let fitted = fit(&page, 8_000, "tide");
        assert!(fitted.cut == Cut::Query && fitted.tokens <= 8_000, "{:?}", fitted.cut);
    }
    // Debug build, loaded machine: milliseconds when linear; 10 s allows any load.
    assert!(started.elapsed() < std::time::Duration::from_secs(10), "{:?}", started.elapsed());
}
