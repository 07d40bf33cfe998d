//! The shared store: the state several nodes behind one address share through Redis (or Valkey), when
//! `WEBSEARCHD_REDIS_URL` names one. Without it nothing here runs and every node keeps its state in its own memory.
//!
//! What is shared, and how (each key under `WEBSEARCHD_REDIS_PREFIX`):
//! - the replay guard: `pay:<payer>:<nonce>`, taken with `SET NX PX` until a margin past the authorization's
//!   `validBefore` (the ledger's `SHARED_HOLD_MARGIN_S`, for clock skew) before the facilitator is asked, held by a
//!   token of this node; a payment that frees its authorization (refused, abandoned, failed settlement) deletes it
//!   only if the token is still its own (a script);
//! - the answer cache: `answer:<hash of the cache key>`, with the cache's TTL, each entry sealed with an HMAC under
//!   the fleet's secret (`WEBSEARCHD_REDIS_SECRET_FILE`, `entry`) with the time it was written, and read back only
//!   if it opens and that time and the TTL have not passed by the reader's clock (its age is the sealed time's), at
//!   most `ANSWER_BYTES_MAX` long (anything else is a miss, logged and counted); without a secret answers are not
//!   shared (a node cannot tell its fleet's from anyone's who can write the Redis);
//! - each endpoint's back-off (`cool:<hash of the URL>`, set for the back-off when a node's request fails) and each
//!   provider's pace (`pace:<hash>`, the token bucket's theoretical arrival time in Redis's own clock, ms: a slot is
//!   reserved if it comes within the wait the search allows), checked together by one script, so the fleet paces a
//!   provider as one client;
//! - the free-trial counters: `trial:<day>:<hash of the address>`, `INCR`, expiring after two days.
//!
//! The payment ledger and the notary chain stay on each node's disk. Failure: every call is bounded by
//! `WEBSEARCHD_REDIS_TIMEOUT_MS`; a call that fails marks the store down for `DOWN_MS`, during which it is not asked
//! at all (a request waits on Redis at most once per `DOWN_MS`, and only for the bound). While it cannot be asked,
//! paid calls are refused (503, the caller's `Retry-After: RETRY_AFTER_S`): never admitted without the shared guard;
//! the cache, breakers, pacing and trials fall back to the node's own memory.

pub mod client;
pub mod entry;
pub mod resp;

use std::fmt::Write as _;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use serde_json::{json, Value};
use sha2::{Digest, Sha256};

use client::{Client, Error};
pub use client::{Settings, Url};
pub use entry::Secret;
use resp::Reply;

/// Longest answer shared (its JSON): 20 results at their longest (a 4,096-byte URL, 300 and 1,000 characters of
/// title and snippet, four bytes each) take 190 KB, 240 KB were every character escaped (`\u0001`); a longer answer
/// (a report of many sources) stays in the node's own cache, and an entry read back longer is refused unread.
pub const ANSWER_BYTES_MAX: usize = resp::BULK_BYTES_MAX - entry::HEADER_BYTES - 1;

/// `Retry-After` of a paid call refused while the store cannot be asked.
pub const RETRY_AFTER_S: u32 = 2;
/// After a failed call, how long the store is not asked (the next call after it tries again).
const DOWN_MS: u64 = 1_000;
/// Characters of an unexpected reply kept in the log and `/health` (its `Debug` form: a bulk string's bytes).
const REPLY_SHOWN_CHARS_MAX: usize = 200;
/// The least time between two log lines about refused shared answers.
const REFUSAL_LOG_INTERVAL_MS: u64 = 60_000;
/// Trial counters outlive their UTC day by one more, so a node whose clock is a little off still finds them.
const TRIAL_TTL_MS: u64 = 2 * crate::clock::DAY_MS;

/// Frees a payment's key only if this node's token still holds it.
const RELEASE_SCRIPT: &str = "if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end \
                              return 0";
/// An endpoint's admission: 1 and the time left while it backs off; else its provider's next slot (a token bucket
/// of `ARGV[1]` ms between requests and a burst of `ARGV[2]`, by Redis's clock), reserved if it comes within
/// `ARGV[3]` ms: 0 and the wait; 2 and the wait if it is later.
const ADMIT_SCRIPT: &str = "local c = redis.call('PTTL', KEYS[1]) if c > 0 then return {1, c} end \
                            local iv = tonumber(ARGV[1]) if iv <= 0 then return {0, 0} end \
                            if redis.replicate_commands then redis.replicate_commands() end \
                            local t = redis.call('TIME') local now = t[1] * 1000 + math.floor(t[2] / 1000) \
                            local tat = tonumber(redis.call('GET', KEYS[2])) or 0 if tat < now then tat = now end \
                            local wait = tat - iv * (tonumber(ARGV[2]) - 1) - now if wait < 0 then wait = 0 end \
                            if wait > tonumber(ARGV[3]) then return {2, wait} end \
                            redis.call('SET', KEYS[2], string.format('%d', tat + iv), 'PX', \
                            string.format('%d', tat + iv - now + 1000)) return {0, wait}";

/// Lengthens an endpoint's back-off to `ARGV[1]` ms, never shortens it (a node's first wall must not cut another
/// node's longer back-off short).
const COOL_SCRIPT: &str = "if redis.call('PTTL', KEYS[1]) < tonumber(ARGV[1]) then \
                           redis.call('SET', KEYS[1], '1', 'PX', ARGV[1]) end return 0";

/// The store could not answer; what it means is the caller's to decide (refuse a payment, fall back to memory).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unavailable(pub String);

impl std::fmt::Display for Unavailable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "the shared store is unavailable: {}", self.0)
    }
}

/// An authorization this node holds in the store.
#[derive(Debug)]
pub struct Hold {
    key: Vec<u8>,
    token: Vec<u8>,
}

/// What the fleet says of an endpoint about to be asked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Turn {
    /// Its provider's slot is reserved, after this wait.
    Admitted(Duration),
    /// Backing off.
    CoolingDown(Duration),
    /// The provider's next slot is this far away, later than the search can wait.
    NotReady(Duration),
}

pub struct Store {
    client: Client,
    prefix: String,
    /// Names this node's holds (random at start) so that it never frees another node's.
    node: String,
    holds: AtomicU64,
    /// While set and in the future, the store is not asked.
    down_until: Mutex<Option<Instant>>,
    /// The last call got its replies.
    up: AtomicBool,
    last_error: Mutex<Option<String>>,
    calls: AtomicU64,
    failures: AtomicU64,
    us: AtomicU64,
    last_us: AtomicU64,
    /// Answers found in the store that this node's own cache did not have.
    cache_hits: AtomicU64,
    /// Entries read back and refused (not the fleet's, stale, too long, not an answer): each a miss.
    cache_refused: AtomicU64,
    /// When a refusal was last logged (Unix ms, 0 for never): at most one line per `REFUSAL_LOG_INTERVAL_MS`.
    refusal_logged_ms: AtomicU64,
    /// What seals the shared answers; without it, none are shared.
    secret: Option<Secret>,
}

impl Store {
    /// The store the settings name; its secret read from its file (a file that cannot be read, or too short a
    /// secret, is an error: the operator meant to share answers).
    pub fn new(settings: Settings, prefix: &str) -> Result<Store, String> {
        let secret = settings.secret_file.as_deref().map(Secret::read).transpose()?;
        if secret.is_none() {
            log::warn!(
                "WEBSEARCHD_REDIS_SECRET_FILE is not set: answers are not shared through {} (a node could not tell \
                 its fleet's from those of anyone who can write there); the replay guard, breakers, pacing and \
                 trial counters are",
                settings.url.redacted()
            );
        }
        Ok(Store {
            secret,
            cache_refused: AtomicU64::new(0),
            refusal_logged_ms: AtomicU64::new(0),
            client: Client::new(settings)?,
            prefix: prefix.to_owned(),
            node: node_token(),
            holds: AtomicU64::new(0),
            down_until: Mutex::new(None),
            up: AtomicBool::new(false),
            last_error: Mutex::new(None),
            calls: AtomicU64::new(0),
            failures: AtomicU64::new(0),
            us: AtomicU64::new(0),
            last_us: AtomicU64::new(0),
            cache_hits: AtomicU64::new(0),
        })
    }

    /// Asks the store once (at start, to log whether it is there).
    pub fn ping(&self) -> Result<(), Unavailable> {
        self.run(&[&[b"PING"]]).map(drop)
    }

    /// Takes the authorization (`payer`, `nonce`) for `ttl_ms` (past its `validBefore`): `Ok(None)` when another
    /// request, on any node, holds it. `SET NX` answers `+OK` when it took the key and a null when the key was held;
    /// any other reply (another type, another status: a proxy's or a broken server's) says neither, and is a
    /// failure of the store, never a replay (nor a hold).
    pub fn reserve(&self, payer: &[u8; 20], nonce: &[u8; 32], ttl_ms: u64) -> Result<Option<Hold>, Unavailable> {
        let key = self.key("pay", &format!("{}:{}", crate::codec::hex_encode(payer), crate::codec::hex_encode(nonce)));
        let n = self.holds.fetch_add(1, Relaxed);
        let token = format!("{}-{n}", self.node).into_bytes();
        let ttl = ttl_ms.max(1).to_string();
        match self.one(&[b"SET", &key, &token, b"NX", b"PX", ttl.as_bytes()])? {
            Reply::Status(s) if s == "OK" => Ok(Some(Hold { key, token })),
            Reply::Nil => Ok(None),
            other => Err(self.unexpected("SET NX", &other)),
        }
    }

    /// Frees an authorization this node holds (the payment was refused or abandoned: another try may come). If the
    /// store cannot be asked, the key stays until it expires: a retry is refused, never a second use admitted.
    pub fn release(&self, hold: &Hold) {
        if let Err(e) = self.one(&[b"EVAL", RELEASE_SCRIPT.as_bytes(), b"1", &hold.key, &hold.token]) {
            log::warn!("a payment's shared hold could not be released (it expires after its validBefore): {e}");
        }
    }

    /// The answer the fleet shared under `name` (at most `ANSWER_BYTES_MAX` bytes, read as `take` reads it) and its
    /// age by the time sealed in it, if the store has one that opens (`entry::open`: sealed under the fleet's secret
    /// for this name, less than `ttl` before `now_ms`). What Redis says of the key's TTL is not asked: whoever can
    /// write the Redis can set an old entry again with a new one. An entry that does not open (a stale one included),
    /// or that `take` refuses, is a miss, logged and counted. Without a secret nothing is asked.
    pub fn cached<T>(
        &self,
        name: &str,
        ttl: Duration,
        now_ms: u64,
        take: impl FnOnce(&[u8]) -> Result<T, String>,
    ) -> Result<Option<(T, Duration)>, Unavailable> {
        let Some(secret) = &self.secret else { return Ok(None) };
        let key = self.key("answer", name);
        // At most one byte more than an entry may have: a longer one is told by its length, and costs no more.
        let last = (entry::HEADER_BYTES + ANSWER_BYTES_MAX).to_string();
        let Some(Reply::Bulk(value)) = self.run(&[&[b"GETRANGE", &key, b"0", last.as_bytes()]])?.into_iter().next()
        else {
            return Ok(None);
        };
        // No key: an empty range.
        if value.is_empty() {
            return Ok(None);
        }
        let ttl_ms = u64::try_from(ttl.as_millis()).unwrap_or(u64::MAX);
        let taken = entry::open(secret, name, &value, now_ms, ttl_ms, ANSWER_BYTES_MAX)
            .map_err(|e| e.to_string())
            .and_then(|(answer, age_ms)| Ok((take(answer)?, Duration::from_millis(age_ms))));
        match taken {
            Ok(answer) => {
                self.cache_hits.fetch_add(1, Relaxed);
                Ok(Some(answer))
            }
            Err(why) => {
                let refused = self.cache_refused.fetch_add(1, Relaxed) + 1;
                // Whoever writes the store chooses how often this happens: one line for the first refusal, then
                // at most one a minute (the count is websearchd_store_cache_refused_total).
                let last = self.refusal_logged_ms.load(Relaxed);
                let due = last == 0 || now_ms.saturating_sub(last) >= REFUSAL_LOG_INTERVAL_MS;
                if due && self.refusal_logged_ms.compare_exchange(last, now_ms.max(1), Relaxed, Relaxed).is_ok() {
                    log::warn!(
                        "the shared answer {} was refused ({why}): a miss ({refused} refused since the start; said \
                         at most once a minute). Does a node without this fleet's secret, or someone else, write \
                         under {}?",
                        String::from_utf8_lossy(&key),
                        self.prefix
                    );
                }
                Ok(None)
            }
        }
    }

    /// Shares an answer under `name` for `ttl`, sealed at `now_ms` (at most `ANSWER_BYTES_MAX` bytes: a larger one
    /// stays local); without a secret, nothing is shared.
    pub fn cache(&self, name: &str, answer: &[u8], ttl: Duration, now_ms: u64) {
        let Some(secret) = &self.secret else { return };
        if answer.len() > ANSWER_BYTES_MAX || ttl.is_zero() {
            return;
        }
        let (key, ms) = (self.key("answer", name), ttl.as_millis().to_string());
        let entry = entry::seal(secret, name, now_ms, answer);
        if let Err(e) = self.one(&[b"SET", &key, &entry, b"PX", ms.as_bytes()]) {
            log::debug!("an answer could not be shared: {e}");
        }
    }

    /// The fleet's admission of an endpoint (`endpoint` backing off?) and its provider's next slot (`pace`: a
    /// bucket of `interval` and `burst`), reserved if it comes within `wait_max`.
    pub fn admit(
        &self,
        endpoint: &str,
        pace: &str,
        (interval, burst): (Duration, u32),
        wait_max: Duration,
    ) -> Result<Turn, Unavailable> {
        let (cool, pace) = (self.key("cool", endpoint), self.key("pace", pace));
        let (ms, burst, wait) =
            (interval.as_millis().to_string(), burst.max(1).to_string(), wait_max.as_millis().to_string());
        let args = [ms.as_bytes(), burst.as_bytes(), wait.as_bytes()];
        let reply = self.one(&[b"EVAL", ADMIT_SCRIPT.as_bytes(), b"2", &cool, &pace, args[0], args[1], args[2]])?;
        let Reply::Array(items) = reply else { return Err(self.unexpected("the admission script", &reply)) };
        let at = |i: usize| items.get(i).and_then(Reply::as_int).unwrap_or(0);
        let left = Duration::from_millis(u64::try_from(at(1)).unwrap_or(0));
        Ok(match at(0) {
            1 => Turn::CoolingDown(left),
            2 => Turn::NotReady(left),
            _ => Turn::Admitted(left),
        })
    }

    /// A node backed `endpoint` off for `backoff`: the fleet skips it as long (a longer back-off already shared
    /// stays).
    pub fn cool_down(&self, endpoint: &str, backoff: Duration) {
        if backoff.is_zero() {
            return;
        }
        let (key, ms) = (self.key("cool", endpoint), backoff.as_millis().to_string());
        if let Err(e) = self.one(&[b"EVAL", COOL_SCRIPT.as_bytes(), b"1", &key, ms.as_bytes()]) {
            log::debug!("a back-off could not be shared: {e}");
        }
    }

    /// Counts a free call of `client` on UTC day `day`: whether it is within `per_day`.
    pub fn trial(&self, client: &str, day: u64, per_day: u32) -> Result<bool, Unavailable> {
        let key = self.key("trial", &format!("{day}:{client}"));
        let ms = TRIAL_TTL_MS.to_string();
        let replies = self.run(&[&[b"INCR", &key], &[b"PEXPIRE", &key, ms.as_bytes()]])?;
        let used = replies.first().and_then(Reply::as_int).ok_or_else(|| Unavailable("INCR's reply".into()))?;
        Ok(used <= i64::from(per_day))
    }

    /// Whether answers are shared (a secret seals them), and the entries found and refused since the start.
    pub fn answers_shared(&self) -> Option<(u64, u64)> {
        self.secret.as_ref().map(|_| (self.cache_hits.load(Relaxed), self.cache_refused.load(Relaxed)))
    }

    /// The store's state for `/health` (from memory: nothing is asked).
    pub fn health(&self) -> Value {
        let calls = self.calls.load(Relaxed);
        let state = match (calls, self.up.load(Relaxed)) {
            (0, _) => "not asked yet",
            (_, true) => "up",
            (_, false) => "down",
        };
        json!({
            "url": self.client.settings().url.redacted(),
            "state": state,
            "retry_in_ms": self.down_for().map(|d| d.as_millis() as u64),
            "latency_ms": (calls > 0).then(|| self.last_us.load(Relaxed) as f64 / 1_000.0),
            "connections": self.client.open(),
            "last_error": self.last_error.lock().unwrap_or_else(|p| p.into_inner()).clone(),
        })
    }

    /// Prometheus text.
    pub fn metrics(&self) -> String {
        let mut out = String::new();
        let gauges = [
            (
                "websearchd_store_up",
                "1 while the shared store answers, 0 while it is down.",
                u64::from(self.up.load(Relaxed)),
            ),
            ("websearchd_store_connections", "Connections open to the shared store.", self.client.open() as u64),
        ];
        for (name, help, v) in gauges {
            crate::metrics::family(&mut out, name, "gauge", help);
            let _ = writeln!(out, "{name} {v}");
        }
        let counters = [
            ("websearchd_store_failures_total", "Calls to the shared store that failed or timed out.", &self.failures),
            ("websearchd_store_cache_hits_total", "Answers served from the shared cache.", &self.cache_hits),
            (
                "websearchd_store_cache_refused_total",
                "Entries read from the shared cache and refused (not sealed by the fleet, stale, too long, not an \
                 answer): each a miss.",
                &self.cache_refused,
            ),
        ];
        for (name, help, v) in counters {
            crate::metrics::family(&mut out, name, "counter", help);
            let _ = writeln!(out, "{name} {}", v.load(Relaxed));
        }
        let name = "websearchd_store_seconds";
        crate::metrics::family(&mut out, name, "summary", "Time spent in calls to the shared store.");
        let _ = writeln!(out, "{name}_sum {}", self.us.load(Relaxed) as f64 / 1e6);
        let _ = writeln!(out, "{name}_count {}", self.calls.load(Relaxed));
        out
    }

    /// How long the store is still not asked after a failure.
    fn down_for(&self) -> Option<Duration> {
        let until = (*self.down_until.lock().unwrap_or_else(|p| p.into_inner()))?;
        let left = until.saturating_duration_since(Instant::now());
        (!left.is_zero()).then_some(left)
    }

    fn key(&self, kind: &str, name: &str) -> Vec<u8> {
        let digest = crate::codec::hex_encode(&Sha256::digest(name.as_bytes()));
        format!("{}{kind}:{}", self.prefix, digest.get(..32).unwrap_or(&digest)).into_bytes()
    }

    /// One command; a server error is a failure.
    fn one(&self, command: &[&[u8]]) -> Result<Reply, Unavailable> {
        let reply = self.run(&[command])?.into_iter().next().ok_or_else(|| Unavailable("no reply".into()))?;
        match reply {
            Reply::Error(e) => Err(self.failed(e)),
            other => Ok(other),
        }
    }

    /// A reply of a type the command does not answer with: a failure of the store, counted and kept as its last
    /// error (as a server's error reply is).
    fn unexpected(&self, command: &str, reply: &Reply) -> Unavailable {
        let shown = debug_cut(reply, REPLY_SHOWN_CHARS_MAX);
        self.failed(format!("unexpected reply to {command}: {shown}"))
    }

    /// Counts a failure the server answered (an error reply, a wrong-typed one) and keeps it as the last error.
    fn failed(&self, e: String) -> Unavailable {
        self.failures.fetch_add(1, Relaxed);
        *self.last_error.lock().unwrap_or_else(|p| p.into_inner()) = Some(e.clone());
        Unavailable(e)
    }

    /// The commands, pipelined, unless the store is down; a failure marks it down for `DOWN_MS`.
    fn run(&self, commands: &[&[&[u8]]]) -> Result<Vec<Reply>, Unavailable> {
        if let Some(left) = self.down_for() {
            return Err(Unavailable(format!("down after a failure; asked again in {} ms", left.as_millis())));
        }
        let started = Instant::now();
        let result = self.client.call(commands);
        let us = started.elapsed().as_micros() as u64;
        self.calls.fetch_add(1, Relaxed);
        self.us.fetch_add(us, Relaxed);
        self.last_us.store(us, Relaxed);
        match result {
            Ok(replies) => {
                self.up.store(true, Relaxed);
                let mut last = self.last_error.lock().unwrap_or_else(|p| p.into_inner());
                if let Some(e) = last.take() {
                    log::info!(
                        "the shared store {} answers again (it failed: {e})",
                        self.client.settings().url.redacted()
                    );
                }
                Ok(replies)
            }
            Err(e) => {
                self.failures.fetch_add(1, Relaxed);
                self.up.store(false, Relaxed);
                let refused = matches!(e, Error::Refused(_));
                *self.down_until.lock().unwrap_or_else(|p| p.into_inner()) =
                    Some(Instant::now() + Duration::from_millis(DOWN_MS));
                self.client.reset();
                let mut last = self.last_error.lock().unwrap_or_else(|p| p.into_inner());
                if last.is_none() || refused {
                    log::warn!(
                        "the shared store {} failed: {e}; paid calls are refused and the rest use this node's memory \
                         until it answers",
                        self.client.settings().url.redacted()
                    );
                }
                *last = Some(e.to_string());
                Err(Unavailable(e.to_string()))
            }
        }
    }
}

/// A token naming this process: random bytes from the system, else the process id and the time.
fn node_token() -> String {
    let bytes = crate::sign::keys::random_bytes::<8>().unwrap_or_else(|_| {
        let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_nanos());
        ((nanos as u64) ^ u64::from(std::process::id())).to_le_bytes()
    });
    crate::codec::hex_encode(&bytes)
}

/// `value`'s `Debug` form, its first `chars_max` characters and `…` when there were more: the formatting stops
/// there (a bulk reply of 256 KiB is not formatted whole to show 200 characters of it).
fn debug_cut(value: &impl std::fmt::Debug, chars_max: usize) -> String {
    /// Keeps characters while it may, then refuses the rest, which ends the formatting.
    struct Cut {
        text: String,
        left: usize,
        cut: bool,
    }
    impl std::fmt::Write for Cut {
        fn write_str(&mut self, s: &str) -> std::fmt::Result {
            for c in s.chars() {
                if self.left == 0 {
                    self.cut = true;
                    return Err(std::fmt::Error);
                }
                self.text.push(c);
                self.left -= 1;
            }
            Ok(())
        }
    }
    let mut out = Cut { text: String::new(), left: chars_max, cut: false };
    let _ = write!(out, "{value:?}");
    if out.cut {
        out.text.push('…');
    }
    out.text
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{Read, Write};

    /// An unexpected reply is shown by its first characters and formatted no further (a 256 KiB bulk reply was
    /// formatted whole, about 1.3 MB of text, to keep 200 characters of it).
    #[test]
    fn a_reply_is_shown_cut_and_formatted_no_further() {
        struct Counted(std::cell::Cell<usize>);
        impl std::fmt::Debug for Counted {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                for _ in 0..1_000_000 {
                    self.0.set(self.0.get() + 1);
                    f.write_str("x")?;
                }
                Ok(())
            }
        }
        let counted = Counted(std::cell::Cell::new(0));
        assert_eq!(debug_cut(&counted, 200), format!("{}…", "x".repeat(200)));
        assert_eq!(counted.0.get(), 201, "the formatting stopped at the cut");
        let bulk = Reply::Bulk(vec![7; 262_144]);
        let whole = format!("{bulk:?}");
        let (end, _) = whole.char_indices().nth(200).unwrap();
        assert_eq!(debug_cut(&bulk, 200), format!("{}…", &whole[..end]), "as the whole text cut");
        assert_eq!(debug_cut(&Reply::Int(5), 200), "Int(5)");
    }

    /// A server that answers the commands it reads, in order, with `replies` (one each), on one connection.
    fn answering(replies: Vec<&'static [u8]>) -> Store {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        std::thread::spawn(move || {
            let (mut conn, _) = listener.accept().unwrap();
            let (mut parser, mut buf) = (resp::Parser::new(), [0u8; 4_096]);
            let mut replies = replies.into_iter();
            while let Ok(n @ 1..) = conn.read(&mut buf) {
                let mut input = &buf[..n];
                while !input.is_empty() {
                    let (used, command) = parser.feed(input).unwrap();
                    input = &input[used..];
                    if command.is_some() {
                        conn.write_all(replies.next().unwrap()).unwrap();
                    }
                }
            }
        });
        let url = Url::parse(&format!("redis://127.0.0.1:{port}")).unwrap();
        let timeout = Duration::from_secs(5);
        Store::new(Settings { url, timeout, connections_max: 1, ca_file: None, secret_file: None }, "t:").unwrap()
    }

    /// Issue 33, finding 8: `SET NX` answers `+OK` (taken) or a null (held); anything else is neither a hold nor
    /// a replay, but a store that cannot be trusted to guard: the payment gets 503, not 402 `payment_replayed`.
    #[test]
    fn only_ok_or_a_null_answers_the_replay_guard() {
        let wrong: [&[u8]; 6] = [b":1\r\n", b"$2\r\nOK\r\n", b"+QUEUED\r\n", b"*0\r\n", b"#t\r\n", b"-ERR no\r\n"];
        let mut replies: Vec<&[u8]> = vec![b"+OK\r\n", b"$-1\r\n", b"_\r\n"];
        replies.extend(wrong);
        let store = answering(replies);
        let reserve = || store.reserve(&[1; 20], &[2; 32], 60_000);
        assert!(matches!(reserve(), Ok(Some(_))), "+OK takes it");
        assert!(matches!(reserve(), Ok(None)), "a RESP2 null: held elsewhere");
        assert!(matches!(reserve(), Ok(None)), "a RESP3 null: held elsewhere");
        for reply in wrong {
            let e = reserve().map(|h| h.is_some()).unwrap_err();
            assert!(!e.0.is_empty(), "{}", String::from_utf8_lossy(reply));
        }
        assert_eq!(store.failures.load(Relaxed), wrong.len() as u64);
        assert!(store.health()["last_error"].as_str().unwrap().contains("ERR no"));
    }
}
