use super::*;
use crate::codec::hex_decode;

const RFC8032_SEED: &str = "9d61b19deffd5a60ba844af492ec2cc44449c5697b326919703bac031cae7f60";

fn seed(hex: &str) -> [u8; 32] {
    hex_decode(hex).unwrap().try_into().unwrap()
}

#[test]
fn rfc8032_test_1() {
    let key = signing_key(&seed(RFC8032_SEED));
    assert_eq!(
        hex_encode(key.verifying_key().as_bytes()),
        "d75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a"
    );
    assert_eq!(
        hex_encode(&key.sign(b"").to_bytes()),
        "e5564300c360ac729086e2cc806e828a84877f1eb8e5d974d873e065224901555fb8821590a33bacc61e39701cf9b46bd25bf5f0595bbe24655141438e7a100b"
    );
}

#[test]
fn rfc8037_thumbprint_and_jws() {
    let key = signing_key(&seed(RFC8032_SEED));
    assert_eq!(thumbprint(&key.verifying_key()), "kPrK_qmxVWaYVA9wwBF6Iuo3vVzz7TxHCTwXBygrS4k");
    let protected = base64url_encode(br#"{"alg":"EdDSA"}"#);
    let payload = base64url_encode(b"Example of Ed25519 signing");
    let sig = key.sign(format!("{protected}.{payload}").as_bytes());
    assert_eq!(
        format!("{protected}.{payload}.{}", base64url_encode(&sig.to_bytes())),
        "eyJhbGciOiJFZERTQSJ9.RXhhbXBsZSBvZiBFZDI1NTE5IHNpZ25pbmc.hgyY0il_MGCjP0JzlnLWG1PPOt7-09PGcvMg3AIbQR6dWbhijcNR4ki4iylGjg5BhVsPt9g7sVvpAr_MuM0KAg"
    );
}

fn keyring() -> Keyring {
    Keyring {
        card: KeyPair::from_seed(Purpose::Card, &[1; 32]),
        result: KeyPair::from_seed(Purpose::Result, &[2; 32]),
        retired: Vec::new(),
    }
}

fn headers<'a>(signed: &'a [(&'static str, String); 3]) -> impl Fn(&str) -> Option<String> + 'a {
    move |name| signed.iter().find(|(n, _)| n.eq_ignore_ascii_case(name)).map(|(_, v)| v.clone())
}

#[test]
fn answers_round_trip_in_both_forms() {
    let ring = keyring();
    let keys = keys_from_jwks(&ring.jwks());
    assert_eq!(keys.len(), 2);
    let body = format!(r#"{{"kid":"{}","query":"q","results":[]}}"#, ring.result.kid).into_bytes();
    for object in [SignedObject::Raw, SignedObject::Sha256Hex] {
        let signed = sign_answer(&ring.result, &body, object);
        let v = verify_answer(&body, headers(&signed), &keys).unwrap();
        assert_eq!((v.kid.as_str(), v.object), (ring.result.kid.as_str(), object));
    }
}

#[test]
fn each_failure_says_why() {
    let ring = keyring();
    let keys = keys_from_jwks(&ring.jwks());
    let body = format!(r#"{{"kid":"{}","query":"q"}}"#, ring.result.kid).into_bytes();
    let signed = sign_answer(&ring.result, &body, SignedObject::Raw);

    let tampered = body.iter().map(|&b| if b == b'q' { b'x' } else { b }).collect::<Vec<_>>();
    assert_eq!(verify_answer(&tampered, headers(&signed), &keys), Err(VerifyError::BadSignature));

    let mut wrong_kid = signed.clone();
    wrong_kid[1].1 = "result-nosuchkey".into();
    assert!(matches!(verify_answer(&body, headers(&wrong_kid), &keys), Err(VerifyError::UnknownKid(_))));

    // Signed with the card key: refused for its purpose, whatever the signature.
    let by_card = sign_answer(&ring.card, &body, SignedObject::Raw);
    assert!(matches!(verify_answer(&body, headers(&by_card), &keys), Err(VerifyError::WrongPurpose { .. })));

    // The declared object must be the one signed.
    let mut other_object = signed.clone();
    other_object[2].1 = "sha256-hex".into();
    assert_eq!(verify_answer(&body, headers(&other_object), &keys), Err(VerifyError::BadSignature));

    let only_sig = [signed[0].clone(), ("X-Other", String::new()), ("X-Other2", String::new())];
    assert_eq!(verify_answer(&body, headers(&only_sig), &keys), Err(VerifyError::MissingHeader(HEADER_KID)));
}

#[test]
fn documents_are_signed_over_their_canonical_form() {
    let ring = keyring();
    let doc = serde_json::json!({"b": 1, "a": [true, "x"], "signatures": [{"old": 1}]});
    let sig = sign_document(&ring.card, &doc);
    let protected = sig["protected"].as_str().unwrap();
    let header: Value = serde_json::from_slice(&base64url_decode(protected).unwrap()).unwrap();
    assert_eq!(header, serde_json::json!({"alg": "EdDSA", "kid": ring.card.kid, "typ": "JOSE"}));
    assert_eq!(document_payload(&doc), r#"{"a":[true,"x"],"b":1}"#);
    let input = format!("{protected}.{}", base64url_encode(document_payload(&doc).as_bytes()));
    let s: [u8; 64] = base64url_decode(sig["signature"].as_str().unwrap()).unwrap().try_into().unwrap();
    ring.card.signing.verifying_key().verify_strict(input.as_bytes(), &Signature::from_bytes(&s)).unwrap();
}

#[test]
fn keys_are_created_once_and_rotation_keeps_the_old_public_keys() {
    let dir = std::env::temp_dir().join(format!("websearchd-keys-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let paths = keys::KeyPaths::new(&dir, None, None);
    let first = Keyring::load_or_create(&paths).unwrap();
    let again = Keyring::load_or_create(&paths).unwrap();
    assert_eq!(first.result.kid, again.result.kid);
    assert_ne!(first.card.kid, first.result.kid);
    assert!(first.card.kid.starts_with("card-") && first.result.kid.starts_with("result-"));
    use std::os::unix::fs::PermissionsExt;
    assert_eq!(std::fs::metadata(&paths.result).unwrap().permissions().mode() & 0o777, 0o600);
    let (rotated, retired) = Keyring::rotate(&paths, 0).unwrap();
    assert_eq!(retired, 2);
    assert_ne!(rotated.result.kid, first.result.kid);
    let jwks = rotated.jwks();
    let keys = keys_from_jwks(&jwks);
    assert_eq!(keys.len(), 4);
    let old = keys.iter().find(|k| k.kid == first.result.kid).unwrap();
    assert_eq!((old.status.as_str(), old.purpose.as_str()), ("retired", "result"));
    let _ = std::fs::remove_dir_all(&dir);
}
