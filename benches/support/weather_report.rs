//! The weather bench's figures for one world: what the client got (statuses, results, latency, the share answered
//! over time and by position in a burst), what the world served (requests, walls and failures per provider), whether
//! every result came from a page its provider served (provenance), and why the unanswered searches were not
//! answered (the codes of the error bodies and their source reports). Printed as a table, and as one JSON object.

use std::collections::BTreeMap;
use std::time::Duration;

use serde_json::{json, Value};

use crate::weather_world::{Mode, Provider, Served, World};

/// The width of a window of the answered share over time.
pub const WINDOW: Duration = Duration::from_secs(30);
/// Results not traced to a served page that are printed, at most.
const INVENTED_SHOWN: usize = 5;

/// One search as the client saw it.
#[derive(Debug)]
pub struct Outcome {
    /// When it was due, from the start of the run.
    pub due: Duration,
    /// Its place in its burst (0 for the first), when searches come in bursts.
    pub position: Option<usize>,
    /// Sent (false: the client's cap on searches in flight was reached).
    pub sent: bool,
    pub status: Option<u16>,
    pub body: Option<Value>,
    /// Connecting, writing or reading failed, or the answer was not HTTP.
    pub client_error: Option<String>,
    pub latency: Duration,
}

impl Outcome {
    fn results(&self) -> &[Value] {
        self.body.as_ref().and_then(|b| b["results"].as_array()).map_or(&[], Vec::as_slice)
    }

    /// HTTP 200 with at least one result.
    pub fn answered(&self) -> bool {
        self.status == Some(200) && !self.results().is_empty()
    }
}

/// A result not found in any page its provider served.
#[derive(Debug)]
struct Invented {
    source: String,
    url: String,
    title: String,
}

/// The figures of one world.
pub struct Report {
    pub json: Value,
}

fn percentile(sorted: &[Duration], p: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    let i = ((sorted.len() as f64 * p).ceil() as usize).clamp(1, sorted.len()) - 1;
    sorted[i].as_secs_f64() * 1e3
}

fn latencies(outcomes: &[&Outcome]) -> Value {
    let mut all: Vec<Duration> = outcomes.iter().map(|o| o.latency).collect();
    all.sort();
    json!({
        "count": all.len(),
        "p50_ms": percentile(&all, 0.5).round(),
        "p90_ms": percentile(&all, 0.9).round(),
        "p99_ms": percentile(&all, 0.99).round(),
        "max_ms": all.last().map_or(0.0, |d| (d.as_secs_f64() * 1e3).round()),
    })
}

fn share(n: usize, of: usize) -> f64 {
    if of == 0 {
        0.0
    } else {
        (1_000.0 * n as f64 / of as f64).round() / 10.0
    }
}

/// The written forms of a result's URL a page may hold: as is, percent-decoded, HTML-escaped (`&amp;`), in
/// DuckDuckGo's `uddg=` encoding, in Bing's `u=a1<base64url>`, and protocol-relative (`//host/...`, which the
/// service completes with `https:`). A Wikipedia result's URL is made from its title: the title is looked for.
fn written_forms(p: Provider, url: &str, title: &str) -> Vec<String> {
    if p == Provider::Wikipedia {
        let last = url.rsplit('/').next().unwrap_or("");
        return vec![title.to_owned(), percent_decode(last).replace('_', " ")];
    }
    let decoded = percent_decode(url);
    let escape = |s: &str| s.replace('&', "&amp;");
    let mut forms = vec![url.to_owned(), escape(url), decoded.clone(), escape(&decoded), uddg(url)];
    forms.push(format!("a1{}", base64url(url.as_bytes())));
    if let Some(rest) = url.strip_prefix("https:") {
        forms.push(rest.to_owned());
    }
    forms
}

/// `%XX` decoded once (invalid escapes kept).
fn percent_decode(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        let hex = b.get(i + 1..i + 3).and_then(|h| std::str::from_utf8(h).ok());
        match (b[i], hex.and_then(|h| u8::from_str_radix(h, 16).ok())) {
            (b'%', Some(v)) => {
                out.push(v);
                i += 3;
            }
            (c, _) => {
                out.push(c);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// A URL as DuckDuckGo writes it in `uddg=`: every byte but letters, digits, `.` and `_` as `%XX` (its recorded
/// pages write `-` as `%2D`).
fn uddg(s: &str) -> String {
    s.bytes()
        .map(|b| {
            if b.is_ascii_alphanumeric() || b"._".contains(&b) {
                char::from(b).to_string()
            } else {
                format!("%{b:02X}")
            }
        })
        .collect()
}

/// Base64url without padding.
fn base64url(bytes: &[u8]) -> String {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
    let mut out = String::new();
    for chunk in bytes.chunks(3) {
        let n = chunk.iter().enumerate().fold(0u32, |n, (i, b)| n | u32::from(*b) << (16 - 8 * i));
        for i in 0..=chunk.len() {
            out.push(char::from(ALPHABET[((n >> (18 - 6 * i)) & 63) as usize]));
        }
    }
    out
}

impl Report {
    /// The figures of a run of `seconds` whose world served as `world` says.
    pub fn new(description: Value, outcomes: &[Outcome], world: &World, seconds: f64) -> Report {
        let sent: Vec<&Outcome> = outcomes.iter().filter(|o| o.sent).collect();
        let answered: Vec<&Outcome> = sent.iter().copied().filter(|o| o.answered()).collect();
        let status_count = |s: u16| sent.iter().filter(|o| o.status == Some(s)).count();
        let empty = sent.iter().filter(|o| o.status == Some(200) && !o.answered()).count();
        let mut other: BTreeMap<String, usize> = BTreeMap::new();
        for o in sent.iter().filter(|o| !matches!(o.status, None | Some(200 | 502 | 503))) {
            *other.entry(o.status.unwrap_or(0).to_string()).or_default() += 1;
        }
        let mut client_errors: BTreeMap<String, usize> = BTreeMap::new();
        for e in sent.iter().filter_map(|o| o.client_error.as_deref()) {
            *client_errors.entry(e.to_owned()).or_default() += 1;
        }

        // The answered share by position in a burst, and per window of time.
        let positions = outcomes.iter().filter_map(|o| o.position).max().map_or(0, |m| m + 1);
        let by_position: Vec<Value> = (0..positions)
            .map(|i| {
                let at: Vec<&Outcome> = outcomes.iter().filter(|o| o.position == Some(i)).collect();
                let n = at.iter().filter(|o| o.answered()).count();
                json!({ "position": i + 1, "searches": at.len(), "answered": n, "answered_pct": share(n, at.len()) })
            })
            .collect();
        let windows = (seconds / WINDOW.as_secs_f64()).ceil().max(1.0) as usize;
        let over_time: Vec<Value> = (0..windows)
            .map(|w| {
                let from = WINDOW * w as u32;
                let in_w: Vec<&Outcome> = outcomes.iter().filter(|o| o.due >= from && o.due < from + WINDOW).collect();
                let n = in_w.iter().filter(|o| o.answered()).count();
                json!({ "from_s": from.as_secs(), "searches": in_w.len(), "answered": n,
                        "answered_pct": share(n, in_w.len()) })
            })
            .collect();

        // What the world served.
        let mut upstream = 0;
        let providers: Vec<Value> = Provider::ALL
            .iter()
            .map(|&p| {
                let s: Served = world.served(p);
                upstream += s.requests;
                let failures: serde_json::Map<String, Value> = Mode::ALL
                    .iter()
                    .map(|m| (m.name().to_owned(), s.failures.get(m).copied().unwrap_or(0).into()))
                    .collect();
                json!({
                    "provider": p.name(),
                    "requests": s.requests,
                    "per_minute": (s.requests as f64 * 600.0 / seconds).round() / 10.0,
                    "results_pages": s.results,
                    "walls": s.walls(),
                    "failures": failures,
                    "walled": s.walled,
                    "rate_limit_walls": s.limited,
                })
            })
            .collect();

        // Provenance: every result of every answer in a page its provider served. The check can fail: a result no
        // page holds is not traced.
        for p in Provider::ALL {
            let forms = written_forms(p, "https://invented.example/never-served", "Never served anywhere");
            assert!(!world.traces(p, &forms), "the provenance check traced an invented result to {}", p.name());
        }
        let (mut checked, mut invented) = (0usize, Vec::new());
        for r in sent.iter().flat_map(|o| o.results()) {
            checked += 1;
            let (source, url, title) = (
                r["source"].as_str().unwrap_or(""),
                r["url"].as_str().unwrap_or(""),
                r["title"].as_str().unwrap_or(""),
            );
            let traced = Provider::from_name(source).is_some_and(|p| world.traces(p, &written_forms(p, url, title)));
            if !traced {
                invented.push(Invented { source: source.into(), url: url.into(), title: title.into() });
            }
        }

        // Why the unanswered were not answered: the error codes, and each source report's status and error.
        let (mut codes, mut reports): (BTreeMap<String, usize>, BTreeMap<String, usize>) = Default::default();
        for o in sent.iter().filter(|o| !o.answered()) {
            let Some(body) = &o.body else { continue };
            if let Some(code) = body["error"]["code"].as_str() {
                *codes.entry(code.to_owned()).or_default() += 1;
            }
            let list = body["error"]["sources"].as_array().or_else(|| body["sources"].as_array());
            for s in list.into_iter().flatten() {
                let key = format!(
                    "{} {}",
                    s["status"].as_str().unwrap_or("?"),
                    s["error"].as_str().unwrap_or(s["status"].as_str().unwrap_or("?"))
                );
                *reports.entry(key).or_default() += 1;
            }
        }

        let json = json!({
            "world": description,
            "searches": outcomes.len(),
            "sent": sent.len(),
            "not_sent_cap": outcomes.len() - sent.len(),
            "answered": answered.len(),
            "answered_pct": share(answered.len(), outcomes.len()),
            "ok_without_results": empty,
            "status_502": status_count(502),
            "status_503": status_count(503),
            "other_statuses": other,
            "client_errors": client_errors,
            "latency_all": latencies(&sent),
            "latency_answered": latencies(&answered),
            "by_burst_position": by_position,
            "over_time": over_time,
            "upstream_requests": upstream,
            "upstream_per_search": (100.0 * upstream as f64 / sent.len().max(1) as f64).round() / 100.0,
            "providers": providers,
            "provenance": {
                "results_checked": checked,
                "invented": invented.len(),
                "first_invented": invented.iter().take(INVENTED_SHOWN)
                    .map(|i| json!({ "source": i.source, "url": i.url, "title": i.title })).collect::<Vec<_>>(),
            },
            "unanswered_codes": codes,
            "unanswered_source_reports": reports,
        });
        Report { json }
    }

    /// The figures as a table.
    pub fn print(&self) {
        let j = &self.json;
        let n = |v: &Value| v.as_u64().unwrap_or(0);
        let f = |v: &Value| v.as_f64().unwrap_or(0.0);
        println!(
            "searches {}: answered with results {} ({:.1}%), 200 without results {}, 502 {}, 503 {}, other {}, \
             client errors {}, not sent (cap) {}",
            n(&j["searches"]),
            n(&j["answered"]),
            f(&j["answered_pct"]),
            n(&j["ok_without_results"]),
            n(&j["status_502"]),
            n(&j["status_503"]),
            compact(&j["other_statuses"]),
            compact(&j["client_errors"]),
            n(&j["not_sent_cap"]),
        );
        for (label, key) in [("all", "latency_all"), ("answered", "latency_answered")] {
            let l = &j[key];
            println!(
                "latency ({label}, {}): p50 {} ms, p90 {} ms, p99 {} ms, max {} ms",
                n(&l["count"]),
                f(&l["p50_ms"]),
                f(&l["p90_ms"]),
                f(&l["p99_ms"]),
                f(&l["max_ms"])
            );
        }
        if let Some(positions) = j["by_burst_position"].as_array().filter(|p| !p.is_empty()) {
            let cells: Vec<String> = positions
                .iter()
                .map(|p| {
                    format!(
                        "#{} {}/{} ({:.0}%)",
                        n(&p["position"]),
                        n(&p["answered"]),
                        n(&p["searches"]),
                        f(&p["answered_pct"])
                    )
                })
                .collect();
            println!("answered by position in the burst: {}", cells.join(", "));
        }
        let windows: Vec<String> = j["over_time"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|w| format!("{}s {}/{}", n(&w["from_s"]), n(&w["answered"]), n(&w["searches"])))
            .collect();
        println!("answered per {} s window: {}", WINDOW.as_secs(), windows.join(", "));
        println!(
            "upstream requests: {} ({} per search sent)",
            n(&j["upstream_requests"]),
            f(&j["upstream_per_search"])
        );
        println!(
            "  {:<10} {:>8} {:>8} {:>8} {:>6} {:>5} {:>5} {:>5} {:>5} {:>6} {:>7} {:>7}",
            "provider",
            "requests",
            "per min",
            "results",
            "walls",
            "wall",
            "429",
            "503",
            "hang",
            "reset",
            "limited",
            "walled"
        );
        for p in j["providers"].as_array().into_iter().flatten() {
            let fl = &p["failures"];
            println!(
                "  {:<10} {:>8} {:>8.1} {:>8} {:>6} {:>5} {:>5} {:>5} {:>5} {:>6} {:>7} {:>7}",
                p["provider"].as_str().unwrap_or(""),
                n(&p["requests"]),
                f(&p["per_minute"]),
                n(&p["results_pages"]),
                n(&p["walls"]),
                n(&fl["wall"]),
                n(&fl["429"]),
                n(&fl["503"]),
                n(&fl["hang"]),
                n(&fl["reset"]),
                n(&p["rate_limit_walls"]),
                n(&p["walled"]),
            );
        }
        let pv = &j["provenance"];
        println!(
            "provenance: {} results checked, {} not found in a page their provider served (invented; must be 0)",
            n(&pv["results_checked"]),
            n(&pv["invented"])
        );
        for i in pv["first_invented"].as_array().into_iter().flatten() {
            println!("  invented? {} {} ({})", i["source"], i["url"], i["title"]);
        }
        println!("unanswered, error codes: {}", compact(&j["unanswered_codes"]));
        println!("unanswered, source reports (status error: count): {}", compact(&j["unanswered_source_reports"]));
    }
}

/// One line per world: the share answered, the error answers, everything else unanswered (other statuses, client
/// errors, searches not sent), the latency, the upstream requests per search and the invented results.
pub fn summary(reports: &[Value]) {
    println!(
        "\n{:<14} {:>8} {:>9} {:>5} {:>5} {:>7} {:>8} {:>8} {:>9} {:>8}",
        "world", "searches", "answered", "502", "503", "other", "p50 ms", "p99 ms", "upstream", "invented"
    );
    let n = |v: &Value| v.as_u64().unwrap_or(0);
    let f = |v: &Value| v.as_f64().unwrap_or(0.0);
    let sum = |v: &Value| v.as_object().into_iter().flatten().map(|(_, v)| n(v)).sum::<u64>();
    for r in reports {
        println!(
            "{:<14} {:>8} {:>8.1}% {:>5} {:>5} {:>7} {:>8.0} {:>8.0} {:>9.2} {:>8}",
            r["world"]["name"].as_str().unwrap_or(""),
            n(&r["searches"]),
            f(&r["answered_pct"]),
            n(&r["status_502"]),
            n(&r["status_503"]),
            sum(&r["other_statuses"]) + sum(&r["client_errors"]) + n(&r["not_sent_cap"]),
            f(&r["latency_all"]["p50_ms"]),
            f(&r["latency_all"]["p99_ms"]),
            f(&r["upstream_per_search"]),
            n(&r["provenance"]["invented"]),
        );
    }
}

/// `{"a": 1, "b": 2}` as `a 1, b 2` (`none` when empty).
fn compact(v: &Value) -> String {
    let parts: Vec<String> =
        v.as_object().into_iter().flatten().map(|(k, v)| format!("{k} {}", v.as_u64().unwrap_or(0))).collect();
    if parts.is_empty() {
        "none".into()
    } else {
        parts.join(", ")
    }
}
