//! The notary: a paid operation that records a SHA-256 hash in an append-only chain of signed receipts.
//!
//! A receipt is `{v, type:"notary-receipt", issuer, kid, alg, hash_alg, hash, seq, ts, prev}`; it is signed with the
//! result key over its RFC 8785 canonical JSON (the signature is base64url, as in JWS), and `prev` is the SHA-256
//! (hex) of the previous receipt's canonical JSON (64 zeros for the first), so anyone holding receipts can check
//! each one offline and walk the chain for gaps and reordering.
//!
//! Durability: a receipt is appended to `notary.journal` in the state directory and fsynced before it is returned
//! (and before the payment for it is settled). On start the journal is read back, a torn last record is cut (it was
//! never returned to anyone), and the chain is checked link by link; the chain continues from the last complete
//! receipt. Appends are serialised, so `seq` is strictly increasing with no gaps. A damaged complete record stops the
//! start (it may have been returned); after an operator's `websearchd journal repair`, the repair marker counts the
//! receipts cut and their numbers are skipped, never issued again: the next receipt's `prev` names the last receipt
//! the journal still holds, and the gap shows to anyone walking the chain.
//!
//! Memory: the notary keeps the chain's head and its last receipt number, whatever the number of receipts; a receipt
//! asked for is found in the journal by bisection (`Journal::find`: about log2(receipts) + 1 reads of 4 KiB, 22 for
//! the 1.8 million receipts of a 1 GB journal), not through an index held in memory.

use std::io;
use std::path::Path;
use std::sync::{Arc, Mutex};

use ed25519_dalek::{Signature, Signer};
use serde_json::{json, Value};

use crate::clock::Clock;
use crate::codec::{base64url_decode, base64url_encode};
use crate::error::ApiError;
use crate::journal::Journal;
use crate::sign::{sha256_hex, Keyring, PublicKey};

/// `prev` of the first receipt.
pub const GENESIS: &str = "0000000000000000000000000000000000000000000000000000000000000000";

pub const RECEIPT_TYPE: &str = "notary-receipt";
pub const RECEIPT_VERSION: u64 = 1;

pub struct Notary {
    journal: Journal,
    chain: Mutex<Chain>,
    keys: Arc<Keyring>,
    issuer: String,
    clock: Arc<dyn Clock>,
}

struct Chain {
    /// The last receipt number: the last receipt's `seq`, or past it the numbers a repair cut (never issued again).
    last: u64,
    /// SHA-256 of the last receipt's canonical JSON.
    head: String,
    last_ts: Option<String>,
}

/// The chain's head, for `/core/state`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Head {
    pub receipts: u64,
    pub head: String,
    pub last_ts: Option<String>,
}

/// A notarisation request: `{"op":"notarize","hash":"<64 lowercase hex>"}`, nothing else.
pub fn parse_request(body: &[u8]) -> Result<String, ApiError> {
    let value: Value = serde_json::from_slice(body)
        .map_err(|e| ApiError::bad_request("invalid_json", format!("the body is not valid JSON: {e}")))?;
    let Some(map) = value.as_object() else {
        return Err(ApiError::bad_request("invalid_request", "the body must be a JSON object"));
    };
    if let Some(unknown) = map.keys().find(|k| !matches!(k.as_str(), "op" | "hash")) {
        return Err(ApiError::bad_request("unknown_field", format!("unknown field {unknown:?}; allowed: op, hash")));
    }
    match map.get("op") {
        None => return Err(ApiError::bad_request("op_missing", "op is required: \"notarize\"")),
        Some(Value::String(op)) if op == "notarize" => {}
        Some(Value::String(op)) => {
            return Err(ApiError::bad_request("op_unknown", format!("unknown op {op:?}; the only op is \"notarize\"")))
        }
        Some(_) => return Err(ApiError::bad_request("op_invalid", "op must be the string \"notarize\"")),
    }
    match map.get("hash") {
        None => Err(ApiError::bad_request("hash_missing", "hash is required: 64 lowercase hex characters (SHA-256)")),
        Some(Value::String(h)) if is_sha256_hex(h) => Ok(h.clone()),
        Some(Value::String(_)) => Err(ApiError::bad_request(
            "hash_invalid",
            "hash must be a SHA-256 digest as 64 lowercase hexadecimal characters",
        )),
        Some(_) => Err(ApiError::bad_request("hash_invalid", "hash must be a string of 64 lowercase hex characters")),
    }
}

fn is_sha256_hex(s: &str) -> bool {
    s.len() == 64 && s.bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
}

impl Notary {
    /// Opens the journal (cutting a torn tail) and checks the chain it holds.
    pub fn open(path: &Path, keys: Arc<Keyring>, issuer: String, clock: Arc<dyn Clock>) -> io::Result<Notary> {
        let (journal, opened) = Journal::open(path)?;
        if opened.torn_bytes > 0 {
            let cut = opened.torn_bytes;
            log::warn!("notary: the last receipt write was incomplete ({cut} bytes cut); it was never returned");
        }
        let linked = walk(&opened.records).map_err(|e| {
            io::Error::new(io::ErrorKind::InvalidData, format!("{}: the receipt chain is broken: {e}", path.display()))
        })?;
        if linked.cut > 0 {
            let cut = linked.cut;
            log::warn!("notary: {cut} receipt number(s) were cut by a journal repair; they are never issued again");
        }
        let chain = Chain { last: linked.last, head: linked.head, last_ts: linked.last_ts };
        Ok(Notary { journal, chain: Mutex::new(chain), keys, issuer, clock })
    }

    /// Records `hash` as the next receipt; returns the signed record once it is on disk.
    pub fn notarize(&self, hash: &str) -> io::Result<Value> {
        let mut chain = self.chain.lock().unwrap_or_else(|p| p.into_inner());
        let seq = chain.last + 1;
        let ts = crate::clock::rfc3339_ms(self.clock.now_unix_ms());
        let receipt = json!({
            "v": RECEIPT_VERSION,
            "type": RECEIPT_TYPE,
            "issuer": self.issuer,
            "kid": self.keys.result.kid,
            "alg": "Ed25519",
            "hash_alg": "sha256",
            "hash": hash,
            "seq": seq,
            "ts": ts,
            "prev": chain.head,
        });
        let canonical = crate::jcs::canonicalize(&receipt);
        let signature = self.keys.result.signing.sign(canonical.as_bytes());
        let digest = sha256_hex(canonical.as_bytes());
        let record = json!({
            "receipt": receipt,
            "signature": base64url_encode(&signature.to_bytes()),
            "receipt_sha256": digest,
        });
        self.journal.append(&record)?;
        chain.last = seq;
        chain.head = digest;
        chain.last_ts = Some(ts);
        Ok(record)
    }

    /// A stored receipt record by its `seq` (`None` past the last one, and for numbers a repair cut); an error when
    /// the journal cannot be read there (a line damaged on disk since the start), logged.
    pub fn get(&self, seq: u64) -> std::io::Result<Option<Value>> {
        let last = self.chain.lock().unwrap_or_else(|p| p.into_inner()).last;
        if seq == 0 || seq > last {
            return Ok(None);
        }
        self.journal
            .find(seq, |record| record.get("receipt")?.get("seq")?.as_u64())
            .inspect_err(|e| log::error!("notary: receipt {seq} cannot be read back: {e}"))
    }

    pub fn head(&self) -> Head {
        let chain = self.chain.lock().unwrap_or_else(|p| p.into_inner());
        Head { receipts: chain.last, head: chain.head.clone(), last_ts: chain.last_ts.clone() }
    }

    /// Prometheus text: the chain's length (its last receipt number; numbers a repair cut count too, as they are
    /// never issued again).
    pub fn metrics(&self) -> String {
        let mut out = String::new();
        let name = "websearchd_notary_receipts";
        crate::metrics::family(
            &mut out,
            name,
            "gauge",
            "Receipts the notary has numbered (its chain's last receipt number).",
        );
        out.push_str(&format!("{name} {}\n", self.head().receipts));
        let help = "Time receipts waited for the notary journal's disk syncs (one per receipt).";
        self.journal.sync_metric(&mut out, "websearchd_notary_sync_seconds", help);
        out
    }

    pub fn issuer(&self) -> &str {
        &self.issuer
    }
}

/// The chain a journal holds. Receipts must be numbered 1, 2, ... (a repair marker skips as many numbers as it cut)
/// and each `prev` must be the hash of the last receipt before it in the journal.
fn walk(records: &[Value]) -> Result<Linked, String> {
    let links = records.iter().enumerate().map(|(i, record)| {
        if let Some(cut) = crate::journal::repair_removed(record) {
            return Ok(Link::Cut(cut));
        }
        record.get("receipt").map(Link::Receipt).ok_or_else(|| format!("record {} is not a receipt record", i + 1))
    });
    link(links)
}

/// One entry of a chain: a receipt, or receipt numbers a repair cut.
enum Link<'a> {
    Receipt(&'a Value),
    Cut(u64),
}

/// What a linked chain comes to.
struct Linked {
    /// The last receipt number (numbers a repair cut included).
    last: u64,
    /// Receipt numbers repairs cut.
    cut: u64,
    /// SHA-256 of the last receipt's canonical JSON.
    head: String,
    last_ts: Option<String>,
}

/// Links a chain from the genesis: each receipt's `seq` is the next number (after any cut ones) and its `prev` the
/// hash of the receipt before it.
fn link<'a>(links: impl Iterator<Item = Result<Link<'a>, String>>) -> Result<Linked, String> {
    let mut chain = Linked { last: 0, cut: 0, head: GENESIS.to_owned(), last_ts: None };
    for (i, entry) in links.enumerate() {
        let r = match entry? {
            Link::Cut(cut) => {
                chain.last = chain.last.checked_add(cut).ok_or("a repair marker cut too many numbers")?;
                chain.cut += cut;
                continue;
            }
            Link::Receipt(r) => r,
        };
        let want = chain.last + 1;
        let seq = r.get("seq").and_then(Value::as_u64).ok_or_else(|| format!("record {} has no seq", i + 1))?;
        if seq != want {
            return Err(format!("record {} has seq {seq}, not {want}", i + 1));
        }
        let prev = r.get("prev").and_then(Value::as_str).unwrap_or("");
        if prev != chain.head {
            return Err(format!(
                "receipt {seq}: prev {prev} is not the hash of the receipt before it ({})",
                chain.head
            ));
        }
        chain.head = sha256_hex(crate::jcs::canonicalize(r).as_bytes());
        chain.last_ts = r.get("ts").and_then(Value::as_str).map(str::to_owned);
        chain.last = seq;
    }
    Ok(chain)
}

/// Whether `receipt` names `previous` (the receipt one before it) as its `prev`.
pub fn follows(previous: &Value, receipt: &Value) -> bool {
    receipt.get("prev").and_then(Value::as_str)
        == Some(sha256_hex(crate::jcs::canonicalize(previous).as_bytes()).as_str())
}

/// Checks that receipts form a chain from the start (seq 1, 2, ... and each `prev` the hash of the one before);
/// returns the head hash.
pub fn check_links(receipts: &[Value]) -> Result<String, String> {
    link(receipts.iter().map(|r| Ok(Link::Receipt(r)))).map(|chain| chain.head)
}

/// Checks one receipt record (`{receipt, signature}`) against the keys; returns its `seq`.
pub fn verify_record(record: &Value, keys: &[PublicKey]) -> Result<u64, String> {
    let receipt = record.get("receipt").ok_or("no receipt member")?;
    let signature = record.get("signature").and_then(Value::as_str).ok_or("no signature member")?;
    if receipt.get("type").and_then(Value::as_str) != Some(RECEIPT_TYPE) {
        return Err(format!("type is not {RECEIPT_TYPE}"));
    }
    for field in ["v", "issuer", "kid", "alg", "hash_alg", "hash", "seq", "ts", "prev"] {
        if receipt.get(field).is_none() {
            return Err(format!("the receipt lacks {field}"));
        }
    }
    if receipt.get("alg").and_then(Value::as_str) != Some("Ed25519") {
        return Err("alg is not Ed25519".into());
    }
    if !receipt.get("hash").and_then(Value::as_str).is_some_and(is_sha256_hex) {
        return Err("hash is not 64 lowercase hex characters".into());
    }
    let kid = receipt.get("kid").and_then(Value::as_str).unwrap_or("");
    let key = keys.iter().find(|k| k.kid == kid).ok_or_else(|| format!("no key {kid} in the key set"))?;
    if key.purpose != "result" {
        return Err(format!("key {kid} is a {} key, not a result key", key.purpose));
    }
    let sig: [u8; 64] = base64url_decode(signature)
        .and_then(|b| b.try_into().ok())
        .ok_or("the signature is not 64 bytes of base64url")?;
    let canonical = crate::jcs::canonicalize(receipt);
    key.key
        .verify_strict(canonical.as_bytes(), &Signature::from_bytes(&sig))
        .map_err(|_| "the signature does not verify".to_owned())?;
    if let Some(stated) = record.get("receipt_sha256").and_then(Value::as_str) {
        if stated != sha256_hex(canonical.as_bytes()) {
            return Err("receipt_sha256 is not the hash of the receipt".into());
        }
    }
    receipt.get("seq").and_then(Value::as_u64).ok_or_else(|| "seq is not a positive integer".into())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requests() {
        let h = "a".repeat(64);
        assert_eq!(parse_request(format!(r#"{{"op":"notarize","hash":"{h}"}}"#).as_bytes()).unwrap(), h);
        for (body, code) in [
            ("[]", "invalid_request"),
            ("{", "invalid_json"),
            (r#"{"hash":"x"}"#, "op_missing"),
            (r#"{"op":"stamp","hash":"x"}"#, "op_unknown"),
            (r#"{"op":1}"#, "op_invalid"),
            (r#"{"op":"notarize"}"#, "hash_missing"),
            (r#"{"op":"notarize","hash":"ABC"}"#, "hash_invalid"),
            (r#"{"op":"notarize","hash":7}"#, "hash_invalid"),
            (r#"{"op":"notarize","hash":"x","extra":1}"#, "unknown_field"),
        ] {
            assert_eq!(parse_request(body.as_bytes()).unwrap_err().code, code, "{body}");
        }
        let upper = "A".repeat(64);
        assert!(parse_request(format!(r#"{{"op":"notarize","hash":"{upper}"}}"#).as_bytes()).is_err());
    }
}
