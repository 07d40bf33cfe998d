//! EIP-712 hashing of an EIP-3009 `TransferWithAuthorization` and recovery of its signer (secp256k1, keccak-256).
//! Pure functions; the typehashes and a worked vector are checked against `../shared/fixtures/x402`.

use k256::ecdsa::{RecoveryId, Signature, VerifyingKey};
use sha3::{Digest, Keccak256};

pub type Address = [u8; 20];

pub fn keccak256(data: &[u8]) -> [u8; 32] {
    Keccak256::digest(data).into()
}

/// The EIP-712 domain of the token contract.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Domain {
    pub name: String,
    pub version: String,
    pub chain_id: u64,
    pub verifying_contract: Address,
}

/// An EIP-3009 authorization, typed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Authorization {
    pub from: Address,
    pub to: Address,
    /// Atomic units of the token.
    pub value: u128,
    pub valid_after: u64,
    pub valid_before: u64,
    pub nonce: [u8; 32],
}

const DOMAIN_TYPE: &str = "EIP712Domain(string name,string version,uint256 chainId,address verifyingContract)";
const TRANSFER_TYPE: &str =
    "TransferWithAuthorization(address from,address to,uint256 value,uint256 validAfter,uint256 validBefore,bytes32 nonce)";

fn word_u128(v: u128) -> [u8; 32] {
    let mut w = [0u8; 32];
    w[16..].copy_from_slice(&v.to_be_bytes());
    w
}

fn word_address(a: &Address) -> [u8; 32] {
    let mut w = [0u8; 32];
    w[12..].copy_from_slice(a);
    w
}

pub fn domain_separator(d: &Domain) -> [u8; 32] {
    let mut enc = Vec::with_capacity(32 * 5);
    enc.extend_from_slice(&keccak256(DOMAIN_TYPE.as_bytes()));
    enc.extend_from_slice(&keccak256(d.name.as_bytes()));
    enc.extend_from_slice(&keccak256(d.version.as_bytes()));
    enc.extend_from_slice(&word_u128(u128::from(d.chain_id)));
    enc.extend_from_slice(&word_address(&d.verifying_contract));
    keccak256(&enc)
}

pub fn struct_hash(a: &Authorization) -> [u8; 32] {
    let mut enc = Vec::with_capacity(32 * 7);
    enc.extend_from_slice(&keccak256(TRANSFER_TYPE.as_bytes()));
    enc.extend_from_slice(&word_address(&a.from));
    enc.extend_from_slice(&word_address(&a.to));
    enc.extend_from_slice(&word_u128(a.value));
    enc.extend_from_slice(&word_u128(u128::from(a.valid_after)));
    enc.extend_from_slice(&word_u128(u128::from(a.valid_before)));
    enc.extend_from_slice(&a.nonce);
    keccak256(&enc)
}

/// `keccak256(0x1901 || domainSeparator || structHash)`.
pub fn digest(d: &Domain, a: &Authorization) -> [u8; 32] {
    let mut enc = Vec::with_capacity(66);
    enc.extend_from_slice(&[0x19, 0x01]);
    enc.extend_from_slice(&domain_separator(d));
    enc.extend_from_slice(&struct_hash(a));
    keccak256(&enc)
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RecoverError {
    /// Not 65 bytes, r or s out of range, or no point for r.
    Malformed,
    /// s in the upper half of the order: a malleated signature.
    HighS,
    /// v is not 0, 1, 27 or 28.
    BadV,
}

/// The address whose key made `signature` (r || s || v, 65 bytes) over `digest`.
pub fn recover(digest: &[u8; 32], signature: &[u8]) -> Result<Address, RecoverError> {
    let (rs, v) = match signature {
        [rs @ .., v] if rs.len() == 64 => (rs, *v),
        _ => return Err(RecoverError::Malformed),
    };
    let v = match v {
        0 | 1 => v,
        27 | 28 => v - 27,
        _ => return Err(RecoverError::BadV),
    };
    let sig = Signature::from_slice(rs).map_err(|_| RecoverError::Malformed)?;
    if sig.normalize_s() != sig {
        return Err(RecoverError::HighS);
    }
    let id = RecoveryId::from_byte(v).ok_or(RecoverError::BadV)?;
    let key = VerifyingKey::recover_from_prehash(digest, &sig, id).map_err(|_| RecoverError::Malformed)?;
    Ok(address_of(&key))
}

/// The Ethereum address of a public key: the last 20 bytes of keccak256 of its uncompressed coordinates.
pub fn address_of(key: &VerifyingKey) -> Address {
    let point = key.to_sec1_point(false);
    let bytes = point.as_bytes();
    let hash = keccak256(bytes.get(1..).unwrap_or_default());
    let mut a = [0u8; 20];
    a.copy_from_slice(hash.get(12..).unwrap_or(&[0u8; 20]));
    a
}

/// `0x`-prefixed, 40 hex digits, any case.
pub fn parse_address(s: &str) -> Option<Address> {
    let hex = s.strip_prefix("0x").or_else(|| s.strip_prefix("0X"))?;
    if hex.len() != 40 {
        return None;
    }
    crate::codec::hex_decode(hex)?.try_into().ok()
}

/// EIP-55 mixed-case checksum form.
pub fn checksum_address(a: &Address) -> String {
    let lower = crate::codec::hex_encode(a);
    let hash = keccak256(lower.as_bytes());
    let mut out = String::from("0x");
    for (i, c) in lower.chars().enumerate() {
        let nibble = hash.get(i / 2).map_or(0, |b| if i % 2 == 0 { b >> 4 } else { b & 15 });
        out.push(if c.is_ascii_alphabetic() && nibble >= 8 { c.to_ascii_uppercase() } else { c });
    }
    out
}

/// Whether a mixed-case address has a valid EIP-55 checksum (all-lower or all-upper carries none and passes).
pub fn checksum_ok(s: &str) -> bool {
    let Some(a) = parse_address(s) else {
        return false;
    };
    let hex = s.get(2..).unwrap_or("");
    let all_lower = hex == hex.to_ascii_lowercase();
    let all_upper = hex == hex.to_ascii_uppercase();
    all_lower || all_upper || checksum_address(&a).get(2..) == Some(hex)
}

#[cfg(test)]
mod tests;
