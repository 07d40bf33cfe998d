//! Test-side x402: a paying client (headers signed with the public Anvil test key #0, never a real wallet) and a
//! loopback facilitator that checks signatures with its own EIP-712 code (not the product's) and can be told to
//! fail in each way a real one does.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)]

use std::sync::{Arc, Mutex};
use std::time::Duration;

use k256::ecdsa::{RecoveryId, Signature, SigningKey, VerifyingKey};
use serde_json::{json, Value};
use sha3::{Digest, Keccak256};

use super::upstream::{Answer, Upstream};

pub const TEST_KEY: &str = "ac0974bec39a17e36ba4a6b4d238ff944bacb478cbed5efcae784d7bf4f2ff80";
pub const PAY_TO: &str = "0x209693Bc6afc0C5328bA36FaF03C514EF312287C";

/// The variables of a paid server asking one DuckDuckGo-html source at `source_url` (no pacing, no cache) and the
/// facilitator at `facilitator_url`.
pub fn paid_env(source_url: String, facilitator_url: String) -> Vec<(String, String)> {
    [
        ("WEBSEARCHD_SOURCES", "ddg_html".to_owned()),
        ("WEBSEARCHD_DDG_HTML_URL", source_url),
        ("WEBSEARCHD_SOURCE_INTERVAL_MS", "0".into()),
        ("WEBSEARCHD_CACHE_TTL_S", "0".into()),
        ("WEBSEARCHD_PAY_TO", PAY_TO.into()),
        ("WEBSEARCHD_PUBLIC_URL", "https://search.example".into()),
        ("WEBSEARCHD_FACILITATOR_URL", facilitator_url),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_owned(), v))
    .collect()
}
pub const USDC_BASE: &str = "0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913";

fn keccak(data: &[u8]) -> [u8; 32] {
    Keccak256::digest(data).into()
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

fn unhex(s: &str) -> Vec<u8> {
    let s = s.trim_start_matches("0x");
    (0..s.len()).step_by(2).map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap()).collect()
}

fn word_from_u128(v: u128) -> [u8; 32] {
    let mut w = [0u8; 32];
    w[16..].copy_from_slice(&v.to_be_bytes());
    w
}

fn word_from_address(a: &str) -> [u8; 32] {
    let mut w = [0u8; 32];
    w[12..].copy_from_slice(&unhex(a));
    w
}

/// The EIP-712 digest of a TransferWithAuthorization, written independently of the product.
pub fn digest(domain_name: &str, chain_id: u64, contract: &str, auth: &Value) -> [u8; 32] {
    let domain_type = keccak(b"EIP712Domain(string name,string version,uint256 chainId,address verifyingContract)");
    let mut d = Vec::new();
    d.extend_from_slice(&domain_type);
    d.extend_from_slice(&keccak(domain_name.as_bytes()));
    d.extend_from_slice(&keccak(b"2"));
    d.extend_from_slice(&word_from_u128(u128::from(chain_id)));
    d.extend_from_slice(&word_from_address(contract));
    let separator = keccak(&d);
    let ty = keccak(
        b"TransferWithAuthorization(address from,address to,uint256 value,uint256 validAfter,uint256 validBefore,bytes32 nonce)",
    );
    let num = |k: &str| -> u128 { auth[k].as_str().unwrap().parse().unwrap() };
    let mut s = Vec::new();
    s.extend_from_slice(&ty);
    s.extend_from_slice(&word_from_address(auth["from"].as_str().unwrap()));
    s.extend_from_slice(&word_from_address(auth["to"].as_str().unwrap()));
    s.extend_from_slice(&word_from_u128(num("value")));
    s.extend_from_slice(&word_from_u128(num("validAfter")));
    s.extend_from_slice(&word_from_u128(num("validBefore")));
    s.extend_from_slice(&unhex(auth["nonce"].as_str().unwrap()));
    let mut m = vec![0x19, 0x01];
    m.extend_from_slice(&separator);
    m.extend_from_slice(&keccak(&s));
    keccak(&m)
}

pub fn address_of(key: &VerifyingKey) -> String {
    let p = key.to_sec1_point(false);
    format!("0x{}", hex(&keccak(&p.as_bytes()[1..])[12..]))
}

pub fn now_s() -> u64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_secs()
}

/// A payment as a client makes it.
#[derive(Clone)]
pub struct Payer {
    pub key: SigningKey,
    pub to: String,
    pub value: u128,
    pub valid_before: u64,
    pub nonce: [u8; 32],
}

impl Payer {
    /// A payer whose nonce is its own for (`client`, `n`) in this process and differs from every earlier run's (a
    /// per-process salt), so that a reused ledger or a shared store never sees a nonce twice (the benches' clients).
    #[allow(dead_code)]
    pub fn numbered(client: u64, n: u64) -> Payer {
        static SALT: std::sync::OnceLock<u64> = std::sync::OnceLock::new();
        let salt = *SALT.get_or_init(|| {
            std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_nanos() as u64)
        });
        let mut payer = Payer::new(0);
        payer.nonce[..8].copy_from_slice(&client.to_be_bytes());
        payer.nonce[8..16].copy_from_slice(&n.to_be_bytes());
        payer.nonce[16..24].copy_from_slice(&salt.to_be_bytes());
        payer
    }

    pub fn new(nonce_byte: u8) -> Payer {
        Payer {
            key: SigningKey::from_slice(&unhex(TEST_KEY)).unwrap(),
            to: PAY_TO.into(),
            value: 5_000,
            valid_before: now_s() + 300,
            nonce: [nonce_byte; 32],
        }
    }

    pub fn from(&self) -> String {
        address_of(self.key.verifying_key())
    }

    fn authorization(&self) -> Value {
        json!({
            "from": self.from(),
            "to": self.to,
            "value": self.value.to_string(),
            "validAfter": "0",
            "validBefore": self.valid_before.to_string(),
            "nonce": format!("0x{}", hex(&self.nonce)),
        })
    }

    fn signature(&self, auth: &Value) -> String {
        let (sig, id) = self.key.sign_prehash_recoverable(&digest("USD Coin", 8453, USDC_BASE, auth));
        format!("0x{}{:02x}", hex(&sig.to_bytes()), 27 + id.to_byte())
    }

    /// A v2 `PaymentPayload` accepting the requirement from a challenge (as MCP's `_meta["x402/payment"]` carries it).
    pub fn v2_payload(&self, accepted: &Value) -> Value {
        let auth = self.authorization();
        json!({
            "x402Version": 2,
            "accepted": accepted,
            "payload": { "signature": self.signature(&auth), "authorization": auth },
        })
    }

    /// `PAYMENT-SIGNATURE` (v2), accepting the requirement from a challenge.
    pub fn v2_header(&self, accepted: &Value) -> String {
        websearchd::codec::base64_encode(self.v2_payload(accepted).to_string().as_bytes())
    }

    /// `X-PAYMENT` (v1).
    pub fn v1_header(&self) -> String {
        let auth = self.authorization();
        let payload = json!({
            "x402Version": 1,
            "scheme": "exact",
            "network": "base",
            "payload": { "signature": self.signature(&auth), "authorization": auth },
        });
        websearchd::codec::base64_encode(payload.to_string().as_bytes())
    }
}

/// How the loopback facilitator answers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// Check the signature and answer truthfully.
    Honest,
    VerifyInvalid,
    /// A refusal sent as HTTP 400 with the verdict JSON (some facilitators do that).
    Verify4xx,
    VerifyHang,
    Verify5xx,
    VerifySlow,
    SettleFalse,
    Settle5xx,
    SettleHang,
    Settle4xx,
}

pub struct Facilitator {
    pub upstream: Upstream,
    pub mode: Arc<Mutex<Mode>>,
}

impl Facilitator {
    pub fn start() -> Facilitator {
        let mode = Arc::new(Mutex::new(Mode::Honest));
        let m = mode.clone();
        let upstream = Upstream::start_unlisting(UNLISTED, move |seen| {
            let mode = *m.lock().unwrap();
            let body: Value = serde_json::from_slice(&seen.body).unwrap_or(Value::Null);
            match seen.path() {
                "/supported" => supported(),
                "/verify" => match mode {
                    Mode::VerifyInvalid => {
                        Answer::json(200, r#"{"isValid":false,"invalidReason":"insufficient_funds"}"#)
                    }
                    Mode::Verify4xx => Answer::json(
                        400,
                        r#"{"isValid":false,"invalidReason":"invalid_exact_evm_payload_authorization_valid_before"}"#,
                    ),
                    Mode::VerifyHang => Answer::Hang(Duration::from_secs(5)),
                    Mode::Verify5xx => Answer::json(503, "{}"),
                    Mode::VerifySlow => Answer::Delay(Duration::from_millis(400), Box::new(verify(&body))),
                    _ => verify(&body),
                },
                "/settle" => match mode {
                    Mode::SettleFalse => Answer::json(
                        200,
                        r#"{"success":false,"errorReason":"insufficient_funds","transaction":"","network":"eip155:8453"}"#,
                    ),
                    Mode::Settle5xx => Answer::json(502, "bad gateway"),
                    Mode::SettleHang => Answer::Hang(Duration::from_secs(5)),
                    Mode::Settle4xx => Answer::json(400, r#"{"success":false,"errorReason":"invalid_payload"}"#),
                    _ => {
                        let payer = body["paymentPayload"]["payload"]["authorization"]["from"].clone();
                        Answer::json(
                            200,
                            json!({"success": true, "transaction": "0xfeedbeef", "network": "eip155:8453", "payer": payer})
                                .to_string(),
                        )
                    }
                },
                _ => Answer::json(404, "{}"),
            }
        });
        Facilitator { upstream, mode }
    }

    pub fn set(&self, mode: Mode) {
        *self.mode.lock().unwrap() = mode;
    }

    pub fn url(&self) -> String {
        self.upstream.url("")
    }
}

/// The facilitator's paths left out of the calls tests list: `/supported` is asked at every start.
const UNLISTED: &[&str] = &["/supported"];

/// What the loopback facilitator serves: exact on Base mainnet, named as v1 and v2 kinds name it.
pub fn supported() -> Answer {
    Answer::json(
        200,
        r#"{"kinds":[{"x402Version":1,"scheme":"exact","network":"base"},
            {"x402Version":2,"scheme":"exact","network":"eip155:8453"}],"extensions":[],"signers":{}}"#,
    )
}

/// Recovers the signer and checks it against the requirement, as a facilitator does.
fn verify(body: &Value) -> Answer {
    let auth = &body["paymentPayload"]["payload"]["authorization"];
    let req = &body["paymentRequirements"];
    let sig = unhex(body["paymentPayload"]["payload"]["signature"].as_str().unwrap_or("0x"));
    let name = req["extra"]["name"].as_str().unwrap_or("");
    let amount = req["amount"].as_str().or(req["maxAmountRequired"].as_str()).unwrap_or("");
    let ok = sig.len() == 65
        && auth["to"].as_str().map(str::to_lowercase) == req["payTo"].as_str().map(str::to_lowercase)
        && auth["value"].as_str() == Some(amount)
        && {
            let d = digest(name, 8453, req["asset"].as_str().unwrap_or(USDC_BASE), auth);
            let s = Signature::from_slice(&sig[..64]).ok();
            let id = RecoveryId::from_byte(sig[64].wrapping_sub(27));
            match (s, id) {
                (Some(s), Some(id)) => VerifyingKey::recover_from_prehash(&d, &s, id)
                    .map(|k| address_of(&k) == auth["from"].as_str().unwrap_or("").to_lowercase())
                    .unwrap_or(false),
                _ => false,
            }
        };
    if ok {
        Answer::json(200, json!({"isValid": true, "payer": auth["from"]}).to_string())
    } else {
        Answer::json(400, r#"{"isValid":false,"invalidReason":"invalid_exact_evm_payload_signature"}"#)
    }
}

/// A loopback facilitator that verifies honestly and answers `/settle` with whatever `settle` holds at the time (for
/// answers that no `Mode` gives: unreadable bodies, malformed verdicts).
pub fn facilitator_answering_settle(settle: Arc<Mutex<Answer>>) -> Upstream {
    Upstream::start_unlisting(UNLISTED, move |seen| {
        let body: Value = serde_json::from_slice(&seen.body).unwrap_or(Value::Null);
        match seen.path() {
            "/supported" => supported(),
            "/verify" => verify(&body),
            "/settle" => settle.lock().unwrap().clone(),
            _ => Answer::json(404, "{}"),
        }
    })
}
