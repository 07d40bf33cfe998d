//! The payment ledger and the replay guard. Every verified payment and its outcome is appended to a journal in the
//! state directory; the guard refuses an authorization (`from`, `nonce`) that is in flight, settled, or of unknown
//! outcome, until its `validBefore` passes, across restarts (it is rebuilt from the journal on start).
//!
//! A payment's records: `verified`, then `settling`, then `settled`, `failed` or `unknown`; or `released` after
//! `verified` when the work failed. A `settling` with nothing after it on start means the server stopped while the
//! facilitator was asked: the facilitator has no endpoint that tells a settlement's outcome (x402 facilitators offer
//! `/verify`, `/settle` and `/supported`; asking `/settle` again would charge for an answer never delivered), so
//! `open` records it as `unknown`, held until its `validBefore`; the chain itself can tell (USDC's
//! `authorizationState(payer, nonce)`).
//!
//! Durability. Every record is written (write(2)) before `record` returns, so it outlives the process (kill -9, a
//! panic): the page cache keeps it. Only a `settling` is on disk (fsync) when `record` returns, that is before the
//! facilitator is asked to settle. `verified`, `released` and the outcomes reach the disk with the next sync: the next
//! `settling`'s (any payment's: an fsync covers the whole file), the ledger's own (every `SYNC_EVERY` while records
//! are not on disk), or the one when the ledger is dropped (at shutdown). A power loss can therefore lose only
//! records written after the last sync, and a start handles each loss conservatively: a lost outcome leaves its
//! `settling` last, which becomes `unknown`, held until `validBefore` (never settled twice, never freed early); a
//! lost `released` leaves `verified` last, held until `validBefore`; a lost `verified` means no sync completed after
//! it, so its payment's `settling` was not on disk and the facilitator had not been asked to settle: no money moved.
//! A start syncs what it read before acting on it.
//!
//! Order. Sequence numbers are taken and records written under one lock (`order`), so the journal holds them in
//! `seq` order; the guard's lock (`state`) is never held across a write or a sync, and no lock is held during a sync:
//! concurrent `settling`s share one (the journal's group commit).

use std::collections::HashMap;
use std::io;
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{json, Value};

use super::eip712::{checksum_address, Address};
use crate::codec::hex_encode;
use crate::journal::Journal;
use crate::store::{Hold, Store};

/// What happened to a payment. Only `Failed` and `Released` free the authorization for another try.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Event {
    Verified,
    /// The facilitator is about to be asked to settle.
    Settling,
    Settled,
    Failed,
    Unknown,
    Released,
}

impl Event {
    pub fn name(self) -> &'static str {
        match self {
            Event::Verified => "verified",
            Event::Settling => "settling",
            Event::Settled => "settled",
            Event::Failed => "failed",
            Event::Unknown => "unknown",
            Event::Released => "released",
        }
    }

    fn from_name(s: &str) -> Option<Event> {
        [Event::Verified, Event::Settling, Event::Settled, Event::Failed, Event::Unknown, Event::Released]
            .into_iter()
            .find(|e| e.name() == s)
    }

    fn holds(self) -> bool {
        matches!(self, Event::Verified | Event::Settling | Event::Settled | Event::Unknown)
    }
}

type Key = (Address, [u8; 32]);

#[derive(Debug, Clone, Copy)]
struct Held {
    valid_before: u64,
    /// None while only reserved in memory (before verification).
    event: Option<Event>,
}

/// Counts by outcome, for `/metrics` and the core state.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Summary {
    pub verified: u64,
    pub settling: u64,
    pub settled: u64,
    pub failed: u64,
    pub unknown: u64,
    pub released: u64,
    /// Atomic units settled.
    pub settled_value: u128,
}

pub struct Ledger {
    journal: Arc<Journal>,
    /// The last sequence number taken; held while a record is numbered and written, so that the file is in order.
    order: Mutex<u64>,
    state: Mutex<State>,
    /// The fleet's replay guard, when nodes share one (`WEBSEARCHD_REDIS_URL`): taken after this node's own.
    store: Option<Arc<Store>>,
}

#[derive(Default)]
struct State {
    held: HashMap<Key, Held>,
    /// Entries held past which expired ones are swept: `SWEEP_AT`, or twice what a sweep left, so that a guard of
    /// many live entries is not scanned at every reservation.
    sweep_at: usize,
    /// When the last sweep ran (Unix seconds): a guard at `HELD_MAX` is swept at most once a second.
    swept_s: u64,
    summary: Summary,
}

/// A reservation of one authorization, taken before verification.
#[derive(Debug)]
pub struct Ticket {
    key: Key,
    valid_before: u64,
    /// The fleet's hold on it, with a shared store.
    shared: Option<Hold>,
}

/// Why an authorization cannot be reserved.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refused {
    /// It is already in use, here or (with a shared store) on another node.
    Replayed,
    /// The shared store could not be asked: no payment is admitted without the fleet's guard.
    Unshared(String),
    /// The guard holds `HELD_MAX` authorizations, none expired: no other is admitted until some expire (it is never
    /// made room for by forgetting one that could still be replayed).
    Full,
}

/// Entries held past this many trigger a sweep of expired ones (and past twice what the last sweep left).
const SWEEP_AT: usize = 4_096;
/// Authorizations the replay guard holds at most; past it reservations are refused (`Refused::Full`). Each is held
/// until its `validBefore`, at most `payment::VALIDITY_MAX_S` ahead, in a table slot of 73 bytes (the key, 52 bytes,
/// its `Held`, 16, padding and a control byte). The table grows only when its free slots are used up (by entries or
/// by the marks removed ones leave) while it is more than half full of entries, so at this many (half of 7/8 of
/// 2^16) it never passes 65,536 slots, 4.8 MB; with payments coming and going, twice as many grew it to 131,072
/// slots, 9.6 MB. A node admitting 100 payments a second whose clients sign for `maxTimeoutSeconds` (60 s by
/// default) holds about 6,000.
pub const HELD_MAX: usize = 28_672;
/// The fleet's hold on an authorization outlives its `validBefore` by this much (by the clock of the node that took
/// it): a node whose clock is behind still finds it while it would admit the payment (a skew up to this plus
/// `VALIDITY_MARGIN_S`), and so does one after Redis's own clock jumps ahead (its expiry is by wall time).
const SHARED_HOLD_MARGIN_S: u64 = 120;

/// How often the ledger's own sync looks for records not yet on disk (when no `settling` synced them).
pub const SYNC_EVERY: Duration = Duration::from_secs(1);

impl Ledger {
    /// Opens the ledger and rebuilds the guard; a settlement left unresolved by a stop is recorded as `unknown`.
    pub fn open(path: &Path, now_ms: u64) -> io::Result<Ledger> {
        let (journal, opened) = Journal::open(path)?;
        let mut state = State::default();
        for r in &opened.records {
            state.apply(r);
        }
        // The history holds every authorization ever settled: only those still valid need guarding (an expired one
        // is refused as expired), and the table is sized for them, not for months of payments.
        let now_s = now_ms / 1_000;
        state.held.retain(|_, h| h.valid_before > now_s);
        state.held.shrink_to_fit();
        let journal = Arc::new(journal);
        spawn_syncer(Arc::downgrade(&journal));
        let order = Mutex::new(last_seq(&opened.records));
        let ledger = Ledger { journal, order, state: Mutex::new(state), store: None };
        ledger.reconcile(&opened.records, now_ms);
        Ok(ledger)
    }

    /// Records `unknown` for every payment whose last record is `settling`: the server stopped while the facilitator
    /// was asked, and no facilitator endpoint can say what became of it.
    fn reconcile(&self, records: &[Value], now_ms: u64) {
        let unresolved: Vec<(Key, u64, u128, Option<&str>)> = standing(records)
            .into_iter()
            .filter(|r| r.get("event").and_then(Value::as_str) == Some(Event::Settling.name()))
            .filter_map(|r| {
                let (valid_before, value) = (valid_before_of(r), value_of(r));
                Some((key_of(r)?, valid_before, value, r.get("request_id").and_then(Value::as_str)))
            })
            .collect();
        if unresolved.is_empty() {
            return;
        }
        let mut unwritten = 0;
        for (key, valid_before, value, request_id) in &unresolved {
            let t = Ticket { key: *key, valid_before: *valid_before, shared: None };
            let extra = json!({
                "at": now_ms,
                "request_id": request_id,
                "reason": "the server stopped while the facilitator was asked to settle; the facilitator cannot be \
                           asked for the outcome",
            });
            if let Err(e) = self.record(&t, Event::Unknown, *value, extra) {
                unwritten += 1;
                log::error!("the payment ledger cannot be written during reconciliation: {e}");
            }
        }
        let ids: Vec<String> =
            unresolved.iter().take(10).map(|(k, _, _, id)| format!("{} {}", short(k), id.unwrap_or("?"))).collect();
        log::warn!(
            "payment ledger: {} settlement(s) were in progress when the server stopped; their outcome is unknown (no \
             facilitator endpoint tells it): recorded as unknown{}, authorizations held until validBefore; check \
             them on chain (`websearchd payments` lists them): {}{}",
            unresolved.len(),
            if unwritten > 0 {
                format!(" ({unwritten} could not be written and will be again on the next start)")
            } else {
                String::new()
            },
            ids.join(", "),
            if unresolved.len() > ids.len() { ", ..." } else { "" }
        );
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Shares the replay guard through `store`: a reservation holds there too, until `validBefore`.
    pub fn share(&mut self, store: Arc<Store>) {
        self.store = Some(store);
    }

    /// Reserves an authorization; refused if it is held and not yet expired at `now_s`, here or, with a shared
    /// store, on any node (asked after this node's guard, never under its lock).
    pub fn reserve(&self, from: Address, nonce: [u8; 32], valid_before: u64, now_s: u64) -> Result<Ticket, Refused> {
        let key = (from, nonce);
        {
            let mut s = self.lock();
            s.sweep(now_s);
            let held = Held { valid_before, event: None };
            // A key already held is updated in place: `insert` reserves room for one more entry even when the key
            // is there, which at `HELD_MAX` with no free slot left would double the table.
            if let Some(h) = s.held.get_mut(&key) {
                if h.valid_before > now_s {
                    return Err(Refused::Replayed);
                }
                *h = held;
            } else if s.held.len() >= HELD_MAX {
                return Err(Refused::Full);
            } else {
                s.held.insert(key, held);
            }
        }
        let mut ticket = Ticket { key, valid_before, shared: None };
        if let Some(store) = &self.store {
            let ttl_ms = valid_before.saturating_sub(now_s).saturating_add(SHARED_HOLD_MARGIN_S).saturating_mul(1_000);
            match store.reserve(&from, &nonce, ttl_ms) {
                Ok(Some(hold)) => ticket.shared = Some(hold),
                Ok(None) => {
                    self.forget(ticket);
                    return Err(Refused::Replayed);
                }
                Err(e) => {
                    self.forget(ticket);
                    return Err(Refused::Unshared(e.to_string()));
                }
            }
        }
        Ok(ticket)
    }

    /// Appends an event for a reserved authorization and updates the guard; a `settling` is on disk when this
    /// returns `Ok`, the others are written and synced later (see the module's doc). If the write fails, the guard
    /// still follows an event that frees the authorization (`failed`, `released`: the facilitator refused it or was
    /// never asked), so that a client can retry once the disk is back; a holding event keeps it held. A written
    /// `settling` whose sync fails is in the file (and counted) but `Err` is returned: the facilitator must not be
    /// asked.
    pub fn record(&self, t: &Ticket, event: Event, value: u128, extra: Value) -> io::Result<()> {
        let mut order = self.order.lock().unwrap_or_else(|p| p.into_inner());
        *order += 1;
        let mut rec = json!({
            "seq": *order,
            "event": event.name(),
            "payer": checksum_address(&t.key.0),
            "nonce": format!("0x{}", hex_encode(&t.key.1)),
            "value": value.to_string(),
            "valid_before": t.valid_before,
        });
        if let (Some(map), Value::Object(more)) = (rec.as_object_mut(), extra) {
            map.extend(more);
        }
        let written = self.journal.write(&rec);
        drop(order);
        let mut s = self.lock();
        match &written {
            Err(_) if !event.holds() => {
                s.held.remove(&t.key);
            }
            Err(_) => {}
            Ok(_) => s.apply(&rec),
        }
        drop(s);
        if !event.holds() {
            self.release_shared(t);
        }
        let (_, end) = written?;
        if event == Event::Settling {
            self.journal.sync_through(end)?;
        }
        Ok(())
    }

    /// Drops a reservation that was never recorded (the payment was refused before verification).
    pub fn forget(&self, t: Ticket) {
        let mut s = self.lock();
        if s.held.get(&t.key).is_some_and(|h| h.event.is_none()) {
            s.held.remove(&t.key);
        }
        drop(s);
        self.release_shared(&t);
    }

    /// Frees the fleet's hold of an authorization this node freed.
    fn release_shared(&self, t: &Ticket) {
        if let (Some(store), Some(hold)) = (&self.store, &t.shared) {
            store.release(hold);
        }
    }

    pub fn summary(&self) -> Summary {
        self.lock().summary
    }

    /// Authorizations the replay guard holds (expired ones not yet swept among them): at most `HELD_MAX`.
    pub fn held(&self) -> usize {
        self.lock().held.len()
    }

    /// `websearchd_ledger_sync_seconds`: the time payment records waited for the ledger's disk syncs.
    pub fn sync_metric(&self, out: &mut String) {
        let help = "Time payment records waited for the payment ledger's disk syncs.";
        self.journal.sync_metric(out, "websearchd_ledger_sync_seconds", help);
    }
}

impl Drop for Ledger {
    fn drop(&mut self) {
        if let Err(e) = self.journal.flush() {
            log::error!("the payment ledger's last records cannot be synced: {e}");
        }
    }
}

/// Syncs the ledger's records every `SYNC_EVERY` while some are not on disk, as long as the journal lives.
fn spawn_syncer(journal: std::sync::Weak<Journal>) {
    let spawned = std::thread::Builder::new().name("ledger-sync".into()).spawn(move || loop {
        std::thread::sleep(SYNC_EVERY);
        let Some(journal) = journal.upgrade() else {
            return;
        };
        if journal.behind() {
            if let Err(e) = journal.flush() {
                log::error!("the payment ledger cannot be synced: {e}");
            }
        }
    });
    if let Err(e) = spawned {
        log::warn!("no periodic sync of the payment ledger (its records reach the disk with the next settlement): {e}");
    }
}

/// The last sequence number the records used (numbers a repair cut count as used).
fn last_seq(records: &[Value]) -> u64 {
    records.iter().fold(0, |seq, r| match crate::journal::repair_removed(r) {
        // Records cut by a repair had numbers up to this many past the last one kept.
        Some(cut) => seq + cut,
        None => seq.max(r.get("seq").and_then(Value::as_u64).unwrap_or(0)),
    })
}

/// A payment named in a log line: its payer and the start of its nonce.
fn short(key: &Key) -> String {
    let nonce = hex_encode(&key.1);
    format!("{}/0x{}", checksum_address(&key.0), nonce.get(..8).unwrap_or(&nonce))
}

/// The last record of each payment (`payer`, `nonce`), in ledger order: where each one stands, for
/// `websearchd payments`. A payment whose last record is `settling` is being settled, or the server stopped during
/// its settlement and has not started since (a start records it as `unknown`).
pub fn standing(records: &[Value]) -> Vec<&Value> {
    let mut last: HashMap<(&str, &str), usize> = HashMap::new();
    for (i, r) in records.iter().enumerate() {
        let key = (r.get("payer").and_then(Value::as_str), r.get("nonce").and_then(Value::as_str));
        if let (Some(payer), Some(nonce)) = key {
            last.insert((payer, nonce), i);
        }
    }
    let mut at: Vec<usize> = last.into_values().collect();
    at.sort_unstable();
    at.into_iter().filter_map(|i| records.get(i)).collect()
}

impl State {
    /// Drops expired entries once the guard has grown past its sweep point, or, at `HELD_MAX`, once a second.
    fn sweep(&mut self, now_s: u64) {
        let due = self.held.len() >= self.sweep_at.max(SWEEP_AT);
        let full = self.held.len() >= HELD_MAX && now_s != self.swept_s;
        if !due && !full {
            return;
        }
        self.held.retain(|_, h| h.valid_before > now_s);
        self.sweep_at = self.held.len().saturating_mul(2);
        self.swept_s = now_s;
    }

    fn apply(&mut self, r: &Value) {
        let Some(event) = r.get("event").and_then(Value::as_str).and_then(Event::from_name) else {
            return;
        };
        let (valid_before, value) = (valid_before_of(r), value_of(r));
        match event {
            Event::Verified => self.summary.verified += 1,
            Event::Settling => self.summary.settling += 1,
            Event::Settled => {
                self.summary.settled += 1;
                self.summary.settled_value += value;
            }
            Event::Failed => self.summary.failed += 1,
            Event::Unknown => self.summary.unknown += 1,
            Event::Released => self.summary.released += 1,
        }
        let Some(key) = key_of(r) else {
            return;
        };
        if event.holds() {
            // In place when held (see `reserve`): a key reserved, then recorded, is inserted once.
            let held = Held { valid_before, event: Some(event) };
            match self.held.get_mut(&key) {
                Some(h) => *h = held,
                None => {
                    self.held.insert(key, held);
                }
            }
        } else {
            self.held.remove(&key);
        }
    }
}

/// The authorization (payer, nonce) a record is about.
fn key_of(r: &Value) -> Option<Key> {
    let payer = r.get("payer").and_then(Value::as_str).and_then(super::eip712::parse_address)?;
    let nonce = r
        .get("nonce")
        .and_then(Value::as_str)
        .and_then(|n| n.strip_prefix("0x"))
        .and_then(crate::codec::hex_decode)
        .and_then(|b| <[u8; 32]>::try_from(b).ok())?;
    Some((payer, nonce))
}

fn valid_before_of(r: &Value) -> u64 {
    r.get("valid_before").and_then(Value::as_u64).unwrap_or(0)
}

/// A record's value in atomic units (a decimal string).
fn value_of(r: &Value) -> u128 {
    r.get("value").and_then(Value::as_str).and_then(|v| v.parse().ok()).unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn temp(name: &str) -> std::path::PathBuf {
        let dir = std::env::temp_dir().join(format!("websearchd-ledger-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        dir.join("payments.journal")
    }

    #[test]
    fn the_guard_holds_across_a_restart_until_valid_before() {
        let path = temp("restart");
        let ledger = Ledger::open(&path, 0).unwrap();
        let t = ledger.reserve([1; 20], [2; 32], 1_000, 100).unwrap();
        assert_eq!(ledger.reserve([1; 20], [2; 32], 1_000, 100).unwrap_err(), Refused::Replayed, "in flight");
        ledger.record(&t, Event::Verified, 5_000, json!({"request_id": "r1"})).unwrap();
        drop(ledger);

        let ledger = Ledger::open(&path, 0).unwrap();
        assert_eq!(ledger.reserve([1; 20], [2; 32], 1_000, 100).unwrap_err(), Refused::Replayed, "after a restart");
        assert!(ledger.reserve([1; 20], [2; 32], 1_000, 1_000).is_ok(), "expired authorizations are not held");
        assert_eq!(ledger.summary().verified, 1);
    }

    #[test]
    fn failures_and_releases_free_the_authorization() {
        let path = temp("free");
        let ledger = Ledger::open(&path, 0).unwrap();
        let t = ledger.reserve([1; 20], [3; 32], 1_000, 100).unwrap();
        ledger.record(&t, Event::Verified, 5_000, json!({})).unwrap();
        ledger.record(&t, Event::Released, 5_000, json!({"reason": "search failed"})).unwrap();
        let t = ledger.reserve([1; 20], [3; 32], 1_000, 100).unwrap();
        ledger.record(&t, Event::Verified, 5_000, json!({})).unwrap();
        ledger.record(&t, Event::Settled, 5_000, json!({"tx": "0xabc"})).unwrap();
        assert!(ledger.reserve([1; 20], [3; 32], 1_000, 100).is_err());
        let t = ledger.reserve([9; 20], [3; 32], 1_000, 100).unwrap();
        ledger.forget(t);
        assert!(ledger.reserve([9; 20], [3; 32], 1_000, 100).is_ok(), "a forgotten reservation is free");
        let s = ledger.summary();
        assert_eq!((s.verified, s.settled, s.released, s.settled_value), (2, 1, 1, 5_000));
    }

    /// A restart guards only the authorizations still valid: the history's settled ones are expired and would hold
    /// their table's memory until the next restart (months of payments).
    #[test]
    fn a_restart_holds_no_expired_authorization() {
        let path = temp("expired");
        let ledger = Ledger::open(&path, 0).unwrap();
        for i in 0..2_000u32 {
            let mut nonce = [0; 32];
            nonce[..4].copy_from_slice(&i.to_be_bytes());
            let t = ledger.reserve([6; 20], nonce, if i == 0 { 9_000 } else { 1_000 }, 100).unwrap();
            ledger.record(&t, Event::Settled, 5, json!({})).unwrap();
        }
        drop(ledger);
        let ledger = Ledger::open(&path, 2_000_000).unwrap();
        let state = ledger.lock();
        assert_eq!(state.held.len(), 1, "only the one valid until 9,000 s");
        assert!(state.held.capacity() < 64, "the table is sized for it: {}", state.held.capacity());
        drop(state);
        assert_eq!(ledger.reserve([6; 20], [0; 32], 9_000, 2_000).unwrap_err(), Refused::Replayed);
        assert_eq!(ledger.summary().settled, 2_000, "the history is all counted");
    }

    /// Issue 18: only `settling` waits for the disk; the others are written and synced later. A power loss keeps
    /// what the last sync covered: cut there, the start turns the `settling` without an outcome into `unknown`, held.
    #[test]
    fn only_settling_is_synced_and_a_power_loss_after_it_becomes_unknown() {
        let path = temp("power-loss");
        let ledger = Ledger::open(&path, 0).unwrap();
        let t = ledger.reserve([4; 20], [5; 32], 1_000, 100).unwrap();
        ledger.record(&t, Event::Verified, 5_000, json!({"request_id": "r1"})).unwrap();
        ledger.record(&t, Event::Settling, 5_000, json!({"request_id": "r1"})).unwrap();
        ledger.record(&t, Event::Settled, 5_000, json!({"request_id": "r1", "tx": "0x1"})).unwrap();
        // One wait for the disk, the `settling`'s; the `settled` is in the file (read back by the next open).
        assert!(waits(&ledger).ends_with("_count 1\n"), "{}", waits(&ledger));
        let written = std::fs::read(&path).unwrap();
        let settling_end = written.iter().enumerate().filter(|(_, &b)| b == b'\n').nth(1).unwrap().0 + 1;
        assert!(ledger.journal.durable() >= settling_end as u64, "the `settling` is on disk");
        drop(ledger);

        // A power loss before the next sync: what follows the `settling` is gone.
        std::fs::write(&path, &written[..settling_end]).unwrap();
        let ledger = Ledger::open(&path, 0).unwrap();
        let events: Vec<String> =
            Journal::read(&path).unwrap().records.iter().map(|r| r["event"].as_str().unwrap().to_owned()).collect();
        assert_eq!(events, ["verified", "settling", "unknown"]);
        assert_eq!(ledger.reserve([4; 20], [5; 32], 1_000, 100).unwrap_err(), Refused::Replayed, "held");
        assert_eq!((ledger.summary().unknown, ledger.summary().settled), (1, 0));
    }

    /// A guard of many live entries is swept when it has doubled since the last sweep, not at every reservation;
    /// expired entries still go.
    #[test]
    fn the_guard_is_swept_when_it_has_doubled() {
        let mut s = State::default();
        let live = SWEEP_AT + 10;
        for i in 0..live {
            s.held.insert(([0; 20], key_nonce(i)), Held { valid_before: 1_000, event: None });
        }
        s.sweep(100);
        assert_eq!((s.held.len(), s.sweep_at), (live, 2 * live), "all live: kept, next sweep at twice as many");
        s.held.insert(([1; 20], [0; 32]), Held { valid_before: 1_000, event: None });
        s.sweep(2_000);
        assert_eq!(s.held.len(), live + 1, "not swept below the new sweep point, though all have expired");
        for i in 0..live {
            s.held.insert(([2; 20], key_nonce(i)), Held { valid_before: 3_000, event: None });
        }
        s.sweep(2_000);
        assert_eq!((s.held.len(), s.sweep_at), (live, 2 * live), "the expired went at the sweep point");
    }

    /// Issue 18: the guard holds at most `HELD_MAX` authorizations; past it a new one is refused (none held is
    /// dropped to make room), until a sweep finds expired ones (at most once a second while it is full).
    #[test]
    fn a_full_guard_refuses_until_authorizations_expire() {
        assert_eq!(std::mem::size_of::<(Key, Held)>(), 72, "the slot HELD_MAX's bytes are counted for");
        let ledger = Ledger::open(&temp("full"), 0).unwrap();
        for i in 0..HELD_MAX {
            let valid_before = if i % 2 == 0 { 1_000 } else { 2_000 };
            ledger.lock().held.insert(([3; 20], key_nonce(i)), Held { valid_before, event: Some(Event::Settled) });
        }
        assert_eq!(ledger.reserve([4; 20], [0; 32], 3_000, 500).unwrap_err(), Refused::Full);
        assert_eq!(ledger.reserve([3; 20], key_nonce(0), 3_000, 500).unwrap_err(), Refused::Replayed, "still held");
        assert_eq!(ledger.lock().held.len(), HELD_MAX);
        // At 1,000 the first half has expired: swept, so there is room again.
        assert!(ledger.reserve([4; 20], [0; 32], 3_000, 1_000).is_ok());
        assert_eq!(ledger.held(), HELD_MAX / 2 + 1);
    }

    fn key_nonce(i: usize) -> [u8; 32] {
        let mut nonce = [0; 32];
        nonce[..8].copy_from_slice(&(i as u64).to_be_bytes());
        nonce
    }

    fn waits(ledger: &Ledger) -> String {
        let mut out = String::new();
        ledger.sync_metric(&mut out);
        out
    }

    /// Concurrent payments: every record is in the journal, numbered in file order, each payment's in its order.
    #[test]
    fn concurrent_payments_are_recorded_in_seq_order() {
        let path = temp("concurrent");
        let ledger = Arc::new(Ledger::open(&path, 0).unwrap());
        let (threads, payments) = (4u8, 25u8);
        let workers: Vec<_> = (0..threads)
            .map(|i| {
                let ledger = ledger.clone();
                std::thread::spawn(move || {
                    for n in 0..payments {
                        let t = ledger.reserve([i; 20], [n; 32], 1_000, 100).unwrap();
                        for event in [Event::Verified, Event::Settling, Event::Settled] {
                            ledger.record(&t, event, 1, json!({})).unwrap();
                        }
                    }
                })
            })
            .collect();
        for w in workers {
            w.join().unwrap();
        }
        drop(ledger);
        let records = Journal::read(&path).unwrap().records;
        let total = u64::from(threads) * u64::from(payments) * 3;
        let seqs: Vec<u64> = records.iter().map(|r| r["seq"].as_u64().unwrap()).collect();
        assert_eq!(seqs, (1..=total).collect::<Vec<_>>());
        let mut last: HashMap<(String, String), String> = HashMap::new();
        for r in &records {
            let key = (r["payer"].as_str().unwrap().to_owned(), r["nonce"].as_str().unwrap().to_owned());
            let before = last.insert(key, r["event"].as_str().unwrap().to_owned());
            let expected = match r["event"].as_str().unwrap() {
                "verified" => None,
                "settling" => Some("verified"),
                _ => Some("settling"),
            };
            assert_eq!(before.as_deref(), expected, "{r}");
        }
        let ledger = Ledger::open(&path, 0).unwrap();
        assert_eq!(ledger.summary().settled, u64::from(threads) * u64::from(payments));
    }
}
