//! RESP, the Redis serialisation protocol: commands encoded as arrays of bulk strings, and a push parser for
//! replies (RESP2, and the RESP3 types a server or proxy may send: null, boolean, double, big number, verbatim
//! string, map, set, push, attribute, blob error). Pure: bytes in, `Reply` out; no I/O.
//!
//! The parser takes input in pieces of any size (`feed`) and reads each byte once, so a reply split across reads is
//! an ordinary state and parsing stays linear. Every reply is bounded: a line by `LINE_BYTES_MAX`, a bulk string by
//! `BULK_BYTES_MAX`, an aggregate by `ARRAY_LEN_MAX` elements and `DEPTH_MAX` levels, and the whole reply by
//! `REPLY_BYTES_MAX` and `REPLY_ELEMENTS_MAX` values; past a bound the parser fails and the connection is dropped.
//! A reply in memory is its bytes and at most `REPLY_ELEMENTS_MAX` values (each a `Reply` and one allocation), so
//! its cost does not depend on how its bytes are cut into elements.

use std::fmt;

/// Longest line (a simple string, an error, a number, a length header), CRLF excluded.
pub const LINE_BYTES_MAX: usize = 4_096;
/// Largest bulk string: a shared answer is the largest value the service keeps (`store::ANSWER_BYTES_MAX` and its
/// entry's header, with the byte more a `GETRANGE` asks for to tell one too long).
pub const BULK_BYTES_MAX: usize = 256 * 1_024;
/// Most elements in one array, set, push or map (a map's pairs count twice).
pub const ARRAY_LEN_MAX: usize = 1_024;
/// Deepest nesting of aggregates.
pub const DEPTH_MAX: usize = 8;
/// Bytes of one whole reply, header lines and nested elements included.
pub const REPLY_BYTES_MAX: usize = BULK_BYTES_MAX + 64 * 1_024;
/// Values in one whole reply: every scalar and every aggregate at any depth, an attribute's dropped contents
/// included. The service's largest reply holds 3 (the admission script's pair in its array); within the byte bound
/// alone, 1.06 MB of three-byte nulls in nested arrays was 353,000 values, 11 MB each reply in memory.
pub const REPLY_ELEMENTS_MAX: usize = 1_024;

/// A decoded reply.
#[derive(Debug, Clone, PartialEq)]
pub enum Reply {
    /// A simple string (`+OK`), a verbatim string (its text, without the format), a double or a big number.
    Status(String),
    /// `-ERR ...` or a blob error.
    Error(String),
    Int(i64),
    Bulk(Vec<u8>),
    /// A null bulk string or array (RESP2) or a null (RESP3).
    Nil,
    /// An array, a set, a push, or a map (keys and values in turn).
    Array(Vec<Reply>),
}

impl Reply {
    pub fn as_int(&self) -> Option<i64> {
        match self {
            Reply::Int(n) => Some(*n),
            _ => None,
        }
    }
}

/// Why a reply cannot be read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Error {
    /// A byte that does not start any type.
    UnknownType(u8),
    /// A line without its CR LF, or a length, integer or boolean that is not one.
    Malformed(&'static str),
    /// A named bound was passed.
    TooLarge(&'static str),
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::UnknownType(b) => write!(f, "unknown RESP type byte 0x{b:02x}"),
            Error::Malformed(what) => write!(f, "malformed RESP {what}"),
            Error::TooLarge(what) => write!(f, "RESP reply over its bound: {what}"),
        }
    }
}

/// A command: an array of bulk strings.
pub fn encode(args: &[&[u8]], out: &mut Vec<u8>) {
    out.extend_from_slice(format!("*{}\r\n", args.len()).as_bytes());
    for a in args {
        out.extend_from_slice(format!("${}\r\n", a.len()).as_bytes());
        out.extend_from_slice(a);
        out.extend_from_slice(b"\r\n");
    }
}

/// What the parser is reading.
#[derive(Debug)]
enum State {
    /// The type byte of the next value.
    Type,
    /// A line after the type byte `kind`.
    Line(u8),
    /// A bulk payload of `kind`: `left` bytes to read, then CR LF.
    Bulk { kind: u8, left: usize },
    /// The CR LF after a bulk payload; the byte says how many of the two have been seen.
    BulkEnd { kind: u8, seen: u8 },
}

/// An aggregate being filled.
#[derive(Debug)]
struct Frame {
    items: Vec<Reply>,
    /// Elements still to come.
    left: usize,
    /// An attribute: its contents are dropped and the value that follows stands in its place.
    attribute: bool,
}

/// The push parser; one per connection, reused reply after reply.
#[derive(Debug)]
pub struct Parser {
    state: State,
    stack: Vec<Frame>,
    line: Vec<u8>,
    bulk: Vec<u8>,
    /// Bytes of the reply being read.
    bytes: usize,
    /// Values of the reply being read, complete or opened.
    elements: usize,
}

impl Default for Parser {
    fn default() -> Parser {
        Parser::new()
    }
}

impl Parser {
    pub fn new() -> Parser {
        Parser { state: State::Type, stack: Vec::new(), line: Vec::new(), bulk: Vec::new(), bytes: 0, elements: 0 }
    }

    /// Reads from `input` up to the end of one reply. Returns the bytes consumed and the reply if it is complete
    /// (the bytes after it are left for the next call); with `None`, all of `input` was consumed. After an error
    /// the parser is in no defined state: drop the connection.
    pub fn feed(&mut self, input: &[u8]) -> Result<(usize, Option<Reply>), Error> {
        let mut at = 0;
        while at < input.len() {
            let rest = input.get(at..).unwrap_or_default();
            let (used, value) = self.step(rest)?;
            at += used;
            self.bytes = self.bytes.saturating_add(used);
            if self.bytes > REPLY_BYTES_MAX {
                return Err(Error::TooLarge("reply bytes"));
            }
            if let Some(value) = value {
                if let Some(done) = self.complete(value)? {
                    self.bytes = 0;
                    self.elements = 0;
                    return Ok((at, Some(done)));
                }
            }
        }
        Ok((at, None))
    }

    /// Advances by at least one byte; a value when one (scalar or empty aggregate) is complete.
    fn step(&mut self, input: &[u8]) -> Result<(usize, Option<Reply>), Error> {
        match self.state {
            State::Type => {
                let Some(&b) = input.first() else { return Ok((0, None)) };
                if !b"+-:$*_#,(=!%~>|".contains(&b) {
                    return Err(Error::UnknownType(b));
                }
                // Counted when it starts, before anything of it is kept.
                self.elements += 1;
                if self.elements > REPLY_ELEMENTS_MAX {
                    return Err(Error::TooLarge("reply elements"));
                }
                self.state = State::Line(b);
                self.line.clear();
                Ok((1, None))
            }
            State::Line(kind) => {
                let (used, end) = match input.iter().position(|&b| b == b'\n') {
                    Some(i) => (i + 1, true),
                    None => (input.len(), false),
                };
                self.line.extend_from_slice(input.get(..used).unwrap_or_default());
                if self.line.len() > LINE_BYTES_MAX + 2 {
                    return Err(Error::TooLarge("line bytes"));
                }
                if !end {
                    return Ok((used, None));
                }
                if !self.line.ends_with(b"\r\n") {
                    return Err(Error::Malformed("line ending"));
                }
                let len = self.line.len() - 2;
                self.line.truncate(len);
                let line = std::mem::take(&mut self.line);
                self.state = State::Type;
                Ok((used, self.line_value(kind, &line)?))
            }
            State::Bulk { kind, left } => {
                let take = left.min(input.len());
                self.bulk.extend_from_slice(input.get(..take).unwrap_or_default());
                self.state = if take == left {
                    State::BulkEnd { kind, seen: 0 }
                } else {
                    State::Bulk { kind, left: left - take }
                };
                Ok((take, None))
            }
            State::BulkEnd { kind, seen } => {
                let Some(&b) = input.first() else { return Ok((0, None)) };
                match (seen, b) {
                    (0, b'\r') => {
                        self.state = State::BulkEnd { kind, seen: 1 };
                        Ok((1, None))
                    }
                    (1, b'\n') => {
                        self.state = State::Type;
                        let payload = std::mem::take(&mut self.bulk);
                        Ok((1, Some(bulk_value(kind, payload))))
                    }
                    _ => Err(Error::Malformed("bulk string ending")),
                }
            }
        }
    }

    /// The value a complete line stands for, or `None` when it opens a bulk string or an aggregate.
    fn line_value(&mut self, kind: u8, line: &[u8]) -> Result<Option<Reply>, Error> {
        let text = || String::from_utf8_lossy(line).into_owned();
        Ok(Some(match kind {
            b'+' | b',' | b'(' => Reply::Status(text()),
            b'-' => Reply::Error(text()),
            b':' => Reply::Int(integer(line).ok_or(Error::Malformed("integer"))?),
            b'_' if line.is_empty() => Reply::Nil,
            b'_' => return Err(Error::Malformed("null")),
            b'#' => match line {
                b"t" => Reply::Int(1),
                b"f" => Reply::Int(0),
                _ => return Err(Error::Malformed("boolean")),
            },
            b'$' | b'=' | b'!' => match length(line)? {
                None => Reply::Nil,
                Some(n) if n > BULK_BYTES_MAX => return Err(Error::TooLarge("bulk string bytes")),
                Some(n) => {
                    self.bulk = Vec::with_capacity(n.min(64 * 1_024));
                    self.state = State::Bulk { kind, left: n };
                    if n == 0 {
                        self.state = State::BulkEnd { kind, seen: 0 };
                    }
                    return Ok(None);
                }
            },
            // `*`, `~`, `>`, `%` and `|`.
            _ => {
                let Some(n) = length(line)? else { return Ok(Some(Reply::Nil)) };
                let pairs = matches!(kind, b'%' | b'|');
                let n = if pairs { n.checked_mul(2).ok_or(Error::TooLarge("aggregate length"))? } else { n };
                if n > ARRAY_LEN_MAX {
                    return Err(Error::TooLarge("aggregate length"));
                }
                if self.stack.len() >= DEPTH_MAX {
                    return Err(Error::TooLarge("nesting depth"));
                }
                self.stack.push(Frame { items: Vec::with_capacity(n.min(64)), left: n, attribute: kind == b'|' });
                return self.close_empty();
            }
        }))
    }

    /// An aggregate just opened with no elements is complete at once.
    fn close_empty(&mut self) -> Result<Option<Reply>, Error> {
        match self.stack.last() {
            Some(f) if f.left == 0 => {
                let frame = self.stack.pop().ok_or(Error::Malformed("aggregate"))?;
                // An empty attribute is dropped; the value after it is read as usual.
                Ok((!frame.attribute).then_some(Reply::Array(frame.items)))
            }
            _ => Ok(None),
        }
    }

    /// Places a complete value into the aggregate being filled; the top-level reply when it completes.
    fn complete(&mut self, mut value: Reply) -> Result<Option<Reply>, Error> {
        loop {
            let Some(frame) = self.stack.last_mut() else { return Ok(Some(value)) };
            frame.items.push(value);
            frame.left -= 1;
            if frame.left > 0 {
                return Ok(None);
            }
            let frame = self.stack.pop().ok_or(Error::Malformed("aggregate"))?;
            if frame.attribute {
                // The attribute's pairs are metadata about the next value, which takes its place.
                return Ok(None);
            }
            value = Reply::Array(frame.items);
        }
    }
}

fn bulk_value(kind: u8, payload: Vec<u8>) -> Reply {
    match kind {
        b'!' => Reply::Error(String::from_utf8_lossy(&payload).into_owned()),
        // A verbatim string starts with its three-letter format and a colon.
        b'=' => Reply::Bulk(payload.get(4..).map(<[u8]>::to_vec).unwrap_or_default()),
        _ => Reply::Bulk(payload),
    }
}

/// A decimal integer: an optional `-` and 1 to 19 digits.
fn integer(line: &[u8]) -> Option<i64> {
    let (negative, digits) = match line.split_first() {
        Some((b'-', rest)) => (true, rest),
        Some((b'+', rest)) => (false, rest),
        _ => (false, line),
    };
    if digits.is_empty() || digits.len() > 19 || !digits.iter().all(u8::is_ascii_digit) {
        return None;
    }
    let mut n: i64 = 0;
    for d in digits {
        n = n.checked_mul(10)?.checked_add(i64::from(d - b'0'))?;
    }
    Some(if negative { -n } else { n })
}

/// A length header: `-1` (null) or a non-negative count.
fn length(line: &[u8]) -> Result<Option<usize>, Error> {
    match integer(line) {
        Some(-1) => Ok(None),
        Some(n) if n >= 0 => usize::try_from(n).map(Some).map_err(|_| Error::TooLarge("length")),
        _ => Err(Error::Malformed("length")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Parses `input` fed in pieces of `chunk` bytes: the replies and the bytes left over.
    fn parse_chunked(input: &[u8], chunk: usize) -> Result<Vec<Reply>, Error> {
        let mut parser = Parser::new();
        let mut out = Vec::new();
        for piece in input.chunks(chunk) {
            let mut at = 0;
            while at < piece.len() {
                let (used, reply) = parser.feed(&piece[at..])?;
                at += used;
                out.extend(reply);
            }
        }
        Ok(out)
    }

    #[track_caller]
    fn check(input: &[u8], expected: Result<Vec<Reply>, Error>) {
        for chunk in [1, 2, 3, 7, 64, input.len().max(1)] {
            assert_eq!(parse_chunked(input, chunk), expected, "chunk {chunk}");
        }
    }

    fn bulk(s: &str) -> Reply {
        Reply::Bulk(s.as_bytes().to_vec())
    }

    #[test]
    fn resp2_replies() {
        check(b"+OK\r\n", Ok(vec![Reply::Status("OK".into())]));
        check(b"-ERR wrong\r\n", Ok(vec![Reply::Error("ERR wrong".into())]));
        check(b":-42\r\n:7\r\n", Ok(vec![Reply::Int(-42), Reply::Int(7)]));
        check(b"$5\r\nhello\r\n$0\r\n\r\n$-1\r\n", Ok(vec![bulk("hello"), bulk(""), Reply::Nil]));
        check(b"$4\r\na\r\nb\r\n", Ok(vec![bulk("a\r\nb")]));
        check(
            b"*3\r\n:1\r\n*2\r\n$1\r\nx\r\n$-1\r\n*0\r\n*-1\r\n",
            Ok(vec![
                Reply::Array(vec![Reply::Int(1), Reply::Array(vec![bulk("x"), Reply::Nil]), Reply::Array(vec![])]),
                Reply::Nil,
            ]),
        );
    }

    #[test]
    fn resp3_replies() {
        check(
            b"_\r\n#t\r\n#f\r\n,1.5\r\n(123\r\n",
            Ok(vec![
                Reply::Nil,
                Reply::Int(1),
                Reply::Int(0),
                Reply::Status("1.5".into()),
                Reply::Status("123".into()),
            ]),
        );
        check(b"=8\r\ntxt:abcd\r\n!3\r\nbad\r\n", Ok(vec![bulk("abcd"), Reply::Error("bad".into())]));
        check(
            b"%1\r\n+k\r\n:1\r\n~1\r\n:2\r\n>1\r\n:3\r\n",
            Ok(vec![
                Reply::Array(vec![Reply::Status("k".into()), Reply::Int(1)]),
                Reply::Array(vec![Reply::Int(2)]),
                Reply::Array(vec![Reply::Int(3)]),
            ]),
        );
        // An attribute is dropped; the value after it is the reply, at the top level and inside an array.
        check(
            b"|1\r\n+ttl\r\n:3\r\n:9\r\n*1\r\n|0\r\n:8\r\n",
            Ok(vec![Reply::Int(9), Reply::Array(vec![Reply::Int(8)])]),
        );
    }

    #[test]
    fn malformed_and_oversized_replies_are_refused() {
        check(b"?x\r\n", Err(Error::UnknownType(b'?')));
        check(b":12a\r\n", Err(Error::Malformed("integer")));
        check(b":99999999999999999999\r\n", Err(Error::Malformed("integer")));
        check(b"+OK\n", Err(Error::Malformed("line ending")));
        check(b"$2\r\nabX\n", Err(Error::Malformed("bulk string ending")));
        check(b"$-2\r\n", Err(Error::Malformed("length")));
        check(format!("${}\r\n", BULK_BYTES_MAX + 1).as_bytes(), Err(Error::TooLarge("bulk string bytes")));
        check(format!("*{}\r\n", ARRAY_LEN_MAX + 1).as_bytes(), Err(Error::TooLarge("aggregate length")));
        check(format!("%{}\r\n", ARRAY_LEN_MAX / 2 + 1).as_bytes(), Err(Error::TooLarge("aggregate length")));
        check("*1\r\n".repeat(DEPTH_MAX + 1).as_bytes(), Err(Error::TooLarge("nesting depth")));
        let long = format!("+{}\r\n", "a".repeat(LINE_BYTES_MAX + 1));
        check(long.as_bytes(), Err(Error::TooLarge("line bytes")));
        // Many bulk strings in one array: the reply's bytes are bounded, not only each string's.
        let mut big = format!("*{ARRAY_LEN_MAX}\r\n").into_bytes();
        for _ in 0..3 {
            big.extend_from_slice(format!("${BULK_BYTES_MAX}\r\n").as_bytes());
            big.extend(std::iter::repeat_n(b'x', BULK_BYTES_MAX));
            big.extend_from_slice(b"\r\n");
        }
        assert_eq!(parse_chunked(&big, 65_536), Err(Error::TooLarge("reply bytes")));
    }

    /// Issue 33, finding 5: a reply within every bound of bytes, length and depth, made of tiny elements (1.06 MB
    /// of three-byte nulls in arrays of 1,024 was 353,000 values, 11 MB in memory; within today's byte bound,
    /// 108,000 values): refused at its 1,025th value, counting the aggregates, an attribute's dropped contents, and
    /// nothing of the replies before it.
    #[test]
    fn a_reply_of_many_tiny_elements_is_refused_by_its_element_count() {
        let inner = format!("*{ARRAY_LEN_MAX}\r\n{}", "_\r\n".repeat(ARRAY_LEN_MAX));
        let arrays = (REPLY_BYTES_MAX - 16) / inner.len();
        let many = format!("*{arrays}\r\n{}", inner.repeat(arrays));
        assert!(many.len() > REPLY_BYTES_MAX - inner.len() && many.len() < REPLY_BYTES_MAX, "{}", many.len());
        assert_eq!(parse_chunked(many.as_bytes(), 65_536), Err(Error::TooLarge("reply elements")));
        check(format!("*2\r\n{inner}").as_bytes(), Err(Error::TooLarge("reply elements")));
        // At the bound: an array and 1,023 values, the array itself one of them.
        let most = REPLY_ELEMENTS_MAX - 1;
        let at_bound = format!("*{most}\r\n{}", "_\r\n".repeat(most));
        check(at_bound.as_bytes(), Ok(vec![Reply::Array(vec![Reply::Nil; most])]));
        let over = format!("*{}\r\n{}", most + 1, "_\r\n".repeat(most + 1));
        check(over.as_bytes(), Err(Error::TooLarge("reply elements")));
        // An attribute's pairs count though they are dropped.
        let attributed = format!("|{}\r\n{}:1\r\n", ARRAY_LEN_MAX / 2, "_\r\n".repeat(ARRAY_LEN_MAX));
        check(attributed.as_bytes(), Err(Error::TooLarge("reply elements")));
        // The count is per reply: replies of 1,024 values each, one after another, are all read.
        let two = format!("{at_bound}{at_bound}");
        check(two.as_bytes(), Ok(vec![Reply::Array(vec![Reply::Nil; most]); 2]));
    }

    #[test]
    fn commands_are_arrays_of_bulk_strings() {
        let mut out = Vec::new();
        encode(&[b"SET", b"k", b"a b"], &mut out);
        assert_eq!(out, b"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$3\r\na b\r\n");
    }
}
