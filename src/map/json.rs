//! A bounded JSON reader for the map's feeds (issue 33, finding 1): a feed answer is walked token by token, the
//! members a parser asks for are read into small values and everything else is skipped without being kept, so that
//! what a feed costs is bounded by what is kept (objects cap, `ITEM_COST_MAX` per object, `STRING_BYTES_MAX` per
//! string), not by the body's bytes. `serde_json::from_slice` built the whole tree: 16 MB of `[{},{},...]` cost over
//! 200 MB.
//!
//! Pure and linear: each byte is looked at a bounded number of times, nothing recurses past `VALUE_DEPTH_MAX`, and a
//! skipped value's nesting is a counter bounded by `DEPTH_MAX`. A skipped value is checked for balance and strings,
//! not for every rule of the grammar (its content is never read). Numbers and strings are decoded here, so that a
//! long string is never copied whole (serde_json's scratch buffer would take all of it).

use serde_json::{Map, Number, Value};

/// Nesting followed anywhere in a body; deeper is refused.
pub const DEPTH_MAX: usize = 128;
/// Nesting kept in a value read (`Reader::value`); deeper members become null (skipped).
pub const VALUE_DEPTH_MAX: usize = 6;
/// Bytes of a string kept, decoded; a longer one is cut at a character boundary.
pub const STRING_BYTES_MAX: usize = 256;
/// Bytes of a member's name kept (names the parsers look for are short; a longer one never matches).
pub const KEY_BYTES_MAX: usize = 64;
/// What one value read may cost (`Reader::value`): each member, item or scalar kept counts `NODE_COST_BYTES` and
/// its string's bytes; past this, the rest of the value is skipped.
pub const ITEM_COST_MAX: usize = 16_384;
/// What one kept node counts against `ITEM_COST_MAX` besides its text (a `Value` and its place in a map or list).
const NODE_COST_BYTES: usize = 64;
/// Bytes of a number's text read; a longer number is refused.
const NUMBER_BYTES_MAX: usize = 64;

pub type Result<T> = std::result::Result<T, String>;

/// A position in a JSON body.
pub struct Reader<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl<'a> Reader<'a> {
    /// A reader at the start of `bytes` (a UTF-8 byte order mark is passed over).
    pub fn new(bytes: &'a [u8]) -> Reader<'a> {
        let at = if bytes.starts_with(b"\xef\xbb\xbf") { 3 } else { 0 };
        Reader { bytes, at }
    }

    fn err<T>(&self, what: &str) -> Result<T> {
        Err(format!("not JSON: {what} at byte {}", self.at))
    }

    /// The next byte that is not white space, not taken.
    fn peek(&mut self) -> Option<u8> {
        while let Some(&b) = self.bytes.get(self.at) {
            if !matches!(b, b' ' | b'\t' | b'\n' | b'\r') {
                return Some(b);
            }
            self.at += 1;
        }
        None
    }

    fn expect(&mut self, byte: u8) -> Result<()> {
        if self.peek() != Some(byte) {
            return self.err(&format!("expected {:?}", byte as char));
        }
        self.at += 1;
        Ok(())
    }

    /// Whether the next value is `null` (taken if so).
    pub fn null(&mut self) -> Result<bool> {
        if self.peek() != Some(b'n') {
            return Ok(false);
        }
        self.literal(b"null")?;
        Ok(true)
    }

    /// Whether the next value is an object.
    pub fn at_object(&mut self) -> bool {
        self.peek() == Some(b'{')
    }

    /// Whether the next value is a list.
    pub fn at_array(&mut self) -> bool {
        self.peek() == Some(b'[')
    }

    /// Nothing but white space is left.
    pub fn end(&mut self) -> Result<()> {
        match self.peek() {
            None => Ok(()),
            Some(_) => self.err("trailing bytes"),
        }
    }

    /// Reads an object: `each` is called with every member's name (cut at `KEY_BYTES_MAX`) and must take its value
    /// (read it or `skip` it).
    pub fn members(&mut self, mut each: impl FnMut(&mut Self, &str) -> Result<()>) -> Result<()> {
        self.expect(b'{')?;
        if self.peek() == Some(b'}') {
            self.at += 1;
            return Ok(());
        }
        loop {
            if self.peek() != Some(b'"') {
                return self.err("expected a member name");
            }
            let key = self.string(KEY_BYTES_MAX)?;
            self.expect(b':')?;
            each(self, &key)?;
            match self.peek() {
                Some(b',') => self.at += 1,
                Some(b'}') => {
                    self.at += 1;
                    return Ok(());
                }
                _ => return self.err("expected ',' or '}'"),
            }
        }
    }

    /// Reads a list: `each` is called for every item and must take it.
    pub fn items(&mut self, mut each: impl FnMut(&mut Self) -> Result<()>) -> Result<()> {
        self.expect(b'[')?;
        if self.peek() == Some(b']') {
            self.at += 1;
            return Ok(());
        }
        loop {
            each(self)?;
            match self.peek() {
                Some(b',') => self.at += 1,
                Some(b']') => {
                    self.at += 1;
                    return Ok(());
                }
                _ => return self.err("expected ',' or ']'"),
            }
        }
    }

    /// Takes one value without keeping anything of it. Iterative: nesting is a stack of at most `DEPTH_MAX` bytes.
    pub fn skip(&mut self) -> Result<()> {
        let mut open: Vec<u8> = Vec::new();
        loop {
            let Some(b) = self.peek() else { return self.err("unexpected end") };
            match b {
                b'{' | b'[' => {
                    if open.len() >= DEPTH_MAX {
                        return self.err("nested too deep");
                    }
                    open.push(if b == b'{' { b'}' } else { b']' });
                    self.at += 1;
                    continue;
                }
                b'}' | b']' => {
                    if open.pop() != Some(b) {
                        return self.err("unbalanced");
                    }
                    self.at += 1;
                }
                b',' | b':' if !open.is_empty() => {
                    self.at += 1;
                    continue;
                }
                b'"' => self.skip_string()?,
                b't' => self.literal(b"true")?,
                b'f' => self.literal(b"false")?,
                b'n' => self.literal(b"null")?,
                _ => {
                    self.number_text()?;
                }
            }
            if open.is_empty() {
                return Ok(());
            }
        }
    }

    fn literal(&mut self, word: &[u8]) -> Result<()> {
        if self.bytes.get(self.at..self.at + word.len()) != Some(word) {
            return self.err("bad literal");
        }
        self.at += word.len();
        Ok(())
    }

    fn skip_string(&mut self) -> Result<()> {
        self.at += 1;
        loop {
            match self.bytes.get(self.at) {
                None => return self.err("unterminated string"),
                Some(b'"') => {
                    self.at += 1;
                    return Ok(());
                }
                Some(b'\\') => self.at += 2,
                Some(_) => self.at += 1,
            }
        }
    }

    /// A string's text, decoded, at most `max_bytes` of it kept (cut at a character boundary); all of it is taken.
    pub fn string(&mut self, max_bytes: usize) -> Result<String> {
        if self.peek() != Some(b'"') {
            return self.err("expected a string");
        }
        self.at += 1;
        let mut out: Vec<u8> = Vec::new();
        let mut full = false;
        let push = |out: &mut Vec<u8>, full: &mut bool, bytes: &[u8]| {
            if !*full && out.len() + bytes.len() <= max_bytes {
                out.extend_from_slice(bytes);
            } else {
                *full = true;
            }
        };
        loop {
            let Some(&b) = self.bytes.get(self.at) else { return self.err("unterminated string") };
            self.at += 1;
            match b {
                b'"' => break,
                b'\\' => {
                    let Some(&e) = self.bytes.get(self.at) else { return self.err("unterminated string") };
                    self.at += 1;
                    let c = match e {
                        b'"' => '"',
                        b'\\' => '\\',
                        b'/' => '/',
                        b'b' => '\u{8}',
                        b'f' => '\u{c}',
                        b'n' => '\n',
                        b'r' => '\r',
                        b't' => '\t',
                        b'u' => self.unicode_escape()?,
                        _ => return self.err("bad escape"),
                    };
                    push(&mut out, &mut full, c.encode_utf8(&mut [0; 4]).as_bytes());
                }
                _ => push(&mut out, &mut full, &[b]),
            }
        }
        // A cut may have split the last character: the kept bytes end before it. Invalid bytes anywhere (before the
        // cut or in an uncut string) are U+FFFD, and what follows them is kept.
        Ok(match String::from_utf8(out) {
            Ok(s) => s,
            Err(e) => {
                let mut bytes = e.into_bytes();
                if full {
                    // A split character's lead byte is among the last three (a character is four bytes at most).
                    let lead = (bytes.len().saturating_sub(3)..bytes.len())
                        .rev()
                        .find(|&i| bytes.get(i).is_some_and(|b| b & 0xC0 != 0x80));
                    let incomplete = |at: usize| {
                        std::str::from_utf8(bytes.get(at..).unwrap_or_default()).is_err_and(|e| e.error_len().is_none())
                    };
                    if let Some(lead) = lead.filter(|&at| incomplete(at)) {
                        bytes.truncate(lead);
                    }
                }
                String::from_utf8_lossy(&bytes).into_owned()
            }
        })
    }

    /// The code point of `\uXXXX` (the `\u` taken), with a following low surrogate when it is a high one; a lone
    /// surrogate is U+FFFD.
    fn unicode_escape(&mut self) -> Result<char> {
        let hex = |r: &mut Self| -> Result<u32> {
            let digits = r.bytes.get(r.at..r.at + 4).and_then(|d| std::str::from_utf8(d).ok());
            let Some(n) = digits.and_then(|d| u32::from_str_radix(d, 16).ok()) else { return r.err("bad \\u escape") };
            r.at += 4;
            Ok(n)
        };
        let first = hex(self)?;
        if (0xD800..0xDC00).contains(&first) && self.bytes.get(self.at..self.at + 2) == Some(b"\\u") {
            let back = self.at;
            self.at += 2;
            let second = hex(self)?;
            if (0xDC00..0xE000).contains(&second) {
                return Ok(char::from_u32(0x10000 + ((first - 0xD800) << 10) + (second - 0xDC00)).unwrap_or('\u{fffd}'));
            }
            self.at = back;
        }
        Ok(char::from_u32(first).unwrap_or('\u{fffd}'))
    }

    /// The text of a number (sign, digits, fraction, exponent), taken.
    fn number_text(&mut self) -> Result<&'a str> {
        let start = self.at;
        while self.bytes.get(self.at).is_some_and(|b| matches!(b, b'0'..=b'9' | b'-' | b'+' | b'.' | b'e' | b'E')) {
            self.at += 1;
        }
        if self.at == start {
            return self.err("unexpected byte");
        }
        if self.at - start > NUMBER_BYTES_MAX {
            return self.err("number too long");
        }
        let text = self.bytes.get(start..self.at).and_then(|t| std::str::from_utf8(t).ok());
        text.map_or_else(|| self.err("bad number"), Ok)
    }

    fn number(&mut self) -> Result<Value> {
        let text = self.number_text()?;
        let integral = !text.contains(['.', 'e', 'E']);
        if let (true, Ok(n)) = (integral, text.parse::<u64>()) {
            return Ok(n.into());
        }
        // `-0` is read as serde_json reads it: the float -0.0.
        if let (true, Ok(n)) = (integral, text.parse::<i64>()) {
            if n != 0 {
                return Ok(n.into());
            }
        }
        match text.parse::<f64>() {
            Ok(x) => Ok(Number::from_f64(x).map_or(Value::Null, Value::Number)),
            Err(_) => self.err("bad number"),
        }
    }

    /// The next value, kept within `ITEM_COST_MAX` (members past it, nesting past `VALUE_DEPTH_MAX` and text past
    /// `STRING_BYTES_MAX` are left out).
    pub fn value(&mut self) -> Result<Value> {
        let mut budget = ITEM_COST_MAX;
        self.bounded(0, &mut budget)
    }

    fn bounded(&mut self, depth: usize, budget: &mut usize) -> Result<Value> {
        let Some(b) = self.peek() else { return self.err("unexpected end") };
        if *budget < NODE_COST_BYTES || (depth >= VALUE_DEPTH_MAX && matches!(b, b'{' | b'[')) {
            self.skip()?;
            return Ok(Value::Null);
        }
        *budget -= NODE_COST_BYTES;
        match b {
            b'{' => {
                let mut map = Map::new();
                self.members(|r, key| {
                    if *budget < NODE_COST_BYTES + key.len() {
                        return r.skip();
                    }
                    *budget -= key.len();
                    let v = r.bounded(depth + 1, budget)?;
                    map.insert(key.to_owned(), v);
                    Ok(())
                })?;
                Ok(Value::Object(map))
            }
            b'[' => {
                let mut list = Vec::new();
                self.items(|r| {
                    if *budget < NODE_COST_BYTES {
                        return r.skip();
                    }
                    list.push(r.bounded(depth + 1, budget)?);
                    Ok(())
                })?;
                Ok(Value::Array(list))
            }
            b'"' => {
                let s = self.string(STRING_BYTES_MAX.min(*budget))?;
                *budget = budget.saturating_sub(s.len());
                Ok(Value::String(s))
            }
            b't' => self.literal(b"true").map(|()| Value::Bool(true)),
            b'f' => self.literal(b"false").map(|()| Value::Bool(false)),
            b'n' => self.literal(b"null").map(|()| Value::Null),
            _ => self.number(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[track_caller]
    fn check(json: &str) {
        let expected: Value = serde_json::from_str(json).unwrap();
        let mut r = Reader::new(json.as_bytes());
        assert_eq!(r.value().unwrap(), expected, "{json}");
        r.end().unwrap();
        let mut r = Reader::new(json.as_bytes());
        r.skip().unwrap();
        r.end().unwrap();
    }

    #[test]
    fn small_values_read_as_serde_json_reads_them() {
        check(r#"{"a":[1,-2,3.5,1e3,-0.0,18446744073709551615,-9223372036854775808],"b":{"c":null,"d":[true,false]}}"#);
        check(r#"["\u00e9\ud83d\ude00\n\t\"\\\/", "", "plain"]"#);
        check(" \n[ ] ");
        check("{}");
        check("12");
    }

    #[test]
    fn a_lone_surrogate_is_a_replacement_character() {
        let v = Reader::new(br#"["\ud800x", "\udc00\u0041"]"#).value().unwrap();
        assert_eq!(v, serde_json::json!(["\u{fffd}x", "\u{fffd}A"]));
    }

    #[test]
    fn what_is_kept_is_bounded() {
        let long = format!(r#"["{}"]"#, "é".repeat(1_000));
        let v = Reader::new(long.as_bytes()).value().unwrap();
        assert_eq!(v[0].as_str().unwrap(), "é".repeat(STRING_BYTES_MAX / 2));
        let deep = format!("{}1{}", "[".repeat(20), "]".repeat(20));
        let v = Reader::new(deep.as_bytes()).value().unwrap();
        assert_eq!(v.pointer("/0/0/0/0/0/0"), Some(&Value::Null), "{v}");
        let wide = format!("[{}0]", "{},".repeat(100_000));
        let v = Reader::new(wide.as_bytes()).value().unwrap();
        assert_eq!(v.as_array().unwrap().len(), ITEM_COST_MAX / NODE_COST_BYTES - 1);
    }

    /// An invalid byte before a cut is U+FFFD, and the text after it up to the cap is kept (the cut once kept only
    /// what came before the first invalid byte); a character split by the cut is dropped whole.
    #[test]
    fn a_cut_string_keeps_its_text_past_an_invalid_byte() {
        let mut long = b"[\"a\xffb".to_vec();
        long.extend("é".repeat(STRING_BYTES_MAX).as_bytes());
        long.extend(b"\"]");
        let v = Reader::new(&long).value().unwrap();
        // Three bytes "a", 0xff, "b", then whole "é"s up to the cap: the last, split, is dropped.
        let expected = format!("a\u{fffd}b{}", "é".repeat((STRING_BYTES_MAX - 3) / 2));
        assert_eq!(v[0].as_str().unwrap(), expected);
        let v = Reader::new(b"[\"a\xffb\"]").value().unwrap();
        assert_eq!(v[0].as_str().unwrap(), "a\u{fffd}b", "an uncut string");
    }

    #[test]
    fn broken_bodies_are_errors() {
        for bad in ["", "[", "[1,", "{\"a\"}", "[}", "\"abc", "[tru]", "{1:2}", "[1 2]", "[\"\\x\"]", "]"] {
            let mut r = Reader::new(bad.as_bytes());
            let value = r.value().and_then(|_| r.end());
            assert!(value.is_err(), "{bad:?} read");
        }
        let deep = "[".repeat(DEPTH_MAX + 1);
        assert!(Reader::new(deep.as_bytes()).skip().unwrap_err().contains("too deep"));
    }
}
