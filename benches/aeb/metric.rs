//! The article-extraction-benchmark metric, written from its description (shared/notes/extraction.md and the
//! benchmark's published definition): `\w+` tokens, multisets of 4-token shingles, per-page TP/FP/FN normalised to
//! sum 1, precision and recall averaged over the pages where they are defined, F1 their harmonic mean. Checked in
//! `tests/aeb_metric.rs` against the stored trafilatura (0.958) and Readability.js (0.947) outputs.
#![allow(dead_code)]

use std::collections::HashMap;

/// Whether Python's `\w` matches `c`: letters, numbers and `_`. Rust's `is_alphanumeric` also counts combining marks
/// and symbols with the Other_Alphabetic property (Arabic harakat, circled letters), which Python does not.
fn is_word_char(c: char) -> bool {
    const NOT_WORD: &[(u32, u32)] = &[
        (0x0300, 0x036F),
        (0x0483, 0x0489),
        (0x0591, 0x05C7),
        (0x0610, 0x061A),
        (0x064B, 0x065F),
        (0x0670, 0x0670),
        (0x06D6, 0x06ED),
        (0x24B6, 0x24E9),
        (0xFE00, 0xFE0F),
        (0x1F130, 0x1F189),
    ];
    (c.is_alphanumeric() || c == '_') && !NOT_WORD.iter().any(|&(lo, hi)| (lo..=hi).contains(&(c as u32)))
}

/// `\w+` as Python's `re` reads it on str.
pub fn tokens(text: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut start = None;
    for (i, c) in text.char_indices() {
        let word = is_word_char(c);
        match (word, start) {
            (true, None) => start = Some(i),
            (false, Some(s)) => {
                out.push(&text[s..i]);
                start = None;
            }
            _ => {}
        }
    }
    if let Some(s) = start {
        out.push(&text[s..]);
    }
    out
}

fn shingles(text: &str) -> HashMap<Vec<&str>, u32> {
    let t = tokens(text);
    let mut m = HashMap::new();
    let windows = t.len().saturating_sub(3).max(1);
    for i in 0..windows {
        let s: Vec<&str> = t.iter().skip(i).take(4).copied().collect();
        if !s.is_empty() {
            *m.entry(s).or_insert(0) += 1;
        }
    }
    m
}

/// One page's (TP, FP, FN), normalised to sum 1 (all zero when both texts have no token).
pub fn page_scores(truth: &str, prediction: &str) -> (f64, f64, f64) {
    let t = shingles(truth);
    let p = shingles(prediction);
    let (mut tp, mut fp, mut fn_) = (0.0, 0.0, 0.0);
    for key in t.keys().chain(p.keys().filter(|k| !t.contains_key(*k))) {
        let tc = f64::from(*t.get(key).unwrap_or(&0));
        let pc = f64::from(*p.get(key).unwrap_or(&0));
        tp += tc.min(pc);
        fp += (pc - tc).max(0.0);
        fn_ += (tc - pc).max(0.0);
    }
    let s = tp + fp + fn_;
    if s > 0.0 {
        (tp / s, fp / s, fn_ / s)
    } else {
        (0.0, 0.0, 0.0)
    }
}

#[derive(Debug, Clone, Copy)]
pub struct Scores {
    pub precision: f64,
    pub recall: f64,
    pub f1: f64,
    /// Share of pages whose token sequence equals the truth's exactly.
    pub accuracy: f64,
}

pub fn score(pages: &[(&str, &str)]) -> Scores {
    let mut precisions = Vec::new();
    let mut recalls = Vec::new();
    let mut exact = 0usize;
    for (truth, prediction) in pages {
        let (tp, fp, fn_) = page_scores(truth, prediction);
        if tp + fp > 0.0 {
            precisions.push(if fp == 0.0 && fn_ == 0.0 {
                1.0
            } else if tp == 0.0 && fp == 0.0 {
                0.0
            } else {
                tp / (tp + fp)
            });
        }
        if tp + fn_ > 0.0 {
            recalls.push(if fp == 0.0 && fn_ == 0.0 {
                1.0
            } else if tp == 0.0 && fn_ == 0.0 {
                0.0
            } else {
                tp / (tp + fn_)
            });
        }
        if tokens(truth) == tokens(prediction) {
            exact += 1;
        }
    }
    let mean = |v: &[f64]| if v.is_empty() { 0.0 } else { v.iter().sum::<f64>() / v.len() as f64 };
    let (precision, recall) = (mean(&precisions), mean(&recalls));
    let f1 = if precision + recall > 0.0 { 2.0 * precision * recall / (precision + recall) } else { 0.0 };
    Scores { precision, recall, f1, accuracy: exact as f64 / pages.len().max(1) as f64 }
}

/// The markdown as served, scored as text: only link targets and image URLs (`](target)`) dropped; link text, alt
/// text, bare URLs and markdown marks stay as the reader receives them.
pub fn served_view(markdown: &str) -> String {
    strip_targets(markdown)
}

/// A text view of markdown: link and image text kept, link targets and bare URLs dropped.
pub fn text_view(markdown: &str) -> String {
    strip_targets(markdown)
        .split_whitespace()
        .filter(|w| !(w.starts_with("http://") || w.starts_with("https://") || w.starts_with("www.")))
        .collect::<Vec<_>>()
        .join(" ")
}

/// Markdown with every `](target)` replaced by a space. A `]` escaped by a backslash (`\](`) is the page's own text
/// (the extractor escapes brackets in text), not a link's end: what follows it is kept.
fn strip_targets(markdown: &str) -> String {
    let mut out = String::with_capacity(markdown.len());
    let mut chars = markdown.char_indices().peekable();
    let mut escaped = false;
    while let Some((i, c)) = chars.next() {
        let was_escaped = escaped;
        escaped = c == '\\' && !was_escaped;
        // `](target)` ends a link or image: skip the target.
        if c == ']' && !was_escaped && markdown[i + 1..].starts_with('(') {
            let rest = &markdown[i + 1..];
            if let Some(close) = rest.find(')') {
                let skip_to = i + 1 + close;
                while chars.peek().is_some_and(|(j, _)| *j <= skip_to) {
                    chars.next();
                }
                out.push(' ');
                continue;
            }
        }
        out.push(c);
    }
    out
}
