//! Ed25519 signing: the two keys (the card key signs discovery documents, the result key signs answers and
//! receipts), their JWKS, the signed-answer headers, compact JWS over canonical JSON for documents, and the
//! offline verification `websearchd verify` runs.
//!
//! Signed answers carry three headers: `X-Signature` (standard base64 of the 64-byte signature), `X-Signature-Kid`
//! and `X-Signed-Object`, which declares what was signed: `raw` (the exact body bytes, the default) or `sha256-hex`
//! (the 64 ASCII bytes of the lowercase hex SHA-256 of the body), chosen by the client with a request header
//! `X-Signed-Object: sha256-hex`.

pub mod keys;

use ed25519_dalek::{Signature, Signer, SigningKey, VerifyingKey};
use serde_json::{json, Value};
use sha2::{Digest, Sha256};

use crate::codec::{base64_decode, base64_encode, base64url_decode, base64url_encode, hex_encode};
pub use keys::{KeyPair, Keyring, Purpose};

pub const HEADER_SIGNATURE: &str = "X-Signature";
pub const HEADER_KID: &str = "X-Signature-Kid";
pub const HEADER_OBJECT: &str = "X-Signed-Object";

/// What a signature is over.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SignedObject {
    /// The exact body bytes.
    Raw,
    /// The lowercase hex SHA-256 of the body, as 64 ASCII bytes.
    Sha256Hex,
}

impl SignedObject {
    pub fn name(self) -> &'static str {
        match self {
            SignedObject::Raw => "raw",
            SignedObject::Sha256Hex => "sha256-hex",
        }
    }

    pub fn from_name(s: &str) -> Option<SignedObject> {
        match s.trim().to_ascii_lowercase().as_str() {
            "raw" => Some(SignedObject::Raw),
            "sha256-hex" => Some(SignedObject::Sha256Hex),
            _ => None,
        }
    }

    /// The bytes the signature covers.
    pub fn bytes(self, body: &[u8]) -> Vec<u8> {
        match self {
            SignedObject::Raw => body.to_vec(),
            SignedObject::Sha256Hex => sha256_hex(body).into_bytes(),
        }
    }
}

pub fn sha256(data: &[u8]) -> [u8; 32] {
    Sha256::digest(data).into()
}

pub fn sha256_hex(data: &[u8]) -> String {
    hex_encode(&sha256(data))
}

/// The three headers of a signed answer.
pub fn sign_answer(key: &KeyPair, body: &[u8], object: SignedObject) -> [(&'static str, String); 3] {
    let signature = key.signing.sign(&object.bytes(body));
    [
        (HEADER_SIGNATURE, base64_encode(&signature.to_bytes())),
        (HEADER_KID, key.kid.clone()),
        (HEADER_OBJECT, object.name().to_owned()),
    ]
}

/// A JWS signature object over the canonical JSON (RFC 8785) of `document` without its `signatures` member, as the
/// A2A agent card carries it: `{protected, signature}`, with `alg`, `kid` and `typ` in the protected header.
pub fn sign_document(key: &KeyPair, document: &Value) -> Value {
    let protected = json!({ "alg": "EdDSA", "kid": key.kid, "typ": "JOSE" });
    let protected_b64 = base64url_encode(crate::jcs::canonicalize(&protected).as_bytes());
    let payload_b64 = base64url_encode(document_payload(document).as_bytes());
    let signing_input = format!("{protected_b64}.{payload_b64}");
    let signature = key.signing.sign(signing_input.as_bytes());
    json!({ "protected": protected_b64, "signature": base64url_encode(&signature.to_bytes()) })
}

/// The signed payload of a document: its canonical JSON without `signatures`.
pub fn document_payload(document: &Value) -> String {
    let mut d = document.clone();
    if let Some(map) = d.as_object_mut() {
        map.remove("signatures");
    }
    crate::jcs::canonicalize(&d)
}

/// RFC 7638 thumbprint of an Ed25519 public key: base64url(SHA-256 of `{"crv":"Ed25519","kty":"OKP","x":...}`).
pub fn thumbprint(public: &VerifyingKey) -> String {
    let x = base64url_encode(public.as_bytes());
    base64url_encode(&sha256(format!(r#"{{"crv":"Ed25519","kty":"OKP","x":"{x}"}}"#).as_bytes()))
}

/// Why a signed answer does not verify.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum VerifyError {
    MissingHeader(&'static str),
    UnknownObject(String),
    BadEncoding(&'static str),
    UnknownKid(String),
    WrongPurpose { kid: String, purpose: String },
    KidMismatch { header: String, body: String },
    BadSignature,
}

impl std::fmt::Display for VerifyError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            VerifyError::MissingHeader(h) => write!(f, "the response has no {h} header"),
            VerifyError::UnknownObject(o) => write!(f, "unknown signed object {o:?} (expected raw or sha256-hex)"),
            VerifyError::BadEncoding(what) => write!(f, "{what} is not validly encoded"),
            VerifyError::UnknownKid(k) => write!(f, "no key with kid {k:?} in the key set"),
            VerifyError::WrongPurpose { kid, purpose } => {
                write!(f, "key {kid:?} is a {purpose} key; answers are signed with the result key")
            }
            VerifyError::KidMismatch { header, body } => {
                write!(f, "the header names key {header:?} but the body says {body:?}")
            }
            VerifyError::BadSignature => f.write_str(
                "the signature does not match: the body was changed, or it was signed by another key or over another \
                 object",
            ),
        }
    }
}

impl std::error::Error for VerifyError {}

/// A public key from a JWKS.
#[derive(Debug, Clone)]
pub struct PublicKey {
    pub kid: String,
    pub purpose: String,
    pub status: String,
    pub key: VerifyingKey,
}

/// Reads the Ed25519 keys of a JWKS; other keys are skipped.
pub fn keys_from_jwks(jwks: &Value) -> Vec<PublicKey> {
    let Some(keys) = jwks.get("keys").and_then(Value::as_array) else { return Vec::new() };
    keys.iter()
        .filter_map(|k| {
            if k.get("kty")?.as_str()? != "OKP" || k.get("crv")?.as_str()? != "Ed25519" {
                return None;
            }
            let x: [u8; 32] = base64url_decode(k.get("x")?.as_str()?)?.try_into().ok()?;
            Some(PublicKey {
                kid: k.get("kid")?.as_str()?.to_owned(),
                purpose: k.get("purpose").and_then(Value::as_str).unwrap_or("").to_owned(),
                status: k.get("status").and_then(Value::as_str).unwrap_or("active").to_owned(),
                key: VerifyingKey::from_bytes(&x).ok()?,
            })
        })
        .collect()
}

/// What a verified answer says about itself.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Verified {
    pub kid: String,
    pub status: String,
    pub object: SignedObject,
}

/// Checks a signed answer: `header(name)` looks a response header up (case-insensitively).
pub fn verify_answer(
    body: &[u8],
    header: impl Fn(&str) -> Option<String>,
    keys: &[PublicKey],
) -> Result<Verified, VerifyError> {
    let sig_b64 = header(HEADER_SIGNATURE).ok_or(VerifyError::MissingHeader(HEADER_SIGNATURE))?;
    let kid = header(HEADER_KID).ok_or(VerifyError::MissingHeader(HEADER_KID))?;
    let object_name = header(HEADER_OBJECT).unwrap_or_else(|| "raw".into());
    let object = SignedObject::from_name(&object_name).ok_or(VerifyError::UnknownObject(object_name))?;
    let sig_bytes: [u8; 64] = base64_decode(sig_b64.trim())
        .and_then(|b| b.try_into().ok())
        .ok_or(VerifyError::BadEncoding("the signature"))?;
    let key = keys.iter().find(|k| k.kid == kid).ok_or_else(|| VerifyError::UnknownKid(kid.clone()))?;
    if key.purpose != Purpose::Result.name() {
        return Err(VerifyError::WrongPurpose { kid, purpose: key.purpose.clone() });
    }
    if let Some(body_kid) =
        serde_json::from_slice::<Value>(body).ok().and_then(|v| v.get("kid").and_then(Value::as_str).map(str::to_owned))
    {
        if body_kid != kid {
            return Err(VerifyError::KidMismatch { header: kid, body: body_kid });
        }
    }
    key.key
        .verify_strict(&object.bytes(body), &Signature::from_bytes(&sig_bytes))
        .map_err(|_| VerifyError::BadSignature)?;
    Ok(Verified { kid, status: key.status.clone(), object })
}

/// A signing key from a 32-byte seed.
pub fn signing_key(seed: &[u8; 32]) -> SigningKey {
    SigningKey::from_bytes(seed)
}

#[cfg(test)]
mod tests;
