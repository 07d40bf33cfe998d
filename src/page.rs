//! A page's main content by URL: the untrusted fetch (SSRF guard, pinned addresses, redirects checked) streaming
//! its body into the extractor as it arrives, then the token budget. The one place that joins `fetch` and
//! `extract`; used by `/service` (`extract: true`) and `websearchd extract`. The fetch's deadline covers the
//! extraction too: the extractor stops at it and the page is a timeout. Extractions are kept by URL in a bounded
//! cache (`Cache`), so that the same page asked for again within the TTL is not fetched again.
//!
//! `Pages` is what a door holds: the cache and a fixed pool of extraction threads (`Pool`, started with the door),
//! on which the pages of one call's first results (`extract: k`) are fetched side by side, at most
//! `WEBSEARCHD_EXTRACT_PARALLEL` at once, all within one deadline: a slow page is reported `timeout` and never holds
//! the others' answers past it.

use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::config::Config;
use crate::extract::budget::Cut;
use crate::extract::{focus, Extractor, Options};
use crate::fetch::guard::Policy;
use crate::fetch::untrusted::{self, Limits};

/// A fetched and extracted page, cut to its budget.
#[derive(Debug, Clone)]
pub struct Page {
    pub url: String,
    pub title: Option<String>,
    pub markdown: String,
    pub tokens: usize,
    pub truncated: bool,
    /// Which cut made it fit its budget.
    pub cut: Cut,
}

impl Page {
    /// The `extract` member of an answer.
    pub fn summary(&self) -> Value {
        json!({
            "url": self.url,
            "title": self.title,
            "tokens": self.tokens,
            "truncated": self.truncated,
            "cut": self.cut.name(),
            "status": "ok",
            "content_sha256": crate::sign::sha256_hex(self.markdown.as_bytes()),
        })
    }

    /// A result's `extract` member: its page (`extract: k`).
    pub fn member(&self) -> Value {
        json!({
            "status": "ok",
            "final_url": self.url,
            "title": self.title,
            "markdown": self.markdown,
            "tokens": self.tokens,
            "truncated": self.truncated,
            "cut": self.cut.name(),
        })
    }

    /// Cuts the markdown to `bytes` at most (at a character boundary; then `truncated`).
    pub fn cap(&mut self, bytes: usize) {
        if self.markdown.len() > bytes {
            self.markdown.truncate(crate::html::floor_char_boundary(&self.markdown, bytes));
            self.truncated = true;
        }
    }
}

/// Pages at least this large are followed by a heap trim: their extraction is what leaves the most freed memory
/// in the allocator's per-thread arenas.
const TRIM_AFTER_BYTES: u64 = 256 * 1_024;

/// Extractions kept by the cache at most.
pub const CACHE_ENTRIES_MAX: usize = 256;

/// Bytes of extracted markdown the cache holds at most (an extract is at most `extract::MARKDOWN_BYTES_MAX`, 2 MiB;
/// pages as agents fetch them average a few KB).
pub const CACHE_BYTES_MAX: usize = 8 * 1_024 * 1_024;

/// A page's whole extract (before any budget), as fetched.
#[derive(Debug, Clone)]
pub struct Extracted {
    /// The URL after redirects.
    pub url: String,
    pub title: Option<String>,
    pub blocks: Vec<String>,
    pub truncated: bool,
}

/// What one block costs beside its text: its `String` and the allocator's smallest chunk (a page capped at
/// `extract::BLOCKS_MAX` one-letter blocks holds about 0.9 MB, not 16 KB).
const BLOCK_OVERHEAD_BYTES: usize = std::mem::size_of::<String>() + 32;

impl Extracted {
    /// The extract of the page at `url`, holding no spare capacity (rendering grows a table or a list by doubling:
    /// kept for the cache's TTL, that slack would be up to as much again as the text).
    pub fn new(url: String, extract: crate::extract::Extract) -> Extracted {
        let mut blocks = extract.blocks;
        blocks.iter_mut().for_each(String::shrink_to_fit);
        blocks.shrink_to_fit();
        Extracted { url, title: extract.title, blocks, truncated: extract.truncated }
    }

    /// The memory this extract holds, about: what its strings and its list of blocks have allocated, not only
    /// their text.
    fn bytes(&self) -> usize {
        let text = self.url.capacity()
            + self.title.as_ref().map_or(0, String::capacity)
            + (self.blocks.capacity() - self.blocks.len()) * std::mem::size_of::<String>();
        self.blocks.iter().fold(text, |n, b| n + b.capacity() + BLOCK_OVERHEAD_BYTES)
    }

    /// The extract cut to `tokens` (0: no budget), for `query` (empty: none): `focus::fit`.
    pub fn fit(&self, tokens: usize, query: &str) -> Page {
        let fitted = focus::fit(&self.blocks, tokens, query);
        Page {
            url: self.url.clone(),
            title: self.title.clone(),
            markdown: fitted.markdown,
            tokens: fitted.tokens,
            truncated: fitted.truncated || self.truncated,
            cut: fitted.cut,
        }
    }
}

/// Extractions by the URL asked for, each kept for the TTL; bounded by `CACHE_ENTRIES_MAX` and `CACHE_BYTES_MAX`
/// (expired entries first, then the oldest). Failures are not kept.
pub type Cache = crate::cache::Cache<Arc<Extracted>>;

/// A cache keeping each extraction for `ttl` (zero: off).
pub fn cache(ttl: Duration) -> Cache {
    Cache::weighed(ttl, CACHE_ENTRIES_MAX, CACHE_BYTES_MAX, |e| e.bytes())
}

/// Fetches `url` and extracts its main content within `tokens` (0: no budget) for `query` (empty: none), all within
/// the fetch's deadline.
pub fn extract(
    url: &str,
    policy: &Policy,
    limits: &Limits,
    tokens: usize,
    query: &str,
) -> Result<Page, untrusted::Error> {
    fetch_extract(url, policy, limits).map(|e| e.fit(tokens, query))
}

/// `extract` through the cache: a page kept there is not fetched again.
pub fn extract_cached(
    cache: &Cache,
    url: &str,
    policy: &Policy,
    limits: &Limits,
    (tokens, query): (usize, &str),
) -> Result<Page, untrusted::Error> {
    if let Some((kept, _)) = cache.get(url, Instant::now()) {
        return Ok(kept.fit(tokens, query));
    }
    let extracted = Arc::new(fetch_extract(url, policy, limits)?);
    cache.put(url.to_owned(), extracted.clone(), Instant::now());
    Ok(extracted.fit(tokens, query))
}

/// The extractor's options for the page at `url` (what the benches measure, too).
pub fn options(url: &str) -> Options {
    Options { base_url: Some(url.to_owned()), ..Options::default() }
}

/// Fetches `url` and extracts its whole main content, within the fetch's deadline.
fn fetch_extract(url: &str, policy: &Policy, limits: &Limits) -> Result<Extracted, untrusted::Error> {
    let deadline = Instant::now() + limits.deadline;
    let mut extractor = Extractor::with_deadline(options(url), deadline);
    let fetched = untrusted::fetch(url, policy, limits, &mut |chunk| extractor.feed(chunk));
    let page = match fetched {
        Err(e) => Err(e),
        // Past the deadline the extractor stopped taking input: what it holds is not the page.
        Ok(_) if extractor.timed_out() => Err(untrusted::Error::Fetch(crate::fetch::Error::Timeout)),
        Ok(fetched) => Ok((Extracted::new(fetched.final_url, extractor.finish()), fetched.bytes)),
    };
    // Everything the extraction allocated is freed by now; hand it back to the system after a large page.
    if page.as_ref().is_ok_and(|(_, bytes)| *bytes >= TRIM_AFTER_BYTES) {
        crate::http::sys::trim_heap();
    }
    page.map(|(page, _)| page)
}

/// Bytes of markdown one result's page brings into an answer at most (beside its token budget, which bounds it
/// about four times lower): `extract: 5` answers stay within `EXTRACT_PAGES_MAX` times this, and the top page's
/// copy in `answer_extract`.
pub const EXTRACT_PAGE_BYTES_MAX: usize = 128 * 1_024;

/// A job of the pool.
type Job = Box<dyn FnOnce() + Send + 'static>;

/// Who a page is extracted for: the caller's address key (`http::client_addr::key`: an IPv4 address, an IPv6 /64).
/// The stdio door and the command line are `LOCAL`.
pub type Caller = std::net::IpAddr;

/// The caller of the stdio door and the command line.
pub const LOCAL: Caller = std::net::IpAddr::V4(std::net::Ipv4Addr::LOCALHOST);

/// Threads that fetch and extract pages, fixed when the door starts (a call adds none): a call hands them its pages
/// and waits for the answers until its deadline. The pool is fair across calls: a call's first page takes any free
/// thread (the oldest first), and a call's other pages only run while more than a reserve of threads is free
/// (`reserve`), the call running the fewest first, and while their client address (an IPv6 /64) holds under its
/// share (`per_caller`). Pages that never answer, however many of them four calls ask for, so leave another call's
/// page a thread; a call's pages past what it may run wait behind its own, within its deadline.
pub struct Pool {
    shared: Arc<Shared>,
    threads: usize,
    /// The next call's number.
    calls: std::sync::atomic::AtomicU64,
}

struct Shared {
    queue: Mutex<Queue>,
    ready: std::sync::Condvar,
}

/// A page waiting for a thread: whose, and of which call.
struct Waiting {
    caller: Caller,
    call: u64,
    job: Job,
}

#[derive(Default)]
struct Queue {
    /// Bounded by the calls in flight times the pages each keeps submitted (`Pages::parallel`).
    waiting: std::collections::VecDeque<Waiting>,
    by_caller: std::collections::HashMap<Caller, usize>,
    by_call: std::collections::HashMap<u64, usize>,
    running: usize,
    /// Threads one address's calls may hold with their other pages; and a call's other pages run only while fewer
    /// than `others_below` threads are busy.
    per_caller: usize,
    others_below: usize,
    closed: bool,
}

impl Queue {
    /// The next waiting job this pool may run now (`Pool`'s rules), taken and counted as running.
    fn take(&mut self) -> Option<(Caller, u64, Job)> {
        let first = self.waiting.iter().position(|w| !self.by_call.contains_key(&w.call));
        let at = first.or_else(|| {
            if self.running >= self.others_below {
                return None;
            }
            let mut best: Option<(usize, usize)> = None;
            for (i, w) in self.waiting.iter().enumerate() {
                if self.by_caller.get(&w.caller).copied().unwrap_or(0) >= self.per_caller {
                    continue;
                }
                let running = self.by_call.get(&w.call).copied().unwrap_or(0);
                if best.is_none_or(|(b, _)| running < b) {
                    best = Some((running, i));
                }
            }
            best.map(|(_, i)| i)
        })?;
        let Waiting { caller, call, job } = self.waiting.remove(at)?;
        *self.by_caller.entry(caller).or_insert(0) += 1;
        *self.by_call.entry(call).or_insert(0) += 1;
        self.running += 1;
        Some((caller, call, job))
    }

    fn done(&mut self, caller: Caller, call: u64) {
        if let Some(n) = self.by_caller.get_mut(&caller) {
            *n -= 1;
            if *n == 0 {
                self.by_caller.remove(&caller);
            }
        }
        if let Some(n) = self.by_call.get_mut(&call) {
            *n -= 1;
            if *n == 0 {
                self.by_call.remove(&call);
            }
        }
        self.running = self.running.saturating_sub(1);
    }
}

impl Pool {
    /// A pool of `threads` threads, whose calls read `parallel` pages side by side at most. One the system refuses
    /// is logged and missing (the shares are of the threads started); with none, the jobs run on the caller's thread
    /// one after the other.
    pub fn new(threads: usize, parallel: usize) -> Pool {
        let shared = Arc::new(Shared { queue: Mutex::new(Queue::default()), ready: std::sync::Condvar::new() });
        let mut started = 0;
        for i in 0..threads {
            let shared = shared.clone();
            match std::thread::Builder::new().name(format!("extract-{i}")).spawn(move || shared.work()) {
                Ok(_) => started += 1,
                Err(e) => log::error!("cannot start an extraction thread: {e}"),
            }
        }
        {
            let mut queue = shared.queue.lock().unwrap_or_else(|p| p.into_inner());
            queue.per_caller = per_caller(started, parallel);
            queue.others_below = started - reserve(started, parallel);
        }
        Pool { shared, threads: started, calls: std::sync::atomic::AtomicU64::new(0) }
    }

    pub fn threads(&self) -> usize {
        self.threads
    }

    /// A number for a call's pages.
    fn call(&self) -> u64 {
        self.calls.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
    }

    /// Runs `job` (a page of `call`, for `caller`) on a thread of the pool, or here when the pool has none.
    fn submit(&self, (caller, call): (Caller, u64), job: Job) {
        if self.threads == 0 {
            return job();
        }
        let waiting = Waiting { caller, call, job };
        self.shared.queue.lock().unwrap_or_else(|p| p.into_inner()).waiting.push_back(waiting);
        self.shared.ready.notify_all();
    }
}

/// The threads of a pool of `threads` that calls' other pages leave free for other calls' first pages: half, or
/// what is left past one call's `parallel` pages if less (none for a pool the size of one call: the command line).
pub fn reserve(threads: usize, parallel: usize) -> usize {
    threads.saturating_sub(parallel).min(threads / 2)
}

impl Shared {
    /// A thread of the pool: the next job it may run, until the pool is dropped.
    fn work(&self) {
        let lock = || self.queue.lock().unwrap_or_else(|p| p.into_inner());
        loop {
            let mut queue = lock();
            let (caller, call, job) = loop {
                if let Some(taken) = queue.take() {
                    break taken;
                }
                if queue.closed {
                    return;
                }
                queue = self.ready.wait(queue).unwrap_or_else(|p| p.into_inner());
            };
            drop(queue);
            // A bug in one page costs that page (tests and debug builds unwind; release builds abort).
            let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(job));
            lock().done(caller, call);
            // A call's next page may run now, on another thread that waits.
            self.ready.notify_all();
        }
    }
}

impl Drop for Pool {
    fn drop(&mut self) {
        self.shared.queue.lock().unwrap_or_else(|p| p.into_inner()).closed = true;
        self.shared.ready.notify_all();
    }
}

/// The pages a door extracts: the cache, the pool, and the fetch's policy and limits.
pub struct Pages {
    cache: Arc<Cache>,
    pool: Pool,
    /// Pages of one call in flight at once.
    parallel: usize,
    policy: Policy,
    limits: Limits,
}

/// The threads of a pool of `threads` one caller may hold at once: half of them (the other half is the other
/// callers'), and at least the pages one call extracts side by side (`parallel`).
pub fn per_caller(threads: usize, parallel: usize) -> usize {
    (threads / 2).max(parallel).max(1)
}

/// What one page of a call came to.
type Outcome = Result<Page, (String, String)>;

/// What a job sends back: the page or why not, or the panic of its extraction (a bug; the panic hook logged it).
type Done = std::thread::Result<Result<Page, untrusted::Error>>;

/// Why a page whose extraction panicked has none.
const PANICKED: &str = "the page's extraction failed (a bug, logged by the server)";

impl Pages {
    /// The pages of a door that runs `calls` calls at once (the server's workers; 1 for the stdio door and the
    /// command line). Its pool holds `max(calls, WEBSEARCHD_EXTRACT_PARALLEL)` threads: one call gets its pages
    /// side by side, and the process never extracts more pages at once than it did when each worker extracted its
    /// own call's page (the memory bound of issue 13); calls that ask for more wait their turn within their deadline.
    pub fn new(config: &Config, calls: usize) -> Pages {
        let (policy, limits) = config.fetch_policy();
        let parallel = config.extract_parallel.max(1);
        let threads = calls.max(parallel);
        Pages {
            cache: Arc::new(cache(Duration::from_secs(config.cache_ttl_s))),
            pool: Pool::new(threads, parallel),
            parallel,
            policy,
            limits,
        }
    }

    /// The threads of its pool.
    pub fn threads(&self) -> usize {
        self.pool.threads()
    }

    /// One page through the cache (the `extract_page` tool), on the pool like the pages of `add_to_answer`: the
    /// pool's threads are what bounds the pages extracted at once, whichever door asks. A page the pool has not
    /// answered within one fetch deadline is a timeout. `query` (empty: none) is what the call asked about.
    pub fn extract(&self, caller: Caller, url: &str, tokens: usize, query: &str) -> Result<Page, untrusted::Error> {
        let deadline = Instant::now() + self.limits.deadline;
        let (tx, rx) = mpsc::channel::<(usize, Done)>();
        self.pool.submit((caller, self.pool.call()), self.job(0, url.to_owned(), (tokens, query.into()), deadline, tx));
        let left = deadline.saturating_duration_since(Instant::now());
        match rx.recv_timeout(left) {
            Ok((_, Ok(outcome))) => outcome,
            // The panic hook logged it on the pool's thread; here it becomes what a panic of the call is.
            Ok((_, Err(panic))) => std::panic::resume_unwind(panic),
            Err(_) => Err(untrusted::Error::Fetch(crate::fetch::Error::Timeout)),
        }
    }

    /// The pages of the answer's first `k` results, fetched side by side on the pool (at most `parallel` at once),
    /// all within one fetch deadline: each result gets an `extract` member (its page, or why not), and the answer
    /// gets `answer_extract` (the top result's markdown) and `extract` (the top page's summary, or why not). Each
    /// page over its budget is cut for `query`, the search's.
    pub fn add_to_answer(&self, caller: Caller, answer: &mut Value, k: usize, tokens: usize, query: &str) {
        // One URL per result, in place (a result without one is a page that cannot be fetched, not a shift of the
        // pages onto the wrong results).
        let urls: Vec<String> = answer
            .get("results")
            .and_then(Value::as_array)
            .map(|r| r.iter().take(k).map(|r| r.get("url").and_then(Value::as_str).unwrap_or("").to_owned()).collect())
            .unwrap_or_default();
        let outcomes = self.run(caller, &urls, tokens, query);
        let mut top: Option<(Value, Option<String>)> = None;
        if let Some(results) = answer.get_mut("results").and_then(Value::as_array_mut) {
            for (i, (result, outcome)) in results.iter_mut().zip(outcomes).enumerate() {
                let url = urls.get(i).map_or("", String::as_str);
                let outcome = non_empty(outcome);
                let member = match &outcome {
                    Ok(page) => page.member(),
                    Err((code, message)) => failure(url, code, message),
                };
                // Only the top page's summary (its hash) and markdown go into the answer itself.
                if i == 0 {
                    top = Some(match outcome {
                        Ok(page) => (page.summary(), Some(page.markdown)),
                        Err(_) => (member.clone(), None),
                    });
                }
                if let Some(map) = result.as_object_mut() {
                    map.insert("extract".into(), member);
                }
            }
        }
        let (summary, markdown) = top.unwrap_or_else(|| (json!({ "status": "no_results" }), None));
        if let Some(map) = answer.as_object_mut() {
            if let Some(md) = markdown {
                map.insert("answer_extract".into(), md.into());
            }
            map.insert("extract".into(), summary);
        }
    }

    /// The reader door's pages (`POST /extract`): each URL's, in order, fetched side by side on the pool within one
    /// fetch deadline and cut to `tokens` for `query` (empty: none), as the member a result's page is (`Page::member`)
    /// with the URL asked for and the markdown's hash, or why not (`failure`: a refusal of the guard, a failed fetch,
    /// a timeout, no main content).
    pub fn read(&self, caller: Caller, urls: &[String], tokens: usize, query: &str) -> Vec<Value> {
        self.read_within(caller, urls, (tokens, query), self.limits.deadline)
    }

    /// `read` within `within` rather than one fetch deadline (the Tavily door's: a round of fetch deadlines for 20
    /// URLs, or the caller's shorter `timeout`); each page's own fetch stays within one fetch deadline.
    pub fn read_within(
        &self,
        caller: Caller,
        urls: &[String],
        (tokens, query): (usize, &str),
        within: Duration,
    ) -> Vec<Value> {
        let outcomes = self.run_within(caller, urls, (tokens, query), within);
        let pages = urls.iter().zip(outcomes).map(|(url, outcome)| match non_empty(outcome) {
            Ok(page) => {
                let mut member = page.member();
                if let Some(map) = member.as_object_mut() {
                    map.insert("url".into(), url.as_str().into());
                    map.insert("content_sha256".into(), crate::sign::sha256_hex(page.markdown.as_bytes()).into());
                }
                member
            }
            Err((code, message)) => failure(url, &code, &message),
        });
        pages.collect()
    }

    /// Each URL's page, in order: at most `parallel` in flight, every one ending by the deadline (one fetch
    /// deadline from now); what has not answered by then is a timeout.
    fn run(&self, caller: Caller, urls: &[String], tokens: usize, query: &str) -> Vec<Outcome> {
        self.run_within(caller, urls, (tokens, query), self.limits.deadline)
    }

    /// `run` with every page ending within `within`.
    fn run_within(
        &self,
        caller: Caller,
        urls: &[String],
        (tokens, query): (usize, &str),
        within: Duration,
    ) -> Vec<Outcome> {
        let deadline = Instant::now() + within;
        let call = (caller, self.pool.call());
        let query: Arc<str> = query.into();
        let (tx, rx) = mpsc::channel::<(usize, Done)>();
        let mut outcomes: Vec<Option<Outcome>> = vec![None; urls.len()];
        let mut next = 0;
        let mut in_flight = 0;
        let mut answered = 0;
        while answered < urls.len() {
            while in_flight < self.parallel && next < urls.len() {
                let url = urls.get(next).cloned().unwrap_or_default();
                self.pool.submit(call, self.job(next, url, (tokens, query.clone()), deadline, tx.clone()));
                next += 1;
                in_flight += 1;
            }
            let Some(left) = deadline.checked_duration_since(Instant::now()) else { break };
            match rx.recv_timeout(left) {
                Ok((i, done)) => {
                    let outcome = match done {
                        Ok(Ok(mut page)) => {
                            page.cap(EXTRACT_PAGE_BYTES_MAX);
                            Ok(page)
                        }
                        Ok(Err(e)) => Err((e.code().to_owned(), e.to_string())),
                        Err(_) => Err(("internal".to_owned(), PANICKED.to_owned())),
                    };
                    if let Some(slot) = outcomes.get_mut(i) {
                        *slot = Some(outcome);
                    }
                    in_flight -= 1;
                    answered += 1;
                }
                Err(_) => break,
            }
        }
        let timeout = || Err(("timeout".to_owned(), "the page did not answer before the call's deadline".to_owned()));
        outcomes.into_iter().map(|o| o.unwrap_or_else(timeout)).collect()
    }

    /// The job that extracts `url` (the `index`th page of a call) and sends what it came to back, a panic included
    /// (its caller does not wait out the deadline for it); it does not start after `deadline`, and its fetch ends
    /// by it; the page is cut to `tokens` for `query`.
    fn job(
        &self,
        index: usize,
        url: String,
        (tokens, query): (usize, Arc<str>),
        deadline: Instant,
        tx: mpsc::Sender<(usize, Done)>,
    ) -> Job {
        let (cache, policy, mut limits) = (self.cache.clone(), self.policy.clone(), self.limits.clone());
        Box::new(move || {
            let Some(left) = deadline.checked_duration_since(Instant::now()) else { return };
            // One page's fetch takes one fetch deadline at most, whatever the call's.
            limits.deadline = left.min(limits.deadline);
            limits.connect_timeout = limits.connect_timeout.min(left);
            // Tests and debug builds unwind; release builds abort.
            let done = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                extract_cached(&cache, &url, &policy, &limits, (tokens, &query))
            }));
            let _ = tx.send((index, done));
        })
    }
}

/// A page without main content is a failure (`empty`), not an answer of nothing.
fn non_empty(outcome: Outcome) -> Outcome {
    match outcome {
        Ok(page) if page.markdown.trim().is_empty() => {
            Err(("empty".to_owned(), "no main content was found on the page".to_owned()))
        }
        outcome => outcome,
    }
}

/// The `extract` member for a failure: the search still answers, without `answer_extract`.
pub fn failure(url: &str, status: &str, message: &str) -> Value {
    json!({ "url": url, "status": status, "error": message })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn page(text: &str) -> Arc<Extracted> {
        Arc::new(Extracted { url: "u".into(), title: None, blocks: vec![text.to_owned()], truncated: false })
    }

    #[test]
    fn the_cache_keeps_for_its_ttl_and_within_its_bounds() {
        let t0 = Instant::now();
        let cache = cache(Duration::from_secs(10));
        cache.put("a".into(), page("one"), t0);
        let kept = cache.get("a", t0 + Duration::from_secs(9)).map(|(p, _)| p.blocks.clone());
        assert_eq!(kept, Some(vec!["one".into()]));
        assert!(cache.get("a", t0 + Duration::from_secs(10)).is_none(), "expired");
        assert_eq!(cache.len(), 0);
        for i in 0..CACHE_ENTRIES_MAX + 10 {
            cache.put(i.to_string(), page("x"), t0 + Duration::from_millis(i as u64));
        }
        assert_eq!(cache.len(), CACHE_ENTRIES_MAX);
        assert!(cache.get("0", t0).is_none(), "the oldest went first");
        // Bytes: two extracts of more than half the cap do not fit together.
        let big = "x".repeat(CACHE_BYTES_MAX / 2 + 1);
        cache.put("big1".into(), page(&big), t0 + Duration::from_secs(1));
        cache.put("big2".into(), page(&big), t0 + Duration::from_secs(2));
        assert!(cache.get("big1", t0 + Duration::from_secs(2)).is_none());
        assert!(cache.get("big2", t0 + Duration::from_secs(2)).is_some());
        assert!(cache.bytes() <= CACHE_BYTES_MAX);
        // Too large for the cache at all: not kept. Off: nothing kept.
        cache.put("huge".into(), page(&"x".repeat(CACHE_BYTES_MAX)), t0);
        assert!(cache.get("huge", t0).is_none());
        let off = super::cache(Duration::ZERO);
        off.put("a".into(), page("one"), t0);
        assert!(off.get("a", t0).is_none());
    }

    /// Many tiny blocks weigh what they hold, not their text alone.
    #[test]
    fn tiny_blocks_are_weighed_with_their_overhead() {
        let blocks = vec!["a".to_owned(); crate::extract::BLOCKS_MAX];
        let e = Extracted { url: "u".into(), title: None, blocks, truncated: true };
        assert!(e.bytes() >= crate::extract::BLOCKS_MAX * (1 + std::mem::size_of::<String>()));
    }

    /// A block grown by doubling weighs what it allocated; an extract kept from a page holds no such slack.
    #[test]
    fn spare_capacity_is_weighed_and_not_kept() {
        let grown = || {
            let mut s = String::with_capacity(1 << 20);
            s.push_str("| a |");
            s
        };
        let extract = crate::extract::Extract { title: None, blocks: vec![grown()], truncated: false };
        let e = Extracted { url: "u".into(), title: None, blocks: vec![grown()], truncated: false };
        assert!(e.bytes() >= 1 << 20, "{}", e.bytes());
        let kept = Extracted::new("u".into(), extract);
        assert!(kept.bytes() < 1_024, "{}", kept.bytes());
        assert_eq!(kept.blocks, e.blocks);
    }

    /// Pages on a pool of `threads` threads, with `cache` and one fetch deadline of `deadline`, that may fetch
    /// `127.0.0.1:port`.
    fn pages(threads: usize, deadline: Duration, cache: Cache, port: u16) -> Pages {
        let (mut policy, mut limits) = Config::defaults().fetch_policy();
        policy.allow.push(("127.0.0.1".into(), port));
        limits.deadline = deadline;
        Pages { cache: Arc::new(cache), pool: Pool::new(threads, 2), parallel: 2, policy, limits }
    }

    /// The pool's rules: a call's first page first, other pages only while the reserve is free, the call running the
    /// fewest first, an address's other pages within its share.
    #[test]
    fn the_queue_takes_first_pages_first_and_keeps_the_reserve() {
        let (a, b): (Caller, Caller) = ("192.0.2.1".parse().unwrap(), "192.0.2.2".parse().unwrap());
        let mut q = Queue { per_caller: 2, others_below: 3, ..Queue::default() };
        let push = |q: &mut Queue, caller, call| q.waiting.push_back(Waiting { caller, call, job: Box::new(|| {}) });
        // Call 1 (a) asks for three pages, call 2 (a) and call 3 (b) for one each.
        for call in [1, 1, 1, 2, 3] {
            push(&mut q, if call == 3 { b } else { a }, call);
        }
        let taken = |q: &mut Queue| q.take().map(|(_, call, _)| call);
        assert_eq!(taken(&mut q), Some(1), "call 1's first page");
        assert_eq!(taken(&mut q), Some(2), "call 2's first page before call 1's others");
        assert_eq!(taken(&mut q), Some(3));
        assert_eq!(taken(&mut q), None, "three busy: the rest is the reserve's");
        q.done(b, 3);
        assert_eq!(taken(&mut q), None, "a's other pages: its share (2) is full");
        q.done(a, 2);
        assert_eq!(taken(&mut q), Some(1), "now within a's share and the reserve");
        assert_eq!((q.running, q.waiting.len()), (2, 1));
    }

    /// The `extract_page` tool's page waits for a thread of the pool like the pages of a search: with the pool's
    /// one thread busy, it is a timeout at its deadline, not an extraction beside the pool's.
    #[test]
    fn one_page_is_extracted_on_the_pool() {
        let pages = pages(1, Duration::from_millis(200), cache(Duration::from_secs(60)), 0);
        pages.cache.put("http://a.example/".into(), page("kept"), Instant::now());
        let (release, released) = mpsc::channel::<()>();
        pages.pool.submit(
            (LOCAL, pages.pool.call()),
            Box::new(move || {
                let _ = released.recv();
            }),
        );
        let busy = pages.extract(LOCAL, "http://a.example/", 0, "");
        assert_eq!(busy.map(|p| p.markdown), Err(untrusted::Error::Fetch(crate::fetch::Error::Timeout)));
        drop(release);
        assert_eq!(pages.extract(LOCAL, "http://a.example/", 0, "").map(|p| p.markdown), Ok("kept".to_owned()));
    }

    /// A page whose extraction panics is reported `internal` at once: its call does not wait out the deadline for
    /// an answer that will never come.
    #[test]
    fn a_panicking_page_is_an_internal_failure_not_a_timeout() {
        use std::io::{Read, Write};
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let server = std::thread::spawn(move || {
            for _ in 0..2 {
                let (mut conn, _) = listener.accept().unwrap();
                let mut head = Vec::new();
                let mut byte = [0u8; 1];
                while !head.ends_with(b"\r\n\r\n") && conn.read(&mut byte).unwrap() == 1 {
                    head.push(byte[0]);
                }
                let body = "<html><body><main><p>A page.</p></main></body></html>";
                let head = format!(
                    "HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
                    body.len()
                );
                conn.write_all(head.as_bytes()).unwrap();
                conn.write_all(body.as_bytes()).unwrap();
            }
        });
        // Keeping the page panics (the bug stands for any in the extraction).
        let panics = Cache::weighed(Duration::from_secs(60), 8, 1 << 20, |_| panic!("a bug in the extraction"));
        let deadline = Duration::from_secs(5);
        let pages = pages(1, deadline, panics, port);
        let started = Instant::now();
        let outcomes = pages.run(LOCAL, &[format!("http://127.0.0.1:{port}/")], 0, "");
        assert!(started.elapsed() < deadline, "{:?}", started.elapsed());
        let codes: Vec<_> = outcomes.into_iter().map(|o| o.map(|p| p.markdown).map_err(|(code, _)| code)).collect();
        assert_eq!(codes, [Err("internal".to_owned())]);
        // The extract_page tool's page: the panic is the call's (the worker's catch_unwind makes it a 500).
        let started = Instant::now();
        let page = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            pages.extract(LOCAL, &format!("http://127.0.0.1:{port}/"), 0, "").map(|p| p.markdown)
        }));
        assert!(page.is_err(), "{page:?}");
        assert!(started.elapsed() < deadline, "{:?}", started.elapsed());
        server.join().unwrap();
    }
}
