//! A payment header, decoded strictly into a typed `Payment`, and the local checks made before any network call:
//! the requirement it accepted, payTo, amount, asset, network, the validity window at an injected instant, and the
//! EIP-712 signature, which must recover to `from`.

use serde_json::Value;

use super::eip712::{self, parse_address, Authorization, Domain, RecoverError};
use super::terms::{Network, Terms};
use crate::codec::{base64_decode, hex_decode};

/// Longest payment header accepted (a real one is about 1.5 KB).
pub const HEADER_BYTES_MAX: usize = 8_192;
/// Longest payment accepted as a JSON value: what the longest header decodes to (base64 is 4 bytes for 3).
pub const OBJECT_BYTES_MAX: usize = HEADER_BYTES_MAX / 4 * 3;
/// An authorization must stay valid at least this long after it is checked, to leave time for settlement.
pub const VALIDITY_MARGIN_S: u64 = 6;
/// An authorization may stay valid at most this long after it is checked: the replay guard holds it in memory until
/// its `validBefore`, so one valid for years would be held for years. An hour is the longest `maxTimeoutSeconds` the
/// terms can state (`WEBSEARCHD_MAX_TIMEOUT_S`), which x402 clients add to the time they sign; five minutes more
/// allow for a client's clock ahead of ours.
pub const VALIDITY_MAX_S: u64 = 3_600 + 300;

/// A decoded payment.
#[derive(Debug, Clone, PartialEq)]
pub struct Payment {
    /// 1 (`X-PAYMENT`) or 2 (`PAYMENT-SIGNATURE`).
    pub version: u8,
    /// The payload as the client sent it, for the facilitator.
    pub raw: Value,
    /// The network the payload names.
    pub network: Network,
    pub authorization: Authorization,
    pub signature: Vec<u8>,
}

/// Why a payment is refused before the facilitator is asked. Each has its own stable code.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Error {
    Malformed(String),
    VersionUnsupported,
    SchemeMismatch,
    NetworkMismatch,
    AssetMismatch,
    PayToMismatch,
    AmountMismatch {
        expected: u128,
        got: u128,
    },
    NotYetValid {
        valid_after: u64,
        now: u64,
    },
    Expired {
        valid_before: u64,
        now: u64,
    },
    /// Valid for longer than `VALIDITY_MAX_S`.
    ValidTooLong {
        valid_before: u64,
        now: u64,
    },
    SignatureHighS,
    /// The signature is over another EIP-712 domain (named here): usually the testnet/mainnet USDC name mix-up.
    DomainMismatch {
        signed_for: String,
    },
    SignatureInvalid,
}

impl Error {
    pub fn code(&self) -> &'static str {
        match self {
            Error::Malformed(_) => "payment_malformed",
            Error::VersionUnsupported => "payment_version_unsupported",
            Error::SchemeMismatch => "payment_scheme_mismatch",
            Error::NetworkMismatch => "payment_network_mismatch",
            Error::AssetMismatch => "payment_asset_mismatch",
            Error::PayToMismatch => "payment_pay_to_mismatch",
            Error::AmountMismatch { .. } => "payment_amount_mismatch",
            Error::NotYetValid { .. } => "payment_not_yet_valid",
            Error::Expired { .. } => "payment_expired",
            Error::ValidTooLong { .. } => "payment_valid_too_long",
            Error::SignatureHighS => "payment_signature_high_s",
            Error::DomainMismatch { .. } => "payment_domain_mismatch",
            Error::SignatureInvalid => "payment_signature_invalid",
        }
    }
}

impl std::fmt::Display for Error {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Error::Malformed(why) => write!(f, "the payment header cannot be read: {why}"),
            Error::VersionUnsupported => f.write_str("x402Version must be 1 or 2"),
            Error::SchemeMismatch => f.write_str("only the `exact` scheme is accepted"),
            Error::NetworkMismatch => f.write_str("the payment is for another network than the terms"),
            Error::AssetMismatch => f.write_str("the payment is in another asset than the terms"),
            Error::PayToMismatch => f.write_str("the payment goes to another address than the terms' payTo"),
            Error::AmountMismatch { expected, got } => {
                write!(f, "the payment is for {got} atomic units; the price is {expected}")
            }
            Error::NotYetValid { valid_after, now } => {
                write!(f, "the authorization is valid only after {valid_after} (now {now})")
            }
            Error::Expired { valid_before, now } => write!(
                f,
                "the authorization expires at {valid_before}, less than {VALIDITY_MARGIN_S} s after now ({now})"
            ),
            Error::ValidTooLong { valid_before, now } => write!(
                f,
                "the authorization is valid until {valid_before}, more than {VALIDITY_MAX_S} s after now ({now}): sign \
                 one with validBefore at most now + {VALIDITY_MAX_S}"
            ),
            Error::SignatureHighS => f.write_str("the signature has a high s value (malleable); re-sign"),
            Error::DomainMismatch { signed_for } => write!(
                f,
                "the signature is over the EIP-712 domain name {signed_for:?}, not the one the terms give in extra.name"
            ),
            Error::SignatureInvalid => f.write_str("the signature does not recover to the authorization's `from`"),
        }
    }
}

impl std::error::Error for Error {}

fn malformed(why: impl Into<String>) -> Error {
    Error::Malformed(why.into())
}

/// Decodes a header value (standard base64 of UTF-8 JSON). `version` is what the header name implies.
pub fn decode(header: &str, version: u8) -> Result<Payment, Error> {
    if header.len() > HEADER_BYTES_MAX {
        return Err(malformed(format!("longer than {HEADER_BYTES_MAX} bytes")));
    }
    let bytes = base64_decode(header).ok_or_else(|| malformed("not standard padded base64"))?;
    let raw: Value = serde_json::from_slice(&bytes).map_err(|e| malformed(format!("not JSON: {e}")))?;
    parse(raw, version)
}

/// Reads a `PaymentPayload` sent as a JSON value (MCP's `_meta["x402/payment"]`): the version is the one it
/// declares, and it is held to the same size as a header's decoded JSON.
pub fn from_object(raw: &Value) -> Result<Payment, Error> {
    if !raw.is_object() {
        return Err(malformed("the payment must be a JSON object"));
    }
    let bytes = serde_json::to_vec(raw).map_or(usize::MAX, |b| b.len());
    if bytes > OBJECT_BYTES_MAX {
        return Err(malformed(format!("longer than {OBJECT_BYTES_MAX} bytes as JSON")));
    }
    let declared = raw.get("x402Version").and_then(Value::as_u64).ok_or_else(|| malformed("no x402Version"))?;
    let version = u8::try_from(declared).map_err(|_| Error::VersionUnsupported)?;
    parse(raw.clone(), version)
}

/// The payload as JSON, checked against the version its carrier implies.
fn parse(raw: Value, version: u8) -> Result<Payment, Error> {
    let declared = raw.get("x402Version").and_then(Value::as_u64).ok_or_else(|| malformed("no x402Version"))?;
    if declared != 1 && declared != 2 {
        return Err(Error::VersionUnsupported);
    }
    if declared != u64::from(version) {
        return Err(malformed(format!("x402Version {declared} in a header for version {version}")));
    }
    let (scheme, network_name) = if version == 2 {
        let accepted = raw.get("accepted").ok_or_else(|| malformed("no `accepted` requirement"))?;
        (str_field(accepted, "scheme")?, str_field(accepted, "network")?)
    } else {
        (str_field(&raw, "scheme")?, str_field(&raw, "network")?)
    };
    if scheme != "exact" {
        return Err(Error::SchemeMismatch);
    }
    let network = Network::from_name(network_name).ok_or(Error::NetworkMismatch)?;
    let payload = raw.get("payload").ok_or_else(|| malformed("no `payload`"))?;
    let signature = hex_field(payload, "signature")?;
    let auth = payload.get("authorization").ok_or_else(|| malformed("no `payload.authorization`"))?;
    let authorization = Authorization {
        from: address_field(auth, "from")?,
        to: address_field(auth, "to")?,
        value: uint_field(auth, "value")?,
        valid_after: u64::try_from(uint_field(auth, "validAfter")?).map_err(|_| malformed("validAfter too large"))?,
        valid_before: u64::try_from(uint_field(auth, "validBefore")?)
            .map_err(|_| malformed("validBefore too large"))?,
        nonce: hex_field(auth, "nonce")?.try_into().map_err(|_| malformed("nonce is not 32 bytes"))?,
    };
    Ok(Payment { version, raw, network, authorization, signature })
}

fn str_field<'a>(v: &'a Value, name: &str) -> Result<&'a str, Error> {
    v.get(name).and_then(Value::as_str).ok_or_else(|| malformed(format!("`{name}` must be a string")))
}

fn address_field(v: &Value, name: &str) -> Result<eip712::Address, Error> {
    parse_address(str_field(v, name)?).ok_or_else(|| malformed(format!("`{name}` is not an address")))
}

fn hex_field(v: &Value, name: &str) -> Result<Vec<u8>, Error> {
    let s = str_field(v, name)?;
    let hex = s.strip_prefix("0x").ok_or_else(|| malformed(format!("`{name}` must start with 0x")))?;
    hex_decode(hex).ok_or_else(|| malformed(format!("`{name}` is not hex")))
}

/// A decimal integer, as a string (the specification) or a JSON number (some clients).
fn uint_field(v: &Value, name: &str) -> Result<u128, Error> {
    match v.get(name) {
        Some(Value::String(s)) if !s.is_empty() && s.len() <= 39 && s.bytes().all(|b| b.is_ascii_digit()) => {
            s.parse().map_err(|_| malformed(format!("`{name}` is out of range")))
        }
        Some(Value::Number(n)) => {
            n.as_u64().map(u128::from).ok_or_else(|| malformed(format!("`{name}` must be a whole number")))
        }
        _ => Err(malformed(format!("`{name}` must be a decimal string"))),
    }
}

/// The local checks, at `now_s` (Unix seconds).
pub fn check(p: &Payment, terms: &Terms, now_s: u64) -> Result<(), Error> {
    if p.network != terms.network {
        return Err(Error::NetworkMismatch);
    }
    if p.version == 2 {
        let accepted = p.raw.get("accepted").ok_or_else(|| malformed("no `accepted` requirement"))?;
        let asset = address_field(accepted, "asset").map_err(|_| Error::AssetMismatch)?;
        if asset != terms.network.usdc() {
            return Err(Error::AssetMismatch);
        }
        if address_field(accepted, "payTo").ok() != Some(terms.pay_to) {
            return Err(Error::PayToMismatch);
        }
        let amount =
            uint_field(accepted, "amount").map_err(|_| Error::AmountMismatch { expected: terms.price, got: 0 })?;
        if amount != terms.price {
            return Err(Error::AmountMismatch { expected: terms.price, got: amount });
        }
    }
    let a = &p.authorization;
    if a.to != terms.pay_to {
        return Err(Error::PayToMismatch);
    }
    if a.value != terms.price {
        return Err(Error::AmountMismatch { expected: terms.price, got: a.value });
    }
    if a.valid_after > now_s {
        return Err(Error::NotYetValid { valid_after: a.valid_after, now: now_s });
    }
    if a.valid_before < now_s.saturating_add(VALIDITY_MARGIN_S) {
        return Err(Error::Expired { valid_before: a.valid_before, now: now_s });
    }
    if a.valid_before > now_s.saturating_add(VALIDITY_MAX_S) {
        return Err(Error::ValidTooLong { valid_before: a.valid_before, now: now_s });
    }
    let domain = terms.network.domain();
    match eip712::recover(&eip712::digest(&domain, a), &p.signature) {
        Ok(signer) if signer == a.from => Ok(()),
        Err(RecoverError::HighS) => Err(Error::SignatureHighS),
        Ok(_) | Err(_) => {
            Err(other_domain(p, &domain)
                .map_or(Error::SignatureInvalid, |name| Error::DomainMismatch { signed_for: name }))
        }
    }
}

/// If the signature verifies under the other USDC domain name, that name: a precise diagnosis for a common mistake.
fn other_domain(p: &Payment, ours: &Domain) -> Option<String> {
    ["USD Coin", "USDC"].into_iter().filter(|n| *n != ours.name).find_map(|name| {
        let d = Domain { name: name.into(), ..ours.clone() };
        (eip712::recover(&eip712::digest(&d, &p.authorization), &p.signature).ok()? == p.authorization.from)
            .then(|| name.to_owned())
    })
}

#[cfg(test)]
mod tests;
