//! What a third party's page body is, before the extractor reads it: the content coding a server applied without
//! being asked (`fetch::untrusted` asks for none, yet a misconfigured server may gzip anyway) undone within the byte
//! cap, and a UTF-16 page decoded to UTF-8 (the tokenizer reads UTF-8; UTF-16 read as it came out as text with a NUL
//! between letters). Other encodings are left as they are: ASCII-compatible ones keep their markup and their ASCII
//! text, and their other bytes become U+FFFD in the tokenizer.
//!
//! Pure and streaming: `Utf16` is a push transcoder (`feed`, `finish`) whose output is the same whatever the
//! chunking, holding at most three bytes and a surrogate between chunks and writing at most twice a chunk's bytes;
//! `decoded` wraps a reader in flate2's inflater, whose memory is its window, and whose output the caller counts
//! against the cap.

use std::io::{self, BufReader, Read};

/// Bytes of a gzip header skipped at most (its optional file name and comment are unbounded in the format; a real
/// one is a few dozen bytes): a longer one is refused.
pub const GZIP_HEADER_BYTES_MAX: usize = 1_024;

/// A response's `Content-Encoding`, as far as it can be undone.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Coding {
    Identity,
    /// `gzip` or `x-gzip` (RFC 9110): a gzip member (RFC 1952).
    Gzip,
    /// `deflate`: a zlib stream (RFC 1950), or a raw deflate stream as some servers send.
    Deflate,
}

impl Coding {
    /// The coding a `Content-Encoding` value names; `Err` with the value for one that cannot be undone here (`br`,
    /// `zstd`, `compress`, several codings stacked, anything unknown).
    pub fn of(header: Option<&str>) -> Result<Coding, String> {
        let value = header.map(str::trim).unwrap_or_default();
        if value.is_empty() || value.eq_ignore_ascii_case("identity") {
            Ok(Coding::Identity)
        } else if value.eq_ignore_ascii_case("gzip") || value.eq_ignore_ascii_case("x-gzip") {
            Ok(Coding::Gzip)
        } else if value.eq_ignore_ascii_case("deflate") {
            Ok(Coding::Deflate)
        } else {
            Err(value.chars().take(64).collect())
        }
    }
}

/// `reader`'s bytes with `coding` undone. A broken header is an `InvalidData` error (from the first read, as the
/// inflater's own errors are); the caller bounds the output. The gzip trailer (CRC-32 and length) is not checked:
/// a damaged page is extracted as far as it inflates, and flate2's gzip reader would link a second CRC-32 table.
pub fn decoded<'a>(reader: impl Read + 'a, coding: Coding) -> Box<dyn Read + 'a> {
    match coding {
        Coding::Identity => Box::new(reader),
        Coding::Gzip | Coding::Deflate => {
            Box::new(Inflating { source: Some((BufReader::new(reader), coding)), inner: None })
        }
    }
}

/// Reads the coding's header on the first read, then inflates. What was read of a raw deflate stream while looking
/// for a zlib header is handed back in front of the rest (`Chain`).
struct Inflating<R: Read> {
    source: Option<(BufReader<R>, Coding)>,
    inner: Option<flate2::bufread::DeflateDecoder<Stream<R>>>,
}

/// A deflate stream: the bytes read while looking for its header, then the rest.
type Stream<R> = io::Chain<io::Cursor<Vec<u8>>, BufReader<R>>;

impl<R: Read> Read for Inflating<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if let Some((mut source, coding)) = self.source.take() {
            let before = match coding {
                Coding::Gzip => {
                    skip_gzip_header(&mut source)?;
                    Vec::new()
                }
                _ => zlib_header(&mut source)?,
            };
            self.inner = Some(flate2::bufread::DeflateDecoder::new(io::Cursor::new(before).chain(source)));
        }
        match &mut self.inner {
            Some(inner) => inner.read(buf),
            None => Ok(0),
        }
    }
}

fn broken(what: &str) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, what.to_owned())
}

/// `read_exact`, with the end of the body before `N` bytes said as a broken header (the connection's own errors, a
/// timeout, pass as they are).
fn exactly<const N: usize>(r: &mut impl Read, what: &str) -> io::Result<[u8; N]> {
    let mut bytes = [0u8; N];
    r.read_exact(&mut bytes).map_err(|e| if e.kind() == io::ErrorKind::UnexpectedEof { broken(what) } else { e })?;
    Ok(bytes)
}

/// Reads past a gzip member's header (RFC 1952, section 2.3), at most `GZIP_HEADER_BYTES_MAX` bytes of it.
fn skip_gzip_header(r: &mut impl Read) -> io::Result<()> {
    const FHCRC: u8 = 2;
    const FEXTRA: u8 = 4;
    const FNAME: u8 = 8;
    const FCOMMENT: u8 = 16;
    let mut left = GZIP_HEADER_BYTES_MAX;
    let mut bytes = |n: usize| -> io::Result<()> {
        left = left.checked_sub(n).ok_or_else(|| broken("the gzip header is too long"))?;
        Ok(())
    };
    bytes(10)?;
    let [0x1f, 0x8b, 8, flags, ..] = exactly::<10>(r, "the gzip header is cut short")? else {
        return Err(broken("the body is not gzip"));
    };
    if flags & FEXTRA != 0 {
        bytes(2)?;
        let len = u16::from_le_bytes(exactly(r, "the gzip header is cut short")?);
        bytes(usize::from(len))?;
        for _ in 0..len {
            exactly::<1>(r, "the gzip header is cut short")?;
        }
    }
    let strings = [FNAME, FCOMMENT].into_iter().filter(|f| flags & f != 0).count();
    for _ in 0..strings {
        // A zero-terminated string: a file name, a comment.
        loop {
            bytes(1)?;
            if exactly::<1>(r, "the gzip header is cut short")? == [0] {
                break;
            }
        }
    }
    if flags & FHCRC != 0 {
        bytes(2)?;
        exactly::<2>(r, "the gzip header is cut short")?;
    }
    Ok(())
}

/// Reads a zlib header (RFC 1950): `deflate` is zlib by the standard, raw deflate from some servers, so the first
/// two bytes of a stream that has none are returned, to be inflated. A preset dictionary cannot be supplied, and is
/// refused.
fn zlib_header(r: &mut impl Read) -> io::Result<Vec<u8>> {
    const FDICT: u8 = 0x20;
    let [cmf, flg] = exactly(r, "the deflate stream is cut short")?;
    let zlib = cmf & 0x0f == 8 && cmf >> 4 <= 7 && (u16::from(cmf) << 8 | u16::from(flg)) % 31 == 0;
    if !zlib {
        return Ok(vec![cmf, flg]);
    }
    if flg & FDICT != 0 {
        return Err(broken("the zlib stream needs a preset dictionary"));
    }
    Ok(Vec::new())
}

/// The byte order of a UTF-16 body.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Order {
    Little,
    Big,
}

/// A body's text form, decided from its first bytes and its declared charset.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Form {
    /// The first bytes are being collected (up to 3, `held`); `declared` is the charset's UTF-16 order, if any.
    Sniffing {
        declared: Option<Order>,
    },
    /// Passed through as it is (UTF-8 or an ASCII-compatible encoding).
    AsIs,
    Utf16(Order),
}

/// The push transcoder of a page's body: UTF-16 (by its byte order mark, by a `charset` of UTF-16 in its content
/// type, or by a first character that is ASCII with a zero byte beside it, as XML's autodetection reads it) becomes
/// UTF-8, with U+FFFD for a lone surrogate or an odd last byte; every other body is passed through as it is. A
/// UTF-8 byte order mark wins over the declared charset, as browsers decide.
#[derive(Debug)]
pub struct Utf16 {
    form: Form,
    /// The first bytes while sniffing; later, the first byte of a code unit cut by a chunk.
    held: Vec<u8>,
    /// A high surrogate waiting for its low half.
    high: Option<u16>,
    /// The output of one chunk (reused).
    out: Vec<u8>,
}

impl Utf16 {
    /// A transcoder for a body of this `Content-Type`.
    pub fn new(content_type: &str) -> Utf16 {
        Utf16 {
            form: Form::Sniffing { declared: declared_utf16(content_type) },
            held: Vec::new(),
            high: None,
            out: Vec::new(),
        }
    }

    /// Whether the body turned out to be UTF-16 (known after its first three bytes).
    pub fn is_utf16(&self) -> bool {
        matches!(self.form, Form::Utf16(_))
    }

    /// Takes the next chunk of the body and hands `sink` what it can already say.
    pub fn feed(&mut self, chunk: &[u8], sink: &mut dyn FnMut(&[u8])) {
        let mut chunk = chunk;
        if let Form::Sniffing { declared } = self.form {
            let take = chunk.len().min(3 - self.held.len());
            self.held.extend_from_slice(chunk.get(..take).unwrap_or_default());
            chunk = chunk.get(take..).unwrap_or_default();
            if self.held.len() < 3 {
                return;
            }
            self.decide(declared, sink);
        }
        self.pass(chunk, sink);
    }

    /// Ends the body: what is held is handed on (U+FFFD for half a code unit or a lone high surrogate).
    pub fn finish(&mut self, sink: &mut dyn FnMut(&[u8])) {
        if let Form::Sniffing { declared } = self.form {
            self.decide(declared, sink);
        }
        self.out.clear();
        if self.form != Form::AsIs && (self.high.take().is_some() || !self.held.is_empty()) {
            self.held.clear();
            push_char(&mut self.out, char::REPLACEMENT_CHARACTER);
        }
        if !self.out.is_empty() {
            sink(&self.out);
        }
    }

    /// Decides the form from the bytes held (three, or fewer at the end of a short body) and hands them on.
    fn decide(&mut self, declared: Option<Order>, sink: &mut dyn FnMut(&[u8])) {
        let held = std::mem::take(&mut self.held);
        let (form, skip) = match held.as_slice() {
            [0xef, 0xbb, 0xbf, ..] => (Form::AsIs, 0),
            [0xff, 0xfe, ..] => (Form::Utf16(Order::Little), 2),
            [0xfe, 0xff, ..] => (Form::Utf16(Order::Big), 2),
            _ if declared.is_some() => (declared.map_or(Form::AsIs, Form::Utf16), 0),
            [a, 0, ..] if *a != 0 && a.is_ascii() => (Form::Utf16(Order::Little), 0),
            [0, b, ..] if *b != 0 && b.is_ascii() => (Form::Utf16(Order::Big), 0),
            _ => (Form::AsIs, 0),
        };
        self.form = form;
        self.pass(held.get(skip..).unwrap_or_default(), sink);
    }

    /// Hands on a chunk in the decided form.
    fn pass(&mut self, chunk: &[u8], sink: &mut dyn FnMut(&[u8])) {
        let Form::Utf16(order) = self.form else {
            if !chunk.is_empty() {
                sink(chunk);
            }
            return;
        };
        self.out.clear();
        for &b in chunk {
            let Some(first) = self.held.pop() else {
                self.held.push(b);
                continue;
            };
            let pair = [first, b];
            let unit = match order {
                Order::Little => u16::from_le_bytes(pair),
                Order::Big => u16::from_be_bytes(pair),
            };
            self.unit(unit);
        }
        if !self.out.is_empty() {
            sink(&self.out);
        }
    }

    /// One UTF-16 code unit into `out`.
    fn unit(&mut self, unit: u16) {
        let surrogate = |u: u16| (0xd800..=0xdfff).contains(&u);
        let low = |u: u16| (0xdc00..=0xdfff).contains(&u);
        if let Some(high) = self.high.take() {
            if low(unit) {
                let c = 0x1_0000 + ((u32::from(high) - 0xd800) << 10) + (u32::from(unit) - 0xdc00);
                push_char(&mut self.out, char::from_u32(c).unwrap_or(char::REPLACEMENT_CHARACTER));
                return;
            }
            push_char(&mut self.out, char::REPLACEMENT_CHARACTER);
        }
        if !surrogate(unit) {
            push_char(&mut self.out, char::from_u32(u32::from(unit)).unwrap_or(char::REPLACEMENT_CHARACTER));
        } else if low(unit) {
            push_char(&mut self.out, char::REPLACEMENT_CHARACTER);
        } else {
            self.high = Some(unit);
        }
    }
}

fn push_char(out: &mut Vec<u8>, c: char) {
    let mut utf8 = [0u8; 4];
    out.extend_from_slice(c.encode_utf8(&mut utf8).as_bytes());
}

/// The UTF-16 byte order a `Content-Type`'s `charset` names (the WHATWG Encoding Standard's labels), if it names
/// UTF-16; `utf-16` without an order is little-endian there.
pub fn declared_utf16(content_type: &str) -> Option<Order> {
    let charset = content_type.split(';').skip(1).find_map(|p| {
        let (k, v) = p.split_once('=')?;
        k.trim().eq_ignore_ascii_case("charset").then(|| v.trim().trim_matches(['"', '\'']))
    })?;
    const LITTLE: [&str; 7] = ["utf-16", "utf-16le", "unicode", "ucs-2", "iso-10646-ucs-2", "csunicode", "unicodefeff"];
    const BIG: [&str; 2] = ["utf-16be", "unicodefffe"];
    if LITTLE.iter().any(|l| charset.eq_ignore_ascii_case(l)) {
        Some(Order::Little)
    } else if BIG.iter().any(|l| charset.eq_ignore_ascii_case(l)) {
        Some(Order::Big)
    } else {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `input` through a transcoder for `content_type`, fed `chunk` bytes at a time.
    fn transcoded(content_type: &str, input: &[u8], chunk: usize) -> Vec<u8> {
        let mut t = Utf16::new(content_type);
        let mut out = Vec::new();
        for piece in input.chunks(chunk.max(1)) {
            t.feed(piece, &mut |b| out.extend_from_slice(b));
        }
        t.finish(&mut |b| out.extend_from_slice(b));
        out
    }

    /// The same output at chunk sizes 1, 2, 3, 7, 64 and whole, and the expected one.
    #[track_caller]
    fn check(content_type: &str, input: &[u8], expected: &[u8]) {
        for chunk in [1, 2, 3, 7, 64, input.len()] {
            let got = transcoded(content_type, input, chunk);
            assert_eq!(got, expected, "chunks of {chunk}: {:?}", String::from_utf8_lossy(&got));
        }
    }

    fn le(text: &str) -> Vec<u8> {
        text.encode_utf16().flat_map(u16::to_le_bytes).collect()
    }

    fn be(text: &str) -> Vec<u8> {
        text.encode_utf16().flat_map(u16::to_be_bytes).collect()
    }

    const PAGE: &str = "<html><title>Ünïcödé 日本 😀</title><p>text</p></html>";

    #[test]
    fn utf16_is_decoded_by_its_mark_its_charset_or_its_first_character() {
        let html = "text/html";
        check(html, &[[0xff, 0xfe].as_slice(), &le(PAGE)].concat(), PAGE.as_bytes());
        check(html, &[[0xfe, 0xff].as_slice(), &be(PAGE)].concat(), PAGE.as_bytes());
        check("text/html; charset=UTF-16", &le(PAGE), PAGE.as_bytes());
        check("text/html; charset=\"utf-16be\"", &be(PAGE), PAGE.as_bytes());
        check("text/html; charset=utf-16le", &le("x"), b"x");
        // No mark and no charset: an ASCII first character beside a zero byte.
        check(html, &le(PAGE), PAGE.as_bytes());
        check(html, &be(PAGE), PAGE.as_bytes());
        // The mark wins over the charset.
        check("text/html; charset=utf-16le", &[[0xfe, 0xff].as_slice(), &be(PAGE)].concat(), PAGE.as_bytes());
    }

    #[test]
    fn everything_else_passes_as_it_is() {
        for input in [PAGE.as_bytes(), b"", b"<", b"<p", b"\xef\xbb\xbf<p>x", b"\xe9t\xe9", b"\x00\x00\x00"] {
            check("text/html; charset=utf-8", input, input);
            check("text/plain", input, input);
        }
        // A UTF-8 mark wins over a charset of UTF-16.
        check("text/html; charset=utf-16", b"\xef\xbb\xbf<p>", b"\xef\xbb\xbf<p>");
        assert_eq!(declared_utf16("text/html; charset=windows-1252"), None);
        assert_eq!(declared_utf16("text/html; foo=utf-16"), None);
    }

    #[test]
    fn broken_utf16_becomes_replacement_characters() {
        let html = "text/html; charset=utf-16le";
        // A lone high surrogate, a lone low one, a high one followed by a letter, an odd last byte.
        let units: Vec<u8> = [0xd83du16, 0x41, 0xde00, 0x42, 0xd83d].iter().flat_map(|u| u.to_le_bytes()).collect();
        check(html, &units, "\u{fffd}A\u{fffd}B\u{fffd}".as_bytes());
        check(html, &[0x41, 0x00, 0x42], "A\u{fffd}".as_bytes());
        check(html, &[0x41], "\u{fffd}".as_bytes());
        check("text/html", &[0xff, 0xfe], b"");
    }

    #[test]
    fn codings_are_named_or_refused() {
        assert_eq!(Coding::of(None), Ok(Coding::Identity));
        assert_eq!(Coding::of(Some(" ")), Ok(Coding::Identity));
        assert_eq!(Coding::of(Some("Identity")), Ok(Coding::Identity));
        assert_eq!(Coding::of(Some("GZIP")), Ok(Coding::Gzip));
        assert_eq!(Coding::of(Some("x-gzip")), Ok(Coding::Gzip));
        assert_eq!(Coding::of(Some("deflate")), Ok(Coding::Deflate));
        for refused in ["br", "zstd", "compress", "gzip, gzip", "gzip, br"] {
            assert_eq!(Coding::of(Some(refused)), Err(refused.to_owned()));
        }
    }

    /// A body arriving `n` bytes per read, then failing with `end` if given (a connection that times out).
    struct Trickle<'a> {
        body: &'a [u8],
        n: usize,
        end: Option<io::ErrorKind>,
    }

    impl Read for Trickle<'_> {
        fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
            if self.body.is_empty() {
                return self.end.map_or(Ok(0), |kind| Err(kind.into()));
            }
            let n = self.n.min(buf.len()).min(self.body.len());
            buf[..n].copy_from_slice(&self.body[..n]);
            self.body = &self.body[n..];
            Ok(n)
        }
    }

    /// `body` inflated, arriving in reads of 1, 2, 3, 7, 64 bytes and whole: the same output (or error kind) each time.
    fn inflate(body: &[u8], coding: Coding) -> io::Result<Vec<u8>> {
        let read = |n: usize| {
            let mut out = Vec::new();
            decoded(Trickle { body, n, end: None }, coding).read_to_end(&mut out).map(|_| out)
        };
        let whole = read(body.len().max(1));
        for n in [1, 2, 3, 7, 64] {
            assert_eq!(
                read(n).as_ref().map_err(io::Error::kind),
                whole.as_ref().map_err(io::Error::kind),
                "reads of {n}"
            );
        }
        whole
    }

    /// The connection's own error while the header is read is passed as it is, not taken for a broken body.
    #[test]
    fn a_connection_error_in_the_header_is_the_connections() {
        for (body, coding) in [(&[0x1f, 0x8b, 8, 8, 0][..], Coding::Gzip), (&[0x78][..], Coding::Deflate)] {
            let trickle = Trickle { body, n: 1, end: Some(io::ErrorKind::TimedOut) };
            let e = decoded(trickle, coding).read_to_end(&mut Vec::new()).unwrap_err();
            assert_eq!(e.kind(), io::ErrorKind::TimedOut, "{coding:?}");
        }
    }

    fn deflated(data: &[u8]) -> Vec<u8> {
        use std::io::Write as _;
        let mut e = flate2::write::DeflateEncoder::new(Vec::new(), flate2::Compression::default());
        e.write_all(data).unwrap();
        e.finish().unwrap()
    }

    #[test]
    fn gzip_and_deflate_bodies_inflate() {
        let page = PAGE.repeat(100);
        let raw = deflated(page.as_bytes());
        // A gzip member with a file name and a comment, and one with an extra field and a header CRC.
        let named =
            [[0x1f, 0x8b, 8, 8 | 16, 0, 0, 0, 0, 0, 3].as_slice(), b"page.html\0a comment\0", &raw, &[0; 8]].concat();
        let extra =
            [[0x1f, 0x8b, 8, 4 | 2, 0, 0, 0, 0, 0, 3, 3, 0, 1, 2, 3, 0xaa, 0xbb].as_slice(), &raw, &[0; 8]].concat();
        for body in [named, extra] {
            assert_eq!(inflate(&body, Coding::Gzip).unwrap(), page.as_bytes());
        }
        // Deflate as zlib (header 78 9c) and raw.
        let zlib = [[0x78, 0x9c].as_slice(), &raw, &[0; 4]].concat();
        assert_eq!(inflate(&zlib, Coding::Deflate).unwrap(), page.as_bytes());
        assert_eq!(inflate(&raw, Coding::Deflate).unwrap(), page.as_bytes());
        assert_eq!(inflate(b"as it is", Coding::Identity).unwrap(), b"as it is");
    }

    #[test]
    fn broken_compressed_bodies_are_errors() {
        let raw = deflated(b"hello");
        for body in [
            b"<html>plain".to_vec(),
            vec![0x1f, 0x8b, 8],
            [[0x1f, 0x8b, 8, 8, 0, 0, 0, 0, 0, 3].as_slice(), &[b'n'; 2_000]].concat(),
            [[0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 3].as_slice(), &[0xff; 64]].concat(),
            [[0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 3].as_slice(), raw.get(..3).unwrap()].concat(),
        ] {
            let e = inflate(&body, Coding::Gzip).expect_err("refused");
            assert!(
                matches!(
                    e.kind(),
                    io::ErrorKind::InvalidData | io::ErrorKind::InvalidInput | io::ErrorKind::UnexpectedEof
                ),
                "{e:?}"
            );
        }
        assert!(inflate(&[0x78, 0xbb, 0, 0], Coding::Deflate).is_err(), "a preset dictionary");
    }
}
