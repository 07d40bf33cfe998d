//! The WCXB metric, written from the benchmark's README (`shared/bench/wcxb-dev/README.md`): per page, lowercase
//! `\w+` tokens of the extracted text and of the reference as multisets; precision = overlap / predicted tokens,
//! recall = overlap / reference tokens, F1 per page; the score is the mean F1 over pages (an empty reference scores
//! 1 when the output is empty too, else 0). Snippets: `with` should appear in the output, `without` should not
//! (case-insensitive; compared on the `\w+` token sequence, so markdown marks and spacing do not hide a match).
#![allow(dead_code)]

use std::collections::HashMap;

#[path = "../aeb/metric.rs"]
mod aeb;

pub use aeb::served_view;

/// Lowercase `\w+` tokens (Python's `re.findall(r"\w+", text.lower())`).
pub fn tokens(text: &str) -> Vec<String> {
    let lower = text.to_lowercase();
    aeb::tokens(&lower).into_iter().map(str::to_owned).collect()
}

/// One page's precision, recall and F1.
#[derive(Debug, Clone, Copy, Default)]
pub struct PageScore {
    pub precision: f64,
    pub recall: f64,
    pub f1: f64,
}

pub fn page_score(reference: &str, prediction: &str) -> PageScore {
    let truth = tokens(reference);
    let predicted = tokens(prediction);
    if truth.is_empty() {
        let s = if predicted.is_empty() { 1.0 } else { 0.0 };
        return PageScore { precision: s, recall: s, f1: s };
    }
    if predicted.is_empty() {
        return PageScore::default();
    }
    let mut counts: HashMap<&str, i64> = HashMap::new();
    for t in &truth {
        *counts.entry(t.as_str()).or_insert(0) += 1;
    }
    let mut overlap = 0usize;
    for t in &predicted {
        if let Some(c) = counts.get_mut(t.as_str()) {
            if *c > 0 {
                *c -= 1;
                overlap += 1;
            }
        }
    }
    let precision = overlap as f64 / predicted.len() as f64;
    let recall = overlap as f64 / truth.len() as f64;
    let f1 = if overlap == 0 { 0.0 } else { 2.0 * precision * recall / (precision + recall) };
    PageScore { precision, recall, f1 }
}

/// The token sequence as one string with a space on each side, for containment checks.
pub fn token_line(text: &str) -> String {
    let mut s = String::from(" ");
    for t in tokens(text) {
        s.push_str(&t);
        s.push(' ');
    }
    s
}

/// Whether `snippet` appears in the output whose `token_line` is `line` (a snippet without tokens never does).
pub fn contains_snippet(line: &str, snippet: &str) -> bool {
    let s = token_line(snippet);
    s.len() > 2 && line.contains(&s)
}
