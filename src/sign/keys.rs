//! The service's keys: generated on first start in `<state>/keys/` (files 0600, written atomically), or loaded from
//! configured paths; `websearchd keygen` rotates them, keeping the old public keys published as retired so earlier
//! signatures still verify.

use std::io::{self, Read, Write};
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
}

impl KeyPaths {
    pub fn new(state_dir: &Path, card: Option<&Path>, result: Option<&Path>) -> KeyPaths {
        let dir = state_dir.join("keys");
        KeyPaths {
            card: card.map_or_else(|| dir.join(Purpose::Card.file()), Path::to_path_buf),
            result: result.map_or_else(|| dir.join(Purpose::Result.file()), Path::to_path_buf),
            retired: dir.join("retired.json"),
        }
    }
}

impl Keyring {
    /// Loads the keys, generating any that do not exist yet.
    pub fn load_or_create(paths: &KeyPaths) -> io::Result<Keyring> {
        let card = load_or_create(&paths.card, Purpose::Card)?;
        let result = load_or_create(&paths.result, Purpose::Result)?;
        let retired = match std::fs::read(&paths.retired) {
            Ok(bytes) => serde_json::from_slice::<Vec<Value>>(&bytes)
                .map_err(|e| io::Error::new(io::ErrorKind::InvalidData, format!("{}: {e}", paths.retired.display())))?,
            Err(e) if e.kind() == io::ErrorKind::NotFound => Vec::new(),
            Err(e) => return Err(e),
        };
        Ok(Keyring { card, result, retired })
    }

    /// Replaces both keys with new ones; the old public keys join the retired list. Returns the new keyring.
    pub fn rotate(paths: &KeyPaths, now_ms: u64) -> io::Result<Keyring> {
        let old = Keyring::load_or_create(paths)?;
        let mut retired = old.retired;
        for pair in [&old.card, &old.result] {
            let mut jwk = pair.jwk("retired");
            if let Some(map) = jwk.as_object_mut() {
                map.insert("retired_at".into(), crate::clock::rfc3339(now_ms).into());
            }
            retired.push(jwk);
        }
        write_atomically(&paths.retired, serde_json::to_string_pretty(&retired).unwrap_or_default().as_bytes(), 0o644)?;
        for (path, purpose) in [(&paths.card, Purpose::Card), (&paths.result, Purpose::Result)] {
            write_atomically(path, format!("{}\n", hex_encode(&random_bytes::<32>()?)).as_bytes(), 0o600)?;
            log::info!("new {} key written to {}", purpose.name(), path.display());
        }
        Keyring::load_or_create(paths)
    }

    /// The JWKS: active keys first, then retired ones.
    pub fn jwks(&self) -> Value {
        let mut keys = vec![self.card.jwk("active"), self.result.jwk("active")];
        keys.extend(self.retired.iter().cloned());
        json!({ "keys": keys })
    }
}

fn load_or_create(path: &Path, purpose: Purpose) -> io::Result<KeyPair> {
    match std::fs::read_to_string(path) {
        Ok(text) => {
            let seed: [u8; 32] = hex_decode(text.trim()).and_then(|b| b.try_into().ok()).ok_or_else(|| {
                io::Error::new(io::ErrorKind::InvalidData, format!("{}: not 64 hex digits", path.display()))
            })?;
            Ok(KeyPair::from_seed(purpose, &seed))
        }
        Err(e) if e.kind() == io::ErrorKind::NotFound => {
            let seed = random_bytes::<32>()?;
            write_atomically(path, format!("{}\n", hex_encode(&seed)).as_bytes(), 0o600)?;
            log::info!("generated the {} key at {}", purpose.name(), path.display());
            Ok(KeyPair::from_seed(purpose, &seed))
        }
        Err(e) => Err(io::Error::new(e.kind(), format!("{}: {e}", path.display()))),
    }
}

/// `N` bytes from the kernel's CSPRNG (keys, API keys, the shared store's node token).
pub fn random_bytes<const N: usize>() -> io::Result<[u8; N]> {
    let mut bytes = [0u8; N];
    std::fs::File::open("/dev/urandom")?.read_exact(&mut bytes)?;
    Ok(bytes)
}

/// Writes a file so that a crash leaves either the old content or the new, never a mix: a temporary file in the
/// same directory, fsynced, renamed over the target, and the directory fsynced.
pub fn write_atomically(path: &Path, bytes: &[u8], mode: u32) -> io::Result<()> {
    use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
    let dir = path.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."));
    std::fs::DirBuilder::new().recursive(true).mode(0o700).create(dir)?;
    let tmp = dir.join(format!(".{}.tmp", path.file_name().and_then(|n| n.to_str()).unwrap_or("file")));
    {
        let mut f = std::fs::OpenOptions::new().write(true).create(true).truncate(true).mode(mode).open(&tmp)?;
        f.write_all(bytes)?;
        f.sync_all()?;
    }
    std::fs::rename(&tmp, path)?;
    std::fs::File::open(dir)?.sync_all()
}
