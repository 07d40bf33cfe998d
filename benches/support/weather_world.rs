//! The weather bench's world: one loopback HTTP/1.1 server per search provider, serving recorded result pages and
//! failing the way real providers do (their own wall pages with their real statuses, 429, 503, a request left
//! unanswered, a TCP reset, a sliding-window rate limit that walls for a while). Every answer is counted per
//! provider and by what it was, and every page served is remembered, so that each result of an answer can be traced
//! back to a body its provider served (`World::traces`). A connection gets a thread of its own and is closed after
//! one answer (`Connection: close`); every wait is bounded.

use std::collections::{BTreeMap, VecDeque};
use std::io::{Read, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// How long a `hang` holds a request unanswered (or until the peer closes): longer than the service's source timeout
/// (`WEBSEARCHD_SOURCE_TIMEOUT_MS`, 5 s by default).
pub const HANG: Duration = Duration::from_secs(8);
/// The longest a connection may take to send its request.
const REQUEST_READ_TIMEOUT: Duration = Duration::from_secs(10);
/// The largest request head and body read (the service's are a few hundred bytes).
const REQUEST_BYTES_MAX: usize = 64 * 1_024;
/// Arrivals remembered per provider by a rate limit (its window holds far fewer at any realistic rate).
const ARRIVALS_MAX: usize = 10_000;

/// A small seeded generator (SplitMix64): the world's draws are reproducible from its seed (the order of requests,
/// which the service's threads decide, is not).
#[derive(Debug, Clone)]
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed)
    }

    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// A number in [0, 1).
    pub fn unit(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }

    /// A number in [0, n); 0 when n is 0.
    pub fn below(&mut self, n: usize) -> usize {
        if n == 0 {
            0
        } else {
            (self.next_u64() % n as u64) as usize
        }
    }
}

/// The search providers, one listener each (DuckDuckGo's two endpoints are two), in the service's default order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Provider {
    DdgHtml,
    DdgLite,
    Brave,
    Bing,
    Mojeek,
    Wikipedia,
    Searxng,
}

impl Provider {
    pub const ALL: [Provider; 7] = [
        Provider::DdgHtml,
        Provider::DdgLite,
        Provider::Brave,
        Provider::Bing,
        Provider::Mojeek,
        Provider::Wikipedia,
        Provider::Searxng,
    ];

    /// The service's name of the source (`WEBSEARCHD_SOURCES`, a result's `source`).
    pub fn name(self) -> &'static str {
        match self {
            Provider::DdgHtml => "ddg_html",
            Provider::DdgLite => "ddg_lite",
            Provider::Brave => "brave",
            Provider::Bing => "bing",
            Provider::Mojeek => "mojeek",
            Provider::Wikipedia => "wikipedia",
            Provider::Searxng => "searxng",
        }
    }

    pub fn from_name(name: &str) -> Option<Provider> {
        Provider::ALL.into_iter().find(|p| p.name() == name)
    }

    /// The variable that points the service at this provider.
    pub fn url_var(self) -> &'static str {
        match self {
            Provider::DdgHtml => "WEBSEARCHD_DDG_HTML_URL",
            Provider::DdgLite => "WEBSEARCHD_DDG_LITE_URL",
            Provider::Brave => "WEBSEARCHD_BRAVE_URL",
            Provider::Bing => "WEBSEARCHD_BING_URL",
            Provider::Mojeek => "WEBSEARCHD_MOJEEK_URL",
            Provider::Wikipedia => "WEBSEARCHD_WIKIPEDIA_URL",
            Provider::Searxng => "WEBSEARCHD_SEARXNG_URLS",
        }
    }

    /// The path of the provider's URL as the real one is written (SearXNG's is an instance's base URL: the service
    /// adds `/search`).
    fn path(self) -> &'static str {
        match self {
            Provider::DdgHtml => "/html/",
            Provider::DdgLite => "/lite/",
            Provider::Brave | Provider::Bing | Provider::Mojeek => "/search",
            Provider::Wikipedia => "/w/api.php",
            Provider::Searxng => "/searx",
        }
    }

    /// Who enforces a rate limit: DuckDuckGo limits an address across both its endpoints.
    fn limiter(self) -> usize {
        match self {
            Provider::DdgHtml | Provider::DdgLite => 0,
            other => other as usize,
        }
    }

    fn content_type(self) -> &'static str {
        match self {
            Provider::Wikipedia | Provider::Searxng => "application/json",
            _ => "text/html; charset=utf-8",
        }
    }
}

/// The ways a provider fails one request, drawn uniformly among those a world names.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Mode {
    /// The provider's own wall (bot check, captcha, limiter) with its real status.
    Wall,
    /// HTTP 429 with a short body.
    TooMany,
    /// HTTP 503.
    Unavailable,
    /// The request is read and nothing is answered for `HANG` (or until the peer closes).
    Hang,
    /// The request is read and the connection closed with a TCP reset.
    Reset,
}

impl Mode {
    pub const ALL: [Mode; 5] = [Mode::Wall, Mode::TooMany, Mode::Unavailable, Mode::Hang, Mode::Reset];

    pub fn name(self) -> &'static str {
        match self {
            Mode::Wall => "wall",
            Mode::TooMany => "429",
            Mode::Unavailable => "503",
            Mode::Hang => "hang",
            Mode::Reset => "reset",
        }
    }

    pub fn from_name(name: &str) -> Option<Mode> {
        Mode::ALL.into_iter().find(|m| m.name() == name)
    }
}

/// A provider that walls whoever sends more than `requests` in a sliding `window`, then walls every request for
/// `wall` (from the request that went over; with `extends`, from each request during the wall, as DuckDuckGo's does).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Limit {
    pub requests: usize,
    pub window: Duration,
    pub wall: Duration,
    pub extends: bool,
}

/// What one provider does.
#[derive(Debug, Clone, PartialEq)]
pub struct Behaviour {
    /// The share of requests that fail, each in one of `modes`.
    pub fail: f64,
    pub modes: Vec<Mode>,
    /// Walls every request.
    pub walled: bool,
    pub limit: Option<Limit>,
}

/// Everything the world needs to start.
#[derive(Debug, Clone)]
pub struct Setup {
    pub seed: u64,
    pub behaviours: BTreeMap<Provider, Behaviour>,
    /// The time an HTTP answer takes, drawn uniformly in [min, max].
    pub latency: (Duration, Duration),
}

/// A body the world can serve.
struct Body {
    /// Where it comes from, for the world's description.
    file: String,
    status: u16,
    bytes: Arc<Vec<u8>>,
}

/// A provider's pages: its normal results pages and its walls.
pub struct Pages {
    results: Vec<Body>,
    walls: Vec<Body>,
}

impl Pages {
    /// The files each provider serves, as `(results, walls)` described for the world's header.
    pub fn describe(&self) -> String {
        let list = |bodies: &[Body]| {
            bodies.iter().map(|b| format!("{} ({})", b.file, b.status)).collect::<Vec<_>>().join(", ")
        };
        format!("results: {}; walls: {}", list(&self.results), list(&self.walls))
    }
}

/// The recorded pages of every provider: the project's own fixtures (`fixtures/search`) and, when present, the
/// shared recordings (`shared/fixtures/search`), which are real full pages. A provider's results pages are those
/// that hold at least one full answer of ten where a recording has them.
pub fn load_pages(own: &Path, shared: &Path) -> BTreeMap<Provider, Pages> {
    let read = |dir: &Path, tag: &str, name: &str, status: u16| {
        std::fs::read(dir.join(name)).ok().map(|b| Body { file: format!("{tag}/{name}"), status, bytes: Arc::new(b) })
    };
    let own_page = |name: &str, status: u16| read(own, "fixtures", name, status);
    let shared_page = |name: &str, status: u16| read(shared, "shared", name, status);
    let text = |file: &str, status: u16, body: &str| Body {
        file: file.to_owned(),
        status,
        bytes: Arc::new(body.as_bytes().to_vec()),
    };
    // The recorded pages first; the project's own (short) pages when the shared folder is absent.
    let pick = |shared: Vec<Option<Body>>, own: Vec<Option<Body>>| {
        let found: Vec<Body> = shared.into_iter().flatten().collect();
        if found.is_empty() {
            own.into_iter().flatten().collect()
        } else {
            found
        }
    };
    let mut pages = BTreeMap::new();
    pages.insert(
        Provider::DdgHtml,
        Pages {
            results: pick(
                vec![
                    shared_page("ddg_html__eino__results_with_nextpage_form.html", 200),
                    shared_page("ddg_html_GET__client-side-graph-database-javascript-typescript-b.html", 200),
                    shared_page("ddg_html_GET__github-in-memory-graph-database-javascript-typescr.html", 200),
                    shared_page("ddg_html_GET__indexeddb-wrapper-javascript-typescript-idb-localf.html", 200),
                ],
                vec![own_page("ddg_html_results.html", 200)],
            ),
            // DuckDuckGo's wall is served with 202 (shared/fixtures/search/README.md).
            walls: pick(vec![], vec![own_page("ddg_anomaly.html", 202)]),
        },
    );
    pages.insert(
        Provider::DdgLite,
        Pages {
            results: pick(
                vec![shared_page("ddg_lite__catba__200_results_with_ads.html", 200)],
                vec![own_page("ddg_lite_results.html", 200)],
            ),
            walls: pick(
                vec![shared_page("ddg_lite__catba__202_anomaly_challenge.html", 202)],
                vec![own_page("ddg_anomaly.html", 202)],
            ),
        },
    );
    pages.insert(
        Provider::Brave,
        Pages {
            results: pick(vec![], vec![own_page("brave__rust-programming-language__20web_results.html", 200)]),
            walls: pick(vec![], vec![own_page("brave__captcha__429_noscript.html", 429)]),
        },
    );
    pages.insert(
        Provider::Bing,
        Pages {
            results: pick(
                vec![],
                vec![
                    own_page("bing__does-caffeine-affect-sleep__10results.html", 200),
                    own_page("bing__javascript-tutorial__10results.html", 200),
                ],
            ),
            // No recording of Bing's wall exists (fixtures/search/README.md): it answers 429 or 403.
            walls: vec![
                text("(Bing 429)", 429, "Too Many Requests"),
                text("(Bing 403)", 403, "<html><body>Forbidden</body></html>"),
            ],
        },
    );
    pages.insert(
        Provider::Mojeek,
        Pages {
            results: pick(
                vec![shared_page("mojeek__javascript-tutorial__playwright-prettier__2026-04.html", 200)],
                vec![own_page("mojeek_results.html", 200)],
            ),
            walls: pick(vec![], vec![own_page("mojeek__captcha__altcha.html", 200)]),
        },
    );
    pages.insert(
        Provider::Wikipedia,
        Pages {
            results: pick(
                vec![shared_page("wikipedia_api_list-search__caffeine-sleep.json", 200)],
                vec![own_page("wikipedia__meaning__2results.json", 200)],
            ),
            // MediaWiki's documented rate-limit error, with the 429 its front ends send (no recording exists).
            walls: vec![text(
                "(Wikipedia 429 ratelimited)",
                429,
                r#"{"error":{"code":"ratelimited","info":"You've exceeded your rate limit. Please wait some time and try again."}}"#,
            )],
        },
    );
    let mut searxng_walls = vec![text("(SearXNG limiter 429)", 429, "Too Many Requests")];
    searxng_walls.extend(own_page("searxng_unresponsive.json", 200));
    searxng_walls.extend(shared_page("searx-be__verifying-your-request_interstitial__2026-04.html", 200));
    pages.insert(
        Provider::Searxng,
        Pages {
            results: pick(
                vec![shared_page("searxng_json__espresso-grind-size-extraction__2026.json", 200)],
                vec![own_page("searxng_results.json", 200)],
            ),
            walls: searxng_walls,
        },
    );
    pages
}

/// What a provider served, by kind.
#[derive(Debug, Clone, Default)]
pub struct Served {
    pub requests: u64,
    pub results: u64,
    /// Random failures, by mode.
    pub failures: BTreeMap<Mode, u64>,
    /// Walls of a walled provider.
    pub walled: u64,
    /// Walls of the rate limit.
    pub limited: u64,
}

impl Served {
    /// Walls of every kind: wall pages, 429s, the rate limit's and a walled provider's.
    pub fn walls(&self) -> u64 {
        let mode = |m| self.failures.get(&m).copied().unwrap_or(0);
        mode(Mode::Wall) + mode(Mode::TooMany) + self.walled + self.limited
    }
}

/// One provider's live state.
struct State {
    rng: Rng,
    served: Served,
    /// Which of its bodies were served: results pages, then walls.
    sent: Vec<bool>,
}

/// A rate limit's memory: the arrivals in its window and the end of its wall.
#[derive(Default)]
struct LimitState {
    arrivals: VecDeque<Instant>,
    walled_until: Option<Instant>,
}

/// What to do with one request.
enum Act {
    Answer { status: u16, body: Arc<Vec<u8>> },
    Hang,
    Reset,
}

struct Shared {
    setup: Setup,
    pages: BTreeMap<Provider, Pages>,
    states: BTreeMap<Provider, Mutex<State>>,
    limits: Mutex<BTreeMap<usize, LimitState>>,
    stop: AtomicBool,
}

/// The running world: a listener per provider.
pub struct World {
    shared: Arc<Shared>,
    addrs: BTreeMap<Provider, SocketAddr>,
    acceptors: Vec<JoinHandle<()>>,
    connections: Arc<Mutex<Vec<JoinHandle<()>>>>,
}

impl World {
    pub fn start(setup: Setup, pages: BTreeMap<Provider, Pages>) -> World {
        let states = Provider::ALL
            .iter()
            .enumerate()
            .map(|(i, &p)| {
                let n = pages.get(&p).map_or(0, |pg| pg.results.len() + pg.walls.len());
                let seed = setup.seed ^ (i as u64 + 1).wrapping_mul(0xA076_1D64_78BD_642F);
                (p, Mutex::new(State { rng: Rng::new(seed), served: Served::default(), sent: vec![false; n] }))
            })
            .collect();
        let shared = Arc::new(Shared {
            setup,
            pages,
            states,
            limits: Mutex::new(BTreeMap::new()),
            stop: AtomicBool::new(false),
        });
        let connections = Arc::new(Mutex::new(Vec::new()));
        let mut addrs = BTreeMap::new();
        let mut acceptors = Vec::new();
        for p in Provider::ALL {
            let listener = TcpListener::bind("127.0.0.1:0").expect("bind a provider's listener");
            addrs.insert(p, listener.local_addr().expect("listener address"));
            let (shared, connections) = (shared.clone(), connections.clone());
            acceptors.push(std::thread::spawn(move || accept(p, &listener, &shared, &connections)));
        }
        World { shared, addrs, acceptors, connections }
    }

    /// The provider's URL, to configure the service with.
    pub fn url(&self, p: Provider) -> String {
        format!("http://{}{}", self.addrs[&p], p.path())
    }

    pub fn served(&self, p: Provider) -> Served {
        self.shared.states[&p].lock().unwrap().served.clone()
    }

    /// Whether `needle` (any of its written forms) is in a body `p` served during the run.
    pub fn traces(&self, p: Provider, needles: &[String]) -> bool {
        let sent = self.shared.states[&p].lock().unwrap().sent.clone();
        let Some(pages) = self.shared.pages.get(&p) else { return false };
        pages.results.iter().chain(&pages.walls).zip(sent).filter(|(_, sent)| *sent).any(|(body, _)| {
            let text = String::from_utf8_lossy(&body.bytes);
            needles.iter().any(|n| !n.is_empty() && text.contains(n.as_str()))
                || (p.content_type() == "application/json" && json_strings_hold(&body.bytes, needles))
        })
    }

    /// Stops accepting and waits for every connection to end (a hang ends within `HANG`).
    pub fn stop(mut self) {
        self.shared.stop.store(true, Ordering::SeqCst);
        for addr in self.addrs.values() {
            let _ = TcpStream::connect_timeout(addr, Duration::from_secs(1));
        }
        for a in self.acceptors.drain(..) {
            let _ = a.join();
        }
        let connections = std::mem::take(&mut *self.connections.lock().unwrap());
        for c in connections {
            let _ = c.join();
        }
    }
}

/// Whether a JSON body holds one of `needles` in a string value (a writer may escape what a reader decodes).
fn json_strings_hold(bytes: &[u8], needles: &[String]) -> bool {
    fn walk(v: &serde_json::Value, needles: &[String]) -> bool {
        match v {
            serde_json::Value::String(s) => needles.iter().any(|n| !n.is_empty() && s.contains(n.as_str())),
            serde_json::Value::Array(a) => a.iter().any(|v| walk(v, needles)),
            serde_json::Value::Object(o) => o.values().any(|v| walk(v, needles)),
            _ => false,
        }
    }
    serde_json::from_slice::<serde_json::Value>(bytes).is_ok_and(|v| walk(&v, needles))
}

fn accept(p: Provider, listener: &TcpListener, shared: &Arc<Shared>, connections: &Mutex<Vec<JoinHandle<()>>>) {
    for stream in listener.incoming() {
        if shared.stop.load(Ordering::SeqCst) {
            break;
        }
        let Ok(stream) = stream else { continue };
        let shared = shared.clone();
        let handle = std::thread::spawn(move || serve(p, stream, &shared));
        let mut list = connections.lock().unwrap();
        list.retain(|h| !h.is_finished());
        list.push(handle);
    }
}

/// Reads one request and answers it as the provider's behaviour draws.
fn serve(p: Provider, mut stream: TcpStream, shared: &Shared) {
    if !read_request(&mut stream) {
        return;
    }
    let (act, latency) = decide(p, shared);
    match act {
        Act::Answer { status, body } => {
            std::thread::sleep(latency);
            let head = format!(
                "HTTP/1.1 {status} {}\r\nContent-Type: {}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
                reason(status),
                if status == 200 || status == 202 { p.content_type() } else { "text/html; charset=utf-8" },
                body.len()
            );
            let _ = stream.write_all(head.as_bytes());
            let _ = stream.write_all(&body);
            let _ = stream.shutdown(Shutdown::Write);
            // Let the peer read everything before the socket closes (a close with unread input would reset it).
            let _ = stream.set_read_timeout(Some(Duration::from_secs(2)));
            let _ = stream.read(&mut [0u8; 64]);
        }
        Act::Hang => hang(&mut stream),
        Act::Reset => {
            // SO_LINGER with a zero timeout: the close sends RST.
            let _ = socket2::SockRef::from(&stream).set_linger(Some(Duration::ZERO));
        }
    }
}

/// Holds the connection without a word for `HANG`, or until the peer closes it.
fn hang(stream: &mut TcpStream) {
    let until = Instant::now() + HANG;
    let _ = stream.set_read_timeout(Some(Duration::from_millis(200)));
    let mut buf = [0u8; 1_024];
    while Instant::now() < until {
        match stream.read(&mut buf) {
            Ok(0) => return,
            Ok(_) => {}
            Err(e) if matches!(e.kind(), std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut) => {}
            Err(_) => return,
        }
    }
}

/// Reads a request's head and its body (by `Content-Length`); false when the peer sent no whole request.
fn read_request(stream: &mut TcpStream) -> bool {
    let _ = stream.set_read_timeout(Some(REQUEST_READ_TIMEOUT));
    let mut buf = Vec::new();
    let mut chunk = [0u8; 4_096];
    while buf.len() < REQUEST_BYTES_MAX {
        let mut headers = [httparse::EMPTY_HEADER; 64];
        let mut req = httparse::Request::new(&mut headers);
        if let Ok(httparse::Status::Complete(head)) = req.parse(&buf) {
            let length: usize = req
                .headers
                .iter()
                .find(|h| h.name.eq_ignore_ascii_case("content-length"))
                .and_then(|h| std::str::from_utf8(h.value).ok()?.trim().parse().ok())
                .unwrap_or(0);
            while buf.len() < head + length.min(REQUEST_BYTES_MAX) {
                match stream.read(&mut chunk) {
                    Ok(0) | Err(_) => return false,
                    Ok(n) => buf.extend_from_slice(&chunk[..n]),
                }
            }
            return true;
        }
        match stream.read(&mut chunk) {
            Ok(0) | Err(_) => return false,
            Ok(n) => buf.extend_from_slice(&chunk[..n]),
        }
    }
    false
}

/// The provider's answer to a request arriving now, and the time it takes.
fn decide(p: Provider, shared: &Shared) -> (Act, Duration) {
    let behaviour = shared.setup.behaviours.get(&p);
    let pages = &shared.pages[&p];
    let mut state = shared.states[&p].lock().unwrap();
    state.served.requests += 1;
    let (min, max) = shared.setup.latency;
    let latency = min + (max.saturating_sub(min)).mul_f64(state.rng.unit());
    let limited = behaviour.and_then(|b| b.limit).is_some_and(|limit| over_limit(p, limit, shared));
    let failure = match behaviour {
        Some(b) if b.walled => Some(None),
        _ if limited => Some(None),
        Some(b) if !b.modes.is_empty() && state.rng.unit() < b.fail => {
            let mode = b.modes[state.rng.below(b.modes.len())];
            Some(Some(mode))
        }
        _ => None,
    };
    let wall = |state: &mut State| {
        let i = state.rng.below(pages.walls.len());
        state.sent[pages.results.len() + i] = true;
        Act::Answer { status: pages.walls[i].status, body: pages.walls[i].bytes.clone() }
    };
    let act = match failure {
        None => {
            state.served.results += 1;
            let i = state.rng.below(pages.results.len());
            state.sent[i] = true;
            Act::Answer { status: pages.results[i].status, body: pages.results[i].bytes.clone() }
        }
        Some(None) => {
            if limited {
                state.served.limited += 1;
            } else {
                state.served.walled += 1;
            }
            wall(&mut state)
        }
        Some(Some(mode)) => {
            *state.served.failures.entry(mode).or_default() += 1;
            match mode {
                Mode::Wall => wall(&mut state),
                Mode::TooMany => Act::Answer { status: 429, body: Arc::new(b"Too Many Requests".to_vec()) },
                Mode::Unavailable => Act::Answer { status: 503, body: Arc::new(b"Service Unavailable".to_vec()) },
                Mode::Hang => Act::Hang,
                Mode::Reset => Act::Reset,
            }
        }
    };
    (act, latency)
}

/// Records an arrival at `p`'s rate limit; whether it is walled.
fn over_limit(p: Provider, limit: Limit, shared: &Shared) -> bool {
    let now = Instant::now();
    let mut limits = shared.limits.lock().unwrap();
    let state = limits.entry(p.limiter()).or_default();
    while state.arrivals.front().is_some_and(|t| now.duration_since(*t) >= limit.window)
        || state.arrivals.len() >= ARRIVALS_MAX
    {
        state.arrivals.pop_front();
    }
    state.arrivals.push_back(now);
    if state.walled_until.is_some_and(|until| now < until) {
        if limit.extends {
            state.walled_until = Some(now + limit.wall);
        }
        return true;
    }
    if state.arrivals.len() > limit.requests {
        state.walled_until = Some(now + limit.wall);
        return true;
    }
    false
}

fn reason(status: u16) -> &'static str {
    match status {
        200 => "OK",
        202 => "Accepted",
        403 => "Forbidden",
        429 => "Too Many Requests",
        503 => "Service Unavailable",
        _ => "Other",
    }
}
