//! The WCXB benchmark (`cargo bench --bench wcxb`): extraction quality across seven page types (article, service,
//! product, collection, forum, listing, documentation) with the benchmark's own word-F1 metric, on the markdown the
//! service produces (the server's own options and `page::Extracted`, scored with only link targets and image URLs
//! dropped, `benches/aeb/metric.rs`'s served view), unbudgeted and cut to the 2,000 tokens `extract` and
//! `answer_extract` serve by default, and speed on one thread with pages in memory. Reads
//! `$WEBSEARCHD_SHARED_DIR/bench/wcxb-dev` (default `../shared/bench/wcxb-dev`) and skips when it is absent.
//!
//! Flags (after `--`): `--type T` only pages of that type; `--worst N` list the N lowest-scoring pages;
//! `--dump DIR` write each page's markdown; `--budget N` score the cut to N tokens instead (0: no cut view);
//! `--passes N` timed passes (default 2; 0 skips the speed measurement; speed is given per wall second and per
//! CPU-second of the bench's thread); `--scores FILE` write each page's id, type, F1, precision and recall
//! (tab-separated, unbudgeted), to compare two runs page by page; `--cut` time extraction with the cut to 2,000 tokens
//! too, the head cut's passes and the query-focused cut's alternating (the query: five words of the middle of the
//! page's reference text), and print their ratio.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)]

#[path = "support/cpu.rs"]
mod cpu;
#[path = "wcxb/metric.rs"]
mod metric;

use std::collections::BTreeMap;
use std::io::Read;
use std::path::PathBuf;
use std::time::Instant;

use websearchd::extract::Extractor;
use websearchd::page::{self, Extracted};
use websearchd::search::EXTRACT_TOKENS_DEFAULT;

struct Page {
    id: String,
    url: String,
    kind: String,
    truth: String,
    with: Vec<String>,
    without: Vec<String>,
    html: Vec<u8>,
}

fn arg(name: &str) -> Option<String> {
    std::env::args().skip_while(|a| a != name).nth(1)
}

#[derive(Default)]
struct Tally {
    pages: usize,
    f1: f64,
    precision: f64,
    recall: f64,
    with: (usize, usize),
    without: (usize, usize),
}

/// Scores one page's markdown as served and adds it to `tallies`.
fn score(p: &Page, md: &str, tallies: [&mut Tally; 2]) -> metric::PageScore {
    let view = metric::served_view(md);
    let s = metric::page_score(&p.truth, &view);
    let line = metric::token_line(&view);
    let with = p.with.iter().filter(|w| metric::contains_snippet(&line, w)).count();
    let without = p.without.iter().filter(|w| metric::contains_snippet(&line, w)).count();
    for t in tallies {
        t.add(s, with, without, p);
    }
    s
}

impl Tally {
    fn add(&mut self, s: metric::PageScore, with: usize, without: usize, p: &Page) {
        self.pages += 1;
        self.f1 += s.f1;
        self.precision += s.precision;
        self.recall += s.recall;
        self.with.0 += with;
        self.with.1 += p.with.len();
        self.without.0 += without;
        self.without.1 += p.without.len();
    }

    fn line(&self, name: &str) -> String {
        let n = self.pages.max(1) as f64;
        format!(
            "{name:<14} {:>5}  F1 {:.3}  P {:.3}  R {:.3}  with {:5.1}%  without {:5.1}%",
            self.pages,
            self.f1 / n,
            self.precision / n,
            self.recall / n,
            100.0 * self.with.0 as f64 / self.with.1.max(1) as f64,
            100.0 * self.without.0 as f64 / self.without.1.max(1) as f64,
        )
    }
}

fn main() {
    let dir = std::env::var_os("WEBSEARCHD_SHARED_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../shared")))
        .join("bench/wcxb-dev");
    let Ok(file) = std::fs::File::open(dir.join("ground-truth.json.gz")) else {
        eprintln!("notice: {} is absent; nothing to measure", dir.display());
        return;
    };
    let mut json = Vec::new();
    flate2::read::GzDecoder::new(file).read_to_end(&mut json).unwrap();
    let truth: serde_json::Value = serde_json::from_slice(&json).unwrap();
    let only = arg("--type");
    let strings = |v: &serde_json::Value| -> Vec<String> {
        v.as_array().map(|a| a.iter().filter_map(|s| s.as_str().map(str::to_owned)).collect()).unwrap_or_default()
    };
    let mut pages = Vec::new();
    for (id, t) in truth.as_object().unwrap() {
        let kind = t["page_type"].as_str().unwrap_or("unknown").to_owned();
        if only.as_ref().is_some_and(|o| *o != kind) {
            continue;
        }
        let mut html = Vec::new();
        let file = std::fs::File::open(dir.join("html").join(format!("{id}.html.gz"))).unwrap();
        flate2::read::GzDecoder::new(file).read_to_end(&mut html).unwrap();
        pages.push(Page {
            id: id.clone(),
            url: t["url"].as_str().unwrap_or("").to_owned(),
            kind,
            truth: t["main_content"].as_str().unwrap_or("").to_owned(),
            with: strings(&t["with"]),
            without: strings(&t["without"]),
            html,
        });
    }
    let total_bytes: usize = pages.iter().map(|p| p.html.len()).sum();
    println!("pages: {}, HTML: {:.1} MB", pages.len(), total_bytes as f64 / 1e6);
    let dump = arg("--dump").map(PathBuf::from);
    // The cut served by default unless asked otherwise (`--budget 0`: the unbudgeted view alone).
    let budget = Some(arg("--budget").and_then(|b| b.parse::<usize>().ok()).unwrap_or(EXTRACT_TOKENS_DEFAULT))
        .filter(|&b| b > 0);
    let worst = arg("--worst").and_then(|b| b.parse::<usize>().ok()).unwrap_or(0);
    let passes = arg("--passes").and_then(|b| b.parse::<usize>().ok()).unwrap_or(2);

    // Quality: the markdown as served, scored as text.
    let mut all = Tally::default();
    let mut by_kind: BTreeMap<String, Tally> = BTreeMap::new();
    let mut budgeted = Tally::default();
    let mut budgeted_by_kind: BTreeMap<String, Tally> = BTreeMap::new();
    let mut per_page = Vec::new();
    for p in &pages {
        // What the server keeps of a page and cuts to each request's budget (`page::extract`), with its options.
        let e = Extracted::new(p.url.clone(), Extractor::run(&p.html, page::options(&p.url)));
        let md = e.fit(0, "").markdown;
        if let Some(d) = &dump {
            std::fs::create_dir_all(d).unwrap();
            std::fs::write(d.join(format!("{}.md", p.id)), &md).unwrap();
        }
        let s = score(p, &md, [&mut all, by_kind.entry(p.kind.clone()).or_default()]);
        if let Some(b) = budget {
            score(p, &e.fit(b, "").markdown, [&mut budgeted, budgeted_by_kind.entry(p.kind.clone()).or_default()]);
        }
        per_page.push((s, p.id.as_str(), p.kind.as_str()));
    }
    println!("markdown as served (link targets and image URLs dropped), no budget; `with`: snippets found, `without`: snippets leaked");
    for (kind, t) in &by_kind {
        println!("{}", t.line(kind));
    }
    println!("{}", all.line("all"));
    if let Some(b) = budget {
        println!("cut to {b} tokens:");
        for (kind, t) in &budgeted_by_kind {
            println!("{}", t.line(kind));
        }
        println!("{}", budgeted.line("all"));
    }
    if let Some(path) = arg("--scores") {
        let lines: String = per_page
            .iter()
            .map(|(s, id, kind)| format!("{id}\t{kind}\t{:.4}\t{:.4}\t{:.4}\n", s.f1, s.precision, s.recall))
            .collect();
        std::fs::write(path, lines).unwrap();
    }
    if worst > 0 {
        per_page.sort_by(|a, b| a.0.f1.partial_cmp(&b.0.f1).unwrap());
        for (s, id, kind) in per_page.iter().take(worst) {
            println!("  worst: F1 {:.2} P {:.2} R {:.2} {id} {kind}", s.f1, s.precision, s.recall);
        }
    }

    // Speed: one thread, whole passes over the pages in memory; the mean over all passes is the figure.
    if passes == 0 {
        return;
    }
    if std::env::args().any(|a| a == "--cut") {
        cut_speed(&pages, passes, total_bytes);
    }
    let started = Instant::now();
    let cpu_started = cpu::thread_seconds();
    let mut best = f64::MAX;
    for _ in 0..passes {
        let pass = Instant::now();
        for p in &pages {
            std::hint::black_box(Extractor::run(std::hint::black_box(&p.html), page::options(&p.url)));
        }
        best = best.min(pass.elapsed().as_secs_f64());
    }
    let secs = started.elapsed().as_secs_f64();
    let cpu_secs = cpu::thread_seconds() - cpu_started;
    // MB per CPU-second: the thread's own work, which the load other processes put on the machine hardly moves.
    println!(
        "speed: mean {:.1} MB/s wall, {:.1} MB per CPU-second ({passes} passes in {secs:.1} s wall, {cpu_secs:.1} s CPU), \
         best pass {:.1} MB/s, {:.0} pages/s",
        (total_bytes * passes) as f64 / secs / 1e6,
        (total_bytes * passes) as f64 / cpu_secs / 1e6,
        total_bytes as f64 / best / 1e6,
        pages.len() as f64 / best
    );
}

/// Extraction with the cut to the default budget, the head cut's passes and the query-focused cut's alternating (so
/// that the host's load weighs on both alike), in MB per CPU-second of the bench's thread, and their ratio.
fn cut_speed(pages: &[Page], passes: usize, total_bytes: usize) {
    // What a page is asked about: five words of the middle of its reference text.
    let queries: Vec<String> = pages
        .iter()
        .map(|p| {
            let words: Vec<&str> = p.truth.split_whitespace().filter(|w| w.len() > 3).collect();
            words.iter().skip(words.len() / 2).take(5).copied().collect::<Vec<_>>().join(" ")
        })
        .collect();
    let mut cpu = [0.0f64; 2];
    let mut cuts = [0usize; 3];
    for _ in 0..passes {
        for (k, query) in [false, true].into_iter().enumerate() {
            let started = cpu::thread_seconds();
            for (p, q) in pages.iter().zip(&queries) {
                let e =
                    Extracted::new(p.url.clone(), Extractor::run(std::hint::black_box(&p.html), page::options(&p.url)));
                let fitted = e.fit(EXTRACT_TOKENS_DEFAULT, if query { q } else { "" });
                if query {
                    cuts[fitted.cut as usize] += 1;
                }
                std::hint::black_box(fitted);
            }
            cpu[k] += cpu::thread_seconds() - started;
        }
    }
    let rate = |secs: f64| (total_bytes * passes) as f64 / secs / 1e6;
    println!(
        "with the cut to {EXTRACT_TOKENS_DEFAULT} tokens: head {:.1}, query {:.1} MB per CPU-second ({passes} passes \
         each, alternating), ratio {:.3}; cuts per pass: none {}, head {}, query {}",
        rate(cpu[0]),
        rate(cpu[1]),
        cpu[0] / cpu[1],
        cuts[0] / passes.max(1),
        cuts[1] / passes.max(1),
        cuts[2] / passes.max(1)
    );
}
