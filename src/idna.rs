//! A domain name as a browser reads it: UTS #46 processing (IDNA) with the options the WHATWG URL standard's
//! "domain to ASCII" gives it (nontransitional, no hyphen or STD3 rules, no DNS lengths). Compatibility forms map to
//! their letters (`ｅ`, `𝐞`, `ⓔ`, `ⅼ`, `ℴ`), case folds, the ideographic full stops become dots, ignored code points
//! go, the name is put in NFC, a label in punycode (`xn--`) is decoded and checked, and every label of other than
//! ASCII comes out in punycode. `urls::Host::parse` wraps it in the rest of the URL standard's host parser (percent
//! decoding, IPv4 and IPv6).
//!
//! The data is `idna/tables.txt`, generated from the Unicode data by `idna/tables.py`, deflated into the binary
//! (`embedded`) and read once, at first use. The rules of UTS #46 that can only refuse a name and would need tables
//! of their own are not applied: the bidi rule (RFC 5893), the joiner rules (RFC 5892, ContextJ) and a label's not
//! starting with a combining mark. A name they refuse is one no browser opens; mapped here to a name of its own, it
//! can neither pass for another name nor reach an address the fetch guard did not judge.

use std::sync::OnceLock;

/// Longest name mapped, in bytes as given, in code points once mapped, and in bytes in ASCII (a URL's host, within the
/// URL's own bound): the punycode of a label costs the square of its length, so a longer name is refused rather than
/// converted.
pub const DOMAIN_BYTES_MAX: usize = 1_024;

/// `domain` in ASCII as the URL standard's "domain to ASCII" gives it (beStrict false); `None` where it fails (a
/// disallowed code point, a label in punycode that does not decode to a valid label, an empty result).
pub fn to_ascii(domain: &str) -> Option<String> {
    if domain.len() > DOMAIN_BYTES_MAX {
        return None;
    }
    let punycode_label = |label: &str| label.get(..4).is_some_and(|p| p.eq_ignore_ascii_case("xn--"));
    // ASCII without a label in punycode: the mapping is lowercasing (UTS #46 maps A-Z alone among ASCII).
    if domain.is_ascii() && !domain.split('.').any(punycode_label) {
        return Some(domain.to_ascii_lowercase()).filter(|d| !d.is_empty());
    }
    let tables = tables();
    let mut mapped = Vec::with_capacity(domain.len());
    for c in domain.chars() {
        tables.map(c, &mut mapped)?;
        if mapped.len() > DOMAIN_BYTES_MAX {
            return None;
        }
    }
    let normalized = tables.nfc(&mapped);
    let mut out = String::with_capacity(normalized.len() * 2);
    for (i, label) in normalized.split(|&c| c == '.').enumerate() {
        if i > 0 {
            out.push('.');
        }
        if let ['x', 'n', '-', '-', rest @ ..] = label {
            // Mapping lowercased it; it must be ASCII, decode, and decode to a valid label of other than ASCII.
            if !rest.iter().all(char::is_ascii) {
                return None;
            }
            let ascii: String = rest.iter().collect();
            let decoded = punycode_decode(&ascii)?;
            if decoded.iter().all(char::is_ascii) || tables.nfc(&decoded) != decoded || !tables.valid_label(&decoded) {
                return None;
            }
            out.push_str("xn--");
            out.push_str(&punycode_encode(&decoded)?);
        } else if !tables.valid_label(label) {
            return None;
        } else if label.iter().all(char::is_ascii) {
            out.extend(label);
        } else {
            out.push_str("xn--");
            out.push_str(&punycode_encode(label)?);
        }
        if out.len() > DOMAIN_BYTES_MAX {
            return None;
        }
    }
    Some(out).filter(|d| !d.is_empty())
}

/// A label (code points) in punycode (RFC 3492), without its `xn--` prefix; `None` on overflow (a label no host
/// name has).
pub fn punycode_encode(label: &[char]) -> Option<String> {
    let mut out: String = label.iter().filter(|c| c.is_ascii()).collect();
    let basic = u32::try_from(out.len()).ok()?;
    if basic > 0 {
        out.push('-');
    }
    let (mut n, mut delta, mut bias, mut handled) = (128u32, 0u32, 72u32, basic);
    let total = u32::try_from(label.len()).ok()?;
    while handled < total {
        let m = label.iter().map(|&c| u32::from(c)).filter(|&c| c >= n).min()?;
        delta = delta.checked_add((m - n).checked_mul(handled + 1)?)?;
        n = m;
        for c in label.iter().map(|&c| u32::from(c)) {
            if c < n {
                delta = delta.checked_add(1)?;
            }
            if c == n {
                let mut q = delta;
                let mut k = BASE;
                loop {
                    let t = threshold(k, bias);
                    if q < t {
                        break;
                    }
                    out.push(digit(t + (q - t) % (BASE - t)));
                    q = (q - t) / (BASE - t);
                    k += BASE;
                }
                out.push(digit(q));
                bias = adapt(delta, handled + 1, handled == basic);
                delta = 0;
                handled += 1;
            }
        }
        delta = delta.checked_add(1)?;
        n = n.checked_add(1)?;
    }
    Some(out)
}

/// The code points of a label in punycode (without its `xn--`); `None` if it is not punycode (a digit out of range,
/// an overflow, a basic code point encoded, a code point that does not exist).
pub fn punycode_decode(input: &str) -> Option<Vec<char>> {
    let (basic, extended) = match input.rfind('-') {
        Some(i) => (input.get(..i)?, input.get(i + 1..)?),
        None => ("", input),
    };
    if !basic.is_ascii() {
        return None;
    }
    let mut out: Vec<char> = basic.chars().collect();
    let (mut n, mut i, mut bias) = (128u32, 0u32, 72u32);
    let mut digits = extended.bytes();
    while digits.len() > 0 {
        let (old_i, mut w, mut k) = (i, 1u32, BASE);
        loop {
            let d = match digits.next()? {
                b @ b'a'..=b'z' => u32::from(b - b'a'),
                b @ b'A'..=b'Z' => u32::from(b - b'A'),
                b @ b'0'..=b'9' => u32::from(b - b'0') + 26,
                _ => return None,
            };
            i = i.checked_add(d.checked_mul(w)?)?;
            let t = threshold(k, bias);
            if d < t {
                break;
            }
            w = w.checked_mul(BASE - t)?;
            k += BASE;
        }
        let length = u32::try_from(out.len()).ok()? + 1;
        bias = adapt(i - old_i, length, old_i == 0);
        n = n.checked_add(i / length)?;
        i %= length;
        let c = char::from_u32(n).filter(|c| !c.is_ascii())?;
        if out.len() >= DOMAIN_BYTES_MAX {
            return None;
        }
        out.insert(usize::try_from(i).ok()?, c);
        i += 1;
    }
    Some(out)
}

const BASE: u32 = 36;

fn threshold(k: u32, bias: u32) -> u32 {
    k.saturating_sub(bias).clamp(1, 26)
}

fn digit(d: u32) -> char {
    char::from(if d < 26 { b'a' + d as u8 } else { b'0' + (d - 26) as u8 })
}

fn adapt(mut delta: u32, points: u32, first: bool) -> u32 {
    delta /= if first { 700 } else { 2 };
    delta += delta / points;
    let mut k = 0;
    while delta > ((BASE - 1) * 26) / 2 {
        delta /= BASE - 1;
        k += BASE;
    }
    k + (BASE * delta) / (delta + 38)
}

static TABLES_DEFLATED: &[u8] = crate::embedded::deflated!("src/idna/tables.txt");

fn tables() -> &'static Tables {
    static TABLES: OnceLock<Tables> = OnceLock::new();
    TABLES.get_or_init(|| Tables::read(&crate::embedded::inflate(TABLES_DEFLATED)))
}

/// What the mapping does to a range of code points (`idna/tables.txt`'s `@map`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Map {
    Valid,
    Disallowed,
    Ignored,
    /// Each code point becomes itself plus this.
    Shift(i32),
    /// Alternately mapped to the next code point and valid, from the range's start (upper and lower case pairs).
    Alternate,
    /// The range's one code point becomes `len` code points of the pool from `at`.
    To {
        at: u16,
        len: u8,
    },
}

/// The tables, as read from `idna/tables.txt`: each a list of ranges by first code point, searched by bisection.
#[derive(Debug, Default)]
struct Tables {
    map: Vec<(u32, Map)>,
    pool: Vec<char>,
    /// Canonical combining classes.
    ccc: Vec<(u32, u8)>,
    /// (composite, first, second), by composite.
    compositions: Vec<(u32, u32, u32)>,
}

/// Where a range starts in a list of ranges by first code point: the last one at or before `c`.
fn range<T: Copy>(list: &[(u32, T)], c: u32) -> Option<T> {
    let i = list.partition_point(|(first, _)| *first <= c);
    list.get(i.checked_sub(1)?).map(|(_, v)| *v)
}

const HANGUL_S: u32 = 0xAC00;
const HANGUL_L: u32 = 0x1100;
const HANGUL_V: u32 = 0x1161;
const HANGUL_T: u32 = 0x11A7;
const HANGUL_V_COUNT: u32 = 21;
const HANGUL_T_COUNT: u32 = 28;
const HANGUL_S_COUNT: u32 = 19 * HANGUL_V_COUNT * HANGUL_T_COUNT;

impl Tables {
    /// Reads the text of `idna/tables.txt`; a line it cannot read is skipped (the file is ours, and a unit test
    /// reads it whole).
    fn read(text: &str) -> Tables {
        let mut t = Tables::default();
        let (mut section, mut at, mut previous_first) = ("", 0u32, 0u32);
        for line in text.lines() {
            if let Some(name) = line.strip_prefix('@') {
                (section, at) = (name, 0);
                continue;
            }
            let split = line.find(|c: char| !c.is_ascii_hexdigit()).unwrap_or(line.len());
            let (Some(step), Some(rest)) = (line.get(..split), line.get(split..)) else { continue };
            let Some(first) = u32::from_str_radix(step, 16).ok().and_then(|s| at.checked_add(s)) else { continue };
            at = first;
            let hex = |s: &str| u32::from_str_radix(s, 16).ok();
            match section {
                "map" => {
                    let map = match rest.split_at_checked(1) {
                        Some(("v", "")) => Map::Valid,
                        Some(("x", "")) => Map::Disallowed,
                        Some(("i", "")) => Map::Ignored,
                        Some(("p", "")) => Map::Alternate,
                        Some(("s", n)) => Map::Shift(n.parse().unwrap_or(0)),
                        Some(("m", to)) => {
                            let Ok(at) = u16::try_from(t.pool.len()) else { continue };
                            let mut to = to.split(' ');
                            let step = to.next().and_then(|h| i32::from_str_radix(h, 16).ok()).unwrap_or(0);
                            previous_first = previous_first.checked_add_signed(step).unwrap_or(0);
                            t.pool.extend(char::from_u32(previous_first));
                            t.pool.extend(to.filter_map(|h| hex(h).and_then(char::from_u32)));
                            let len = t.pool.len().saturating_sub(usize::from(at));
                            Map::To { at, len: u8::try_from(len).unwrap_or(0) }
                        }
                        _ => continue,
                    };
                    t.map.push((first, map));
                }
                "ccc" => t.ccc.push((first, rest.trim().parse().unwrap_or(0))),
                "compose" => {
                    let mut parts = rest.split_whitespace().filter_map(hex);
                    if let (Some(a), Some(b)) = (parts.next(), parts.next()) {
                        t.compositions.push((first, a, b));
                    }
                }
                _ => {}
            }
        }
        // Read once and kept for the process's life: about 105 KB in all.
        t.map.shrink_to_fit();
        t.pool.shrink_to_fit();
        t
    }

    /// The range of the mapping `c` is in: its first code point and what it does.
    fn range_of(&self, c: char) -> Option<(u32, Map)> {
        let i = self.map.partition_point(|(first, _)| *first <= u32::from(c)).checked_sub(1)?;
        self.map.get(i).copied()
    }

    /// Appends what `c` maps to; `None` if it is disallowed.
    fn map(&self, c: char, out: &mut Vec<char>) -> Option<()> {
        let code = u32::from(c);
        let (first, map) = self.range_of(c)?;
        match map {
            Map::Valid => out.push(c),
            Map::Ignored => {}
            Map::Disallowed => return None,
            Map::Shift(by) => out.push(char::from_u32(code.checked_add_signed(by)?)?),
            Map::Alternate if (code - first) % 2 == 0 => out.push(char::from_u32(code + 1)?),
            Map::Alternate => out.push(c),
            Map::To { at, len } => out.extend(self.pool.get(usize::from(at)..usize::from(at) + usize::from(len))?),
        }
        Some(())
    }

    fn valid(&self, c: char) -> bool {
        match self.range_of(c) {
            Some((_, Map::Valid)) => true,
            Some((first, Map::Alternate)) => (u32::from(c) - first) % 2 == 1,
            _ => false,
        }
    }

    /// UTS #46's validity criteria a label must meet (those this module applies: see its comment): in NFC (the
    /// caller checks it for a decoded label), not starting with `xn--`, valid code points only.
    fn valid_label(&self, label: &[char]) -> bool {
        !label.starts_with(&['x', 'n', '-', '-']) && label.iter().all(|&c| self.valid(c))
    }

    fn ccc(&self, c: char) -> u8 {
        range(&self.ccc, u32::from(c)).unwrap_or(0)
    }

    /// Appends the canonical decomposition of `c` (itself if it has none).
    fn decompose(&self, c: char, out: &mut Vec<char>) {
        let code = u32::from(c);
        if let Some(s) = code.checked_sub(HANGUL_S).filter(|s| *s < HANGUL_S_COUNT) {
            let (l, v, t) = (
                s / (HANGUL_V_COUNT * HANGUL_T_COUNT),
                s % (HANGUL_V_COUNT * HANGUL_T_COUNT) / HANGUL_T_COUNT,
                s % HANGUL_T_COUNT,
            );
            out.extend([HANGUL_L + l, HANGUL_V + v].into_iter().filter_map(char::from_u32));
            if t > 0 {
                out.extend(char::from_u32(HANGUL_T + t));
            }
            return;
        }
        match self.compositions.binary_search_by_key(&code, |d| d.0) {
            // A composite's first part may be one itself (`ǖ` is `ü` and a macron); the depth is that of the
            // Unicode data (at most four).
            Ok(i) => {
                if let Some(&(_, a, b)) = self.compositions.get(i) {
                    for part in [a, b].into_iter().filter_map(char::from_u32) {
                        self.decompose(part, out);
                    }
                }
            }
            Err(_) => out.push(c),
        }
    }

    /// The primary composite of `a` and `b`, if they have one.
    fn compose(&self, a: char, b: char) -> Option<char> {
        let (a, b) = (u32::from(a), u32::from(b));
        if let (Some(l), Some(v)) = (a.checked_sub(HANGUL_L), b.checked_sub(HANGUL_V)) {
            if l < 19 && v < HANGUL_V_COUNT {
                return char::from_u32(HANGUL_S + (l * HANGUL_V_COUNT + v) * HANGUL_T_COUNT);
            }
        }
        if let (Some(s), Some(t)) = (a.checked_sub(HANGUL_S), b.checked_sub(HANGUL_T)) {
            if s < HANGUL_S_COUNT && s % HANGUL_T_COUNT == 0 && (1..HANGUL_T_COUNT).contains(&t) {
                return char::from_u32(a + t);
            }
        }
        // A search through the pairs (543): cheaper in code than a second table sorted by pair, and bounded by the
        // name's length.
        self.compositions.iter().find(|c| (c.1, c.2) == (a, b)).and_then(|c| char::from_u32(c.0))
    }

    /// `s` in Normalization Form C: decomposed, combining marks in canonical order, composed.
    fn nfc(&self, s: &[char]) -> Vec<char> {
        let mut decomposed = Vec::with_capacity(s.len());
        for &c in s {
            self.decompose(c, &mut decomposed);
        }
        let mut d: Vec<(char, u8)> = decomposed.into_iter().map(|c| (c, self.ccc(c))).collect();
        // Canonical ordering: each run of code points of a nonzero class sorted by class, stably (by insertion: a
        // run is a base letter's marks, and the name is bounded).
        for i in 1..d.len() {
            let mut j = i;
            while let (Some(&(_, a)), Some(&(_, b))) = (d.get(j.wrapping_sub(1)), d.get(j)) {
                if b == 0 || a <= b {
                    break;
                }
                d.swap(j - 1, j);
                j -= 1;
            }
        }
        let mut out: Vec<char> = Vec::with_capacity(d.len());
        // The last starter's place in `out`, and the class of the last code point put after it (0: none, the
        // starter is the last one). Before the first starter nothing composes.
        let mut starter: Option<usize> = None;
        let mut last_class = 0u8;
        for (c, class) in d {
            if let Some(s) = starter.and_then(|i| out.get_mut(i)) {
                if last_class < class || last_class == 0 {
                    if let Some(k) = self.compose(*s, c) {
                        *s = k;
                        continue;
                    }
                }
            }
            if class == 0 {
                starter = Some(out.len());
            }
            last_class = class;
            out.push(c);
        }
        out
    }
}

#[cfg(test)]
mod tests;
