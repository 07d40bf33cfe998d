//! API keys for the protected core endpoints: a file in the state directory with one key per line (blank lines and
//! `#` comments allowed), re-read when it changes, so `websearchd apikey new` takes effect without a restart.
//!
//! A presented key is compared with every stored key through their SHA-256 digests, in constant time, so neither
//! the position nor the length of a mismatch shows in the timing. Keys are never logged.

use std::collections::HashMap;
use std::io::{self, Write};
use std::net::IpAddr;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::{Duration, Instant, SystemTime};

use crate::codec::base64url_encode;
use crate::error::ApiError;
use crate::sign::sha256;
use crate::statedir::SMALL_FILE_BYTES_MAX;

/// The keys file's name in the state directory.
pub const API_KEYS_FILE: &str = "api-keys";

/// The prefix of generated keys (it makes them easy to find in a secret scanner).
pub const KEY_PREFIX: &str = "wsk_";

/// The prefix of an agent's key (`apikey new --agent`): it opens the Tavily door only, not the operator's view
/// (`/core/state`, `/core/meshgraph`).
pub const AGENT_KEY_PREFIX: &str = "wsa_";

/// The length of a generated key (the prefix and 32 random bytes in base64url); a key typed by hand must be at
/// least this long, or it is ignored with a warning.
pub const KEY_LEN_MIN: usize = KEY_PREFIX.len() + 43;

/// How often the file's content is read again even when its size and modification time look unchanged (an edit
/// within the file system's timestamp resolution keeps both).
pub const RECHECK_INTERVAL: Duration = Duration::from_secs(1);

/// Failed attempts one client address (IPv6: /64) may make in `FAILURE_WINDOW`; past them, 429 until it ends.
pub const FAILURES_MAX: u32 = 10;
pub const FAILURE_WINDOW: Duration = Duration::from_secs(60);
/// Client addresses whose failures are remembered; past it, expired entries are dropped, and if none is, a new
/// address is not tracked (memory stays bounded; keys are long enough that guessing is hopeless anyway, the limit is
/// against noise and hand-made keys).
pub const FAILURE_CLIENTS_MAX: usize = 4_096;

/// Permission bits that make a keys file unsafe: any access for others, or write access for the group. (Group read
/// is allowed, for a service that reads the file through its group.)
const UNSAFE_MODE_BITS: u32 = 0o027;

pub struct ApiKeys {
    path: PathBuf,
    cache: Mutex<Cache>,
    failures: Mutex<HashMap<IpAddr, Failures>>,
}

#[derive(Default)]
struct Cache {
    /// The file's modification time and length when it was last read.
    stamp: Option<(SystemTime, u64)>,
    /// SHA-256 of the content last read, and when it was read.
    content: Option<[u8; 32]>,
    read_at: Option<Instant>,
    keys: Keys,
}

#[derive(Default, Clone)]
enum Keys {
    #[default]
    None,
    Digests(Vec<[u8; 32]>),
    /// The file exists but must not be used (its permissions), with the reason for the log and the client.
    Unusable(String),
}

#[derive(Clone, Copy)]
struct Failures {
    count: u32,
    window_start: Instant,
}

impl ApiKeys {
    pub fn new(path: &Path) -> ApiKeys {
        ApiKeys { path: path.to_owned(), cache: Mutex::new(Cache::default()), failures: Mutex::new(HashMap::new()) }
    }

    /// `Ok` when `presented` (the `X-WALLET` header) is one of the keys; otherwise the error to send. `client` is the
    /// caller's address key (`http::client_addr::key`): its failed attempts are counted and, past `FAILURES_MAX` in
    /// `FAILURE_WINDOW`, answered with 429 before any key is compared.
    /// An agent's key (`AGENT_KEY_PREFIX`) is one of the keys but opens the Tavily door only: 403 `api_key_scope`.
    pub fn check(&self, presented: Option<&str>, client: IpAddr, now: Instant) -> Result<(), ApiError> {
        self.find(presented, client, now)?;
        if presented.is_some_and(|k| k.trim().starts_with(AGENT_KEY_PREFIX)) {
            return Err(ApiError::new(
                403,
                "api_key_scope",
                "an agent's key (made with `apikey new --agent`) opens the Tavily door, not the operator's view",
            ));
        }
        Ok(())
    }

    /// `check`, with the id of the key found: the first 8 hex digits of its SHA-256 (`key_id`), which names it in
    /// metrics without saying anything of the key.
    pub fn find(&self, presented: Option<&str>, client: IpAddr, now: Instant) -> Result<String, ApiError> {
        let Some(presented) = presented.map(str::trim).filter(|k| !k.is_empty()) else {
            return Err(ApiError::new(
                403,
                "api_key_required",
                "this endpoint needs an API key in the X-WALLET header (keys come from the operator)",
            ));
        };
        if let Some(wait) = self.limited(client, now) {
            // Rounded up: a client that waits what it is told is never refused again for the same window.
            let secs = (wait.as_secs() + u64::from(wait.subsec_nanos() > 0)).max(1);
            return Err(ApiError::new(
                429,
                "api_key_attempts",
                format!("too many failed API key attempts from this address; retry in {secs} s"),
            )
            .header("Retry-After", secs.to_string()));
        }
        let digests = match self.keys(now) {
            Keys::Unusable(why) => {
                return Err(ApiError::unavailable("api_keys_unusable", format!("the API keys file {why}"), 60));
            }
            Keys::None => Vec::new(),
            Keys::Digests(d) => d,
        };
        let found = holds(&digests, presented);
        let mut failures = self.failures.lock().unwrap_or_else(|p| p.into_inner());
        if found {
            failures.remove(&client);
            return Ok(key_id(presented));
        }
        if failures.len() >= FAILURE_CLIENTS_MAX {
            failures.retain(|_, f| now.duration_since(f.window_start) < FAILURE_WINDOW);
        }
        if failures.len() < FAILURE_CLIENTS_MAX || failures.contains_key(&client) {
            let f = failures.entry(client).or_insert(Failures { count: 0, window_start: now });
            if now.duration_since(f.window_start) >= FAILURE_WINDOW {
                *f = Failures { count: 0, window_start: now };
            }
            f.count = f.count.saturating_add(1);
        }
        Err(ApiError::new(403, "api_key_invalid", "the X-WALLET header does not carry a valid API key"))
    }

    /// The id of `presented` when it is one of the keys, without counting a failure or limiting: for a caller that
    /// is let through anyway when it is not (the Tavily door's free rules), whose failure `find` counts only when
    /// it is refused.
    pub fn matches(&self, presented: &str, now: Instant) -> Option<String> {
        let presented = presented.trim();
        let Keys::Digests(digests) = self.keys(now) else { return None };
        holds(&digests, presented).then(|| key_id(presented))
    }

    /// How long `client` must wait before another attempt, if it is limited now.
    fn limited(&self, client: IpAddr, now: Instant) -> Option<Duration> {
        let failures = self.failures.lock().unwrap_or_else(|p| p.into_inner());
        match failures.get(&client) {
            Some(f) => {
                let elapsed = now.duration_since(f.window_start);
                (f.count >= FAILURES_MAX && elapsed < FAILURE_WINDOW).then(|| FAILURE_WINDOW - elapsed)
            }
            None => None,
        }
    }

    /// How many keys the file holds now.
    pub fn count(&self) -> usize {
        match self.keys(Instant::now()) {
            Keys::Digests(d) => d.len(),
            _ => 0,
        }
    }

    fn keys(&self, now: Instant) -> Keys {
        let mut cache = self.cache.lock().unwrap_or_else(|p| p.into_inner());
        // A link is not followed, as `apikey new` does not follow it (`statedir`).
        let meta = std::fs::symlink_metadata(&self.path).ok();
        let Some(meta) = meta else {
            *cache = Cache::default();
            return Keys::None;
        };
        let mode = meta.permissions().mode();
        let unusable = if meta.is_symlink() {
            Some(
                "is a symbolic link, which is not followed; put the file itself there, or name it in \
                  WEBSEARCHD_API_KEYS_FILE"
                    .to_owned(),
            )
        } else if mode & UNSAFE_MODE_BITS != 0 {
            Some(format!(
                "is readable or writable by other users (mode {:04o}); run `chmod 600 {}`",
                mode & 0o7777,
                self.path.display()
            ))
        } else if meta.len() > SMALL_FILE_BYTES_MAX {
            Some(format!("is larger than {SMALL_FILE_BYTES_MAX} bytes"))
        } else {
            None
        };
        if let Some(why) = unusable {
            if !matches!(&cache.keys, Keys::Unusable(w) if *w == why) {
                log::error!("{}: {why}; no API key is accepted until then", self.path.display());
            }
            *cache = Cache { keys: Keys::Unusable(why.clone()), ..Cache::default() };
            return Keys::Unusable(why);
        }
        let stamp = meta.modified().ok().map(|m| (m, meta.len()));
        let due = cache.read_at.is_none_or(|t| now.duration_since(t) >= RECHECK_INTERVAL);
        if stamp != cache.stamp || due {
            let read = crate::statedir::read_file(&self.path, SMALL_FILE_BYTES_MAX);
            match read {
                Ok(bytes) => {
                    let content = sha256(&bytes);
                    if cache.content != Some(content) {
                        let keys = parse_keys(&String::from_utf8_lossy(&bytes), &self.path);
                        cache.keys = Keys::Digests(keys.iter().map(|k| sha256(k.as_bytes())).collect());
                        cache.content = Some(content);
                    }
                    cache.stamp = stamp;
                    cache.read_at = Some(now);
                }
                Err(e) => log::warn!("{}: cannot read the API keys: {e}", self.path.display()),
            }
        }
        cache.keys.clone()
    }
}

/// Whether `presented` is one of the keys whose digests are `digests`: each compared in constant time, all of them.
fn holds(digests: &[[u8; 32]], presented: &str) -> bool {
    let digest = sha256(presented.as_bytes());
    let mut found = 0u8;
    for d in digests {
        found |= u8::from(constant_time_eq(d, &digest));
    }
    found == 1
}

/// The id of a key in metrics and logs: the first 8 hex digits of its SHA-256 (`printf %s KEY | sha256sum | cut -c1-8`).
pub fn key_id(key: &str) -> String {
    crate::sign::sha256_hex(key.as_bytes()).chars().take(8).collect()
}

/// The keys of a keys file's text; a key shorter than `KEY_LEN_MIN` is skipped with a warning naming its line
/// (never the key).
fn parse_keys(text: &str, path: &Path) -> Vec<String> {
    let mut keys = Vec::new();
    for (n, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let Some(key) = line.split_whitespace().next() else { continue };
        if key.chars().count() < KEY_LEN_MIN {
            log::warn!(
                "{} line {}: a key shorter than {KEY_LEN_MIN} characters is ignored (make one with `websearchd apikey \
                 new`)",
                path.display(),
                n + 1
            );
            continue;
        }
        keys.push(key.to_owned());
    }
    keys
}

/// Makes a new key (32 random bytes), appends it to the keys file at `path` (created 0600, with the state
/// directory 0700 if need be; reached from `state_dir` through `statedir`, never through a link) and returns it.
pub fn add_new_key(state_dir: &Path, path: &Path, comment: Option<&str>) -> io::Result<String> {
    add_new_key_with(state_dir, path, comment, KEY_PREFIX)
}

/// `add_new_key` with `prefix` (`KEY_PREFIX`, or `AGENT_KEY_PREFIX` for an agent's key).
pub fn add_new_key_with(state_dir: &Path, path: &Path, comment: Option<&str>, prefix: &str) -> io::Result<String> {
    let random = crate::sign::keys::random_bytes::<32>()?;
    let key = format!("{prefix}{}", base64url_encode(&random));
    let (dir, name) = crate::statedir::locate(state_dir, path, true)?;
    // A file made by hand may be wider open; keys are secrets.
    let mut file = dir.open_append(&name, 0o600)?;
    let line = match comment.map(|c| c.replace(['\n', '\r'], " ")) {
        Some(c) if !c.trim().is_empty() => format!("{key} # {}\n", c.trim()),
        _ => format!("{key}\n"),
    };
    file.write_all(line.as_bytes())
        .and_then(|()| file.sync_all())
        .map_err(|e| io::Error::new(e.kind(), format!("{}: {e}", path.display())))?;
    Ok(key)
}

/// Whether two digests are equal, in a time that does not depend on where they differ (also the shared store's
/// answer tags, `store::entry`).
pub(crate) fn constant_time_eq(a: &[u8; 32], b: &[u8; 32]) -> bool {
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

    fn temp(tag: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("websearchd-apikeys-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        dir.join("api-keys")
    }

    fn ip(n: u8) -> IpAddr {
        IpAddr::from([192, 0, 2, n])
    }

    #[test]
    fn keys_are_read_and_checked_and_reread_on_change() {
        let path = temp("reread");
        let keys = ApiKeys::new(&path);
        let now = Instant::now();
        assert_eq!(keys.check(Some("anything"), ip(1), now).unwrap_err().code, "api_key_invalid");
        assert_eq!(keys.check(None, ip(1), now).unwrap_err().code, "api_key_required");
        assert_eq!(keys.check(Some("  "), ip(1), now).unwrap_err().code, "api_key_required");
        let first = add_new_key(path.parent().unwrap(), &path, Some("ops laptop")).unwrap();
        assert!(first.starts_with(KEY_PREFIX) && first.len() == KEY_LEN_MIN);
        keys.check(Some(&first), ip(1), now).unwrap();
        assert_eq!(keys.check(Some(&first[..20]), ip(1), now).unwrap_err().code, "api_key_invalid");
        let manual = "m".repeat(KEY_LEN_MIN);
        let text = std::fs::read_to_string(&path).unwrap();
        std::fs::write(&path, format!("# operators\n\n{text}  {manual}  \n")).unwrap();
        keys.check(Some(&manual), ip(1), now).unwrap();
        keys.check(Some(&first), ip(1), now).unwrap();
        assert_eq!(keys.count(), 2);
        assert_eq!(std::fs::metadata(&path).unwrap().permissions().mode() & 0o777, 0o600);
        std::fs::remove_file(&path).unwrap();
        assert_eq!(keys.check(Some(&first), ip(1), now).unwrap_err().code, "api_key_invalid");
    }

    /// An edit that keeps the size and the modification time is seen by its content.
    #[test]
    fn a_change_that_keeps_size_and_time_is_noticed() {
        let path = temp("same-stamp");
        let (old, new) = ("a".repeat(KEY_LEN_MIN), "b".repeat(KEY_LEN_MIN));
        std::fs::write(&path, format!("{old}\n")).unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).unwrap();
        let mtime = std::fs::metadata(&path).unwrap().modified().unwrap();
        let keys = ApiKeys::new(&path);
        let t0 = Instant::now();
        keys.check(Some(&old), ip(1), t0).unwrap();
        std::fs::write(&path, format!("{new}\n")).unwrap();
        std::fs::File::options().write(true).open(&path).unwrap().set_modified(mtime).unwrap();
        let later = t0 + RECHECK_INTERVAL;
        assert_eq!(keys.check(Some(&old), ip(1), later).unwrap_err().code, "api_key_invalid");
        keys.check(Some(&new), ip(1), later).unwrap();
    }

    /// The keys file is read within `SMALL_FILE_BYTES_MAX`: a larger one is unusable, said once, never read whole
    /// (it was read to its end, however large).
    #[test]
    fn a_keys_file_over_its_cap_is_unusable() {
        let path = temp("large");
        let key = "k".repeat(KEY_LEN_MIN);
        let padding = format!("# {}\n", "x".repeat(1_000)).repeat(SMALL_FILE_BYTES_MAX as usize / 1_000);
        std::fs::write(&path, format!("{key}\n{padding}")).unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).unwrap();
        let keys = ApiKeys::new(&path);
        let e = keys.check(Some(&key), ip(1), Instant::now()).unwrap_err();
        assert_eq!(e.code, "api_keys_unusable");
        assert!(e.message.contains(&format!("larger than {SMALL_FILE_BYTES_MAX} bytes")), "{}", e.message);
        std::fs::write(&path, format!("{key}\n")).unwrap();
        keys.check(Some(&key), ip(1), Instant::now()).unwrap();
    }

    #[test]
    fn short_keys_are_ignored() {
        let path = temp("short");
        let long = "k".repeat(KEY_LEN_MIN);
        let short = "k".repeat(KEY_LEN_MIN - 1);
        std::fs::write(&path, format!("x\n{short} # typed by hand\n{long}\n")).unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).unwrap();
        let keys = ApiKeys::new(&path);
        let now = Instant::now();
        for bad in ["x", short.as_str()] {
            assert_eq!(keys.check(Some(bad), ip(1), now).unwrap_err().code, "api_key_invalid");
        }
        keys.check(Some(&long), ip(1), now).unwrap();
        assert_eq!(keys.count(), 1);
    }

    #[test]
    fn a_file_others_can_read_is_refused_and_new_keys_tighten_it() {
        let path = temp("mode");
        let key = add_new_key(path.parent().unwrap(), &path, None).unwrap();
        let keys = ApiKeys::new(&path);
        let now = Instant::now();
        for (mode, usable) in [(0o600, true), (0o640, true), (0o644, false), (0o660, false), (0o604, false)] {
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(mode)).unwrap();
            let got = keys.check(Some(&key), ip(1), now);
            if usable {
                got.unwrap();
            } else {
                let e = got.unwrap_err();
                assert_eq!((e.status, e.code), (503, "api_keys_unusable"), "mode {mode:o}");
            }
        }
        add_new_key(path.parent().unwrap(), &path, None).unwrap();
        assert_eq!(std::fs::metadata(&path).unwrap().permissions().mode() & 0o777, 0o600);
        keys.check(Some(&key), ip(1), now).unwrap();
    }

    /// A link at the keys file's name is neither followed by `apikey new` nor read by the server.
    #[test]
    fn a_link_for_the_keys_file_is_refused() {
        let path = temp("link");
        let target = path.with_file_name("elsewhere");
        let key = add_new_key(path.parent().unwrap(), &target, None).unwrap();
        std::os::unix::fs::symlink(&target, &path).unwrap();
        let keys = ApiKeys::new(&path);
        let e = keys.check(Some(&key), ip(1), Instant::now()).unwrap_err();
        assert_eq!((e.status, e.code), (503, "api_keys_unusable"));
        assert!(e.message.contains("symbolic link"), "{}", e.message);
        let before = std::fs::read(&target).unwrap();
        let e = add_new_key(path.parent().unwrap(), &path, None).unwrap_err();
        assert!(e.to_string().contains("is a symbolic link"), "{e}");
        assert_eq!(std::fs::read(&target).unwrap(), before);
    }

    #[test]
    fn repeated_failures_are_slowed_per_address() {
        let path = temp("failures");
        let key = add_new_key(path.parent().unwrap(), &path, None).unwrap();
        let keys = ApiKeys::new(&path);
        let t0 = Instant::now();
        for _ in 0..FAILURES_MAX {
            assert_eq!(keys.check(Some("wrong"), ip(1), t0).unwrap_err().code, "api_key_invalid");
        }
        // Limited now, even with the right key; another address is not.
        let e = keys.check(Some(&key), ip(1), t0).unwrap_err();
        assert_eq!((e.status, e.code), (429, "api_key_attempts"));
        keys.check(Some(&key), ip(2), t0).unwrap();
        // The window ends; a success clears the count.
        keys.check(Some(&key), ip(1), t0 + FAILURE_WINDOW).unwrap();
        assert_eq!(keys.check(Some("wrong"), ip(1), t0 + FAILURE_WINDOW).unwrap_err().code, "api_key_invalid");
    }

    #[test]
    fn failure_memory_is_bounded() {
        let path = temp("bounded");
        let keys = ApiKeys::new(&path);
        let t0 = Instant::now();
        for n in 0..(FAILURE_CLIENTS_MAX as u32 + 10) {
            let addr = IpAddr::from((0x2001_0db8_u128 << 96 | u128::from(n) << 64).to_be_bytes());
            let _ = keys.check(Some("wrong"), addr, t0);
        }
        assert!(keys.failures.lock().unwrap().len() <= FAILURE_CLIENTS_MAX);
    }
}
