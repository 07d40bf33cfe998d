//! The benchmark metric (benches/aeb/metric.rs) reproduces the published scores of the stored outputs.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)]

mod common;

#[path = "../benches/aeb/metric.rs"]
mod metric;

use serde_json::Value;

fn load(rel: &str) -> Option<Value> {
    let path = common::shared_dir().join("bench/aeb").join(rel);
    match std::fs::read(&path) {
        Ok(b) => Some(serde_json::from_slice(&b).unwrap()),
        Err(_) => {
            eprintln!("notice: {} is absent; skipping", path.display());
            None
        }
    }
}

fn score_of(truth: &Value, prediction: &Value) -> metric::Scores {
    let truth = truth.as_object().unwrap();
    // The stored outputs wrap the predictions in `{"output": {...}}`.
    let prediction = prediction.get("output").unwrap_or(prediction);
    let pages: Vec<(&str, &str)> = truth
        .iter()
        .map(|(id, t)| {
            let p = prediction[id]["articleBody"].as_str().unwrap_or("");
            (t["articleBody"].as_str().unwrap_or(""), p)
        })
        .collect();
    metric::score(&pages)
}

#[test]
fn reproduces_the_published_scores() {
    let (Some(truth), Some(traf), Some(read)) =
        (load("ground-truth.json"), load("output/trafilatura.json"), load("output/readability_js.json"))
    else {
        return;
    };
    let t = score_of(&truth, &traf);
    assert_eq!(
        format!("{:.3} {:.3} {:.3} {:.3}", t.f1, t.precision, t.recall, t.accuracy),
        "0.958 0.938 0.978 0.293",
        "{t:?}"
    );
    let r = score_of(&truth, &read);
    assert_eq!(format!("{:.3}", r.f1), "0.947");
}

#[test]
fn metric_edge_cases() {
    assert_eq!(metric::tokens("Hello, wörld_1 日本語!"), vec!["Hello", "wörld_1", "日本語"]);
    assert_eq!(metric::page_scores("a b c", "a b c"), (1.0, 0.0, 0.0));
    assert_eq!(metric::page_scores("", ""), (0.0, 0.0, 0.0));
    assert_eq!(metric::page_scores("a b c d e", ""), (0.0, 0.0, 1.0));
    assert_eq!(
        metric::text_view("See [the docs](https://x.org/a) and ![alt](i.png) at https://y.org now"),
        "See [the docs and ![alt at now"
    );
    // Only link targets go: text with escaped brackets before a link stays, link text included; an escaped
    // backslash does not escape the `]` after it.
    assert_eq!(
        metric::served_view(r"from \[osha.gov\]( [https://www.osha.gov](https://www.osha.gov/a) and [x\\](y) z"),
        r"from \[osha.gov\]( [https://www.osha.gov  and [x\\  z"
    );
}
