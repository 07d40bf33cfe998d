//! A shared answer as it is kept in the store: sealed by the node that writes it with an HMAC-SHA256 (RFC 2104) under
//! the fleet's secret, over the name it is kept under, the writer's clock and the answer's bytes, so that a reader
//! takes only what a node of its own fleet wrote for that very name, within its life. The life is the sealed time's,
//! never the TTL Redis has for the key: an entry set again after it expired (or within its life, with a new TTL) is as
//! old as its seal. Anyone else who can write the Redis (another fleet on the same server, someone on a plain
//! `redis://` path) can only make a node miss. Pure: bytes in, bytes out. Every entry of this form has carried the
//! time since the first shared answer (`wsa1`); an entry of any other form, one without it included, is refused.
//!
//! The entry: `MAGIC`, the writer's wall clock in ms (8 bytes, big-endian), the tag (32 bytes), then the answer.

use std::fmt;

use sha2::{Digest, Sha256};

/// An entry's first bytes (and the version of its form): what another version of the service wrote is a miss.
const MAGIC: &[u8; 4] = b"wsa1";
/// What the tag is over besides the name, the clock and the answer: a tag under the same secret for anything else
/// never passes for an answer's.
const CONTEXT: &[u8] = b"websearchd shared answer v1\n";
/// Bytes before the answer: the magic, the clock and the tag.
pub const HEADER_BYTES: usize = MAGIC.len() + 8 + 32;
/// Shortest secret accepted: 32 bytes (a 64-digit hex string is 64), HMAC-SHA256's own strength.
pub const SECRET_BYTES_MIN: usize = 32;
/// Longest secret file read.
const SECRET_BYTES_MAX: usize = 4_096;
/// How far ahead of the reader's clock a writer's may be: an entry sealed up to this much "later" is taken (as new).
/// An entry is stale once its sealed time and its TTL have passed by the reader's clock, with no allowance: a node
/// whose clock is behind the writer's serves it a little less long, a miss at worst. (It was two minutes each way:
/// an entry of a 10 s TTL set again 40 s later was served as new.)
pub const CLOCK_SKEW_MS_MAX: u64 = 5_000;

/// The fleet's secret, from `WEBSEARCHD_REDIS_SECRET_FILE` (never printed).
#[derive(Clone)]
pub struct Secret(Vec<u8>);

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Secret(hidden)")
    }
}

impl Secret {
    /// The secret in `text` (surrounding whitespace dropped): at least `SECRET_BYTES_MIN` bytes.
    pub fn new(text: &[u8]) -> Result<Secret, String> {
        let trimmed = text.trim_ascii();
        if trimmed.len() < SECRET_BYTES_MIN {
            return Err(format!(
                "{} bytes; at least {SECRET_BYTES_MIN} are needed (for example `openssl rand -hex 32`)",
                trimmed.len()
            ));
        }
        Ok(Secret(trimmed.to_vec()))
    }

    /// Reads the secret file (warning when group or others may read it): a regular file, never read through a link
    /// at its name (`O_NOFOLLOW`, as the state directory's files are).
    pub fn read(path: &std::path::Path) -> Result<Secret, String> {
        use std::io::Read as _;
        use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
        let named = |e: &dyn fmt::Display| format!("WEBSEARCHD_REDIS_SECRET_FILE {}: {e}", path.display());
        let opened =
            std::fs::OpenOptions::new().read(true).custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK).open(path);
        let file = opened.map_err(|e| match e.raw_os_error() {
            Some(libc::ELOOP) => named(&"is a symbolic link: refused (the secret is never read through a link)"),
            _ => named(&e),
        })?;
        let metadata = file.metadata().map_err(|e| named(&e))?;
        if !metadata.is_file() {
            return Err(named(&"is not a regular file: refused"));
        }
        if metadata.permissions().mode() & 0o077 != 0 {
            log::warn!("{} is readable by group or others; it holds the fleet's secret (chmod 600)", path.display());
        }
        let mut text = Vec::new();
        file.take(SECRET_BYTES_MAX as u64 + 1).read_to_end(&mut text).map_err(|e| named(&e))?;
        if text.len() > SECRET_BYTES_MAX {
            return Err(named(&format!("longer than {SECRET_BYTES_MAX} bytes")));
        }
        Secret::new(&text).map_err(|e| named(&e))
    }
}

/// Why an entry read back is not taken.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refused {
    /// Not in this form (too short, another magic).
    Form,
    /// Its tag is not the fleet's for this name, clock and answer.
    Tag,
    /// Sealed longer ago than its TTL by the reader's clock, or too far ahead of it.
    Stale,
    /// Longer than an answer is kept.
    TooLarge,
}

impl fmt::Display for Refused {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Refused::Form => "not a shared answer's form",
            Refused::Tag => "its tag is not the fleet's (written without the secret, or for another name)",
            Refused::Stale => "sealed outside its time to live by this node's clock",
            Refused::TooLarge => "larger than a shared answer",
        })
    }
}

/// The entry for `answer` kept under `name`, written at `now_ms`.
pub fn seal(secret: &Secret, name: &str, now_ms: u64, answer: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(HEADER_BYTES + answer.len());
    out.extend_from_slice(MAGIC);
    out.extend_from_slice(&now_ms.to_be_bytes());
    out.extend_from_slice(&tag(secret, name, now_ms, answer));
    out.extend_from_slice(answer);
    out
}

/// The answer in `entry`, read under `name` at `now_ms`, and its age in ms by the sealed time: if the fleet wrote it
/// there less than `ttl_ms` ago (and at most `CLOCK_SKEW_MS_MAX` ahead) and it is at most `answer_bytes_max` long.
pub fn open<'a>(
    secret: &Secret,
    name: &str,
    entry: &'a [u8],
    now_ms: u64,
    ttl_ms: u64,
    answer_bytes_max: usize,
) -> Result<(&'a [u8], u64), Refused> {
    let (Some(magic), Some(clock), Some(given), Some(answer)) =
        (entry.get(..4), entry.get(4..12), entry.get(12..HEADER_BYTES), entry.get(HEADER_BYTES..))
    else {
        return Err(Refused::Form);
    };
    if magic != MAGIC {
        return Err(Refused::Form);
    }
    if answer.len() > answer_bytes_max {
        return Err(Refused::TooLarge);
    }
    let written_ms = u64::from_be_bytes(clock.try_into().map_err(|_| Refused::Form)?);
    let given: &[u8; 32] = given.try_into().map_err(|_| Refused::Form)?;
    if !crate::apikeys::constant_time_eq(given, &tag(secret, name, written_ms, answer)) {
        return Err(Refused::Tag);
    }
    let age_ms = now_ms.saturating_sub(written_ms);
    if age_ms >= ttl_ms || written_ms > now_ms.saturating_add(CLOCK_SKEW_MS_MAX) {
        return Err(Refused::Stale);
    }
    Ok((answer, age_ms))
}

/// The tag: HMAC-SHA256 under the secret of the context, the name (its length first), the clock and the answer.
fn tag(secret: &Secret, name: &str, written_ms: u64, answer: &[u8]) -> [u8; 32] {
    let length = (name.len() as u64).to_be_bytes();
    hmac_sha256(&secret.0, &[CONTEXT, &length, name.as_bytes(), &written_ms.to_be_bytes(), answer])
}

/// SHA-256's block: a key is padded to it (or hashed first when longer).
const BLOCK_BYTES: usize = 64;

/// HMAC-SHA256 (RFC 2104) of the concatenated `parts` under `key`: H((K ^ opad) || H((K ^ ipad) || text)).
fn hmac_sha256(key: &[u8], parts: &[&[u8]]) -> [u8; 32] {
    let hashed;
    let key = if key.len() > BLOCK_BYTES {
        hashed = Sha256::digest(key);
        hashed.as_slice()
    } else {
        key
    };
    let mut block = [0u8; BLOCK_BYTES];
    block.iter_mut().zip(key).for_each(|(b, k)| *b = *k);
    let padded = |pad: u8| block.map(|b| b ^ pad);
    let mut inner = Sha256::new();
    inner.update(padded(0x36));
    for part in parts {
        inner.update(part);
    }
    let mut outer = Sha256::new();
    outer.update(padded(0x5c));
    outer.update(inner.finalize());
    outer.finalize().into()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hex(bytes: &[u8]) -> String {
        crate::codec::hex_encode(bytes)
    }

    /// RFC 4231's test cases 1, 2, 3, 4, 6 and 7 (5 is a truncated tag): short, long and over-a-block keys.
    #[test]
    fn hmac_sha256_meets_rfc_4231() {
        let cases: [(Vec<u8>, Vec<u8>, &str); 6] = [
            (vec![0x0b; 20], b"Hi There".to_vec(), "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7"),
            (
                b"Jefe".to_vec(),
                b"what do ya want for nothing?".to_vec(),
                "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843",
            ),
            (vec![0xaa; 20], vec![0xdd; 50], "773ea91e36800e46854db8ebd09181a72959098b3ef8c122d9635514ced565fe"),
            ((1..=25).collect(), vec![0xcd; 50], "82558a389a443c0ea4cc819899f2083a85f0faa3e578f8077a2e3ff46729665b"),
            (
                vec![0xaa; 131],
                b"Test Using Larger Than Block-Size Key - Hash Key First".to_vec(),
                "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54",
            ),
            (
                vec![0xaa; 131],
                b"This is a test using a larger than block-size key and a larger than block-size data. The key needs \
                  to be hashed before being used by the HMAC algorithm."
                    .to_vec(),
                "9b09ffa71b942fcb27635fbcd5b0e944bfdc63644f0713938a7f51535c3a35e2",
            ),
        ];
        for (key, data, expected) in cases {
            assert_eq!(hex(&hmac_sha256(&key, &[&data])), expected);
            // The same text in parts.
            let (a, b) = data.split_at(data.len() / 3);
            assert_eq!(hex(&hmac_sha256(&key, &[a, &[], b])), expected);
        }
    }

    fn secret(byte: u8) -> Secret {
        Secret::new(&[byte; 32]).unwrap()
    }

    const NOW: u64 = 1_800_000_000_000;
    const TTL: u64 = 600_000;

    #[test]
    fn an_entry_opens_only_for_its_secret_name_time_and_bytes() {
        let (s, answer) = (secret(b'a'), br#"{"results":[],"sources":[]}"#);
        let entry = seal(&s, "q\n10", NOW, answer);
        assert_eq!(entry.len(), HEADER_BYTES + answer.len());
        assert_eq!(open(&s, "q\n10", &entry, NOW, TTL, 1_000), Ok((&answer[..], 0)));
        // Its age is the sealed time's; a writer's clock ahead of the reader's (within the skew) makes it new.
        assert_eq!(open(&s, "q\n10", &entry, NOW + TTL - 1, TTL, 1_000), Ok((&answer[..], TTL - 1)));
        assert_eq!(open(&s, "q\n10", &entry, NOW - CLOCK_SKEW_MS_MAX, TTL, 1_000), Ok((&answer[..], 0)));
        // Another fleet's secret, another name (an entry copied to another key), another byte anywhere.
        assert_eq!(open(&secret(b'b'), "q\n10", &entry, NOW, TTL, 1_000), Err(Refused::Tag));
        assert_eq!(open(&s, "q\n1", &entry, NOW, TTL, 1_000), Err(Refused::Tag));
        for at in 4..entry.len() {
            let mut changed = entry.clone();
            changed[at] ^= 1;
            assert_eq!(open(&s, "q\n10", &changed, NOW, TTL, 1_000), Err(Refused::Tag), "byte {at}");
        }
        let mut longer = entry.clone();
        longer.push(b' ');
        assert_eq!(open(&s, "q\n10", &longer, NOW, TTL, 1_000), Err(Refused::Tag));
        // An old entry set again (with a new TTL) is stale once its sealed life is over, with no allowance (issue 41:
        // a 10 s entry set again was served 40 s old); so is one from a clock too far ahead.
        assert_eq!(open(&s, "q\n10", &entry, NOW + TTL, TTL, 1_000), Err(Refused::Stale));
        assert_eq!(open(&s, "q\n10", &entry, NOW + 40_000, 10_000, 1_000), Err(Refused::Stale));
        assert_eq!(open(&s, "q\n10", &entry, NOW - CLOCK_SKEW_MS_MAX - 1, TTL, 1_000), Err(Refused::Stale));
        // Not this form: the old plain JSON, a cut header, an empty value (what GETRANGE gives for no key).
        assert_eq!(open(&s, "q\n10", answer, NOW, TTL, 1_000), Err(Refused::Form));
        assert_eq!(open(&s, "q\n10", &entry[..HEADER_BYTES - 1], NOW, TTL, 1_000), Err(Refused::Form));
        assert_eq!(open(&s, "q\n10", b"", NOW, TTL, 1_000), Err(Refused::Form));
        // Longer than the bound: refused before its tag is computed.
        assert_eq!(open(&s, "q\n10", &entry, NOW, TTL, answer.len() - 1), Err(Refused::TooLarge));
    }

    #[test]
    fn a_secret_is_long_enough_and_never_printed() {
        assert!(Secret::new(b"  short\n").unwrap_err().contains("at least 32"));
        let s = Secret::new(format!("{}\n", "ab".repeat(32)).as_bytes()).unwrap();
        assert_eq!(s.0.len(), 64, "the newline is not part of it");
        assert_eq!(format!("{s:?}"), "Secret(hidden)");
        // A file named but missing is an error that names the variable (the node does not start).
        let e = Secret::read(std::path::Path::new("/nonexistent/fleet.secret")).unwrap_err();
        assert!(e.starts_with("WEBSEARCHD_REDIS_SECRET_FILE /nonexistent/fleet.secret: "), "{e}");
    }

    /// Issue 41, item 7: the secret file is opened without following a link at its name (as the state directory's
    /// files are), and only if it is a regular file.
    #[test]
    fn the_secret_file_is_never_read_through_a_link() {
        let dir = std::env::temp_dir().join(format!("websearchd-secret-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let (file, link) = (dir.join("fleet.secret"), dir.join("link.secret"));
        std::fs::write(&file, "ab".repeat(32)).unwrap();
        std::os::unix::fs::symlink(&file, &link).unwrap();
        assert!(Secret::read(&file).is_ok());
        let e = Secret::read(&link).unwrap_err();
        assert!(e.contains("link.secret") && e.contains("symbolic link"), "{e}");
        let e = Secret::read(&dir).unwrap_err();
        assert!(e.contains("not a regular file"), "{e}");
        let _ = std::fs::remove_dir_all(&dir);
    }
}
