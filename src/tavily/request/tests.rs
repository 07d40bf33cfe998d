use super::*;
use serde_json::json;

const TODAY: u64 = 20_000;
const CONTEXT: Context = Context { today: TODAY, cache_ttl_s: 600, answer_within: std::time::Duration::from_secs(23) };

fn search(body: &str) -> Result<SearchCall, (u16, &'static str, Option<String>)> {
    SearchCall::from_json(body.as_bytes(), CONTEXT)
        .map_err(|e| (e.status, e.code, e.details.get("field").and_then(Value::as_str).map(str::to_owned)))
}

fn day(d: u64) -> String {
    let c = crate::clock::Civil::from_unix_ms(d * 86_400_000);
    format!("{:04}-{:02}-{:02}", c.year, c.month, c.day)
}

#[test]
fn a_plain_search_is_the_sources_search_for_five() {
    let call = search(r#"{"query":"  rust   async "}"#).unwrap();
    assert_eq!((call.search.query.as_str(), call.search.max_results, call.max_results), ("rust async", 5, 5));
    assert_eq!((call.advanced, call.raw, call.answer, call.pages()), (false, None, false, 0));
    assert_eq!(call.search.controls, crate::search::controls::Asked::default());
}

#[test]
fn each_field_reaches_the_search() {
    let call = search(
        r#"{"query":"q","max_results":0,"search_depth":"advanced","chunks_per_source":2,"include_raw_content":"text",
            "include_answer":"basic","time_range":"w","country":"germany","include_domains":["a.example"],
            "exclude_domains":["b.example"],"include_images":true,"include_favicon":true,"include_usage":true,
            "auto_parameters":false,"timeout":60,"api_key":"k"}"#,
    )
    .unwrap();
    assert_eq!((call.max_results, call.search.max_results, call.chunks), (0, 1, 2));
    assert_eq!(
        (call.advanced, call.raw, call.answer, call.favicon, call.usage),
        (true, Some(Format::Text), true, true, true)
    );
    let c = &call.search.controls;
    assert_eq!(c.time_range.map(|t| t.name()), Some("week"));
    assert_eq!(c.region.as_ref().map(|r| r.code()), Some("de-de"));
    assert_eq!(
        (c.include_domains.clone(), c.exclude_domains.clone()),
        (vec!["a.example".into()], vec!["b.example".into()])
    );
    // max_results 0 gives no results, so no page is read either.
    assert_eq!(call.pages(), 0);
    let call = search(r#"{"query":"q","max_results":9,"include_raw_content":true}"#).unwrap();
    assert_eq!((call.pages(), call.raw), (5, Some(Format::Markdown)));
}

#[test]
fn windows_ask_the_narrowest_range_that_holds_them() {
    let range = |body: &str| search(body).unwrap().search.controls.time_range.map(|t| t.name());
    assert_eq!(range(r#"{"query":"q","topic":"news"}"#), Some("week"), "news: the last 7 days");
    assert_eq!(range(r#"{"query":"q","topic":"news","days":1}"#), Some("day"));
    assert_eq!(range(r#"{"query":"q","topic":"news","days":3}"#), Some("week"));
    assert_eq!(range(r#"{"query":"q","topic":"news","days":40}"#), Some("year"));
    assert_eq!(range(r#"{"query":"q","topic":"news","days":400}"#), None);
    assert_eq!(range(r#"{"query":"q","topic":"news","days":30,"time_range":"day"}"#), Some("day"), "the narrower wins");
    // As Tavily reads it, `days` bounds news only (tavily-python's qna_search sends it with general).
    assert_eq!(range(r#"{"query":"q","topic":"general","days":7}"#), None);
    let start = format!(r#"{{"query":"q","start_date":"{}"}}"#, day(TODAY - 20));
    assert_eq!(range(&start), Some("month"));
    let call = search(&start).unwrap();
    assert_eq!((call.oldest, call.search.max_results), (Some(TODAY - 20), MAX_RESULTS_MAX), "filtered: asks for all");
    assert_eq!(search(r#"{"query":"q","topic":"news","days":2}"#).unwrap().oldest, Some(TODAY - 2));
    // Both bounds: the later one.
    let both = format!(r#"{{"query":"q","topic":"news","days":1,"start_date":"{}"}}"#, day(TODAY - 20));
    assert_eq!(search(&both).unwrap().oldest, Some(TODAY - 1));
}

#[test]
fn prefer_keeps_every_result_and_exact_match_reads_the_phrases() {
    let call = search(r#"{"query":"\"tokio runtime\" spawn","include_domains":["a.example"],"include_domains_mode":"prefer","exact_match":true}"#).unwrap();
    assert!(call.search.controls.include_domains.is_empty(), "prefer is no filter");
    assert_eq!(call.prefer, vec!["a.example".to_owned()]);
    assert_eq!(call.phrases, vec!["tokio runtime".to_owned()]);
}

#[test]
fn country_and_language_make_a_region() {
    let region = |body: &str| search(body).unwrap().search.controls.region.map(|r| r.code().to_owned());
    assert_eq!(region(r#"{"query":"q","country":"United Kingdom"}"#).as_deref(), Some("uk-en"));
    assert_eq!(region(r#"{"query":"q","country":"switzerland","language":"fr"}"#).as_deref(), Some("ch-fr"));
    assert_eq!(region(r#"{"query":"q","language":"ja"}"#).as_deref(), Some("jp-jp"));
    for (name, region) in COUNTRY_REGIONS {
        assert!(Region::parse(region).is_some(), "{name}: {region}");
    }
}

#[test]
fn what_cannot_be_honoured_is_a_400_naming_it() {
    for (body, code, field) in [
        ("{}", "query_missing", "query"),
        (r#"{"query":"q","max_results":21}"#, "max_results_out_of_range", "max_results"),
        (r#"{"query":"q","search_depth":"deep"}"#, "field_invalid", "search_depth"),
        (r#"{"query":"q","topic":"sports"}"#, "field_invalid", "topic"),
        (r#"{"query":"q","time_range":"decade"}"#, "field_invalid", "time_range"),
        (r#"{"query":"q","days":0}"#, "field_invalid", "days"),
        (r#"{"query":"q","chunks_per_source":4}"#, "chunks_per_source_out_of_range", "chunks_per_source"),
        (r#"{"query":"q","chunks_per_source":2}"#, "field_not_honoured", "chunks_per_source"),
        (r#"{"query":"q","timeout":5}"#, "field_not_honoured", "timeout"),
        (r#"{"query":"q","include_raw_content":"html"}"#, "field_invalid", "include_raw_content"),
        (r#"{"query":"q","include_answer":"long"}"#, "field_invalid", "include_answer"),
        (r#"{"query":"q","country":"atlantis"}"#, "country_unsupported", "country"),
        (r#"{"query":"q","end_date":"2000-01-01"}"#, "field_not_honoured", "end_date"),
        (r#"{"query":"q","start_date":"01/02/2024"}"#, "field_invalid", "start_date"),
        (r#"{"query":"q","max_age_hours":0}"#, "field_not_honoured", "max_age_hours"),
        (r#"{"query":"q","filter_by_language":true}"#, "field_not_honoured", "filter_by_language"),
        (r#"{"query":"q","cache_fallback":true}"#, "field_not_honoured", "cache_fallback"),
        (r#"{"query":"q","include_domains_mode":"only"}"#, "field_invalid", "include_domains_mode"),
        (r#"{"query":"q","include_images":"yes"}"#, "field_invalid", "include_images"),
        (r#"{"query":"q","timeout":0}"#, "field_invalid", "timeout"),
        (r#"{"query":"q","serach_depth":"basic"}"#, "field_unknown", "serach_depth"),
    ] {
        assert_eq!(search(body), Err((400, code, Some(field.to_owned()))), "{body}");
    }
    let future = format!(r#"{{"query":"q","start_date":"{}"}}"#, day(TODAY + 2));
    assert_eq!(search(&future).unwrap_err().1, "field_not_honoured");
    // A day of slack for callers west of UTC.
    let ok = format!(r#"{{"query":"q","end_date":"{}","max_age_hours":1,"timeout":60}}"#, day(TODAY - 1));
    assert!(search(&ok).is_ok());
}

#[test]
fn extract_bodies() {
    let call = ExtractCall::from_json(br#"{"urls":"https://a.example/","timeout":30}"#).unwrap();
    assert_eq!((call.readable().len(), call.format, call.query.as_str()), (1, Format::Markdown, ""));
    assert_eq!(call.timeout, Some(std::time::Duration::from_secs(30)));
    // A URL that cannot be read is the answer's failed result, not the call's 400.
    let call = ExtractCall::from_json(br#"{"urls":["https://a.example/","not a url"]}"#).unwrap();
    assert_eq!(call.readable(), vec!["https://a.example/".to_owned()]);
    let (asked, why) = call.urls[1].clone().unwrap_err();
    assert_eq!(asked, "not a url");
    assert!(why.starts_with("url_invalid"), "{why}");
    let call =
        ExtractCall::from_json(br#"{"urls":["https://a/","http://b/"],"format":"text","query":" x  y ","chunks_per_source":5,"extract_depth":"advanced"}"#)
            .unwrap();
    assert_eq!((call.urls.len(), call.format, call.query.as_str(), call.chunks), (2, Format::Text, "x y", 5));
    for (body, code) in [
        (r#"{}"#, "urls_missing"),
        (r#"{"urls":[]}"#, "urls_empty"),
        (r#"{"urls":5}"#, "field_invalid"),
        (r#"{"urls":["https://a/",3]}"#, "url_not_string"),
        (r#"{"urls":[null]}"#, "url_not_string"),
        (r#"{"urls":"https://a/","format":"html"}"#, "field_invalid"),
        (r#"{"urls":"https://a/","chunks_per_source":2}"#, "field_not_honoured"),
        (r#"{"urls":"https://a/","query":"q","chunks_per_source":6}"#, "chunks_per_source_out_of_range"),
        (r#"{"urls":"https://a/","max_depth":2}"#, "field_unknown"),
    ] {
        assert_eq!(ExtractCall::from_json(body.as_bytes()).unwrap_err().code, code, "{body}");
    }
    let many = json!({ "urls": vec!["https://a/"; URLS_MAX + 1] }).to_string();
    assert_eq!(ExtractCall::from_json(many.as_bytes()).unwrap_err().code, "urls_too_many");
}
