use super::*;
use crate::codec::base64_encode;
use crate::x402::eip712::{address_of, checksum_address, digest};
use k256::ecdsa::SigningKey;
use serde_json::json;

/// The public Anvil test key #0 (never a real wallet).
const TEST_KEY: &str = "ac0974bec39a17e36ba4a6b4d238ff944bacb478cbed5efcae784d7bf4f2ff80";
const PAY_TO: &str = "0x209693Bc6afc0C5328bA36FaF03C514EF312287C";
const NOW: u64 = 1_800_000_000;

fn terms() -> Terms {
    Terms { network: Network::Base, pay_to: parse_address(PAY_TO).unwrap(), price: 5_000, max_timeout_s: 60 }
}

fn key() -> SigningKey {
    SigningKey::from_slice(&hex_decode(TEST_KEY).unwrap()).unwrap()
}

/// Builds a v2 header the way a client would, with knobs to break it.
struct Build {
    domain_name: &'static str,
    to: String,
    value: u128,
    accepted_amount: String,
    valid_after: u64,
    valid_before: u64,
    tamper: bool,
}

impl Default for Build {
    fn default() -> Self {
        Build {
            domain_name: "USD Coin",
            to: PAY_TO.into(),
            value: 5_000,
            accepted_amount: "5000".into(),
            valid_after: 0,
            valid_before: NOW + 600,
            tamper: false,
        }
    }
}

impl Build {
    fn header(&self) -> String {
        let key = key();
        let from = address_of(key.verifying_key());
        let a = Authorization {
            from,
            to: parse_address(&self.to).unwrap(),
            value: self.value,
            valid_after: self.valid_after,
            valid_before: self.valid_before,
            nonce: [0x5a; 32],
        };
        let domain = Domain { name: self.domain_name.into(), ..Network::Base.domain() };
        let (sig, id) = key.sign_prehash_recoverable(&digest(&domain, &a));
        let mut bytes = sig.to_bytes().to_vec();
        bytes.push(27 + id.to_byte());
        if self.tamper {
            bytes[5] ^= 0x40;
        }
        let mut accepted = terms().requirement_v2();
        accepted["amount"] = json!(self.accepted_amount);
        let payload = json!({
            "x402Version": 2,
            "accepted": accepted,
            "payload": {
                "signature": format!("0x{}", crate::codec::hex_encode(&bytes)),
                "authorization": {
                    "from": checksum_address(&from),
                    "to": self.to,
                    "value": self.value.to_string(),
                    "validAfter": self.valid_after.to_string(),
                    "validBefore": self.valid_before.to_string(),
                    "nonce": format!("0x{}", "5a".repeat(32)),
                },
            },
        });
        base64_encode(payload.to_string().as_bytes())
    }
}

#[track_caller]
fn check_code(header: &str, version: u8, code: &str) {
    let got = decode(header, version).and_then(|p| check(&p, &terms(), NOW));
    assert_eq!(got.map_err(|e| e.code()), Err(code));
}

#[test]
fn a_well_made_payment_passes() {
    let p = decode(&Build::default().header(), 2).unwrap();
    assert_eq!(check(&p, &terms(), NOW), Ok(()));
    assert_eq!(p.authorization.value, 5_000);
}

#[test]
fn each_fault_has_its_code() {
    check_code(&Build { tamper: true, ..Build::default() }.header(), 2, "payment_signature_invalid");
    check_code(&Build { domain_name: "USDC", ..Build::default() }.header(), 2, "payment_domain_mismatch");
    check_code(
        &Build { to: "0x1111111111111111111111111111111111111111".into(), ..Build::default() }.header(),
        2,
        "payment_pay_to_mismatch",
    );
    check_code(&Build { value: 4_999, ..Build::default() }.header(), 2, "payment_amount_mismatch");
    check_code(&Build { accepted_amount: "1".into(), ..Build::default() }.header(), 2, "payment_amount_mismatch");
    check_code(&Build { valid_before: NOW - 1, ..Build::default() }.header(), 2, "payment_expired");
    check_code(&Build { valid_before: NOW + 3, ..Build::default() }.header(), 2, "payment_expired");
    // Held by the replay guard until then: at most an hour ahead (issue 18), and five minutes for a client's clock
    // ahead of ours.
    let an_hour = decode(&Build { valid_before: NOW + 3_600 + 300, ..Build::default() }.header(), 2).unwrap();
    assert_eq!(check(&an_hour, &terms(), NOW), Ok(()));
    check_code(&Build { valid_before: NOW + 3_901, ..Build::default() }.header(), 2, "payment_valid_too_long");
    check_code(&Build { valid_before: u64::MAX, ..Build::default() }.header(), 2, "payment_valid_too_long");
    check_code(&Build { valid_after: NOW + 100, ..Build::default() }.header(), 2, "payment_not_yet_valid");
    check_code("not base64!", 2, "payment_malformed");
    check_code(&base64_encode(b"{\"x402Version\":3}"), 2, "payment_version_unsupported");
    check_code(&base64_encode(b"[1,2]"), 2, "payment_malformed");
    check_code(&Build::default().header(), 1, "payment_malformed");
    let wrong_scheme = json!({"x402Version": 2, "accepted": {"scheme": "upto", "network": "eip155:8453"}});
    check_code(&base64_encode(wrong_scheme.to_string().as_bytes()), 2, "payment_scheme_mismatch");
    let wrong_net = json!({"x402Version": 2, "accepted": {"scheme": "exact", "network": "eip155:1"}});
    check_code(&base64_encode(wrong_net.to_string().as_bytes()), 2, "payment_network_mismatch");
}

/// The complete headers in the shared vectors (made with the official Python client) verify.
#[test]
fn shared_fixed_headers_verify() {
    let dir =
        std::env::var("WEBSEARCHD_SHARED_DIR").unwrap_or_else(|_| format!("{}/../shared", env!("CARGO_MANIFEST_DIR")));
    let Ok(bytes) = std::fs::read(format!("{dir}/fixtures/x402/eip3009_vectors.json")) else {
        eprintln!("notice: the shared x402 vectors are absent; skipping");
        return;
    };
    let v: Value = serde_json::from_slice(&bytes).unwrap();
    let v2 = decode(v["headers"]["PAYMENT-SIGNATURE (v2)"].as_str().unwrap(), 2).unwrap();
    // The vectors are valid until 1900000000: checked within `VALIDITY_MAX_S` of it.
    let now = v2.authorization.valid_before - 600;
    assert_eq!(check(&v2, &terms(), now), Ok(()));
    let v1 = decode(v["headers"]["X-PAYMENT (v1)"].as_str().unwrap(), 1).unwrap();
    assert_eq!(check(&v1, &terms(), now), Ok(()));
    assert_eq!(check(&v2, &terms(), NOW).map_err(|e| e.code()), Err("payment_valid_too_long"));
    assert_eq!(v1.authorization, v2.authorization);
    // At 1900000000 the same payment has expired; against Base Sepolia terms it is for the wrong network.
    assert_eq!(check(&v2, &terms(), 1_900_000_000).map_err(|e| e.code()), Err("payment_expired"));
    let sepolia = Terms { network: Network::BaseSepolia, ..terms() };
    assert_eq!(check(&v2, &sepolia, NOW).map_err(|e| e.code()), Err("payment_network_mismatch"));
}

/// A payment carried as a JSON value (MCP's `_meta`) reads as the same payment as its header, its version the one it
/// declares; anything else is malformed, and a value past the size a header may carry is refused unread.
#[test]
fn a_payment_object_reads_like_its_header() {
    let header = Build::default().header();
    let object: Value = serde_json::from_slice(&crate::codec::base64_decode(&header).unwrap()).unwrap();
    let p = from_object(&object).unwrap();
    assert_eq!(p, decode(&header, 2).unwrap());
    assert_eq!(check(&p, &terms(), NOW), Ok(()));
    let code = |v: &Value| from_object(v).map(|_| ()).map_err(|e| e.code());
    assert_eq!(code(&json!("a string")), Err("payment_malformed"));
    assert_eq!(code(&json!({"x402Version": 3})), Err("payment_version_unsupported"));
    assert_eq!(code(&json!({"x402Version": 256})), Err("payment_version_unsupported"));
    assert_eq!(code(&json!({"accepted": {}})), Err("payment_malformed"));
    let mut padded = object.clone();
    padded["extensions"] = json!({ "pad": "x".repeat(OBJECT_BYTES_MAX) });
    assert_eq!(code(&padded), Err("payment_malformed"));
}
