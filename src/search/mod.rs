//! Search: the request, the sources tried in order with fallback, and the answer.
//!
//! `Engine::search` asks one source endpoint at a time, and goes on to another when one fails, until the answer holds
//! `max_results` or nothing more can be asked before the search's deadline. Which endpoint next (`Engine::pick`):
//! of those the search has not asked, the one that can be asked soonest, where an endpoint can be asked when its
//! health admits it (`breaker::Health`: backed off by what it said, then one trial) and its provider has a slot
//! (`breaker::Pace`: a token bucket per provider, DuckDuckGo's two endpoints sharing one, each SearXNG instance its
//! own). A less preferred endpoint must be sooner by `PREFERENCE_STEP` a rank: the web providers come first, then
//! Wikipedia, then endpoints that failed lately (asked for their trial) or are slow. Among equals, the provider asked
//! least recently goes first (`WEBSEARCHD_SOURCE_ORDER=rotate`; `fixed` keeps the configured order), so searches,
//! and bursts of them, are spread over the providers. A search without results waits for a slot that comes before
//! its deadline (one with results, only a next page's gap; at most `Settings::waiting_max` searches wait at once);
//! an endpoint that cannot be asked in time is reported
//! skipped with the reason and when it can be. Results are merged in the order asked, deduplicated by URL, each
//! keeping its source: an endpoint whose page was full is asked for its next page (up to `WEBSEARCHD_SOURCE_PAGES_MAX`
//! pages; by offset, or for DuckDuckGo's HTML endpoint by posting the page's own next-page form) if its provider has
//! a slot within `PAGE_GAP_MAX`. Nothing is asked after the deadline, and each request's timeouts end at it. One
//! provider's "no results" ends that provider, not the search. Every endpoint asked or skipped is reported with what
//! happened to it, and a failure is never presented as "no results": 502 when every endpoint that could be asked was
//! asked and failed, 503 with `Retry-After` when none could be asked in time.
//!
//! The controls of a search (`controls`: time range, region, safe search, domain filters) reach each source in its own
//! parameters; a source that cannot honour one for this search is not asked and is reported `unsupported_control`.
//! The domain filters are enforced on every result, whatever the source did with them.

mod breaker;
pub mod controls;
mod request;
pub mod shared;
pub mod sources;
pub mod url;

pub use request::{
    integer_field, json_object, normalize_query, SearchRequest, EXTRACT_PAGES_MAX, EXTRACT_TOKENS_DEFAULT,
    EXTRACT_TOKENS_MAX, EXTRACT_TOKENS_MIN, MAX_RESULTS_DEFAULT, MAX_RESULTS_MAX, QUERY_CHARS_MAX,
};

use std::collections::HashSet;
use std::fmt::Write as _;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering::Relaxed};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::cache::Cache;
use crate::clock::{rfc3339, Clock};
use crate::config::Config;
use crate::error::ApiError;
use crate::fetch;
use breaker::{Health, Pace, Skip, Slot};
use controls::{Controls, Region, SafeSearch};
use sources::{Hit, Kind, NextForm, Page};
use url::origin;

/// A browser's headers: the sources serve their plain HTML pages to browsers.
use crate::fetch::BROWSER_USER_AGENT;
const ACCEPT_HTML: &str = "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8";

/// Results a page must hold to be worth asking the next page of (a shorter page is the last one).
const PAGE_FULL_MIN: usize = 5;
/// The longest a next page of the same search waits for its provider's slot; past it the search goes on elsewhere.
const PAGE_GAP_MAX: Duration = Duration::from_secs(1);
/// Wikipedia results asked per page (`srlimit`).
const WIKIPEDIA_PAGE_RESULTS: usize = 20;
/// An endpoint slower than this on average (exponentially weighted) is asked after the others while it was asked
/// within `SLOW_RECENT`.
const SLOW_MS: u64 = 3_000;
const SLOW_RECENT: Duration = Duration::from_secs(60);
/// How much sooner an endpoint one rank less preferred must be to be asked first (`Engine::pick`).
const PREFERENCE_STEP: Duration = Duration::from_secs(1);
/// How often a search with no result looks again while the endpoints it could ask have trials out.
const TRIAL_POLL: Duration = Duration::from_millis(250);
/// The least time a request is given before the search's deadline: a slot later than that is not waited for.
const ASK_TIME_MIN: Duration = Duration::from_secs(1);

/// A SearXNG instance's interval (unless `WEBSEARCHD_SOURCE_INTERVAL_MS` is lower or `WEBSEARCHD_PROVIDER_INTERVALS_MS`
/// names `searxng`): the operator's own instance takes an agent's pace, not a public engine's.
const SEARXNG_INTERVAL_MS: u64 = 250;

/// Redirects a search source may answer with (a few hops cover http -> https and a moved path). Those that leave the
/// configured origin go through the SSRF guard (`fetch::Client`): a public instance is a third party.
const SOURCE_REDIRECTS_MAX: u32 = 3;

/// One place a source is asked: a kind and a URL (SearXNG has one endpoint per instance).
struct Endpoint {
    kind: Kind,
    /// Index into `Engine::providers`.
    provider: usize,
    /// Index into `Engine::paces`: shared by the endpoints of one provider (DuckDuckGo's two), each SearXNG instance
    /// its own (they are independent third parties).
    pace: usize,
    /// Empty for a source listed without any URL (SearXNG without instances): always skipped.
    url: String,
    state: Mutex<EndpointState>,
    counters: Counters,
}

#[derive(Default)]
struct EndpointState {
    health: Health,
    last_success_ms: Option<u64>,
    last_failure_ms: Option<u64>,
    last_error: Option<String>,
    /// When the endpoint was last asked, and the exponentially weighted mean of its time to answer, in ms.
    asked_at: Option<Instant>,
    latency_ms: Option<u64>,
}

#[derive(Default)]
struct Counters {
    ok: AtomicU64,
    empty: AtomicU64,
    failed: AtomicU64,
    skipped: AtomicU64,
    blocked: AtomicU64,
}

/// What one endpoint did for one search.
#[derive(Debug, Clone)]
struct Attempt {
    name: &'static str,
    endpoint: String,
    status: &'static str,
    error: Option<String>,
    detail: Option<String>,
    elapsed_ms: u64,
    results: Option<usize>,
    retry_in: Option<Duration>,
    /// The result page asked (0: the first).
    page: u32,
    /// Results of this page the domain filters removed.
    removed: usize,
    /// The control the source cannot honour (`unsupported_control`).
    control: Option<&'static str>,
    /// How long the search waited for this endpoint's slot.
    waited: Duration,
    /// It failed in a way that may be chance (a first timeout, reset or 5xx in a row: no back-off earned).
    by_chance: bool,
}

impl Attempt {
    fn to_json(&self) -> Value {
        let mut v = json!({ "name": self.name, "status": self.status, "elapsed_ms": self.elapsed_ms });
        if let Some(map) = v.as_object_mut() {
            if self.page > 0 {
                map.insert("page".into(), (self.page + 1).into());
            }
            if !self.endpoint.is_empty() {
                map.insert("endpoint".into(), self.endpoint.clone().into());
            }
            if let Some(e) = &self.error {
                map.insert("error".into(), e.clone().into());
            }
            if let Some(d) = &self.detail {
                map.insert("detail".into(), d.clone().into());
            }
            if let Some(n) = self.results {
                map.insert("results".into(), n.into());
            }
            if let Some(r) = self.retry_in {
                map.insert("retry_in_s".into(), r.as_secs().max(1).into());
            }
            if self.removed > 0 {
                map.insert("removed".into(), self.removed.into());
            }
            if let Some(c) = self.control {
                map.insert("control".into(), c.into());
            }
            if !self.waited.is_zero() {
                map.insert("waited_ms".into(), (self.waited.as_millis() as u64).into());
            }
        }
        v
    }
}

/// A result in the answer.
#[derive(Debug, Clone)]
struct Ranked {
    hit: Hit,
    source: &'static str,
}

/// One page of one search asked of an endpoint: page 0 is the query's first page; DuckDuckGo's HTML endpoint asks a
/// later one with the `form` of the page before it. Nothing is sent after `deadline`.
struct PageAsk<'a> {
    query: &'a str,
    controls: &'a Controls,
    page: u32,
    form: Option<NextForm>,
    deadline: Instant,
}

/// What `Engine::pick` chose.
enum Pick {
    Ask(Picked),
    /// An endpoint's health changed while it was chosen: choose again.
    Again,
    /// Nothing can be asked in time: why, by endpoint.
    None(Vec<(usize, Skip)>),
}

/// The endpoint a search asks next, with its provider's slot reserved, whether it is its trial, and the epoch of its
/// health when admitted (`Health::current`).
struct Picked {
    idx: usize,
    slot: Slot,
    trial: bool,
    epoch: u64,
}

/// A place among the searches that wait for a slot (`Settings::waiting_max`), given back when dropped.
struct Waiter<'a>(&'a AtomicUsize);

impl<'a> Waiter<'a> {
    fn take(waiting: &'a AtomicUsize, max: usize) -> Option<Waiter<'a>> {
        if waiting.fetch_add(1, Relaxed) < max {
            Some(Waiter(waiting))
        } else {
            waiting.fetch_sub(1, Relaxed);
            None
        }
    }
}

impl Drop for Waiter<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Relaxed);
    }
}

/// What a search found: the results and the source report that produced them.
#[derive(Debug, Clone)]
struct Outcome {
    results: Vec<Ranked>,
    sources: Vec<Attempt>,
}

impl Outcome {
    /// The answer's `results` and `sources`, as cached (here, and in the shared store's JSON).
    fn render(&self) -> Rendered {
        let results = self
            .results
            .iter()
            .enumerate()
            .map(|(i, r)| {
                let mut v = json!({
                    "position": i + 1,
                    "title": r.hit.title,
                    "url": r.hit.url,
                    "snippet": r.hit.snippet,
                    "source": r.source,
                });
                if let (Some(date), Some(map)) = (&r.hit.date, v.as_object_mut()) {
                    map.insert("published".into(), date.clone().into());
                }
                v
            })
            .collect();
        Rendered { results, sources: self.sources.iter().map(Attempt::to_json).collect() }
    }
}

/// What is cached: an outcome as the answer shows it.
#[derive(Debug, Clone)]
struct Rendered {
    results: Vec<Value>,
    sources: Vec<Value>,
}

/// Bytes the cached answers hold in all at most (`Rendered::bytes`), beside `WEBSEARCHD_CACHE_ENTRIES` (up to
/// 100,000): answers of many long results cannot make the entry count gigabytes; the oldest go first.
pub const CACHE_BYTES_MAX: usize = 16 * 1_024 * 1_024;

impl Rendered {
    /// What the answer holds in memory: every block it has allocated, as the allocator hands it out (`heap_chunk`):
    /// the lists' slots, the objects' B-tree nodes, the keys and strings. (Counting only each value's size and its
    /// strings' bytes gave 7,180 bytes for an answer of ten search results that holds 13,296.)
    fn bytes(&self) -> usize {
        list_bytes(self.results.capacity(), &self.results) + list_bytes(self.sources.capacity(), &self.sources)
    }
}

/// The block the allocator hands out for `n` bytes (glibc's: an 8-byte header, 16-byte steps, 32 bytes at least);
/// nothing for 0.
fn heap_chunk(n: usize) -> usize {
    if n == 0 {
        return 0;
    }
    n.saturating_add(8).next_multiple_of(16).max(32)
}

/// A JSON object's B-tree node (serde_json's `Map` is a `BTreeMap<String, Value>`): room for 11 members' keys and
/// values, its parent link and two counts.
const OBJECT_NODE_BYTES: usize = 11 * (std::mem::size_of::<String>() + std::mem::size_of::<Value>()) + 16;
/// Members of an object that fit in one node; past them, every node but the root holds at least 5.
const OBJECT_NODE_MEMBERS: usize = 11;
const OBJECT_NODE_MEMBERS_MIN: usize = 5;

/// Bytes a list of JSON values holds: its `capacity` slots and what each value holds.
fn list_bytes(capacity: usize, values: &[Value]) -> usize {
    heap_chunk(capacity.saturating_mul(std::mem::size_of::<Value>())) + values.iter().map(value_bytes).sum::<usize>()
}

/// Bytes a JSON value holds beyond its own slot (which its list or object counts). Recursive: the values are this
/// node's rendering, or another node's read from the shared store by serde_json, which refuses nesting past 128
/// levels.
fn value_bytes(v: &Value) -> usize {
    match v {
        Value::String(s) => heap_chunk(s.capacity()),
        Value::Array(a) => list_bytes(a.capacity(), a),
        Value::Object(o) => {
            let nodes = match o.len() {
                0 => 0,
                n if n <= OBJECT_NODE_MEMBERS => 1,
                n => n.div_ceil(OBJECT_NODE_MEMBERS_MIN),
            };
            nodes * heap_chunk(OBJECT_NODE_BYTES)
                + o.iter().map(|(k, v)| heap_chunk(k.capacity()) + value_bytes(v)).sum::<usize>()
        }
        _ => 0,
    }
}

/// The answer cache: `entries` answers for `ttl`, within `CACHE_BYTES_MAX`.
fn answer_cache(ttl: Duration, entries: usize) -> Cache<Rendered> {
    Cache::weighed(ttl, entries, CACHE_BYTES_MAX, Rendered::bytes)
}

/// Settings of the engine, from the configuration.
#[derive(Debug, Clone)]
pub struct Settings {
    /// The controls' defaults: what a search that names no region or safe search gets.
    pub region: Region,
    pub safesearch: SafeSearch,
    pub deadline: Duration,
    pub breaker: breaker::Settings,
    pub fetch: fetch::Limits,
    /// What a source's redirect out of its own origin may reach.
    pub redirect_policy: fetch::guard::Policy,
    pub cache_ttl: Duration,
    pub cache_entries: usize,
    pub rotate: bool,
    pub pages_max: u32,
    /// Searches that may wait for a provider's slot at once (each holds a worker while it waits); past it a search
    /// asks only what is ready now.
    pub waiting_max: usize,
    /// Wikimedia's API policy asks clients to say who they are and how to reach their operator.
    pub wikimedia_user_agent: String,
}

pub struct Engine {
    endpoints: Vec<Endpoint>,
    /// Providers (an endpoint's `provider`, numbered in the configured order): the web ones with a configured
    /// endpoint take turns first, the rest (Wikipedia, unconfigured ones) follow.
    web: Vec<usize>,
    rest: Vec<usize>,
    /// Searches started, for the rotation of the first provider.
    turn: AtomicU64,
    /// The providers' token buckets (`Endpoint::pace`), under one lock: a search chooses and reserves its next
    /// endpoint under it, so that searches at once are spread over the providers. Never held across I/O.
    paces: Mutex<Vec<Pace>>,
    /// Each pace's name in the fleet: the provider, or the SearXNG instance's URL.
    pace_names: Vec<String>,
    /// Searches waiting for a slot now (at most `Settings::waiting_max`).
    waiting: AtomicUsize,
    /// The state of the back-offs' jitter (splitmix64).
    jitter: AtomicU64,
    /// Searches that waited for a slot, and the time they waited.
    waits: AtomicU64,
    waited_ms: AtomicU64,
    settings: Settings,
    client: fetch::Client,
    cache: Cache<Rendered>,
    /// The state shared with other nodes (the cache, cool-downs, pacing), when there is a store.
    store: Option<Arc<crate::store::Store>>,
    clock: Arc<dyn Clock>,
    cache_hits: AtomicU64,
    cache_misses: AtomicU64,
}

impl Engine {
    pub fn from_config(config: &Config, clock: Arc<dyn Clock>) -> Engine {
        let settings = Settings {
            region: config.region.clone(),
            safesearch: config.safesearch,
            deadline: Duration::from_millis(config.search_deadline_ms),
            breaker: breaker::Settings {
                wall_backoff: Duration::from_millis(config.breaker_cooldown_ms),
                failure_backoff: Duration::from_millis(config.breaker_failure_cooldown_ms),
                backoff_max: Duration::from_millis(config.breaker_cooldown_max_ms),
                trial_max: Duration::from_millis(config.source_timeout_ms) + ASK_TIME_MIN,
            },
            fetch: fetch::Limits {
                connect_timeout: Duration::from_millis(config.source_connect_timeout_ms),
                total_timeout: Duration::from_millis(config.source_timeout_ms),
                body_bytes_max: config.source_body_bytes_max,
                redirects_max: SOURCE_REDIRECTS_MAX,
            },
            redirect_policy: config.fetch_policy().0,
            cache_ttl: Duration::from_secs(config.cache_ttl_s),
            cache_entries: config.cache_entries,
            rotate: config.source_order_rotate,
            pages_max: config.source_pages_max,
            waiting_max: config.workers.saturating_sub(1),
            wikimedia_user_agent: format!(
                "websearchd/{} ({}; self-hosted web search service; MediaWiki search API client)",
                env!("CARGO_PKG_VERSION"),
                config.public_url
            ),
        };
        let mut endpoints = Vec::new();
        let mut providers: Vec<&'static str> = Vec::new();
        // Each pace's name in the fleet (the provider, or a SearXNG instance's URL) and its bucket.
        let mut paces: Vec<(String, Pace)> = Vec::new();
        for &kind in &config.sources {
            let urls = match kind {
                Kind::DdgHtml => vec![config.ddg_html_url.clone()],
                Kind::DdgLite => vec![config.ddg_lite_url.clone()],
                Kind::Mojeek => vec![config.mojeek_url.clone()],
                Kind::Bing => vec![config.bing_url.clone()],
                Kind::Brave => vec![config.brave_url.clone()],
                Kind::Wikipedia => vec![config.wikipedia_url.clone()],
                Kind::Searxng if config.searxng_urls.is_empty() => vec![String::new()],
                Kind::Searxng => config.searxng_urls.clone(),
            };
            let name = kind.provider();
            let provider = providers.iter().position(|p| *p == name).unwrap_or_else(|| {
                providers.push(name);
                providers.len() - 1
            });
            let ms = config.provider_intervals_ms.iter().find(|(n, _)| n == name).map_or(
                match kind {
                    Kind::Searxng => config.source_interval_ms.min(SEARXNG_INTERVAL_MS),
                    _ => config.source_interval_ms,
                },
                |(_, ms)| *ms,
            );
            for url in urls {
                let pace_name = if kind == Kind::Searxng { url.clone() } else { name.to_owned() };
                let pace = paces.iter().position(|(n, _)| *n == pace_name).unwrap_or_else(|| {
                    paces.push((pace_name, Pace::new(Duration::from_millis(ms), config.source_burst)));
                    paces.len() - 1
                });
                endpoints.push(Endpoint {
                    kind,
                    provider,
                    pace,
                    url,
                    state: Mutex::default(),
                    counters: Counters::default(),
                });
            }
        }
        let web_provider =
            |p: &usize| endpoints.iter().any(|e| e.provider == *p && e.kind != Kind::Wikipedia && !e.url.is_empty());
        let (web, rest) = (0..providers.len()).partition(web_provider);
        let (pace_names, paces) = paces.into_iter().unzip();
        Engine {
            web,
            rest,
            turn: AtomicU64::new(0),
            client: fetch::Client::new(settings.fetch.clone(), settings.redirect_policy.clone()),
            cache: answer_cache(settings.cache_ttl, settings.cache_entries),
            endpoints,
            pace_names,
            paces: Mutex::new(paces),
            waiting: AtomicUsize::new(0),
            jitter: AtomicU64::new(jitter_seed()),
            waits: AtomicU64::new(0),
            waited_ms: AtomicU64::new(0),
            settings,
            clock,
            cache_hits: AtomicU64::new(0),
            cache_misses: AtomicU64::new(0),
            store: None,
        }
    }

    /// Shares the cache, the endpoints' cool-downs and the providers' pacing with other nodes through `store`.
    pub fn share(&mut self, store: Arc<crate::store::Store>) {
        self.store = Some(store);
    }

    pub fn store(&self) -> Option<&Arc<crate::store::Store>> {
        self.store.as_ref()
    }

    /// Runs a search and builds the answer body (`request_id` ties it to the HTTP exchange).
    pub fn search(&self, request: &SearchRequest, request_id: &str) -> Result<Value, ApiError> {
        let started = Instant::now();
        let controls = request.controls.resolve(&self.settings.region, self.settings.safesearch);
        let key = cache_key(request, &controls);
        let from_store = || self.shared_cached(&key, request.max_results, started);
        let (outcome, age) = match self.cache.get(&key, started).or_else(from_store) {
            Some((outcome, age)) => {
                self.cache_hits.fetch_add(1, Relaxed);
                (outcome, Some(age))
            }
            None => {
                self.cache_misses.fetch_add(1, Relaxed);
                let outcome = self.run(request, &controls, started)?.render();
                if let Some(store) = self.shared_cache() {
                    let shared = json!({ "results": outcome.results, "sources": outcome.sources });
                    store.cache(&key, shared.to_string().as_bytes(), self.settings.cache_ttl, self.clock.now_unix_ms());
                }
                self.cache.put(key, outcome.clone(), Instant::now());
                (outcome, None)
            }
        };
        let mut answer = json!({
            "request_id": request_id,
            "query": request.query,
            "cached": age.is_some(),
            "issued_at": rfc3339(self.clock.now_unix_ms()),
            "elapsed_ms": started.elapsed().as_millis() as u64,
        });
        if let Some(map) = answer.as_object_mut() {
            // Moved in: `json!` would copy them once more (it serializes what it is given by reference).
            map.insert("results".into(), Value::Array(outcome.results));
            map.insert("sources".into(), Value::Array(outcome.sources));
            if let Some(age) = age {
                map.insert("age_s".into(), age.as_secs().into());
            }
        }
        Ok(answer)
    }

    /// The store, when answers are shared (and cached at all).
    fn shared_cache(&self) -> Option<&crate::store::Store> {
        let on = self.settings.cache_entries > 0 && !self.settings.cache_ttl.is_zero();
        self.store.as_deref().filter(|_| on)
    }

    /// An answer another node of the fleet cached (kept in this node's cache too, as old as it is), in the shape
    /// this service writes and cut to `max_results` (`shared::answer`); none if the store cannot be asked, or what
    /// it holds is not the fleet's answer (a miss, logged and counted by the store).
    fn shared_cached(&self, key: &str, max_results: usize, now: Instant) -> Option<(Rendered, Duration)> {
        let (ttl, now_ms) = (self.settings.cache_ttl, self.clock.now_unix_ms());
        let take =
            |bytes: &[u8]| shared::answer(bytes, max_results).map(|(results, sources)| Rendered { results, sources });
        let (outcome, age) = self.shared_cache()?.cached(key, ttl, now_ms, take).ok()??;
        self.cache.put(key.to_owned(), outcome.clone(), now.checked_sub(age).unwrap_or(now));
        Some((outcome, age))
    }

    fn paces(&self) -> std::sync::MutexGuard<'_, Vec<Pace>> {
        self.paces.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// A number in [0, 1) for a back-off's jitter (splitmix64 over a per-process seed).
    fn jitter(&self) -> f64 {
        const GAMMA: u64 = 0x9E37_79B9_7F4A_7C15;
        let mut z = self.jitter.fetch_add(GAMMA, Relaxed).wrapping_add(GAMMA);
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^= z >> 31;
        (z >> 11) as f64 / (1u64 << 53) as f64
    }

    /// The fleet's word on `ep` about to be asked: its back-off, and its provider's slot within `wait_max` (reserved:
    /// the wait). Admitted at once when no store is shared or it cannot be asked (this node's own health and pace
    /// have admitted it).
    fn fleet_slot(&self, ep: &Endpoint, wait_max: Duration) -> Result<Duration, Skip> {
        let Some(store) = &self.store else { return Ok(Duration::ZERO) };
        let bucket = self.paces().get(ep.pace).map_or((Duration::ZERO, 1), |p| (p.interval(), p.burst()));
        let name = self.pace_names.get(ep.pace).map_or("", String::as_str);
        match store.admit(&ep.url, name, bucket, wait_max) {
            Ok(crate::store::Turn::Admitted(wait)) => Ok(wait),
            Ok(crate::store::Turn::CoolingDown(d)) => Err(Skip::BackingOff(d)),
            Ok(crate::store::Turn::NotReady(d)) => Err(Skip::Paced(d)),
            Err(_) => Ok(Duration::ZERO),
        }
    }

    /// The order of this search, by endpoint: the healthy web providers first, taking turns (the one that starts
    /// moves on with each search); then the others by health (failed or slow lately, then backing off, then not
    /// configured), an unhealthy web provider before Wikipedia of the same rank. Within a provider its endpoints go
    /// by health too. Health is read once per search. `pick` breaks ties by it.
    fn order(&self, now: Instant) -> Vec<usize> {
        let ranks: Vec<u8> = self.endpoints.iter().map(|e| e.rank(now)).collect();
        let rank_of = |p: usize| {
            let of_p = self.endpoints.iter().zip(&ranks).filter(|(e, _)| e.provider == p);
            of_p.map(|(_, r)| *r).min().unwrap_or(3)
        };
        let (mut healthy, mut others): (Vec<usize>, Vec<usize>) = self.web.iter().partition(|&&p| rank_of(p) == 0);
        if self.settings.rotate && !healthy.is_empty() {
            let turn = self.turn.fetch_add(1, Relaxed);
            let by = usize::try_from(turn % healthy.len() as u64).unwrap_or(0);
            healthy.rotate_left(by);
        }
        others.extend(&self.rest);
        let others = by_rank(&others, rank_of);
        let mut order = Vec::with_capacity(self.endpoints.len());
        for p in healthy.into_iter().chain(others) {
            let of_p: Vec<usize> =
                self.endpoints.iter().enumerate().filter(|(_, e)| e.provider == p).map(|(i, _)| i).collect();
            order.extend(by_rank(&of_p, |i| ranks.get(i).copied().unwrap_or(3)));
        }
        order
    }

    /// How far down `ep` is preferred, in `PREFERENCE_STEP`s: 0 a healthy web provider, 1 another healthy one
    /// (Wikipedia), 2 one that failed lately (asked for its trial) or is slow.
    fn preference(&self, ep: &Endpoint, state: &EndpointState, now: Instant) -> u32 {
        if state.health.strikes() > 0 || state.slow(now) {
            2
        } else if self.web.contains(&ep.provider) {
            0
        } else {
            1
        }
    }

    /// The endpoint this search asks next, of `pending` (indices into `endpoints`, in the search's order): the one
    /// that can be asked soonest, a less preferred one `PREFERENCE_STEP` sooner a rank, the provider asked least
    /// recently first among equals (with `rotate`), then the search's order. Its provider's slot is reserved and, for
    /// a half-open endpoint, its trial taken. Only slots by `latest` count, and only those now unless `can_wait`;
    /// when there is none, why each endpoint cannot be asked.
    fn pick(&self, pending: &[usize], now: Instant, latest: Instant, can_wait: bool) -> Pick {
        let mut paces = self.paces();
        let by = if can_wait { latest.max(now) } else { now };
        // (score, last request to its provider, position, endpoint, when it can be asked)
        let mut best: Option<(Instant, Option<Instant>, usize, usize, Instant)> = None;
        let mut skips = Vec::new();
        for (pos, &idx) in pending.iter().enumerate() {
            let (Some(ep), Some(pace)) =
                (self.endpoints.get(idx), self.endpoints.get(idx).and_then(|e| paces.get(e.pace)))
            else {
                continue;
            };
            let state = ep.lock();
            let ready = match state.health.ready_at(now, &self.settings.breaker) {
                Ok(ready) => ready,
                Err(skip) => {
                    skips.push((idx, skip));
                    continue;
                }
            };
            let at = pace.slot(ready);
            if at > by {
                skips.push((idx, if ready > by { Skip::BackingOff(ready - now) } else { Skip::Paced(at - now) }));
                continue;
            }
            let score = at + PREFERENCE_STEP * self.preference(ep, &state, now);
            let last = if self.settings.rotate { pace.last() } else { None };
            if best.is_none_or(|(s, l, p, _, _)| (score, last, pos) < (s, l, p)) {
                best = Some((score, last, pos, idx, at));
            }
        }
        let Some((_, _, _, idx, at)) = best else { return Pick::None(skips) };
        let (Some(ep), Some(pace)) =
            (self.endpoints.get(idx), self.endpoints.get(idx).and_then(|e| paces.get_mut(e.pace)))
        else {
            return Pick::None(skips);
        };
        let Ok(slot) = pace.reserve(at, at) else { return Pick::Again };
        match ep.lock().health.admit(slot.at, &self.settings.breaker) {
            Ok((trial, epoch)) => Pick::Ask(Picked { idx, slot, trial, epoch }),
            // Its health changed since it was read (another search's answer came in): choose again.
            Err(_) => {
                pace.release(slot);
                Pick::Again
            }
        }
    }

    /// After a wait: whether `picked` may still be sent. When the endpoint's health changed meanwhile (another
    /// search's answer backed it off, or cleared it) it is admitted again now, or not at all.
    fn still_admitted(&self, ep: &Endpoint, picked: &mut Picked) -> Result<(), Skip> {
        let mut state = ep.lock();
        if state.health.current(picked.epoch) {
            return Ok(());
        }
        if picked.trial {
            state.health.release();
            picked.trial = false;
        }
        let (trial, epoch) = state.health.admit(Instant::now(), &self.settings.breaker)?;
        (picked.trial, picked.epoch) = (trial, epoch);
        Ok(())
    }

    /// Gives back what `pick` took for a request that will not be sent.
    fn give_back(&self, ep: &Endpoint, picked: &Picked) {
        if let Some(pace) = self.paces().get_mut(ep.pace) {
            pace.release(picked.slot);
        }
        if picked.trial {
            ep.lock().health.release();
        }
    }

    /// Asks the endpoints, one at a time as `pick` chooses them, until `max_results` are held (merging pages and
    /// sources), or nothing more can be asked before the deadline.
    fn run(&self, request: &SearchRequest, controls: &Controls, started: Instant) -> Result<Outcome, ApiError> {
        let deadline = started + self.settings.deadline;
        // The last slot a search waits for leaves its request some time before the deadline.
        let latest = deadline - ASK_TIME_MIN.min(self.settings.deadline / 2);
        let mut attempts = Vec::with_capacity(self.endpoints.len());
        let mut results: Vec<Ranked> = Vec::new();
        let mut seen = HashSet::new();
        let mut answered = false;
        let skip = |ep: &Endpoint, code: &str, retry_in: Option<Duration>, detail: Option<String>| Attempt {
            name: ep.kind.name(),
            endpoint: ep.url.clone(),
            status: "skipped",
            error: Some(code.to_owned()),
            detail,
            elapsed_ms: 0,
            results: None,
            retry_in,
            page: 0,
            removed: 0,
            control: None,
            waited: Duration::ZERO,
            by_chance: false,
        };
        let skipped = |ep: &Endpoint, s: Skip| {
            ep.counters.skipped.fetch_add(1, Relaxed);
            skip(ep, s.code(), Some(s.retry_in()), Some(s.detail(ep.kind.provider())))
        };
        // The endpoints this search may ask, in its order; the others are reported after those asked.
        let mut pending = Vec::with_capacity(self.endpoints.len());
        let mut left_out = Vec::new();
        for idx in self.order(Instant::now()) {
            let Some(ep) = self.endpoints.get(idx) else { continue };
            let named = |n: &String| n == ep.kind.name() || n == ep.kind.provider();
            if !request.sources.is_empty() && !request.sources.iter().any(named) {
                left_out.push(skip(ep, "not_selected", None, Some("not among the sources the call named".into())));
            } else if ep.url.is_empty() {
                left_out.push(skip(ep, "not_configured", None, Some("no instance URL is configured".into())));
            } else if let Some(control) = controls.unsupported(ep.kind, &ep.url, &self.settings.region) {
                let detail = format!("{} cannot honour `{control}` for this search", ep.kind.name());
                left_out
                    .push(Attempt { control: Some(control), ..skip(ep, "unsupported_control", None, Some(detail)) });
            } else {
                pending.push(idx);
            }
        }
        // Choosing again after a race is bounded: each time another search's answer changed an endpoint's health.
        let mut races = 0;
        // Endpoints asked again in this search: one whose first page failed by chance (a timeout, a reset, a 5xx:
        // no back-off earned) may be asked once more, after the others, while the search holds no results.
        let mut again: Vec<usize> = Vec::new();
        while results.len() < request.max_results && !pending.is_empty() {
            if !results.is_empty() {
                // An endpoint is asked again only to answer at all.
                pending.retain(|i| !again.contains(i));
                if pending.is_empty() {
                    break;
                }
            }
            let now = Instant::now();
            if now >= deadline {
                for ep in pending.drain(..).filter_map(|i| self.endpoints.get(i)) {
                    ep.counters.skipped.fetch_add(1, Relaxed);
                    attempts.push(skip(ep, "deadline", None, None));
                }
                break;
            }
            let can_wait = self.waiting.load(Relaxed) < self.settings.waiting_max;
            // A search that holds results waits only a next page's gap to add more; one without waits to answer.
            let by = if results.is_empty() { latest } else { (now + PAGE_GAP_MAX).min(latest.max(now)) };
            let mut picked = match self.pick(&pending, now, by, can_wait) {
                Pick::Ask(picked) => picked,
                Pick::Again if races < self.endpoints.len() => {
                    races += 1;
                    continue;
                }
                Pick::Again => {
                    for ep in pending.drain(..).filter_map(|i| self.endpoints.get(i)) {
                        attempts.push(skipped(ep, Skip::Paced(PAGE_GAP_MAX)));
                    }
                    break;
                }
                Pick::None(skips) => {
                    // Trials are out on some endpoints: what they say may free them before the deadline. A search
                    // with no result yet looks again shortly (holding a place among those that wait).
                    let trial_out = skips.iter().any(|(_, s)| matches!(s, Skip::Trial(_)));
                    if trial_out && results.is_empty() && Instant::now() + TRIAL_POLL <= latest {
                        if let Some(waiter) = Waiter::take(&self.waiting, self.settings.waiting_max) {
                            std::thread::sleep(TRIAL_POLL);
                            drop(waiter);
                            continue;
                        }
                    }
                    for (idx, s) in skips {
                        if let Some(ep) = self.endpoints.get(idx) {
                            attempts.push(skipped(ep, s));
                        }
                    }
                    break;
                }
            };
            pending.retain(|&i| i != picked.idx);
            let Some(ep) = self.endpoints.get(picked.idx) else { continue };
            // A place among the searches that wait, taken before the fleet's slot is: the fleet's wait must be one
            // this search can keep (a slot it reserved and did not use would stay spent for the whole fleet).
            let local = picked.slot.at.saturating_duration_since(now);
            let waiter = Waiter::take(&self.waiting, self.settings.waiting_max);
            if waiter.is_none() && !local.is_zero() {
                self.give_back(ep, &picked);
                attempts.push(skipped(ep, Skip::Paced(local)));
                continue;
            }
            let allowed = if waiter.is_some() { by.saturating_duration_since(now) } else { Duration::ZERO };
            let wait = match self.fleet_slot(ep, allowed.max(local)) {
                Ok(fleet) => fleet.max(local),
                Err(s) => {
                    self.give_back(ep, &picked);
                    attempts.push(skipped(ep, s));
                    continue;
                }
            };
            if !wait.is_zero() {
                self.waits.fetch_add(1, Relaxed);
                self.waited_ms.fetch_add(wait.as_millis() as u64, Relaxed);
                std::thread::sleep(wait);
                // While it waited, another search's answer may have backed the endpoint off (a wall): then this
                // request is not sent (each queued search would wall it again, and grow its back-off).
                if let Err(s) = self.still_admitted(ep, &mut picked) {
                    self.give_back(ep, &picked);
                    attempts.push(skipped(ep, s));
                    continue;
                }
            }
            drop(waiter);
            ep.lock().health.sending(Instant::now());
            // DuckDuckGo's next page is asked with the form of the page before it.
            let mut form: Option<NextForm> = None;
            for page in 0..self.settings.pages_max {
                if page > 0 {
                    if results.len() >= request.max_results || (ep.kind == Kind::DdgHtml && form.is_none()) {
                        break;
                    }
                    if !self.next_page_slot(ep, latest) {
                        break;
                    }
                }
                let asked = PageAsk { query: &request.query, controls, page, form: form.take(), deadline };
                let (mut attempt, outcome, next) = self.ask_page(ep, &asked, picked.epoch);
                if page == 0 {
                    attempt.waited = wait;
                }
                form = next;
                // The domain filters, once per hit: what the page held (a genuine "no results" is none at all), and
                // what of it the filters keep.
                let outcome = outcome.map(|hits| {
                    let held = hits.len();
                    let kept: Vec<Hit> = hits.into_iter().filter(|h| controls.admits(&h.url)).collect();
                    attempt.removed = held - kept.len();
                    (held, kept)
                });
                attempts.push(attempt);
                match outcome {
                    Some((0, _)) => {
                        answered = true;
                        if page == 0 {
                            // The provider has nothing: its other endpoints are not asked (other providers are).
                            pending.retain(|&i| self.endpoints.get(i).is_some_and(|e| e.provider != ep.provider));
                        }
                        break;
                    }
                    Some((held, kept)) => {
                        answered = true;
                        let full = held >= PAGE_FULL_MIN;
                        for hit in kept {
                            if results.len() < request.max_results && seen.insert(url::dedupe_key(&hit.url)) {
                                results.push(Ranked { hit, source: ep.kind.name() });
                            }
                        }
                        if !full || !ep.kind.pages() {
                            break;
                        }
                    }
                    None => {
                        let chance = attempts.last().is_some_and(|a| a.by_chance);
                        if page == 0 && chance && results.is_empty() && !again.contains(&picked.idx) {
                            again.push(picked.idx);
                            pending.push(picked.idx);
                        }
                        break;
                    }
                }
            }
        }
        attempts.append(&mut left_out);
        if !answered {
            return Err(no_answer(attempts));
        }
        Ok(Outcome { results, sources: attempts })
    }

    /// A next page of the search that asked `ep`: its provider's slot, here and in the fleet, if it comes within
    /// `PAGE_GAP_MAX` (and before `latest`); waited for. False when the search should go on elsewhere.
    fn next_page_slot(&self, ep: &Endpoint, latest: Instant) -> bool {
        let now = Instant::now();
        let by = (now + PAGE_GAP_MAX).min(latest.max(now));
        let Some(Ok(slot)) = self.paces().get_mut(ep.pace).map(|p| p.reserve(now, by)) else { return false };
        match self.fleet_slot(ep, by.saturating_duration_since(now)) {
            Ok(fleet) => {
                std::thread::sleep(fleet.max(slot.at.saturating_duration_since(now)));
                true
            }
            Err(_) => {
                if let Some(pace) = self.paces().get_mut(ep.pace) {
                    pace.release(slot);
                }
                false
            }
        }
    }

    /// Asks one page of one admitted endpoint and records the outcome: the hits (empty for a genuine "no
    /// results"), or `None` for a failure; and the form that asks the page after it (DuckDuckGo's HTML endpoint).
    /// A failure backs the endpoint off (here and in the fleet) for what it earned; an answer resets its health.
    fn ask_page(
        &self,
        ep: &Endpoint,
        asked: &PageAsk<'_>,
        epoch: u64,
    ) -> (Attempt, Option<Vec<Hit>>, Option<NextForm>) {
        let t0 = Instant::now();
        let (result, retry_after) = self.ask(ep, asked);
        let (result, next) = match result {
            Ok((page, next)) => (Ok(page), next),
            Err(e) => (Err(e), None),
        };
        let elapsed_ms = t0.elapsed().as_millis() as u64;
        let now_ms = self.clock.now_unix_ms();
        let mut attempt = Attempt {
            name: ep.kind.name(),
            endpoint: ep.url.clone(),
            status: "ok",
            error: None,
            detail: None,
            elapsed_ms,
            results: None,
            retry_in: None,
            page: asked.page,
            removed: 0,
            control: None,
            waited: Duration::ZERO,
            by_chance: false,
        };
        let mut outcome = None;
        let failure = match result {
            Ok(Page::Results(hits)) => {
                ep.counters.ok.fetch_add(1, Relaxed);
                attempt.results = Some(hits.len());
                outcome = Some(hits);
                None
            }
            Ok(Page::NoResults) => {
                ep.counters.empty.fetch_add(1, Relaxed);
                attempt.status = "empty";
                attempt.results = Some(0);
                outcome = Some(Vec::new());
                None
            }
            Ok(Page::Blocked(why)) => {
                ep.counters.blocked.fetch_add(1, Relaxed);
                attempt.fail("blocked", why);
                Some(breaker::Failure::Wall)
            }
            Ok(Page::Unparseable(why)) => {
                attempt.fail("unparseable", why);
                Some(breaker::Failure::Other)
            }
            Err(Failure::Status(status)) => {
                attempt.fail("http_status", format!("HTTP {status}"));
                Some(if (500..600).contains(&status) { breaker::Failure::Transient } else { breaker::Failure::Other })
            }
            Err(Failure::Fetch(e)) => {
                attempt.fail(e.code(), e.to_string());
                Some(match e {
                    fetch::Error::Timeout
                    | fetch::Error::Connect(_)
                    | fetch::Error::Protocol(_)
                    | fetch::Error::Other(_) => breaker::Failure::Transient,
                    _ => breaker::Failure::Other,
                })
            }
        };
        // A timeout the search's own deadline cut short (the request had less than the source's timeout) says
        // nothing about the endpoint.
        let cut = attempt.error.as_deref() == Some("timeout")
            && asked.deadline.saturating_duration_since(t0) < self.settings.fetch.total_timeout;
        if cut {
            attempt.detail = Some("the search's deadline came first".into());
        }
        let jitter = self.jitter();
        let mut state = ep.lock();
        state.asked_at = Some(t0);
        state.latency_ms = Some(state.latency_ms.map_or(elapsed_ms, |old| (old * 3 + elapsed_ms) / 4));
        // What a request admitted before the endpoint's last change of health says is stale: it neither grows nor
        // clears the newer back-off (a burst walled at once is one wall).
        let current = state.health.current(epoch) && !cut;
        if !current {
            state.health.release();
        }
        let backoff = match failure {
            None => {
                if current {
                    state.health.success();
                }
                state.last_success_ms = Some(now_ms);
                None
            }
            Some(failure) => {
                ep.counters.failed.fetch_add(1, Relaxed);
                state.last_failure_ms = Some(now_ms);
                state.last_error = attempt.detail.clone();
                if current {
                    let now = Instant::now();
                    let backoff = state.health.failed(failure, now, &self.settings.breaker, jitter, retry_after);
                    attempt.by_chance = backoff.is_zero();
                    Some(backoff)
                } else {
                    None
                }
            }
        };
        drop(state);
        if attempt.status == "failed" {
            log::warn!(
                "source {} ({}) failed: {}: {}; backing off {} ms",
                ep.kind.name(),
                ep.url,
                attempt.error.as_deref().unwrap_or(""),
                attempt.detail.as_deref().unwrap_or(""),
                backoff.unwrap_or_default().as_millis()
            );
        }
        if let Some(backoff) = backoff.filter(|b| !b.is_zero()) {
            if let Some(store) = &self.store {
                store.cool_down(&ep.url, backoff);
            }
        }
        (attempt, outcome, next)
    }

    /// One request to one endpoint, within the search's deadline, read into a `Page` and the form of its next page.
    /// The controls go out in the source's own parameters (`Controls::ask`).
    /// Also the provider's `Retry-After`, when it sent one.
    fn ask(&self, ep: &Endpoint, asked: &PageAsk<'_>) -> (Result<Read, Failure>, Option<Duration>) {
        let PageAsk { query, controls, page, ref form, deadline } = *asked;
        let client = self.client.until(deadline);
        let today = self.clock.now_unix_ms() / crate::clock::DAY_MS;
        let sent = controls.ask(ep.kind, query, today);
        let q = url::form_encode(&sent.query);
        let cookie = sent.cookie_header();
        let accept_language = controls.region.accept_language();
        let mut browser = vec![
            ("User-Agent", BROWSER_USER_AGENT),
            ("Accept", ACCEPT_HTML),
            ("Accept-Language", accept_language.as_str()),
        ];
        if let Some(cookie) = &cookie {
            browser.push(("Cookie", cookie.as_str()));
        }
        let params: String = sent.params.iter().map(|(k, v)| format!("&{k}={}", url::form_encode(v))).collect();
        // Where the source is asked, and what its results' links are read against: Wikipedia's host is the region's.
        let endpoint = match ep.kind {
            Kind::Wikipedia => std::borrow::Cow::Owned(controls::wikipedia_url(&ep.url, &controls.region)),
            _ => std::borrow::Cow::Borrowed(ep.url.as_str()),
        };
        let fetched = match ep.kind {
            Kind::DdgHtml | Kind::DdgLite => {
                let origin = origin(&ep.url);
                let referer = format!("{origin}/");
                let mut headers = browser.clone();
                headers.extend([("Origin", origin), ("Referer", referer.as_str())]);
                // A next page posts the page's form as it was, to the configured endpoint (not to the form's action:
                // a page does not choose where we send requests).
                let mut first = vec![("q", sent.query.as_str()), ("b", "")];
                first.extend(sent.params.iter().map(|(k, v)| (*k, v.as_str())));
                let next: Vec<(&str, &str)> = form.iter().flatten().map(|(k, v)| (k.as_str(), v.as_str())).collect();
                client.post_form(&ep.url, &headers, if page > 0 && !next.is_empty() { &next } else { &first })
            }
            Kind::Searxng => {
                let mut url = format!("{}/search?q={q}&format=json{params}", ep.url.trim_end_matches('/'));
                if page > 0 {
                    url.push_str(&format!("&pageno={}", page + 1));
                }
                let headers = [("User-Agent", BROWSER_USER_AGENT), ("Accept", "application/json")];
                client.get(&url, &headers)
            }
            Kind::Mojeek | Kind::Bing | Kind::Brave => {
                let mut url = format!("{}{}q={q}{params}", ep.url, if ep.url.contains('?') { '&' } else { '?' });
                match (ep.kind, page) {
                    (_, 0) => {}
                    (Kind::Brave, p) => url.push_str(&format!("&offset={p}")),
                    (_, p) => {
                        url.push_str(&format!("&{}={}", if ep.kind == Kind::Bing { "first" } else { "s" }, 1 + 10 * p))
                    }
                }
                client.get(&url, &browser)
            }
            Kind::Wikipedia => {
                let offset = WIKIPEDIA_PAGE_RESULTS * page as usize;
                let url = format!(
                    "{endpoint}{}action=query&list=search&format=json&srlimit={WIKIPEDIA_PAGE_RESULTS}&sroffset={offset}&srsearch={q}",
                    if endpoint.contains('?') { '&' } else { '?' }
                );
                let headers =
                    [("User-Agent", self.settings.wikimedia_user_agent.as_str()), ("Accept", "application/json")];
                client.get(&url, &headers)
            }
        };
        let fetched = match fetched {
            Ok(fetched) => fetched,
            Err(e) => return (Err(Failure::Fetch(e)), None),
        };
        if !ep.kind.parses_status(fetched.status) {
            return (Err(Failure::Status(fetched.status)), fetched.retry_after);
        }
        (Ok(ep.kind.parse_paged(fetched.status, &fetched.body, &endpoint)), fetched.retry_after)
    }

    /// Per-endpoint state, for `/health`: a JSON array written into `out` (members sorted, as a `Value` would be).
    /// `breaker` is `closed`, `open` (backing off for `open_for_s`), `half_open` (the next request is a trial) or
    /// `unconfigured`; `failures_in_a_row` counts since the last answer; `slot_in_ms`, when its provider's next slot
    /// is (0: a request could go now).
    pub fn write_health(&self, out: &mut Vec<u8>) {
        use crate::json_out::{key, opt_string, opt_u64, string};
        let now = Instant::now();
        let slots: Vec<Instant> = self.paces().iter().map(|p| p.slot(now)).collect();
        out.push(b'[');
        for ep in &self.endpoints {
            if out.last() != Some(&b'[') {
                out.push(b',');
            }
            let state = ep.lock();
            out.push(b'{');
            key(out, "breaker");
            string(out, if ep.url.is_empty() { "unconfigured" } else { state.health.state(now) });
            key(out, "endpoint");
            string(out, &ep.url);
            key(out, "failures_in_a_row");
            opt_u64(out, Some(u64::from(state.health.strikes())));
            key(out, "last_error");
            opt_string(out, state.last_error.as_deref());
            key(out, "last_failure");
            opt_string(out, state.last_failure_ms.map(rfc3339).as_deref());
            key(out, "last_success");
            opt_string(out, state.last_success_ms.map(rfc3339).as_deref());
            key(out, "latency_ms");
            opt_u64(out, state.latency_ms);
            key(out, "name");
            string(out, ep.kind.name());
            key(out, "open_for_s");
            opt_u64(out, state.health.open_for(now).map(|d| d.as_secs()));
            key(out, "provider");
            string(out, ep.kind.provider());
            key(out, "slot_in_ms");
            let slot = slots.get(ep.pace).map_or(0, |s| s.saturating_duration_since(now).as_millis() as u64);
            opt_u64(out, Some(slot));
            out.push(b'}');
        }
        out.push(b']');
    }

    /// Whether answers are shared with the fleet, for `/health`: `{"enabled": true, "hits", "refused"}` (the store's
    /// counts since the start), or `{"enabled": false, "reason"}` naming the variable that turns it off.
    pub fn write_shared_cache(&self, out: &mut Vec<u8>) {
        use crate::json_out::{key, opt_u64, string};
        let reason = if self.settings.cache_entries == 0 || self.settings.cache_ttl.is_zero() {
            "the cache is off (WEBSEARCHD_CACHE_TTL_S or WEBSEARCHD_CACHE_ENTRIES is 0)"
        } else if let Some(store) = &self.store {
            if let Some((hits, refused)) = store.answers_shared() {
                out.extend_from_slice(b"{\"enabled\":true");
                key(out, "hits");
                opt_u64(out, Some(hits));
                key(out, "refused");
                opt_u64(out, Some(refused));
                out.push(b'}');
                return;
            }
            "WEBSEARCHD_REDIS_SECRET_FILE is not set: answers are not shared (the rest of the state is)"
        } else {
            "WEBSEARCHD_REDIS_URL is not set: this node's answers are its own"
        };
        out.extend_from_slice(b"{\"enabled\":false");
        key(out, "reason");
        string(out, reason);
        out.push(b'}');
    }

    /// The deep state for `/core/state` and the mesh graph: each configured endpoint with its breaker and counters,
    /// and the cache.
    pub fn state(&self) -> Value {
        let now = Instant::now();
        let sources: Vec<Value> = self
            .endpoints
            .iter()
            .filter(|e| !e.url.is_empty())
            .map(|ep| {
                let state = ep.lock();
                let c = &ep.counters;
                json!({
                    "name": ep.kind.name(),
                    "endpoint": ep.url,
                    "breaker": state.health.state(now),
                    "open_for_s": state.health.open_for(now).map(|d| d.as_secs()),
                    "failures_in_a_row": state.health.strikes(),
                    "ok": c.ok.load(Relaxed),
                    "empty": c.empty.load(Relaxed),
                    "failed": c.failed.load(Relaxed),
                    "skipped": c.skipped.load(Relaxed),
                    "blocked": c.blocked.load(Relaxed),
                    "last_success": state.last_success_ms.map(rfc3339),
                    "last_failure": state.last_failure_ms.map(rfc3339),
                    "last_error": state.last_error,
                })
            })
            .collect();
        json!({
            "sources": sources,
            "cache": {
                "entries": self.cache.len(),
                "hits": self.cache_hits.load(Relaxed),
                "misses": self.cache_misses.load(Relaxed),
            },
        })
    }

    /// Prometheus text for the sources and the cache.
    pub fn metrics(&self) -> String {
        let now = Instant::now();
        let mut out = String::new();
        let name = "websearchd_source_requests_total";
        crate::metrics::family(&mut out, name, "counter", "Search source outcomes, by endpoint.");
        for ep in self.endpoints.iter().filter(|e| !e.url.is_empty()) {
            let c = &ep.counters;
            for (outcome, n) in [("ok", &c.ok), ("empty", &c.empty), ("failed", &c.failed), ("skipped", &c.skipped)] {
                let _ = writeln!(
                    out,
                    "{name}{{source=\"{}\",endpoint=\"{}\",outcome=\"{outcome}\"}} {}",
                    ep.kind.name(),
                    escape_label(&ep.url),
                    n.load(Relaxed)
                );
            }
        }
        let name = "websearchd_source_blocks_total";
        crate::metrics::family(&mut out, name, "counter", "Times a source blocked us (bot wall, 403, 429).");
        for ep in self.endpoints.iter().filter(|e| !e.url.is_empty()) {
            let (source, endpoint) = (ep.kind.name(), escape_label(&ep.url));
            let _ = writeln!(
                out,
                "{name}{{source=\"{source}\",endpoint=\"{endpoint}\"}} {}",
                ep.counters.blocked.load(Relaxed)
            );
        }
        let name = "websearchd_source_breaker_open";
        crate::metrics::family(&mut out, name, "gauge", "1 while the endpoint is backing off after failures.");
        for ep in self.endpoints.iter().filter(|e| !e.url.is_empty()) {
            let open = u8::from(ep.lock().health.state(now) == "open");
            let _ =
                writeln!(out, "{name}{{source=\"{}\",endpoint=\"{}\"}} {open}", ep.kind.name(), escape_label(&ep.url));
        }
        let name = "websearchd_source_failures_in_a_row";
        crate::metrics::family(&mut out, name, "gauge", "Failures in a row since the endpoint last answered.");
        for ep in self.endpoints.iter().filter(|e| !e.url.is_empty()) {
            let strikes = ep.lock().health.strikes();
            let _ = writeln!(
                out,
                "{name}{{source=\"{}\",endpoint=\"{}\"}} {strikes}",
                ep.kind.name(),
                escape_label(&ep.url)
            );
        }
        let name = "websearchd_search_waits_total";
        crate::metrics::family(&mut out, name, "counter", "Searches that waited for a provider's slot.");
        let _ = writeln!(out, "{name} {}", self.waits.load(Relaxed));
        let name = "websearchd_search_waited_seconds_total";
        crate::metrics::family(&mut out, name, "counter", "Time searches waited for providers' slots.");
        let _ = writeln!(out, "{name} {:.3}", self.waited_ms.load(Relaxed) as f64 / 1_000.0);
        let counters = [
            ("websearchd_cache_hits_total", "Answers served from the cache.", self.cache_hits.load(Relaxed)),
            ("websearchd_cache_misses_total", "Searches not in the cache.", self.cache_misses.load(Relaxed)),
        ];
        for (name, help, v) in counters {
            crate::metrics::family(&mut out, name, "counter", help);
            let _ = writeln!(out, "{name} {v}");
        }
        crate::metrics::family(&mut out, "websearchd_cache_entries", "gauge", "Answers in the cache.");
        let _ = writeln!(out, "websearchd_cache_entries {}", self.cache.len());
        out
    }
}

impl Endpoint {
    /// Health rank for the order (lower first): 0 healthy, 1 failed lately (half-open) or slow, 2 backing off, 3
    /// not configured.
    fn rank(&self, now: Instant) -> u8 {
        if self.url.is_empty() {
            return 3;
        }
        let state = self.lock();
        if state.health.open_for(now).is_some() {
            2
        } else if state.health.strikes() > 0 || state.slow(now) {
            1
        } else {
            0
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, EndpointState> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }
}

impl EndpointState {
    /// Slower than `SLOW_MS` on average, and asked within `SLOW_RECENT` (then it is asked again in turn: an endpoint
    /// asked last is seldom asked, and would never recover).
    fn slow(&self, now: Instant) -> bool {
        let lately = self.asked_at.is_some_and(|t| now.saturating_duration_since(t) < SLOW_RECENT);
        lately && self.latency_ms.is_some_and(|ms| ms > SLOW_MS)
    }
}

impl Attempt {
    fn fail(&mut self, code: &str, detail: String) {
        self.status = "failed";
        self.error = Some(code.to_owned());
        // What the source or the peer said (a block's quote, a protocol error) is kept to what XML allows.
        self.detail = Some(sources::xml_text(detail));
    }
}

/// The key of `request`'s answer in the caches, with its `controls` resolved. A search of some sources only is its
/// own answer; the sources named are a set (the same ones in another order, or named twice, ask the same sources).
fn cache_key(request: &SearchRequest, controls: &Controls) -> String {
    let mut key = format!("{}\n{}\n{}", request.query.to_lowercase(), request.max_results, controls.key());
    if !request.sources.is_empty() {
        let mut sources: Vec<&str> = request.sources.iter().map(String::as_str).collect();
        sources.sort_unstable();
        sources.dedup();
        key.push_str(&format!("\nsources={}", sources.join(",")));
    }
    key
}

/// `items` by their rank (0 to `RANK_MAX`, higher ranks last), each rank in the order given: a stable sort by a
/// small key without a sort's code (issue 41 took the static binary to its size budget).
fn by_rank(items: &[usize], rank: impl Fn(usize) -> u8) -> Vec<usize> {
    let mut out = Vec::with_capacity(items.len());
    for r in 0..=RANK_MAX {
        out.extend(items.iter().copied().filter(|&i| rank(i).min(RANK_MAX) == r));
    }
    out
}

/// An endpoint's rank at most (`Endpoint::rank`).
const RANK_MAX: u8 = 3;

/// A page read, and the form that asks the page after it.
type Read = (Page, Option<NextForm>);

enum Failure {
    Status(u16),
    Fetch(fetch::Error),
}

/// The error when no endpoint answered: 503 if every one was skipped (with the shortest wait), else 502.
fn no_answer(attempts: Vec<Attempt>) -> ApiError {
    let report: Vec<Value> = attempts.iter().map(Attempt::to_json).collect();
    // Each source and what happened to it once (a source asked again within the search says so once).
    let mut summary: Vec<String> = Vec::new();
    for line in attempts.iter().map(|a| format!("{} {}", a.name, a.error.as_deref().unwrap_or(a.status))) {
        if !summary.contains(&line) {
            summary.push(line);
        }
    }
    let all_skipped = attempts.iter().all(|a| a.status == "skipped");
    // No source that could be asked can honour the search's controls: waiting would not help.
    let unsupported = attempts.iter().any(|a| a.control.is_some());
    let by_controls =
        attempts.iter().all(|a| matches!(a.error.as_deref(), Some("unsupported_control") | Some("not_selected")));
    if all_skipped && unsupported && by_controls {
        return ApiError::new(
            422,
            "controls_unsupported",
            format!("no configured source can honour this search's controls ({})", summary.join(", ")),
        )
        .detail("sources", report);
    }
    if all_skipped {
        let retry = attempts.iter().filter_map(|a| a.retry_in).min().unwrap_or(Duration::from_secs(60));
        let retry_s = u32::try_from(retry.as_secs().max(1)).unwrap_or(u32::MAX);
        ApiError::unavailable(
            "all_sources_skipped",
            format!("no source can be asked right now ({}); retry in {retry_s} s", summary.join(", ")),
            retry_s,
        )
        .detail("sources", report)
    } else {
        ApiError::new(502, "all_sources_failed", format!("no source answered ({})", summary.join(", ")))
            .detail("sources", report)
    }
}

/// A seed for the jitter that differs between processes (the standard library's random hash keys).
fn jitter_seed() -> u64 {
    use std::hash::BuildHasher;
    std::collections::hash_map::RandomState::new().hash_one(std::process::id())
}

fn escape_label(v: &str) -> String {
    v.replace('\\', "\\\\").replace('"', "\\\"").replace('\n', "\\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An answer of twenty results with 1 KB snippets.
    fn answer(n: usize) -> Rendered {
        let results = (0..20)
            .map(
                |i| json!({ "title": format!("{n} {i}"), "url": "https://example.org/", "snippet": "s".repeat(1_024) }),
            )
            .collect();
        Rendered { results, sources: vec![json!({ "source": "ddg_html", "status": "ok" })] }
    }

    /// Issue 18: an answer is weighed by the blocks it holds. Ten results of five short members hold, each, a B-tree
    /// node (640 bytes as allocated), five keys and four strings of the allocator's smallest block (32 bytes), and
    /// the list's slots: 9,616 bytes, where the weighing of each value's size and its strings' bytes said 3,520.
    #[test]
    fn an_answer_is_weighed_by_the_blocks_it_holds() {
        let results: Vec<Value> = (0..10)
            .map(|i| json!({"position": i + 1, "title": "t", "url": "u", "snippet": "s", "source": "ddg_html"}))
            .collect();
        let rendered = Rendered { results, sources: Vec::new() };
        assert_eq!(rendered.bytes(), 10 * (640 + 5 * 32 + 4 * 32) + heap_chunk(10 * 32));
        assert_eq!(rendered.bytes(), 9_616);
    }

    #[test]
    fn answers_are_weighed_and_the_cache_keeps_within_its_bytes() {
        assert!(answer(0).bytes() > 20 * 1_024, "{}", answer(0).bytes());
        let cache = answer_cache(Duration::from_secs(600), 100_000);
        let t0 = Instant::now();
        for n in 0..2_000 {
            cache.put(n.to_string(), answer(n), t0 + Duration::from_millis(n as u64));
        }
        // 2,000 answers of over 20 KB would be 40 MB; the entry count alone allowed them.
        assert!(cache.bytes() <= CACHE_BYTES_MAX, "{}", cache.bytes());
        assert!(cache.len() < 2_000 && cache.len() > 100, "{}", cache.len());
        assert!(cache.get("1999", t0 + Duration::from_secs(1)).is_some(), "the newest is kept");
    }

    /// The same sources in another order, or one named twice, are the same answer in the cache; other sources are not.
    #[test]
    fn the_sources_named_are_a_set_in_the_cache_key() {
        let controls = controls::Asked::default().resolve(&Region::parse("wt-wt").unwrap(), SafeSearch::Moderate);
        let key = |sources: &[&str]| {
            let request = SearchRequest {
                query: "Rust".into(),
                max_results: 10,
                controls: Default::default(),
                extract: 0,
                extract_tokens: 0,
                sources: sources.iter().map(|s| s.to_string()).collect(),
            };
            cache_key(&request, &controls)
        };
        assert_eq!(key(&["mojeek", "ddg_html"]), key(&["ddg_html", "mojeek"]));
        assert_eq!(key(&["mojeek", "ddg_html", "mojeek"]), key(&["ddg_html", "mojeek"]));
        assert_ne!(key(&["ddg_html"]), key(&["ddg_html", "mojeek"]));
        assert_ne!(key(&[]), key(&["ddg_html"]));
    }
}
