//! The service's keys: generated on first start in `<state>/keys/` (files 0600, written atomically), or loaded from
//! configured paths; `websearchd keygen` rotates them, keeping the old public keys published as retired so earlier
//! signatures still verify. Every file is reached through `statedir` (never through a link).

use std::io::{self, Read};
use std::path::{Path, PathBuf};

use ed25519_dalek::SigningKey;
use serde_json::{json, Value};

use crate::codec::{base64url_encode, hex_decode, hex_encode};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Purpose {
    /// Signs the agent card, `/pubkey` and the catalogue.
    Card,
    /// Signs answers and notary receipts.
    Result,
}

impl Purpose {
    pub fn name(self) -> &'static str {
        match self {
            Purpose::Card => "card",
            Purpose::Result => "result",
        }
    }

    fn file(self) -> &'static str {
        match self {
            Purpose::Card => "card.key",
            Purpose::Result => "result.key",
        }
    }
}

pub struct KeyPair {
    pub purpose: Purpose,
    pub signing: SigningKey,
    /// `<purpose>-<RFC 7638 thumbprint>`.
    pub kid: String,
}

impl KeyPair {
    pub fn from_seed(purpose: Purpose, seed: &[u8; 32]) -> KeyPair {
        let signing = SigningKey::from_bytes(seed);
        let kid = format!("{}-{}", purpose.name(), super::thumbprint(&signing.verifying_key()));
        KeyPair { purpose, signing, kid }
    }

    /// The public JWK.
    pub fn jwk(&self, status: &str) -> Value {
        json!({
            "kty": "OKP",
            "crv": "Ed25519",
            "x": base64url_encode(self.signing.verifying_key().as_bytes()),
            "kid": self.kid,
            "alg": "EdDSA",
            "use": "sig",
            "key_ops": ["verify"],
            "purpose": self.purpose.name(),
            "status": status,
        })
    }
}

pub struct Keyring {
    pub card: KeyPair,
    pub result: KeyPair,
    /// Public JWKs of rotated-out keys (`status: retired`).
    pub retired: Vec<Value>,
}

/// Where the keys live.
#[derive(Debug, Clone)]
pub struct KeyPaths {
    pub card: PathBuf,
    pub result: PathBuf,
    pub retired: PathBuf,
    /// The state directory the files under it are reached from (`statedir::locate`).
    pub state_dir: PathBuf,
}

impl KeyPaths {
    pub fn new(state_dir: &Path, card: Option<&Path>, result: Option<&Path>) -> KeyPaths {
        let dir = state_dir.join("keys");
        KeyPaths {
            card: card.map_or_else(|| dir.join(Purpose::Card.file()), Path::to_path_buf),
            result: result.map_or_else(|| dir.join(Purpose::Result.file()), Path::to_path_buf),
            retired: dir.join("retired.json"),
            state_dir: state_dir.to_owned(),
        }
    }

    fn locate(&self, path: &Path) -> io::Result<(crate::statedir::Dir, std::ffi::OsString)> {
        crate::statedir::locate(&self.state_dir, path, true)
    }
}

impl Keyring {
    /// Loads the keys, generating any that do not exist yet.
    pub fn load_or_create(paths: &KeyPaths) -> io::Result<Keyring> {
        let card = load_or_create(paths, &paths.card, Purpose::Card)?;
        let result = load_or_create(paths, &paths.result, Purpose::Result)?;
        Ok(Keyring { card, result, retired: retired(paths)? })
    }

    /// Replaces both keys with new ones; the old public keys join the retired list. A key that did not exist is only
    /// made: a key that never signed anything is never listed as retired. Returns the new keyring and how many keys
    /// were retired.
    pub fn rotate(paths: &KeyPaths, now_ms: u64) -> io::Result<(Keyring, usize)> {
        let mut retired = retired(paths)?;
        let mut rotated = 0;
        for (path, purpose) in [(&paths.card, Purpose::Card), (&paths.result, Purpose::Result)] {
            let Some(old) = load(paths, path, purpose)? else { continue };
            let mut jwk = old.jwk("retired");
            if let Some(map) = jwk.as_object_mut() {
                map.insert("retired_at".into(), crate::clock::rfc3339(now_ms).into());
            }
            retired.push(jwk);
            rotated += 1;
        }
        let (dir, name) = paths.locate(&paths.retired)?;
        let list = serde_json::to_string_pretty(&retired).unwrap_or_default();
        dir.write_atomically(&name, &[list.as_bytes()], 0o644)?;
        for (path, purpose) in [(&paths.card, Purpose::Card), (&paths.result, Purpose::Result)] {
            let (dir, name) = paths.locate(path)?;
            dir.write_atomically(&name, &[format!("{}\n", hex_encode(&random_bytes::<32>()?)).as_bytes()], 0o600)?;
            log::info!("new {} key written to {}", purpose.name(), path.display());
        }
        Ok((Keyring::load_or_create(paths)?, rotated))
    }

    /// The JWKS: active keys first, then retired ones.
    pub fn jwks(&self) -> Value {
        let mut keys = vec![self.card.jwk("active"), self.result.jwk("active")];
        keys.extend(self.retired.iter().cloned());
        json!({ "keys": keys })
    }
}

fn load_or_create(paths: &KeyPaths, path: &Path, purpose: Purpose) -> io::Result<KeyPair> {
    if let Some(pair) = load(paths, path, purpose)? {
        return Ok(pair);
    }
    let seed = random_bytes::<32>()?;
    let (dir, name) = paths.locate(path)?;
    dir.write_atomically(&name, &[format!("{}\n", hex_encode(&seed)).as_bytes()], 0o600)?;
    log::info!("generated the {} key at {}", purpose.name(), path.display());
    Ok(KeyPair::from_seed(purpose, &seed))
}

/// The key at `path`, `None` if there is none.
fn load(paths: &KeyPaths, path: &Path, purpose: Purpose) -> io::Result<Option<KeyPair>> {
    let (dir, name) = paths.locate(path)?;
    let Some(bytes) = dir.read(&name)? else { return Ok(None) };
    let seed: [u8; 32] = std::str::from_utf8(&bytes)
        .ok()
        .and_then(|text| hex_decode(text.trim()))
        .and_then(|b| b.try_into().ok())
        .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidData, format!("{}: not 64 hex digits", path.display())))?;
    Ok(Some(KeyPair::from_seed(purpose, &seed)))
}

/// The public keys of rotated-out keys (none before the first rotation).
fn retired(paths: &KeyPaths) -> io::Result<Vec<Value>> {
    let (dir, name) = paths.locate(&paths.retired)?;
    match dir.read(&name)? {
        Some(bytes) => serde_json::from_slice::<Vec<Value>>(&bytes)
            .map_err(|e| io::Error::new(io::ErrorKind::InvalidData, format!("{}: {e}", paths.retired.display()))),
        None => Ok(Vec::new()),
    }
}

/// `N` bytes from the kernel's CSPRNG (keys, API keys, the shared store's node token).
pub fn random_bytes<const N: usize>() -> io::Result<[u8; N]> {
    let mut bytes = [0u8; N];
    std::fs::File::open("/dev/urandom")?.read_exact(&mut bytes)?;
    Ok(bytes)
}
