//! The payment ledger and the replay guard. Every verified payment and its outcome is appended to a journal in the
//! state directory (fsynced before the answer leaves); the guard refuses an authorization (`from`, `nonce`) that is
//! in flight, settled, or of unknown outcome, until its `validBefore` passes, across restarts (it is rebuilt from the
//! journal on start).

use std::collections::HashMap;
use std::io;
use std::path::Path;
use std::sync::Mutex;

use serde_json::{json, Value};

use super::eip712::{checksum_address, Address};
use crate::codec::hex_encode;
use crate::journal::Journal;

/// What happened to a payment. Only `Failed` and `Released` free the authorization for another try.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Event {
    Verified,
    Settled,
    Failed,
    Unknown,
    Released,
}

impl Event {
    pub fn name(self) -> &'static str {
        match self {
            Event::Verified => "verified",
            Event::Settled => "settled",
            Event::Failed => "failed",
            Event::Unknown => "unknown",
            Event::Released => "released",
        }
    }

    fn from_name(s: &str) -> Option<Event> {
        [Event::Verified, Event::Settled, Event::Failed, Event::Unknown, Event::Released]
            .into_iter()
            .find(|e| e.name() == s)
    }

    fn holds(self) -> bool {
        matches!(self, Event::Verified | Event::Settled | Event::Unknown)
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
    pub settled: u64,
    pub failed: u64,
    pub unknown: u64,
    pub released: u64,
    /// Atomic units settled.
    pub settled_value: u128,
}

pub struct Ledger {
    journal: Journal,
    state: Mutex<State>,
}

#[derive(Default)]
struct State {
    held: HashMap<Key, Held>,
    seq: u64,
    summary: Summary,
}

/// A reservation of one authorization, taken before verification.
#[derive(Debug)]
pub struct Ticket {
    key: Key,
    valid_before: u64,
}

/// The authorization is already in use.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Replayed;

/// Entries held past this many trigger a sweep of expired ones.
const SWEEP_AT: usize = 4_096;

impl Ledger {
    pub fn open(path: &Path) -> io::Result<Ledger> {
        let (journal, opened) = Journal::open(path)?;
        let mut state = State::default();
        for r in &opened.records {
            state.apply(r);
        }
        Ok(Ledger { journal, state: Mutex::new(state) })
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Reserves an authorization; refused if it is held and not yet expired at `now_s`.
    pub fn reserve(&self, from: Address, nonce: [u8; 32], valid_before: u64, now_s: u64) -> Result<Ticket, Replayed> {
        let mut s = self.lock();
        if s.held.len() >= SWEEP_AT {
            s.held.retain(|_, h| h.valid_before > now_s);
        }
        let key = (from, nonce);
        if s.held.get(&key).is_some_and(|h| h.valid_before > now_s) {
            return Err(Replayed);
        }
        s.held.insert(key, Held { valid_before, event: None });
        Ok(Ticket { key, valid_before })
    }

    /// Appends an event for a reserved authorization (fsynced) and updates the guard.
    pub fn record(&self, t: &Ticket, event: Event, value: u128, extra: Value) -> io::Result<()> {
        let mut s = self.lock();
        s.seq += 1;
        let mut rec = json!({
            "seq": s.seq,
            "event": event.name(),
            "payer": checksum_address(&t.key.0),
            "nonce": format!("0x{}", hex_encode(&t.key.1)),
            "value": value.to_string(),
            "valid_before": t.valid_before,
        });
        if let (Some(map), Value::Object(more)) = (rec.as_object_mut(), extra) {
            map.extend(more);
        }
        self.journal.append(&rec)?;
        s.apply(&rec);
        Ok(())
    }

    /// Drops a reservation that was never recorded (the payment was refused before verification).
    pub fn forget(&self, t: Ticket) {
        let mut s = self.lock();
        if s.held.get(&t.key).is_some_and(|h| h.event.is_none()) {
            s.held.remove(&t.key);
        }
    }

    pub fn summary(&self) -> Summary {
        self.lock().summary
    }
}

impl State {
    fn apply(&mut self, r: &Value) {
        let Some(event) = r.get("event").and_then(Value::as_str).and_then(Event::from_name) else {
            return;
        };
        let payer = r.get("payer").and_then(Value::as_str).and_then(super::eip712::parse_address);
        let nonce = r
            .get("nonce")
            .and_then(Value::as_str)
            .and_then(|n| n.strip_prefix("0x"))
            .and_then(crate::codec::hex_decode)
            .and_then(|b| <[u8; 32]>::try_from(b).ok());
        let valid_before = r.get("valid_before").and_then(Value::as_u64).unwrap_or(0);
        let value: u128 = r.get("value").and_then(Value::as_str).and_then(|v| v.parse().ok()).unwrap_or(0);
        self.seq = self.seq.max(r.get("seq").and_then(Value::as_u64).unwrap_or(0));
        match event {
            Event::Verified => self.summary.verified += 1,
            Event::Settled => {
                self.summary.settled += 1;
                self.summary.settled_value += value;
            }
            Event::Failed => self.summary.failed += 1,
            Event::Unknown => self.summary.unknown += 1,
            Event::Released => self.summary.released += 1,
        }
        let (Some(payer), Some(nonce)) = (payer, nonce) else {
            return;
        };
        if event.holds() {
            self.held.insert((payer, nonce), Held { valid_before, event: Some(event) });
        } else {
            self.held.remove(&(payer, nonce));
        }
    }
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
        let ledger = Ledger::open(&path).unwrap();
        let t = ledger.reserve([1; 20], [2; 32], 1_000, 100).unwrap();
        assert_eq!(ledger.reserve([1; 20], [2; 32], 1_000, 100).unwrap_err(), Replayed, "in flight");
        ledger.record(&t, Event::Verified, 5_000, json!({"request_id": "r1"})).unwrap();
        drop(ledger);

        let ledger = Ledger::open(&path).unwrap();
        assert_eq!(ledger.reserve([1; 20], [2; 32], 1_000, 100).unwrap_err(), Replayed, "after a restart");
        assert!(ledger.reserve([1; 20], [2; 32], 1_000, 1_000).is_ok(), "expired authorizations are not held");
        assert_eq!(ledger.summary().verified, 1);
    }

    #[test]
    fn failures_and_releases_free_the_authorization() {
        let path = temp("free");
        let ledger = Ledger::open(&path).unwrap();
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
}
