//! Answers in bad weather (issue 38): what share of an agent's searches the service answers when the search providers
//! fail the way real ones do.
//!
//! `cargo bench --bench weather -- --world NAME [options]` starts a loopback world of every provider
//! (`support/weather_world.rs`: one listener each, serving recorded result pages, its own wall pages with their real
//! statuses, 429, 503, hangs, resets, rate limits), then the real release binary (`websearchd serve`) in its default
//! configuration except: every source pointed at the world, all seven sources on, the cache off, logs at `warn`. An
//! agent-like client then sends searches open loop (each at its instant, whatever the answers; a thread per search
//! in flight, at most `IN_FLIGHT_MAX`) and the report (`support/weather_report.rs`) says what share was answered
//! with results, when and why not, the latency the client saw, what each provider was asked and served, and whether
//! every result came from a page its provider served.
//!
//! Worlds (`--world all` runs the six in turn): `calm` (nothing fails, a search every 0.5 s), `flaky30` (every
//! provider fails 30% of requests: wall, 429, 503, hang, reset), `ddg-walled` (DuckDuckGo's two endpoints wall every
//! request, the others fail 30%), `bursts` (5 searches at once every 3 s, 10% failures), `searxng-only` (one healthy
//! SearXNG alone, a search every 0.3 s), `rate-limited` (every provider walls above one request per 3 s, for 60 s; a
//! search a second). Options change the chosen worlds: `--seed N`, `--seconds S` (default 120), `--rate R` (searches
//! per second) or `--burst K --every S`, `--sources LIST` (WEBSEARCHD_SOURCES), `--fail F`, `--fail-for NAME=F`,
//! `--modes wall,429,503,hang,reset`, `--walled LIST`, `--limit N/W/D` (walls above N requests in W s, for D s),
//! `--wall-extends`, `--latency MIN-MAX` (ms of a served answer), `--env NAME=VALUE` (a setting of the service; repeat
//! it), `--json` (one JSON object per world on stdout at the end). Each world prints its full description, with the
//! command that runs it again. Every run is bounded: the schedule's searches, then at most the client's timeout.
//!
//! Each provider draws its failures from its own generator, seeded from `--seed` alone: two worlds run with one seed
//! fail alike at every provider they treat alike (`ddg-walled` and `flaky30` differ only at DuckDuckGo), so their
//! difference is what the changed providers made. The service is cargo's build beside the bench, or
//! `$WEBSEARCHD_BIN` (as for the other benches that start it). The pages served are the recorded ones of
//! `$WEBSEARCHD_SHARED_DIR/fixtures/search` (default `../shared`) where it has them, else the project's own.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)]

#[path = "../tests/common/mod.rs"]
mod common;
#[path = "support/weather_report.rs"]
mod weather_report;
#[path = "support/weather_world.rs"]
mod weather_world;

use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{mpsc, Arc};
use std::time::{Duration, Instant};

use serde_json::{json, Value};
use weather_report::{Outcome, Report};
use weather_world::{Behaviour, Limit, Mode, Provider, Rng, Setup, World};

/// Searches in flight at most; one due while this many are unanswered is not sent (and counts as unanswered).
const IN_FLIGHT_MAX: usize = 64;
/// The client's patience with one search.
const CLIENT_TIMEOUT: Duration = Duration::from_secs(60);
/// The largest answer read.
const ANSWER_BYTES_MAX: usize = 4 * 1_024 * 1_024;
/// The worlds `--world all` runs.
const WORLDS: [&str; 6] = ["calm", "flaky30", "ddg-walled", "bursts", "searxng-only", "rate-limited"];
/// Words the queries are made of (each query also carries its number, so no two are alike).
const WORDS: [&str; 16] = [
    "rust",
    "async",
    "runtime",
    "coffee",
    "grind",
    "island",
    "travel",
    "graph",
    "database",
    "sleep",
    "caffeine",
    "javascript",
    "tutorial",
    "weather",
    "storm",
    "harbour",
];

/// When searches are sent.
#[derive(Debug, Clone, Copy)]
enum Schedule {
    /// Searches per second, evenly spaced.
    Rate(f64),
    /// `size` searches at once, every `every`.
    Burst { size: usize, every: Duration },
}

/// A world and its client.
#[derive(Debug, Clone)]
struct Spec {
    name: String,
    seed: u64,
    seconds: f64,
    schedule: Schedule,
    sources: Vec<Provider>,
    fail: f64,
    fail_for: BTreeMap<Provider, f64>,
    modes: Vec<Mode>,
    walled: Vec<Provider>,
    limit: Option<Limit>,
    latency_ms: (u64, u64),
    env: Vec<(String, String)>,
}

impl Spec {
    fn preset(name: &str) -> Option<Spec> {
        let base = Spec {
            name: name.to_owned(),
            seed: 1,
            seconds: 120.0,
            schedule: Schedule::Rate(2.0),
            sources: Provider::ALL.to_vec(),
            fail: 0.0,
            fail_for: BTreeMap::new(),
            modes: Mode::ALL.to_vec(),
            walled: Vec::new(),
            limit: None,
            latency_ms: (100, 400),
            env: Vec::new(),
        };
        Some(match name {
            "calm" | "custom" => base,
            "flaky30" => Spec { fail: 0.3, ..base },
            "ddg-walled" => Spec { fail: 0.3, walled: vec![Provider::DdgHtml, Provider::DdgLite], ..base },
            "bursts" => {
                Spec { fail: 0.1, schedule: Schedule::Burst { size: 5, every: Duration::from_secs(3) }, ..base }
            }
            "searxng-only" => Spec { sources: vec![Provider::Searxng], schedule: Schedule::Rate(1.0 / 0.3), ..base },
            "rate-limited" => Spec {
                schedule: Schedule::Rate(1.0),
                limit: Some(Limit {
                    requests: 1,
                    window: Duration::from_secs(3),
                    wall: Duration::from_secs(60),
                    extends: false,
                }),
                ..base
            },
            _ => return None,
        })
    }

    /// The searches of the run: when each is due, and its place in its burst.
    fn searches(&self) -> Vec<(Duration, Option<usize>)> {
        match self.schedule {
            Schedule::Rate(rate) => {
                let n = (self.seconds * rate).floor() as usize;
                (0..n).map(|i| (Duration::from_secs_f64(i as f64 / rate), None)).collect()
            }
            Schedule::Burst { size, every } => {
                let bursts = (self.seconds / every.as_secs_f64()).ceil() as usize;
                (0..bursts).flat_map(|b| (0..size).map(move |i| (every * b as u32, Some(i)))).collect()
            }
        }
    }

    fn behaviours(&self) -> BTreeMap<Provider, Behaviour> {
        Provider::ALL
            .iter()
            .map(|&p| {
                let b = Behaviour {
                    fail: self.fail_for.get(&p).copied().unwrap_or(self.fail),
                    modes: self.modes.clone(),
                    walled: self.walled.contains(&p),
                    limit: self.limit,
                };
                (p, b)
            })
            .collect()
    }

    /// The options that make this world again.
    fn command(&self) -> String {
        let names = |ps: &[Provider]| ps.iter().map(|p| p.name()).collect::<Vec<_>>().join(",");
        let mut c = format!(
            "cargo bench --bench weather -- --world {} --seed {} --seconds {}",
            self.name, self.seed, self.seconds
        );
        match self.schedule {
            Schedule::Rate(r) => c.push_str(&format!(" --rate {r}")),
            Schedule::Burst { size, every } => c.push_str(&format!(" --burst {size} --every {}", every.as_secs_f64())),
        }
        c.push_str(&format!(" --sources {} --fail {}", names(&self.sources), self.fail));
        for (p, f) in &self.fail_for {
            c.push_str(&format!(" --fail-for {}={f}", p.name()));
        }
        let modes: Vec<&str> = self.modes.iter().map(|m| m.name()).collect();
        c.push_str(&format!(" --modes {}", modes.join(",")));
        if !self.walled.is_empty() {
            c.push_str(&format!(" --walled {}", names(&self.walled)));
        }
        if let Some(l) = self.limit {
            c.push_str(&format!(" --limit {}/{}/{}", l.requests, l.window.as_secs_f64(), l.wall.as_secs_f64()));
            if l.extends {
                c.push_str(" --wall-extends");
            }
        }
        c.push_str(&format!(" --latency {}-{}", self.latency_ms.0, self.latency_ms.1));
        for (k, v) in &self.env {
            c.push_str(&format!(" --env {k}={v}"));
        }
        c
    }

    /// The environment of the service: the default configuration but for the sources (all at the world), the cache
    /// (off), the log level, and the `--env` settings last.
    fn server_env(&self, world: &World) -> Vec<(String, String)> {
        let names: Vec<&str> = self.sources.iter().map(|p| p.name()).collect();
        let mut env = vec![
            ("WEBSEARCHD_SOURCES".to_owned(), names.join(",")),
            ("WEBSEARCHD_CACHE_TTL_S".to_owned(), "0".to_owned()),
            // Warnings only, but the line with the address the tests' starter reads.
            ("WEBSEARCHD_LOG".to_owned(), "warn,websearchd::cli=info".to_owned()),
        ];
        env.extend(Provider::ALL.iter().map(|&p| (p.url_var().to_owned(), world.url(p))));
        env.extend(self.env.iter().cloned());
        env
    }

    fn describe(&self) -> Value {
        let schedule = match self.schedule {
            Schedule::Rate(r) => json!({ "rate_per_s": r }),
            Schedule::Burst { size, every } => json!({ "burst": size, "every_s": every.as_secs_f64() }),
        };
        json!({
            "name": self.name,
            "seed": self.seed,
            "seconds": self.seconds,
            "schedule": schedule,
            "sources": self.sources.iter().map(|p| p.name()).collect::<Vec<_>>(),
            "fail": self.fail,
            "fail_for": self.fail_for.iter().map(|(p, f)| (p.name().to_owned(), json!(f))).collect::<serde_json::Map<_, _>>(),
            "modes": self.modes.iter().map(|m| m.name()).collect::<Vec<_>>(),
            "walled": self.walled.iter().map(|p| p.name()).collect::<Vec<_>>(),
            "limit": self.limit.map(|l| json!({
                "requests": l.requests, "window_s": l.window.as_secs_f64(), "wall_s": l.wall.as_secs_f64(),
                "extends": l.extends })),
            "latency_ms": [self.latency_ms.0, self.latency_ms.1],
            "env": self.env.iter().map(|(k, v)| format!("{k}={v}")).collect::<Vec<_>>(),
            "command": self.command(),
        })
    }
}

/// The command line: the worlds, and the options that change them.
struct Options {
    worlds: Vec<String>,
    json: bool,
    changes: Vec<(String, String)>,
}

fn usage(why: &str) -> ! {
    eprintln!("weather: {why}");
    eprintln!(
        "usage: cargo bench --bench weather -- --world {}|all|custom [--seed N] [--seconds S] [--rate R | --burst K \
         --every S] [--sources LIST] [--fail F] [--fail-for NAME=F] [--modes LIST] [--walled LIST] [--limit N/W/D] \
         [--wall-extends] [--latency MIN-MAX] [--env NAME=VALUE]... [--json]",
        WORLDS.join("|")
    );
    std::process::exit(2);
}

fn parse_options(args: &[String]) -> Options {
    let mut options = Options { worlds: Vec::new(), json: false, changes: Vec::new() };
    let mut it = args.iter();
    while let Some(arg) = it.next() {
        match arg.as_str() {
            "--bench" => {}
            "--json" => options.json = true,
            "--wall-extends" => options.changes.push((arg.clone(), String::new())),
            "--world" => {
                let w = it.next().unwrap_or_else(|| usage("--world needs a name"));
                if w == "all" {
                    options.worlds.extend(WORLDS.iter().map(|w| w.to_string()));
                } else if Spec::preset(w).is_some() {
                    options.worlds.push(w.clone());
                } else {
                    usage(&format!("no world named {w}"));
                }
            }
            "--seed" | "--seconds" | "--rate" | "--burst" | "--every" | "--sources" | "--fail" | "--fail-for"
            | "--modes" | "--walled" | "--limit" | "--latency" | "--env" => {
                let v = it.next().unwrap_or_else(|| usage(&format!("{arg} needs a value")));
                options.changes.push((arg.clone(), v.clone()));
            }
            other => usage(&format!("unknown option {other}")),
        }
    }
    if options.worlds.is_empty() {
        usage("name a world");
    }
    options
}

fn providers(list: &str) -> Vec<Provider> {
    list.split(',')
        .filter(|s| !s.is_empty())
        .map(|s| Provider::from_name(s).unwrap_or_else(|| usage(&format!("no provider named {s}"))))
        .collect()
}

fn number<T: std::str::FromStr>(option: &str, v: &str) -> T {
    v.parse().unwrap_or_else(|_| usage(&format!("{option}: not a number: {v}")))
}

/// `spec` with the command line's changes.
fn changed(mut spec: Spec, changes: &[(String, String)]) -> Spec {
    for (option, v) in changes {
        match option.as_str() {
            "--seed" => spec.seed = number(option, v),
            "--seconds" => spec.seconds = number::<f64>(option, v).clamp(1.0, 3_600.0),
            "--rate" => spec.schedule = Schedule::Rate(number::<f64>(option, v).clamp(0.01, 100.0)),
            "--burst" | "--every" => {
                let (mut size, mut every) = match spec.schedule {
                    Schedule::Burst { size, every } => (size, every),
                    Schedule::Rate(_) => (5, Duration::from_secs(3)),
                };
                if option == "--burst" {
                    size = number::<usize>(option, v).clamp(1, IN_FLIGHT_MAX);
                } else {
                    every = Duration::from_secs_f64(number::<f64>(option, v).clamp(0.1, 3_600.0));
                }
                spec.schedule = Schedule::Burst { size, every };
            }
            "--sources" => spec.sources = providers(v),
            "--fail" => spec.fail = number::<f64>(option, v).clamp(0.0, 1.0),
            "--fail-for" => {
                let (p, f) = v.split_once('=').unwrap_or_else(|| usage("--fail-for NAME=F"));
                let p = providers(p).first().copied().unwrap_or_else(|| usage("--fail-for NAME=F"));
                spec.fail_for.insert(p, number::<f64>(option, f).clamp(0.0, 1.0));
            }
            "--modes" => {
                spec.modes = v
                    .split(',')
                    .filter(|s| !s.is_empty())
                    .map(|m| Mode::from_name(m).unwrap_or_else(|| usage(&format!("no failure mode named {m}"))))
                    .collect();
            }
            "--walled" => spec.walled = providers(v),
            "--limit" => {
                let parts: Vec<&str> = v.split('/').collect();
                let [n, w, d] = parts.as_slice() else { usage("--limit N/W/D") };
                spec.limit = Some(Limit {
                    requests: number(option, n),
                    window: Duration::from_secs_f64(number::<f64>(option, w).clamp(0.001, 3_600.0)),
                    wall: Duration::from_secs_f64(number::<f64>(option, d).clamp(0.0, 3_600.0)),
                    extends: spec.limit.is_some_and(|l| l.extends),
                });
            }
            "--wall-extends" => {
                let default = Spec::preset("rate-limited").and_then(|s| s.limit);
                spec.limit = spec.limit.or(default).map(|l| Limit { extends: true, ..l });
            }
            "--latency" => {
                let (a, b) = v.split_once('-').unwrap_or_else(|| usage("--latency MIN-MAX"));
                let (a, b): (u64, u64) = (number(option, a), number(option, b));
                spec.latency_ms = (a.min(b).min(60_000), a.max(b).min(60_000));
            }
            "--env" => {
                let (k, val) = v.split_once('=').unwrap_or_else(|| usage("--env NAME=VALUE"));
                spec.env.push((k.to_owned(), val.to_owned()));
            }
            _ => {}
        }
    }
    spec
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let options = parse_options(&args);
    let own = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/search");
    let shared = common::shared_dir().join("fixtures/search");
    if !shared.is_dir() {
        eprintln!(
            "notice: {} is absent (set WEBSEARCHD_SHARED_DIR): the world serves the project's short hand-written \
             pages instead of recorded full ones, and its figures are not comparable",
            shared.display()
        );
    }
    let mut reports = Vec::new();
    for name in &options.worlds {
        let spec = changed(Spec::preset(name).expect("a preset"), &options.changes);
        let report = run(&spec, &own, &shared);
        reports.push(report.json);
    }
    if reports.len() > 1 {
        weather_report::summary(&reports);
    }
    if options.json {
        for r in &reports {
            println!("{r}");
        }
    }
}

/// Runs one world: starts it and the service, sends the searches, and reports.
fn run(spec: &Spec, own: &Path, shared: &Path) -> Report {
    let pages = weather_world::load_pages(own, shared);
    println!("\n== world {}: {}", spec.name, spec.command());
    for (p, pg) in &pages {
        if spec.sources.contains(p) {
            println!("   {:<10} serves {}", p.name(), pg.describe());
        }
    }
    let setup = Setup {
        seed: spec.seed,
        behaviours: spec.behaviours(),
        latency: (Duration::from_millis(spec.latency_ms.0), Duration::from_millis(spec.latency_ms.1)),
    };
    let world = World::start(setup, pages);
    let env = spec.server_env(&world);
    let server = common::Server::start(&common::pairs(&env));
    if let Some(line) = server.log_text().lines().find(|l| l.contains("listening on")) {
        println!("   service: {}", line.split("websearchd ").nth(1).unwrap_or(line));
    }
    let outcomes = send_all(spec, server.addr);
    drop(server);
    let report = Report::new(spec.describe(), &outcomes, &world, spec.seconds);
    world.stop();
    report.print();
    report
}

/// Sends the world's searches at their instants (open loop) and collects what each got.
fn send_all(spec: &Spec, addr: SocketAddr) -> Vec<Outcome> {
    let searches = spec.searches();
    let mut rng = Rng::new(spec.seed.wrapping_mul(31).wrapping_add(7));
    let in_flight = Arc::new(AtomicUsize::new(0));
    let (tx, rx) = mpsc::channel::<(usize, Outcome)>();
    let mut outcomes: Vec<Option<Outcome>> = (0..searches.len()).map(|_| None).collect();
    let mut threads = Vec::new();
    let started = Instant::now() + Duration::from_millis(200);
    for (i, &(due, position)) in searches.iter().enumerate() {
        let words: Vec<&str> = (0..3).map(|_| WORDS[rng.below(WORDS.len())]).collect();
        let query = format!("{} {i}", words.join(" "));
        std::thread::sleep((started + due).saturating_duration_since(Instant::now()));
        if in_flight.load(Ordering::SeqCst) >= IN_FLIGHT_MAX {
            outcomes[i] = Some(Outcome {
                due,
                position,
                sent: false,
                status: None,
                body: None,
                client_error: None,
                latency: Duration::ZERO,
            });
            continue;
        }
        in_flight.fetch_add(1, Ordering::SeqCst);
        let (tx, in_flight) = (tx.clone(), in_flight.clone());
        threads.push(std::thread::spawn(move || {
            let t0 = Instant::now();
            let got = search(addr, &query);
            let latency = t0.elapsed();
            let (status, body, client_error) = match got {
                Ok((status, body)) => (Some(status), serde_json::from_slice(&body).ok(), None),
                Err(e) => (None, None, Some(e)),
            };
            in_flight.fetch_sub(1, Ordering::SeqCst);
            let _ = tx.send((i, Outcome { due, position, sent: true, status, body, client_error, latency }));
        }));
    }
    drop(tx);
    // Every search ends within the client's timeout (connect, write and read are each bounded by what is left).
    let deadline = Instant::now() + CLIENT_TIMEOUT + Duration::from_secs(5);
    while let Ok((i, o)) = rx.recv_timeout(deadline.saturating_duration_since(Instant::now())) {
        outcomes[i] = Some(o);
    }
    for t in threads {
        let _ = t.join();
    }
    outcomes.into_iter().map(|o| o.expect("every search has an outcome")).collect()
}

/// One search: `POST /service` on a new connection; the status and body of the answer.
fn search(addr: SocketAddr, query: &str) -> Result<(u16, Vec<u8>), String> {
    let deadline = Instant::now() + CLIENT_TIMEOUT;
    let left = || deadline.saturating_duration_since(Instant::now()).max(Duration::from_millis(1));
    let body = json!({ "query": query, "max_results": 10 }).to_string();
    let request = format!(
        "POST /service HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\
         Connection: close\r\n\r\n{body}",
        body.len()
    );
    let mut s = TcpStream::connect_timeout(&addr, left()).map_err(|e| format!("connect: {}", e.kind()))?;
    s.set_write_timeout(Some(left())).map_err(|e| e.to_string())?;
    s.write_all(request.as_bytes()).map_err(|e| format!("write: {}", e.kind()))?;
    let mut got = Vec::new();
    let mut buf = [0u8; 16_384];
    loop {
        if let Some(end) = got.windows(4).position(|w| w == b"\r\n\r\n") {
            let head = String::from_utf8_lossy(&got[..end]).to_ascii_lowercase();
            let status: u16 = head.split_whitespace().nth(1).and_then(|s| s.parse().ok()).ok_or("not HTTP")?;
            let length: Option<usize> =
                head.lines().find_map(|l| l.strip_prefix("content-length:")).and_then(|v| v.trim().parse().ok());
            if length.is_some_and(|n| got.len() >= end + 4 + n) {
                let n = length.unwrap_or(0);
                return Ok((status, got[end + 4..end + 4 + n].to_vec()));
            }
        }
        if got.len() > ANSWER_BYTES_MAX {
            return Err("answer too large".into());
        }
        s.set_read_timeout(Some(left())).map_err(|e| e.to_string())?;
        match s.read(&mut buf) {
            Ok(0) => return Err("closed before a whole answer".into()),
            Ok(n) => got.extend_from_slice(&buf[..n]),
            Err(e) if Instant::now() >= deadline => return Err(format!("timeout ({})", e.kind())),
            Err(e) => return Err(format!("read: {}", e.kind())),
        }
    }
}
