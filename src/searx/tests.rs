#![allow(clippy::unwrap_used, clippy::indexing_slicing)]

use super::*;

fn p(list: &[(&str, &str)]) -> Vec<(String, String)> {
    list.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()
}

#[test]
fn languages_map_to_regions() {
    let r = |l: &str| region_of_language(l).map_err(|e| e.code);
    assert_eq!(r("de-DE"), Ok(Some("de-de".into())));
    assert_eq!(r("en-US"), Ok(Some("us-en".into())));
    assert_eq!(r("en-GB"), Ok(Some("uk-en".into())));
    assert_eq!(r("fr-CH"), Ok(Some("ch-fr".into())));
    assert_eq!(r("de"), Ok(Some("de-de".into())));
    assert_eq!(r("en"), Ok(Some("us-en".into())));
    assert_eq!(r("sv"), Ok(Some("se-sv".into())));
    // A language in its main country takes DuckDuckGo's code for it.
    assert_eq!(r("ja-JP"), Ok(Some("jp-jp".into())));
    assert_eq!(r("ko-KR"), Ok(Some("kr-kr".into())));
    assert_eq!(r("sv-SE"), Ok(Some("se-sv".into())));
    assert_eq!(r("pt-BR"), Ok(Some("br-pt".into())));
    // Traditional Chinese as DuckDuckGo writes it (tw-zh is no region of its own).
    assert_eq!(r("zh-TW"), Ok(Some("tw-tzh".into())));
    for none in ["all", "auto", "", "ALL"] {
        assert_eq!(r(none), Ok(Some("wt-wt".into())), "{none}");
    }
    for bad in ["xx", "english", "en-USA", "e-US", "zh-Hans", "de_DE"] {
        assert_eq!(r(bad), Err("language_invalid"), "{bad}");
    }
}

#[test]
fn parameters_map_onto_the_controls() {
    use crate::search::controls::{SafeSearch, TimeRange};
    let got = parse(&p(&[
        ("q", "  rust  async "),
        ("format", "json"),
        ("pageno", "2"),
        ("time_range", "week"),
        ("language", "de-DE"),
        ("safesearch", "2"),
        ("categories", "general,news"),
        ("engines", "Bing,google"),
    ]))
    .unwrap();
    assert_eq!(got.search.query, "rust async");
    assert_eq!(got.search.max_results, 20);
    assert_eq!((got.format, got.pageno), (Format::Json, 2));
    assert_eq!(got.search.controls.time_range, Some(TimeRange::Week));
    assert_eq!(got.search.controls.safesearch, Some(SafeSearch::Strict));
    assert_eq!(got.search.controls.region.as_ref().map(|r| r.code()), Some("de-de"));
    assert!(got.other_categories.is_empty());
    assert_eq!(got.engines, ["bing", "google"]);
    // Open WebUI's empty values count as absent; no format is the page.
    let owui = parse(&p(&[("q", "x"), ("time_range", ""), ("categories", ""), ("safesearch", "1")])).unwrap();
    assert_eq!((owui.format, owui.search.max_results, owui.search.controls.time_range), (Format::Html, 10, None));
    let images = parse(&p(&[("q", "x"), ("categories", "images")])).unwrap();
    assert_eq!(images.other_categories, ["images"]);
}

#[test]
fn each_bad_parameter_has_its_code() {
    let code = |list: &[(&str, &str)]| parse(&p(list)).map(|_| ()).map_err(|e| (e.status, e.code));
    assert_eq!(code(&[("format", "json")]), Err((400, "query_missing")));
    assert_eq!(code(&[("q", "  ")]), Err((400, "query_empty")));
    assert_eq!(code(&[("q", "x"), ("format", "xml")]), Err((400, "format_unsupported")));
    assert_eq!(code(&[("q", "x"), ("format", "yaml")]), Err((400, "format_unsupported")));
    assert_eq!(code(&[("q", "x"), ("pageno", "0")]), Err((400, "pageno_invalid")));
    assert_eq!(code(&[("q", "x"), ("pageno", "two")]), Err((400, "pageno_invalid")));
    assert_eq!(code(&[("q", "x"), ("time_range", "decade")]), Err((400, "time_range_invalid")));
    assert_eq!(code(&[("q", "x"), ("safesearch", "3")]), Err((400, "safesearch_invalid")));
    assert_eq!(code(&[("q", "x"), ("language", "klingon")]), Err((400, "language_invalid")));
    let many = vec!["a"; NAMES_MAX + 1].join(",");
    assert_eq!(code(&[("q", "x"), ("engines", &many)]), Err((400, "names_too_many")));
}

#[test]
fn results_take_searxngs_shape() {
    let r = serde_json::json!({"position": 2, "title": "T", "url": "https://a.org/p/x;v?q=1#f", "snippet": "S",
        "source": "bing", "published": "2025-07-16"});
    let v = searx_result(&r);
    assert_eq!(v["url"], "https://a.org/p/x;v?q=1#f");
    assert_eq!(
        (v["title"].as_str(), v["content"].as_str(), v["engine"].as_str()),
        (Some("T"), Some("S"), Some("bing"))
    );
    assert_eq!(v["engines"], serde_json::json!(["bing"]));
    assert_eq!(v["positions"], serde_json::json!([2]));
    assert_eq!(v["score"], 0.5);
    assert_eq!(v["category"], "general");
    assert_eq!(v["publishedDate"], "2025-07-16T00:00:00");
    assert_eq!(v["parsed_url"], serde_json::json!(["https", "a.org", "/p/x", "v", "q=1", "f"]));
    assert_eq!(parsed_url("http://h"), serde_json::json!(["http", "h", "", "", "", ""]));
    // Python's urlparse splits the params off the last segment only, at its first ';'.
    assert_eq!(parsed_url("https://a.org/a;x/b;y"), serde_json::json!(["https", "a.org", "/a;x/b", "y", "", ""]));
    assert_eq!(parsed_url("https://a.org/a;x/b"), serde_json::json!(["https", "a.org", "/a;x/b", "", "", ""]));
    assert_eq!(parsed_url("https://a.org/b;y;z"), serde_json::json!(["https", "a.org", "/b", "y;z", "", ""]));
    assert!(searx_result(&serde_json::json!({"url": "https://a/"})).get("publishedDate").is_none());
}

#[test]
fn escaping_covers_text_and_attributes() {
    assert_eq!(
        page::escape(r#"<script>"x"&'y'</script>"#),
        "&lt;script&gt;&quot;x&quot;&amp;&#39;y&#39;&lt;/script&gt;"
    );
    // What XML 1.0 does not allow is left out (the RSS is written with it); tab, line feed and return stay.
    assert_eq!(page::escape("a\u{0}b\u{b}c\u{1f}d\u{fffe}\u{ffff}e\t\n\r"), "abcde\t\n\r");
}

#[test]
fn the_page_is_within_its_budget() {
    let page = page::Page::new(Some("/map".into()), "http://127.0.0.1:8402", vec!["ddg_html".into()], false);
    let home = page.home();
    assert!(home.body.len() <= page::PAGE_BYTES_MAX, "{} bytes", home.body.len());
    let text = String::from_utf8(home.body.clone()).unwrap();
    assert!(text.contains("<style>:root{"), "the stylesheet inflates");
    assert!(page.csp().starts_with("default-src 'none'; style-src 'sha256-"));
    assert!(!text.contains("<script"));
}

#[test]
fn the_next_page_keeps_the_engines_and_the_controls() {
    let page = page::Page::new(None, "http://127.0.0.1:8402", vec!["ddg_html".into(), "bing".into()], false);
    let params =
        parse(&p(&[("q", "a b"), ("engines", "bing,ddg_html"), ("time_range", "week"), ("language", "de-DE")]))
            .unwrap();
    let results: Vec<Value> = (1..=RESULTS_PER_PAGE)
        .map(|i| json!({"url": format!("https://a.org/{i}"), "title": "T", "content": "C", "engine": "bing"}))
        .collect();
    let body = page.results(&params, &searx_answer("a b", &[], &[])).body;
    assert!(!String::from_utf8(body).unwrap().contains("Next page"), "no next page without a full page");
    let mut answer = searx_answer("a b", &[], &[]);
    answer["results"] = Value::Array(results);
    let text = String::from_utf8(page.results(&params, &answer).body).unwrap();
    let next = "/search?q=a+b&amp;pageno=2&amp;time_range=week&amp;language=de-DE&amp;engines=bing%2Cddg_html";
    assert!(text.contains(&format!("<a href=\"{next}\">Next page</a>")), "{text}");
}
