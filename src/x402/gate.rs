//! The gate in front of a paid operation. In order: no payment header means a 402 challenge (or a free call, when a
//! trial or loopback rule allows it); a header is decoded and checked locally; the authorization is reserved against
//! replay; the facilitator verifies it; the ledger records it (`admit_call`); then `serve` does the work, and only if
//! the work produced an answer does it settle. Nothing is served unpaid, nothing is charged unserved.
//!
//! The gate knows nothing of the door a call came through: a `Call` says what it needs (the payment as carried,
//! the client, the request id), and a `Refusal` says why a call is not let through; `admit` is the HTTP door's
//! spelling of `admit_call` and `refusal_response` its answer to a refusal (headers in, responses out), MCP has its
//! own (`mcp::http`).

use std::collections::{BTreeMap, HashMap};
use std::net::IpAddr;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use serde_json::{json, Value};

use super::facilitator::{Facilitator, Settled, Support, Verified};
use super::ledger::{Event, Ledger, Refused, Ticket};
use super::payment::{self, Payment};
use super::terms::{Resource, Terms};
use crate::clock::Clock;
use crate::codec::base64_encode;
use crate::error::ApiError;
use crate::http::client_addr::Client;
use crate::http::{Request, Response};

/// Why a call is let through without payment.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Free {
    /// No `WEBSEARCHD_PAY_TO`: the server runs without payments.
    PaymentsOff,
    Trial,
    Loopback,
    /// An API key the operator issued (the Tavily door's `Authorization: Bearer`).
    ApiKey,
}

pub enum Admission {
    Free(Free),
    Paid(Box<Pending>),
}

/// How a payment arrived.
#[derive(Debug, Clone, Copy)]
pub enum Carried<'a> {
    /// A header value and the x402 version its name implies (`PAYMENT-SIGNATURE`: 2, `X-PAYMENT`: 1).
    Header(&'a str, u8),
    /// A `PaymentPayload` as a JSON value (MCP's `_meta["x402/payment"]`), of the version it declares.
    Object(&'a Value),
}

/// What the gate needs to know of a call, whichever door it came through.
#[derive(Debug, Clone, Copy)]
pub struct Call<'a> {
    pub payment: Option<Carried<'a>>,
    pub client: Client,
    pub request_id: &'a str,
}

impl<'a> Call<'a> {
    /// An HTTP call: the payment in `PAYMENT-SIGNATURE` (v2) or else `X-PAYMENT` (v1).
    pub fn of_request(req: &'a Request) -> Call<'a> {
        let payment = match (req.header("payment-signature"), req.header("x-payment")) {
            (Some(h), _) => Some(Carried::Header(h, 2)),
            (None, Some(h)) => Some(Carried::Header(h, 1)),
            (None, None) => None,
        };
        Call { payment, client: req.client, request_id: &req.request_id }
    }
}

/// Why a call is not let through; each door says it its own way.
#[derive(Debug, Clone, PartialEq)]
pub enum Refusal {
    /// Payment required: the terms, and when a payment was refused, its stable code and the words for it (counted
    /// when the door renders it). `rejected_reason` is the facilitator's own reason, when it was the one to refuse;
    /// `settlement` the failed settlement's response (`success: false`), which the door sends as it sends a settled
    /// one (x402 v2: `PAYMENT-RESPONSE` on the 402, MCP's `_meta["x402/payment-response"]`).
    Challenge {
        terms: Terms,
        error: Option<(&'static str, String)>,
        rejected_reason: Option<String>,
        settlement: Option<Box<Settlement>>,
    },
    /// Not a matter of payment (the facilitator or the ledger is unavailable, the settlement's outcome is unknown).
    Error(ApiError),
}

/// A settled payment: the x402 version it came as, and the settlement response (`success`, `transaction`,
/// `network`, `payer`).
#[derive(Debug, Clone, PartialEq)]
pub struct Settlement {
    pub version: u8,
    pub response: Value,
}

impl Settlement {
    /// The header the HTTP door sends it in, by version, with its base64 value.
    pub fn header(&self) -> (&'static str, String) {
        let name = if self.version == 2 { "PAYMENT-RESPONSE" } else { "X-PAYMENT-RESPONSE" };
        (name, base64_encode(self.response.to_string().as_bytes()))
    }
}

/// Why an admitted call has no answer to send (`Gate::serve`).
#[derive(Debug)]
pub enum Unserved {
    /// The work failed: its error is the answer, and nothing was settled.
    Failed(ApiError),
    /// The settlement did not go through: the answer is withheld, the refusal sent instead.
    Withheld(Box<Refusal>),
}

/// A verified payment waiting for the work's outcome.
pub struct Pending {
    payment: Payment,
    ticket: Ticket,
    requirements: Value,
    request_id: String,
}

impl Pending {
    pub fn payer(&self) -> String {
        super::eip712::checksum_address(&self.payment.authorization.from)
    }
}

/// Free calls allowed per client IP per UTC day.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FreeRules {
    pub trial_calls_per_day: u32,
    pub loopback: bool,
}

/// `Retry-After` when the facilitator could not be asked, and when the ledger could not be written.
const FACILITATOR_RETRY_AFTER_S: u32 = 5;
const LEDGER_RETRY_AFTER_S: u32 = 30;
/// `Retry-After` when the replay guard is full (`ledger::HELD_MAX`): its authorizations expire one by one, and the
/// guard is swept once a second while full.
const GUARD_FULL_RETRY_AFTER_S: u32 = 5;

/// How long after a `/supported` that got no answer it is asked again, at the next payment.
const SUPPORT_RECHECK_MS: u64 = 60_000;

/// Clients tracked for trials in one day; past it, no more trials that day (memory stays bounded).
const TRIAL_CLIENTS_MAX: usize = 100_000;

/// A `/supported` answer and when it came (Unix ms).
type Checked = (Support, u64);

pub struct Gate {
    terms: Option<Terms>,
    facilitator: Facilitator,
    ledger: Option<Ledger>,
    clock: Arc<dyn Clock>,
    free: FreeRules,
    trial: Mutex<(u64, HashMap<IpAddr, u32>)>,
    stats: Stats,
    /// The facilitator's last `/supported` answer for the terms' network and when it came (Unix ms); `None` before
    /// the first. Never locked across the call.
    support: Mutex<Option<Checked>>,
    /// The `/supported` answer `/health` last reported, and its JSON.
    health_memo: Mutex<Option<(Option<Checked>, Vec<u8>)>>,
    /// The fleet's trial counters, when nodes share a store (its replay guard is the ledger's).
    store: Option<Arc<crate::store::Store>>,
}

#[derive(Default)]
struct Stats {
    challenges: AtomicU64,
    verified: AtomicU64,
    settled: AtomicU64,
    free: AtomicU64,
    refused: Mutex<BTreeMap<&'static str, u64>>,
    facilitator_calls: AtomicU64,
    facilitator_us: AtomicU64,
    /// Calls that got no verdict (unreachable, timeout, a 5xx, an unreadable answer).
    facilitator_failures: AtomicU64,
    facilitator_last_ms: AtomicU64,
    /// When a payment refused by a full replay guard was last logged (Unix seconds; see `FULL_LOG_EVERY_S`).
    full_logged_s: AtomicU64,
}

/// A full replay guard refuses payments until some expire: it is logged at most this often (the refusals are
/// counted one by one in `websearchd_payments_refused_total{reason="guard_full"}`).
const FULL_LOG_EVERY_S: u64 = 60;

impl Gate {
    pub fn new(
        terms: Option<Terms>,
        facilitator: Facilitator,
        ledger: Option<Ledger>,
        clock: Arc<dyn Clock>,
        free: FreeRules,
    ) -> Gate {
        Gate {
            terms,
            facilitator,
            ledger,
            clock,
            free,
            trial: Mutex::new((0, HashMap::new())),
            stats: Stats::default(),
            support: Mutex::new(None),
            health_memo: Mutex::new(None),
            store: None,
        }
    }

    /// Shares the replay guard and the trial counters with the other nodes through `store`.
    pub fn share(&mut self, store: Arc<crate::store::Store>) {
        if let Some(ledger) = &mut self.ledger {
            ledger.share(store.clone());
        }
        self.store = Some(store);
    }

    /// 503: the shared replay guard cannot be asked, so no payment is admitted (nor taken).
    fn store_unavailable(&self, why: &str) -> ApiError {
        self.refuse("store_unavailable");
        log::warn!("a payment was refused: {why}");
        ApiError::unavailable(
            "store_unavailable",
            "the replay guard this service shares between its nodes cannot be reached; no payment was taken, retry \
             shortly",
            crate::store::RETRY_AFTER_S,
        )
    }

    /// The gate the configuration describes: with `WEBSEARCHD_PAY_TO`, the terms, the facilitator (its auth header
    /// read from its file) and the ledger in the state directory; without it, payments off.
    pub fn from_config(config: &crate::config::Config, clock: Arc<dyn Clock>) -> Result<Gate, String> {
        let facilitator = Facilitator::from_config(config)?;
        let free = FreeRules { trial_calls_per_day: config.trial_calls_per_day, loopback: config.free_loopback };
        let Some(pay_to) = config.pay_to else {
            return Ok(Gate::new(None, facilitator, None, clock, free));
        };
        let terms =
            Terms { network: config.network, pay_to, price: config.price_atomic, max_timeout_s: config.max_timeout_s };
        let path = config.ledger_path();
        let ledger = Ledger::open(&path, clock.now_unix_ms())
            .map_err(|e| format!("the payment ledger {}: {e}", path.display()))?;
        Ok(Gate::new(Some(terms), facilitator, Some(ledger), clock, free))
    }

    /// Asks the facilitator's `/supported` whether it serves the terms' network (at start, and again at a payment
    /// while it has not answered); `None` with payments off.
    pub fn check_facilitator(&self) -> Option<Support> {
        let network = self.terms.as_ref()?.network;
        let support = self.facilitator.support(network);
        *self.support.lock().unwrap_or_else(|p| p.into_inner()) = Some((support.clone(), self.clock.now_unix_ms()));
        Some(support)
    }

    /// The facilitator's `/supported` answer as `/health` reports it, as JSON (payments on only; `false` and nothing
    /// written with payments off). Rendered again only when the answer it reports changed: the reactor answers
    /// `/health`, often.
    pub fn write_facilitator_health(&self, out: &mut Vec<u8>) -> bool {
        let Some(terms) = self.terms.as_ref() else { return false };
        let last = self.support.lock().unwrap_or_else(|p| p.into_inner()).clone();
        let mut memo = self.health_memo.lock().unwrap_or_else(|p| p.into_inner());
        if memo.as_ref().is_none_or(|(of, _)| *of != last) {
            let json = serde_json::to_vec(&self.facilitator_health(terms, last.clone())).unwrap_or_default();
            *memo = Some((last, json));
        }
        if let Some((_, json)) = memo.as_ref() {
            out.extend_from_slice(json);
        }
        true
    }

    fn facilitator_health(&self, terms: &Terms, last: Option<Checked>) -> Value {
        let (supports, detail) = match last.as_ref().map(|(s, _)| s) {
            None => (Value::Null, "not asked yet".to_owned()),
            Some(s) => {
                let said = s.describe(self.facilitator.url(), terms.network);
                match s {
                    Support::Yes => (true.into(), said),
                    Support::No(_) => (false.into(), said),
                    Support::Unknown(_) => (Value::Null, format!("{said}; asked again at the next payment")),
                    Support::NotOffered => (Value::Null, said),
                }
            }
        };
        json!({
            "url": self.facilitator.url(),
            "network": terms.network.caip2(),
            "supports_network": supports,
            "checked_at": last.map(|(_, at)| crate::clock::rfc3339(at)),
            "detail": detail,
        })
    }

    /// Before a payment is verified: a facilitator known not to serve the network is not asked (503
    /// `facilitator_unsupported`); one that has not answered `/supported` is asked again, at most once a minute.
    fn facilitator_ready(&self, terms: &Terms) -> Result<(), ApiError> {
        let now = self.clock.now_unix_ms();
        let (known, ask) = {
            let mut last = self.support.lock().unwrap_or_else(|p| p.into_inner());
            match last.as_mut() {
                // This payment asks; the time is taken now, under the lock, so that the payments arriving while it
                // waits go on as before instead of asking too.
                Some((Support::Unknown(_), at)) if now.saturating_sub(*at) >= SUPPORT_RECHECK_MS => {
                    *at = now;
                    (None, true)
                }
                other => (other.map(|(s, _)| s.clone()), false),
            }
        };
        let support = if ask {
            let again = self.check_facilitator();
            if let Some(no @ Support::No(_)) = &again {
                log::error!("{}", no.describe(self.facilitator.url(), terms.network));
            }
            again
        } else {
            known
        };
        if !matches!(support, Some(Support::No(_))) {
            return Ok(());
        }
        self.refuse("facilitator_unsupported");
        Err(ApiError::unavailable(
            "facilitator_unsupported",
            "the payment facilitator of this service does not serve the network in its terms; no payment was \
             taken (the operator must fix the configuration)",
            SUPPORT_RECHECK_MS as u32 / 1_000,
        ))
    }

    pub fn terms(&self) -> Option<&Terms> {
        self.terms.as_ref()
    }

    /// The terms of one operation: the service's, at the operation's own price if it has one.
    pub fn terms_for(&self, resource: &Resource) -> Option<Terms> {
        let terms = self.terms.as_ref()?;
        Some(Terms { price: resource.price.unwrap_or(terms.price), ..terms.clone() })
    }

    pub fn free_rules(&self) -> FreeRules {
        self.free
    }

    fn now_s(&self) -> u64 {
        self.clock.now_unix_ms() / 1_000
    }

    fn refuse(&self, code: &'static str) {
        *self.stats.refused.lock().unwrap_or_else(|p| p.into_inner()).entry(code).or_default() += 1;
    }

    /// The 402 answer, counted (a challenge, or a refusal by its code); `render_challenge` makes it.
    pub fn challenge(&self, terms: &Terms, resource: &Resource, error: Option<(&'static str, String)>) -> Response {
        self.count_challenge(error.as_ref().map(|(code, _)| *code));
        self.render_challenge(terms, resource, error)
    }

    /// The 402 answer: the challenge, base64, in `PAYMENT-REQUIRED` (the canonical place in x402 v2, where clients
    /// read it and whence they copy the bazaar extension into their payment), and as the body without the bazaar
    /// extension (sending it twice buys nothing) and with what is said for people besides (the refusal in words, the
    /// free-call rules), which the header leaves out to stay small. Nothing is counted.
    pub fn render_challenge(&self, terms: &Terms, resource: &Resource, error: Option<(&str, String)>) -> Response {
        let challenge = terms.challenge(resource, error.as_ref().map(|(c, _)| *c));
        let header = base64_encode(challenge.to_string().as_bytes());
        let mut body = challenge;
        if let Some(map) = body.as_object_mut() {
            map.remove("extensions");
            if let Some((_, message)) = &error {
                map.insert("message".into(), message.clone().into());
            }
            if self.free.trial_calls_per_day > 0 {
                map.insert(
                    "trial".into(),
                    json!({ "calls_per_day": self.free.trial_calls_per_day, "per": "client address (IPv6: /64)", "resets": "00:00 UTC" }),
                );
            }
            if self.free.loopback {
                map.insert("free_from_loopback".into(), true.into());
            }
        }
        Response::json(402, &body).header("PAYMENT-REQUIRED", header)
    }

    /// A challenge is sent: a refusal by its code, or a plain challenge (one answered from its rendering made once
    /// included).
    pub fn count_challenge(&self, code: Option<&'static str>) {
        match code {
            Some(code) => self.refuse(code),
            None => {
                self.stats.challenges.fetch_add(1, Relaxed);
            }
        }
    }

    /// The `PaymentRequired` object of a refusal for a door that sends it as a value (MCP), counted as `challenge`
    /// counts the 402s: the challenge, and the words for a refused payment in `message`.
    pub fn payment_required(
        &self,
        terms: &Terms,
        resource: &Resource,
        error: Option<&(&'static str, String)>,
    ) -> Value {
        let mut required = terms.challenge(resource, error.map(|(c, _)| *c));
        if let (Some((_, message)), Some(map)) = (error, required.as_object_mut()) {
            map.insert("message".into(), message.clone().into());
        }
        self.count_challenge(error.map(|(c, _)| *c));
        required
    }

    /// The HTTP answer to a refusal: the 402 (with the facilitator's reason in `X-Payment-Rejected-Reason` when it
    /// refused, and a failed settlement's response in the header a settled one goes in), or the error.
    pub fn refusal_response(&self, refusal: Refusal, resource: &Resource) -> Response {
        match refusal {
            Refusal::Challenge { terms, error, rejected_reason, settlement } => {
                let mut response = self.challenge(&terms, resource, error);
                if let Some(reason) = rejected_reason {
                    response = response.header("X-Payment-Rejected-Reason", reason);
                }
                if let Some(settlement) = settlement {
                    let (name, value) = settlement.header();
                    response = response.header(name, value);
                }
                response
            }
            Refusal::Error(e) => e.into_response(),
        }
    }

    /// Decides whether the request may proceed; `Err` is the answer to send instead.
    pub fn admit(&self, req: &Request, resource: &Resource) -> Result<Admission, Response> {
        self.admit_call(&Call::of_request(req), resource).map_err(|r| self.refusal_response(r, resource))
    }

    /// Decides whether a call may proceed, whichever door it came through.
    pub fn admit_call(&self, call: &Call<'_>, resource: &Resource) -> Result<Admission, Refusal> {
        let Some(terms) = self.terms_for(resource) else {
            return Ok(Admission::Free(Free::PaymentsOff));
        };
        let challenge = |error: Option<(&'static str, String)>| Refusal::Challenge {
            terms: terms.clone(),
            error,
            rejected_reason: None,
            settlement: None,
        };
        let Some(carried) = call.payment else {
            if let Some(free) = self.free_call(&call.client) {
                self.stats.free.fetch_add(1, Relaxed);
                return Ok(Admission::Free(free));
            }
            return Err(challenge(None));
        };
        let now = self.now_s();
        let payment = match carried {
            Carried::Header(header, version) => payment::decode(header, version),
            Carried::Object(object) => payment::from_object(object),
        };
        let payment = payment
            .and_then(|p| payment::check(&p, &terms, now).map(|()| p))
            .map_err(|e| challenge(Some((e.code(), e.to_string()))))?;
        let version = payment.version;
        let Some(ledger) = &self.ledger else {
            return Err(Refusal::Error(ApiError::internal()));
        };
        self.facilitator_ready(&terms).map_err(Refusal::Error)?;
        let a = &payment.authorization;
        let ticket = ledger.reserve(a.from, a.nonce, a.valid_before, now).map_err(|refused| match refused {
            Refused::Replayed => {
                let why = "this authorization (from, nonce) is already in flight or spent".to_owned();
                challenge(Some(("payment_replayed", why)))
            }
            Refused::Unshared(why) => Refusal::Error(self.store_unavailable(&why)),
            Refused::Full => {
                self.refuse("guard_full");
                let last = self.stats.full_logged_s.load(Relaxed);
                if now >= last.saturating_add(FULL_LOG_EVERY_S)
                    && self.stats.full_logged_s.compare_exchange(last, now, Relaxed, Relaxed).is_ok()
                {
                    log::warn!(
                        "payments are refused: the replay guard holds {} authorizations (logged at most once a minute)",
                        super::ledger::HELD_MAX
                    );
                }
                Refusal::Error(ApiError::unavailable(
                    "guard_full",
                    "this node holds as many payment authorizations as it can until some expire; no payment was \
                     taken, retry shortly",
                    GUARD_FULL_RETRY_AFTER_S,
                ))
            }
        })?;
        let requirements = if version == 2 { terms.requirement_v2() } else { terms.requirement_v1(resource) };
        let started = Instant::now();
        let verdict = self.facilitator.verify(version, &payment.raw, &requirements);
        self.timed(started);
        match verdict {
            Err(why) => {
                ledger.forget(ticket);
                self.stats.facilitator_failures.fetch_add(1, Relaxed);
                self.refuse("facilitator_unavailable");
                log::warn!("facilitator /verify failed: {why}");
                Err(Refusal::Error(ApiError::unavailable(
                    "facilitator_unavailable",
                    "the payment facilitator cannot be reached; no payment was taken, retry shortly",
                    FACILITATOR_RETRY_AFTER_S,
                )))
            }
            Ok(Verified::Invalid { reason, message }) => {
                ledger.forget(ticket);
                let text = if message.is_empty() { reason.clone() } else { format!("{reason}: {message}") };
                Err(Refusal::Challenge {
                    terms,
                    error: Some(("payment_rejected", text)),
                    rejected_reason: Some(reason),
                    settlement: None,
                })
            }
            Ok(Verified::Valid { .. }) => {
                let extra = json!({
                    "at": self.clock.now_unix_ms(),
                    "request_id": call.request_id,
                    "resource": resource.url,
                    "network": terms.network.caip2(),
                    "x402_version": version,
                });
                if let Err(e) = ledger.record(&ticket, Event::Verified, a.value, extra) {
                    ledger.forget(ticket);
                    log::error!("the payment ledger cannot be written: {e}");
                    return Err(Refusal::Error(ApiError::unavailable(
                        "ledger_unavailable",
                        "the payment ledger cannot be written; no payment was taken",
                        LEDGER_RETRY_AFTER_S,
                    )));
                }
                self.stats.verified.fetch_add(1, Relaxed);
                Ok(Admission::Paid(Box::new(Pending {
                    payment,
                    ticket,
                    requirements,
                    request_id: call.request_id.to_owned(),
                })))
            }
        }
    }

    fn timed(&self, started: Instant) {
        self.stats.facilitator_last_ms.store(self.clock.now_unix_ms(), Relaxed);
        self.stats.facilitator_calls.fetch_add(1, Relaxed);
        self.stats.facilitator_us.fetch_add(started.elapsed().as_micros() as u64, Relaxed);
    }

    fn free_call(&self, client: &Client) -> Option<Free> {
        if self.free.loopback && client.local {
            return Some(Free::Loopback);
        }
        // One bucket per IPv4 address or IPv6 /64: a subscriber holds a whole /64, and would otherwise get a new
        // trial with every address in it.
        let ip = crate::http::client_addr::key(client.ip);
        if self.free.trial_calls_per_day == 0 {
            return None;
        }
        let day = self.now_s() / 86_400;
        let mut trial = self.trial.lock().unwrap_or_else(|p| p.into_inner());
        if trial.0 != day {
            *trial = (day, HashMap::new());
        }
        if trial.1.len() >= TRIAL_CLIENTS_MAX && !trial.1.contains_key(&ip) {
            return None;
        }
        let used = trial.1.entry(ip).or_default();
        let local = *used < self.free.trial_calls_per_day;
        *used = used.saturating_add(u32::from(local));
        drop(trial);
        // The fleet's count decides while it can be asked (this node's own is never above it); else this node's.
        let shared =
            self.store.as_ref().and_then(|s| s.trial(&ip.to_string(), day, self.free.trial_calls_per_day).ok());
        shared.unwrap_or(local).then_some(Free::Trial)
    }

    /// Does an admitted call's work and, when it is paid, settles for the answer, whichever door it came through:
    /// work that fails settles nothing (the payment is abandoned, the authorization free again), and an answer whose
    /// settlement fails is withheld. The answer, with the settlement when it was paid for.
    pub fn serve<T>(
        &self,
        admission: Admission,
        resource: &Resource,
        work: impl FnOnce() -> Result<T, ApiError>,
    ) -> Result<(T, Option<Settlement>), Unserved> {
        let answer = work();
        let Admission::Paid(pending) = admission else {
            return answer.map(|a| (a, None)).map_err(Unserved::Failed);
        };
        match answer {
            Ok(answer) => {
                self.settle(pending, resource).map(|s| (answer, Some(s))).map_err(|r| Unserved::Withheld(Box::new(r)))
            }
            Err(e) => {
                self.abandon(pending, e.code);
                Err(Unserved::Failed(e))
            }
        }
    }

    /// Settles after the work produced an answer; `Err`: the result is withheld.
    fn settle(&self, p: Box<Pending>, resource: &Resource) -> Result<Settlement, Refusal> {
        let Some((terms, ledger)) = self.terms_for(resource).zip(self.ledger.as_ref()) else {
            return Err(Refusal::Error(ApiError::internal()));
        };
        let value = p.payment.authorization.value;
        // On disk before the facilitator is asked: after a crash, the start knows this settlement may have happened.
        let extra = json!({ "at": self.clock.now_unix_ms(), "request_id": p.request_id });
        if let Err(e) = ledger.record(&p.ticket, Event::Settling, value, extra) {
            log::error!("the payment ledger cannot be written; request {} is not settled: {e}", p.request_id);
            let extra =
                json!({ "at": self.clock.now_unix_ms(), "request_id": p.request_id, "reason": "ledger_unavailable" });
            // The facilitator was never asked: the authorization is free again (in memory at least, if this fails too).
            if let Err(e) = ledger.record(&p.ticket, Event::Released, value, extra) {
                log::error!("a released payment could not be recorded: {e}");
            }
            self.refuse("ledger_unavailable");
            return Err(Refusal::Error(ApiError::unavailable(
                "ledger_unavailable",
                "the payment ledger cannot be written; the payment was not settled and nothing was charged (the \
                 result is withheld); the same payment can be retried",
                LEDGER_RETRY_AFTER_S,
            )));
        }
        let started = Instant::now();
        let outcome = self.facilitator.settle(p.payment.version, &p.payment.raw, &p.requirements);
        self.timed(started);
        let at = self.clock.now_unix_ms();
        match outcome {
            Settled::Settled { transaction, network, payer } => {
                let extra = json!({ "at": at, "request_id": p.request_id, "tx": transaction });
                if let Err(e) = ledger.record(&p.ticket, Event::Settled, value, extra) {
                    // The transfer happened: the client is owed its answer even if the record could not be kept.
                    log::error!("settled payment {transaction} could not be recorded: {e}");
                }
                self.stats.settled.fetch_add(1, Relaxed);
                let response = json!({
                    "success": true,
                    "transaction": transaction,
                    "network": if network.is_empty() { terms.network.caip2().to_owned() } else { network },
                    "payer": payer.unwrap_or_else(|| p.payer()),
                });
                Ok(Settlement { version: p.payment.version, response })
            }
            Settled::Failed { reason, message } => {
                let extra = json!({ "at": at, "request_id": p.request_id, "reason": reason });
                if let Err(e) = ledger.record(&p.ticket, Event::Failed, value, extra) {
                    log::error!("a failed settlement could not be recorded: {e}");
                }
                let response = json!({
                    "success": false,
                    "errorReason": reason,
                    "transaction": "",
                    "network": terms.network.caip2(),
                    "payer": p.payer(),
                });
                let text = if message.is_empty() { reason } else { format!("{reason}: {message}") };
                Err(Refusal::Challenge {
                    terms,
                    error: Some(("settlement_failed", text)),
                    rejected_reason: None,
                    settlement: Some(Box::new(Settlement { version: p.payment.version, response })),
                })
            }
            Settled::Unknown(why) => {
                self.stats.facilitator_failures.fetch_add(1, Relaxed);
                let extra = json!({ "at": at, "request_id": p.request_id, "reason": why });
                if let Err(e) = ledger.record(&p.ticket, Event::Unknown, value, extra) {
                    log::error!("an unknown settlement could not be recorded: {e}");
                }
                self.refuse("settlement_unknown");
                log::warn!("settlement outcome unknown for request {}: {why}", p.request_id);
                Err(Refusal::Error(ApiError::new(
                    502,
                    "settlement_unknown",
                    "the payment facilitator did not say whether the payment settled; the result is withheld and \
                     this authorization will not be settled again",
                )))
            }
        }
    }

    /// The work failed after verification: nothing is settled and the authorization is free again (in memory even
    /// if the record cannot be written).
    fn abandon(&self, p: Box<Pending>, why: &str) {
        if let Some(ledger) = &self.ledger {
            let extra = json!({ "at": self.clock.now_unix_ms(), "request_id": p.request_id, "reason": why });
            if let Err(e) = ledger.record(&p.ticket, Event::Released, p.payment.authorization.value, extra) {
                log::error!("a released payment could not be recorded: {e}");
            }
        }
    }

    /// Payment counters and the ledger summary, for `/core/state`.
    pub fn state(&self) -> Value {
        let refused: serde_json::Map<String, Value> = self
            .stats
            .refused
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .iter()
            .map(|(k, v)| ((*k).to_owned(), Value::from(*v)))
            .collect();
        let ledger = self.ledger.as_ref().map(|l| {
            let s = l.summary();
            json!({
                "verified": s.verified,
                "settling": s.settling,
                "settled": s.settled,
                "failed": s.failed,
                "unknown": s.unknown,
                "released": s.released,
                "settled_atomic": s.settled_value.to_string(),
            })
        });
        json!({
            "challenges": self.stats.challenges.load(Relaxed),
            "verified": self.stats.verified.load(Relaxed),
            "settled": self.stats.settled.load(Relaxed),
            "free_calls": self.stats.free.load(Relaxed),
            "refused": refused,
            "facilitator": {
                "url": self.facilitator.url(),
                "calls": self.stats.facilitator_calls.load(Relaxed),
                "failures": self.stats.facilitator_failures.load(Relaxed),
                "last_call_ms": self.stats.facilitator_last_ms.load(Relaxed),
            },
            "ledger": ledger,
        })
    }

    /// Prometheus text.
    pub fn metrics(&self) -> String {
        use std::fmt::Write as _;
        let mut out = String::new();
        let counters = [
            (
                "websearchd_payment_challenges_total",
                "402 challenges sent for requests without payment.",
                &self.stats.challenges,
            ),
            ("websearchd_payments_verified_total", "Payments verified by the facilitator.", &self.stats.verified),
            ("websearchd_payments_settled_total", "Payments settled.", &self.stats.settled),
            ("websearchd_free_calls_total", "Calls let through by a trial or loopback rule.", &self.stats.free),
        ];
        for (name, help, v) in counters {
            crate::metrics::family(&mut out, name, "counter", help);
            let _ = writeln!(out, "{name} {}", v.load(Relaxed));
        }
        let name = "websearchd_payments_refused_total";
        crate::metrics::family(&mut out, name, "counter", "Payments refused, by reason code.");
        for (code, n) in self.stats.refused.lock().unwrap_or_else(|p| p.into_inner()).iter() {
            let _ = writeln!(out, "{name}{{reason=\"{code}\"}} {n}");
        }
        let name = "websearchd_facilitator_seconds";
        crate::metrics::family(&mut out, name, "summary", "Time spent in facilitator calls.");
        let _ = writeln!(out, "{name}_sum {}", self.stats.facilitator_us.load(Relaxed) as f64 / 1e6);
        let _ = writeln!(out, "{name}_count {}", self.stats.facilitator_calls.load(Relaxed));
        if let Some(ledger) = &self.ledger {
            let s = ledger.summary();
            let name = "websearchd_ledger_records";
            crate::metrics::family(&mut out, name, "gauge", "Payment ledger records, by event.");
            for (event, n) in [
                ("verified", s.verified),
                ("settling", s.settling),
                ("settled", s.settled),
                ("failed", s.failed),
                ("unknown", s.unknown),
                ("released", s.released),
            ] {
                let _ = writeln!(out, "{name}{{event=\"{event}\"}} {n}");
            }
            ledger.sync_metric(&mut out);
            let name = "websearchd_replay_guard_held";
            let help = "Payment authorizations the replay guard holds; at its most, new payments are refused.";
            crate::metrics::family(&mut out, name, "gauge", help);
            let _ = writeln!(out, "{name} {}", ledger.held());
            let name = "websearchd_replay_guard_capacity";
            crate::metrics::family(&mut out, name, "gauge", "Payment authorizations the replay guard holds at most.");
            let _ = writeln!(out, "{name} {}", super::ledger::HELD_MAX);
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use std::io::{Read, Write};
    use std::net::TcpListener;
    use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering::SeqCst};
    use std::time::Duration;

    use super::*;
    use crate::clock::FixedClock;
    use crate::x402::Network;

    /// A loopback facilitator whose `/supported` answers (Base listed) only once `go` is set; it counts the
    /// connections it was asked on.
    fn held_facilitator(go: Arc<AtomicBool>, asked: Arc<AtomicUsize>) -> String {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
        let addr = listener.local_addr().expect("addr");
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(mut stream) = stream else { return };
                asked.fetch_add(1, SeqCst);
                let go = go.clone();
                std::thread::spawn(move || {
                    let mut head = [0u8; 4_096];
                    let _ = stream.read(&mut head);
                    while !go.load(SeqCst) {
                        std::thread::sleep(Duration::from_millis(5));
                    }
                    let body = r#"{"kinds":[{"x402Version":2,"scheme":"exact","network":"eip155:8453"}]}"#;
                    let _ = write!(
                        stream,
                        "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: \
                         close\r\n\r\n{body}",
                        body.len()
                    );
                });
            }
        });
        format!("http://{addr}")
    }

    /// Payments arriving together once `/supported` is due again ask it once between them, not once each.
    #[test]
    fn the_supported_recheck_is_asked_once_by_concurrent_payments() {
        const PAYMENTS: usize = 6;
        let (go, asked) = (Arc::new(AtomicBool::new(false)), Arc::new(AtomicUsize::new(0)));
        let url = held_facilitator(go.clone(), asked.clone());
        let terms = Terms { network: Network::Base, pay_to: [7; 20], price: 1, max_timeout_s: 60 };
        let facilitator = Facilitator::new(&url, None, Duration::from_secs(20));
        let clock = Arc::new(FixedClock(SUPPORT_RECHECK_MS));
        let gate = Arc::new(Gate::new(
            Some(terms.clone()),
            facilitator,
            None,
            clock,
            FreeRules { trial_calls_per_day: 0, loopback: false },
        ));
        // Not answered at start (at instant 0); a minute later, it is due.
        *gate.support.lock().expect("lock") = Some((Support::Unknown("down".into()), 0));
        let done = Arc::new(AtomicUsize::new(0));
        let payments: Vec<_> = (0..PAYMENTS)
            .map(|_| {
                let (gate, terms, done) = (gate.clone(), terms.clone(), done.clone());
                std::thread::spawn(move || {
                    let ready = gate.facilitator_ready(&terms).is_ok();
                    done.fetch_add(1, SeqCst);
                    ready
                })
            })
            .collect();
        // Every payment has either gone on or is waiting on the facilitator.
        let deadline = std::time::Instant::now() + Duration::from_secs(20);
        while done.load(SeqCst) + asked.load(SeqCst) < PAYMENTS {
            assert!(std::time::Instant::now() < deadline, "payments neither done nor asking");
            std::thread::sleep(Duration::from_millis(5));
        }
        go.store(true, SeqCst);
        for p in payments {
            assert!(p.join().expect("no panic"), "a facilitator not known to refuse lets payments through");
        }
        assert_eq!(asked.load(SeqCst), 1, "/supported asked once");
        assert!(matches!(gate.support.lock().expect("lock").as_ref(), Some((Support::Yes, _))));
    }

    /// `/health`'s facilitator member is rendered once per answer it reports: the same bytes while the answer holds,
    /// the new answer as soon as it changes; nothing with payments off.
    #[test]
    fn the_facilitators_health_follows_its_answer() {
        let terms = Terms { network: Network::Base, pay_to: [7; 20], price: 1, max_timeout_s: 60 };
        let gate = |terms| {
            let facilitator = Facilitator::new("http://127.0.0.1:9", None, Duration::from_secs(1));
            let free = FreeRules { trial_calls_per_day: 0, loopback: false };
            Gate::new(terms, facilitator, None, Arc::new(FixedClock(0)), free)
        };
        let health = |gate: &Gate| {
            let mut out = Vec::new();
            gate.write_facilitator_health(&mut out).then(|| serde_json::from_slice::<Value>(&out).expect("JSON"))
        };
        assert_eq!(health(&gate(None)), None);
        let gate = gate(Some(terms));
        let before = health(&gate).expect("payments on");
        assert_eq!(before["detail"], "not asked yet");
        assert_eq!(health(&gate).as_ref(), Some(&before));
        *gate.support.lock().expect("lock") = Some((Support::Yes, 0));
        let after = health(&gate).expect("payments on");
        assert_eq!(after["supports_network"], true, "{after}");
        *gate.support.lock().expect("lock") = Some((Support::Unknown("refused".into()), 60_000));
        let again = health(&gate).expect("payments on");
        assert_eq!(again["supports_network"], Value::Null, "{again}");
        assert!(again["detail"].as_str().is_some_and(|d| d.contains("refused")), "{again}");
    }
}
