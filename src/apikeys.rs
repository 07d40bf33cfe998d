//! API keys for the protected core endpoints: a file in the state directory with one key per line (blank lines and
//! `#` comments allowed), re-read when it changes, so `websearchd apikey new` takes effect without a restart.
//!
//! A presented key is compared with every stored key through their SHA-256 digests, in constant time, so neither
//! the position nor the length of a mismatch shows in the timing. Keys are never logged.

use std::io::{self, Read, Write};
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::SystemTime;

use crate::codec::base64url_encode;
use crate::error::ApiError;
use crate::sign::sha256;

/// The keys file's name in the state directory.
pub const API_KEYS_FILE: &str = "api-keys";

/// The prefix of generated keys (it makes them easy to find in a secret scanner).
pub const KEY_PREFIX: &str = "wsk_";

pub struct ApiKeys {
    path: PathBuf,
    cache: Mutex<Cache>,
}

#[derive(Default)]
struct Cache {
    /// The file's modification time and length when it was read.
    stamp: Option<(SystemTime, u64)>,
    digests: Vec<[u8; 32]>,
}

impl ApiKeys {
    pub fn new(path: &Path) -> ApiKeys {
        ApiKeys { path: path.to_owned(), cache: Mutex::new(Cache::default()) }
    }

    /// `Ok` when `presented` (the `X-WALLET` header) is one of the keys; otherwise the 403 to send.
    pub fn check(&self, presented: Option<&str>) -> Result<(), ApiError> {
        let Some(presented) = presented.map(str::trim).filter(|k| !k.is_empty()) else {
            return Err(ApiError::new(
                403,
                "api_key_required",
                "this endpoint needs an API key in the X-WALLET header (keys come from the operator)",
            ));
        };
        let digest = sha256(presented.as_bytes());
        let digests = self.digests();
        let mut found = 0u8;
        for d in &digests {
            found |= u8::from(constant_time_eq(d, &digest));
        }
        if found == 1 {
            Ok(())
        } else {
            Err(ApiError::new(403, "api_key_invalid", "the X-WALLET header does not carry a valid API key"))
        }
    }

    /// How many keys the file holds now.
    pub fn count(&self) -> usize {
        self.digests().len()
    }

    fn digests(&self) -> Vec<[u8; 32]> {
        let mut cache = self.cache.lock().unwrap_or_else(|p| p.into_inner());
        let stamp = std::fs::metadata(&self.path).ok().and_then(|m| Some((m.modified().ok()?, m.len())));
        if stamp.is_none() {
            cache.stamp = None;
            cache.digests.clear();
        } else if stamp != cache.stamp {
            match read_keys(&self.path) {
                Ok(keys) => {
                    cache.digests = keys.iter().map(|k| sha256(k.as_bytes())).collect();
                    cache.stamp = stamp;
                }
                Err(e) => log::warn!("{}: cannot read the API keys: {e}", self.path.display()),
            }
        }
        cache.digests.clone()
    }
}

/// The keys in a keys file.
pub fn read_keys(path: &Path) -> io::Result<Vec<String>> {
    let text = std::fs::read_to_string(path)?;
    Ok(text
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .filter_map(|l| l.split_whitespace().next())
        .map(str::to_owned)
        .collect())
}

/// Makes a new key (32 random bytes), appends it to the keys file (created 0600) and returns it.
pub fn add_new_key(path: &Path, comment: Option<&str>) -> io::Result<String> {
    use std::os::unix::fs::OpenOptionsExt;
    let mut random = [0u8; 32];
    std::fs::File::open("/dev/urandom")?.read_exact(&mut random)?;
    let key = format!("{KEY_PREFIX}{}", base64url_encode(&random));
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir)?;
    }
    let mut file = std::fs::OpenOptions::new().append(true).create(true).mode(0o600).open(path)?;
    let line = match comment.map(|c| c.replace(['\n', '\r'], " ")) {
        Some(c) if !c.trim().is_empty() => format!("{key} # {}\n", c.trim()),
        _ => format!("{key}\n"),
    };
    file.write_all(line.as_bytes())?;
    file.sync_all()?;
    Ok(key)
}

fn constant_time_eq(a: &[u8; 32], b: &[u8; 32]) -> bool {
    let mut diff = 0u8;
    for (x, y) in a.iter().zip(b) {
        diff |= x ^ y;
    }
    // Keep the compiler from turning the loop into an early exit.
    std::hint::black_box(diff) == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_are_read_and_checked_and_reread_on_change() {
        let dir = std::env::temp_dir().join(format!("websearchd-apikeys-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let path = dir.join("api-keys");
        let keys = ApiKeys::new(&path);
        assert_eq!(keys.check(Some("anything")).unwrap_err().code, "api_key_invalid");
        assert_eq!(keys.check(None).unwrap_err().code, "api_key_required");
        assert_eq!(keys.check(Some("  ")).unwrap_err().code, "api_key_required");
        let first = add_new_key(&path, Some("ops laptop")).unwrap();
        assert!(first.starts_with(KEY_PREFIX) && first.len() == 4 + 43);
        keys.check(Some(&first)).unwrap();
        assert_eq!(keys.check(Some(&first[..20])).unwrap_err().code, "api_key_invalid");
        let text = std::fs::read_to_string(&path).unwrap();
        std::fs::write(&path, format!("# operators\n\n{text}  manual-key-1  \n")).unwrap();
        keys.check(Some("manual-key-1")).unwrap();
        keys.check(Some(&first)).unwrap();
        assert_eq!(keys.count(), 2);
        use std::os::unix::fs::PermissionsExt;
        assert_eq!(std::fs::metadata(&path).unwrap().permissions().mode() & 0o777, 0o600);
        std::fs::remove_file(&path).unwrap();
        assert_eq!(keys.check(Some(&first)).unwrap_err().code, "api_key_invalid");
    }
}
