use super::*;
use crate::codec::{hex_decode, hex_encode};
use serde_json::Value;

fn h32(s: &str) -> [u8; 32] {
    hex_decode(s.trim_start_matches("0x")).unwrap().try_into().unwrap()
}

fn vectors() -> Option<Value> {
    let dir =
        std::env::var("WEBSEARCHD_SHARED_DIR").unwrap_or_else(|_| format!("{}/../shared", env!("CARGO_MANIFEST_DIR")));
    let path = format!("{dir}/fixtures/x402/eip3009_vectors.json");
    match std::fs::read(&path) {
        Ok(b) => Some(serde_json::from_slice(&b).unwrap()),
        Err(_) => {
            eprintln!("notice: {path} is absent; skipping the shared vectors");
            None
        }
    }
}

fn domain_of(v: &Value) -> Domain {
    Domain {
        name: v["name"].as_str().unwrap().into(),
        version: v["version"].as_str().unwrap().into(),
        chain_id: v["chainId"].as_u64().unwrap(),
        verifying_contract: parse_address(v["verifyingContract"].as_str().unwrap()).unwrap(),
    }
}

fn authorization_of(v: &Value) -> Authorization {
    Authorization {
        from: parse_address(v["from"].as_str().unwrap()).unwrap(),
        to: parse_address(v["to"].as_str().unwrap()).unwrap(),
        value: v["value"].as_str().unwrap().parse().unwrap(),
        valid_after: v["validAfter"].as_str().unwrap().parse().unwrap(),
        valid_before: v["validBefore"].as_str().unwrap().parse().unwrap(),
        nonce: h32(v["nonce"].as_str().unwrap()),
    }
}

#[test]
fn typehashes_and_shared_vectors() {
    assert_eq!(
        hex_encode(&keccak256(DOMAIN_TYPE.as_bytes())),
        "8b73c3c69bb8fe3d512ecc4cf759cc79239f7b179b0ffacaa9a75d522b39400f"
    );
    assert_eq!(
        hex_encode(&keccak256(TRANSFER_TYPE.as_bytes())),
        "7c7c6cdb67a18743f49ec6fa9b35f50d52ed05cbed4cc592e13b44501c1a2267"
    );
    let Some(v) = vectors() else { return };
    for vector in v["vectors"].as_array().unwrap() {
        let d = domain_of(&vector["domain"]);
        let a = authorization_of(&vector["authorization"]);
        assert_eq!(domain_separator(&d), h32(vector["domainSeparator"].as_str().unwrap()));
        assert_eq!(struct_hash(&a), h32(vector["structHash"].as_str().unwrap()));
        let dig = digest(&d, &a);
        assert_eq!(dig, h32(vector["digest"].as_str().unwrap()));
        let sig = hex_decode(vector["signature"].as_str().unwrap().trim_start_matches("0x")).unwrap();
        let signer = recover(&dig, &sig).unwrap();
        assert_eq!(checksum_address(&signer), vector["expectedSigner"].as_str().unwrap());
    }
    // The specification's own example recovers to different addresses under the two domain names.
    let ex = &v["spec_example"];
    let a = authorization_of(&ex["authorization"]);
    let sig = hex_decode(ex["signature"].as_str().unwrap().trim_start_matches("0x")).unwrap();
    for (key, expected) in ex["recovers_under"].as_object().unwrap() {
        let parts: Vec<&str> = key.split('/').collect();
        let d = Domain {
            name: parts[0].into(),
            version: parts[1].into(),
            chain_id: parts[2].parse().unwrap(),
            verifying_contract: parse_address(parts[3]).unwrap(),
        };
        let signer = recover(&digest(&d, &a), &sig).unwrap();
        assert_eq!(checksum_address(&signer), expected.as_str().unwrap(), "{key}");
    }
}

/// Signs with the public Anvil test key #0 (never a real wallet) and recovers.
#[test]
fn sign_and_recover_with_a_test_key() {
    use k256::ecdsa::SigningKey;
    let key = SigningKey::from_slice(&h32("ac0974bec39a17e36ba4a6b4d238ff944bacb478cbed5efcae784d7bf4f2ff80")).unwrap();
    let me = address_of(key.verifying_key());
    assert_eq!(checksum_address(&me), "0xf39Fd6e51aad88F6F4ce6aB8827279cffFb92266");
    let d = Domain {
        name: "USD Coin".into(),
        version: "2".into(),
        chain_id: 8453,
        verifying_contract: parse_address("0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913").unwrap(),
    };
    let a = Authorization { from: me, to: [7u8; 20], value: 5_000, valid_after: 0, valid_before: 10, nonce: [9u8; 32] };
    let dig = digest(&d, &a);
    let (sig, id) = key.sign_prehash_recoverable(&dig);
    let mut bytes = sig.to_bytes().to_vec();
    bytes.push(id.to_byte() + 27);
    assert_eq!(recover(&dig, &bytes), Ok(me));
    // v as 0/1 is accepted too.
    bytes[64] -= 27;
    assert_eq!(recover(&dig, &bytes), Ok(me));
    // A flipped bit recovers someone else (or nothing).
    bytes[10] ^= 1;
    assert_ne!(recover(&dig, &bytes), Ok(me));
}

#[test]
fn high_s_and_malformed_signatures_are_refused() {
    let v = vectors();
    let sig_hex = v
        .as_ref()
        .map(|v| v["vectors"][0]["signature"].as_str().unwrap().to_string())
        .unwrap_or_else(|| "0xdce9c85ca447617d71eacdc39ba4706e0032d311347daa2cfe0b89febe0f501d467a100ad47a1f2007dc6cc58ab8a4cc9a4656cd010b340d3cfff66da1fa952c1b".into());
    let sig = hex_decode(sig_hex.trim_start_matches("0x")).unwrap();
    // s' = n - s is the malleated twin of a valid signature.
    let n = h32("fffffffffffffffffffffffffffffffebaaedce6af48a03bbfd25e8cd0364141");
    let s: [u8; 32] = sig[32..64].try_into().unwrap();
    let mut high = [0u8; 32];
    let mut borrow = 0i16;
    for i in (0..32).rev() {
        let d = i16::from(n[i]) - i16::from(s[i]) - borrow;
        high[i] = d.rem_euclid(256) as u8;
        borrow = i16::from(d < 0);
    }
    let mut malleated = sig.clone();
    malleated[32..64].copy_from_slice(&high);
    malleated[64] = if sig[64] == 27 { 28 } else { 27 };
    let dig = [1u8; 32];
    assert_eq!(recover(&dig, &malleated), Err(RecoverError::HighS));
    assert_eq!(recover(&dig, &sig[..64]), Err(RecoverError::Malformed));
    let mut bad_v = sig.clone();
    bad_v[64] = 5;
    assert_eq!(recover(&dig, &bad_v), Err(RecoverError::BadV));
    assert_eq!(recover(&dig, &[0u8; 65]), Err(RecoverError::Malformed));
}

#[test]
fn addresses() {
    let a = parse_address("0x833589fcd6edb6e08f4c7c32d4f71b54bda02913").unwrap();
    assert_eq!(checksum_address(&a), "0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913");
    assert!(checksum_ok("0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913"));
    assert!(checksum_ok("0x833589fcd6edb6e08f4c7c32d4f71b54bda02913"));
    assert!(!checksum_ok("0x833589FCD6eDb6E08f4c7C32D4f71b54bdA02913"));
    assert_eq!(parse_address("0x1234"), None);
    assert_eq!(parse_address("833589fcd6edb6e08f4c7c32d4f71b54bda02913"), None);
}
