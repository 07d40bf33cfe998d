//! A streaming HTML tokenizer, shared by the search-page parsers and the main-content extractor.
//!
//! It is a push parser: `feed` takes chunks of any size as they arrive and `finish` ends the input; a tag, an
//! entity or a UTF-8 sequence split across chunks is an ordinary state, and the tokens are the same whatever the
//! chunking. It follows the WHATWG tokenizer closely enough for real pages (any attribute quoting, named, decimal
//! and hex character references in text and attributes, comments, doctype and processing instructions skipped,
//! raw text in `script` and `style`, escapable raw text in `title` and `textarea`) and never panics: malformed
//! input becomes text or is dropped, as browsers do. Tree building is left to the consumer.
//!
//! Memory: the pending text run and the tag being read are the only buffers. A text run is delivered in pieces of at
//! most `TEXT_RUN_BYTES_MAX` bytes, each cut where no character or character reference spans it, so the pieces
//! decode to the run's text; a tag keeps at most `ATTRS_MAX` attributes, `NAME_BYTES_MAX` bytes of its name and of
//! each attribute's name, and `VALUE_BYTES_MAX` bytes of each value, so it costs the same whatever its length. Every
//! state does constant work per input byte.

mod entities;

/// Receives tokens in document order. Text arrives entity-decoded (raw in `script` and `style`) and may come in
/// several pieces between two tags.
///
/// The tokenizer takes it as `&mut dyn Sink`, one virtual call per token, so that it is compiled once, here at opt
/// "s": a generic tokenizer would be compiled anew for each sink in the package that defines it (websearchd's
/// parsers, at opt "z": Cargo.toml). 14 KB less on the aarch64 binary, at the same speed (PERFORMANCE.md, Footprint).
pub trait Sink {
    fn start_tag(&mut self, tag: &Tag);
    fn end_tag(&mut self, name: &str);
    fn text(&mut self, text: &str);
    fn comment(&mut self, _text: &str) {}
    /// Whether the sink wants the raw text of `script`, `style`, `xmp` and `noembed`; a sink that ignores it saves
    /// the tokenizer buffering and validating it (scripts are often half a page's bytes).
    fn wants_raw_text(&self) -> bool {
        true
    }
}

/// A start tag. Names are ASCII-lowercased; attribute values are entity-decoded.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Tag {
    pub name: String,
    pub attrs: Vec<Attr>,
    pub self_closing: bool,
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Attr {
    pub name: String,
    pub value: String,
}

impl Tag {
    /// The first attribute of that (lowercase) name.
    pub fn attr(&self, name: &str) -> Option<&str> {
        self.attrs.iter().find(|a| a.name == name).map(|a| a.value.as_str())
    }

    /// Whether the `class` attribute holds this class as one of its whitespace-separated tokens.
    pub fn has_class(&self, class: &str) -> bool {
        self.attr("class").is_some_and(|c| c.split_ascii_whitespace().any(|t| t == class))
    }

    /// Whether any class token starts with this prefix.
    pub fn has_class_prefix(&self, prefix: &str) -> bool {
        self.attr("class").is_some_and(|c| c.split_ascii_whitespace().any(|t| t.starts_with(prefix)))
    }
}

/// Elements whose content is text up to the matching end tag.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum RawKind {
    /// `script`, `style`: no character references.
    Raw(&'static str),
    /// `title`, `textarea`: character references decoded.
    Escapable(&'static str),
}

impl RawKind {
    fn of(name: &str) -> Option<RawKind> {
        Some(match name {
            "script" => RawKind::Raw("script"),
            "style" => RawKind::Raw("style"),
            "xmp" => RawKind::Raw("xmp"),
            "noembed" => RawKind::Raw("noembed"),
            "title" => RawKind::Escapable("title"),
            "textarea" => RawKind::Escapable("textarea"),
            _ => return None,
        })
    }

    fn name(self) -> &'static str {
        match self {
            RawKind::Raw(n) | RawKind::Escapable(n) => n,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    Data,
    TagOpen,
    EndTagOpen,
    TagName,
    BeforeAttrName,
    AttrName,
    AfterAttrName,
    BeforeAttrValue,
    AttrValueQuoted(u8),
    AttrValueUnquoted,
    AfterAttrValueQuoted,
    SelfClosing,
    /// After `<!`: how many `-` have been seen (0 or 1).
    MarkupOpen(u8),
    /// Inside `<!-- ... -->`: how many `-` in a row just before.
    Comment(u8),
    /// `<!doctype ...>`, `<?xml ...>`, `</ >` and the like, up to `>`.
    Bogus,
    /// Inside raw text; `matched` bytes of `</name` have been seen.
    RawText {
        kind: RawKind,
        matched: u8,
    },
    /// A raw text element's end tag is complete up to its name: skip to `>`.
    RawEndTail,
}

/// Longest comment kept (the rest of a longer one is dropped; comments only carry markers).
const COMMENT_BYTES_MAX: usize = 4_096;

/// Attributes kept per tag; later ones are dropped (real elements carry a few dozen at most). A repeated attribute
/// is ignored as browsers do, and looking for the repeat scans the attributes kept so far: the cap keeps that check
/// O(`ATTRS_MAX`) per attribute, so a tag of 40,000 attributes costs linear time, not quadratic, and holds no
/// more than this many buffers.
pub const ATTRS_MAX: usize = 64;

/// Bytes kept of a tag's and of an attribute's name: a longer name is cut to its first `NAME_BYTES_MAX` bytes. Every
/// name a consumer asks for is far shorter, so a cut name matches none of them (and a start and an end tag cut alike
/// still match each other); it costs this much however long it was.
pub const NAME_BYTES_MAX: usize = 128;

/// Bytes of an attribute's value kept (before character references are decoded): a longer value is dropped, and the
/// attribute kept with an empty value (that it is there still counts, as for `hidden`). A value cut short would be
/// another value, a wrong URL for an `href`. What consumers read is far shorter: class lists and styles of a few
/// kilobytes at most on real pages, and URLs within the 8 KiB servers take; longer values are inline data (`data:`
/// images, JSON state) that nothing reads. So a tag costs at most `ATTRS_MAX` values of this many bytes, whatever
/// its values' lengths (one `href` of 3 MB cost its bytes four times over, in the buffer, the decoded copy and the
/// extractor's copies).
pub const VALUE_BYTES_MAX: usize = 8 * 1_024;

/// Bytes of a text run (text, raw or escapable raw text) buffered at most: a longer run is delivered in pieces, so a
/// page that is one text run of megabytes costs this buffer and its decoded copy, not the run twice over. A piece
/// ends after a byte that ends every character and character reference (ASCII, not a letter, digit, `&` or `#`),
/// else before the last `&`, else at a character boundary, and never in the first half of the buffer (which keeps
/// the work linear): only a numeric reference whose digits run over half of it is decoded differently.
pub const TEXT_RUN_BYTES_MAX: usize = 64 * 1_024;

pub struct Tokenizer {
    state: State,
    /// Raw bytes of the pending text run (entities not yet decoded).
    text: Vec<u8>,
    tag: Tag,
    is_end_tag: bool,
    name: Vec<u8>,
    attr_name: Vec<u8>,
    attr_value: Vec<u8>,
    /// The attribute value being read is longer than `VALUE_BYTES_MAX`: it is dropped (`attr_value` stays empty).
    value_dropped: bool,
    comment: Vec<u8>,
    /// After a raw-text start tag, the kind of element we are in.
    raw: Option<RawKind>,
    /// Whether the raw text of the current raw-text element is kept (the sink wants it).
    keep_raw: bool,
    decoded: String,
    /// Attributes of earlier tags, kept to reuse their buffers.
    spare: Vec<Attr>,
}

impl Default for Tokenizer {
    fn default() -> Self {
        Tokenizer::new()
    }
}

impl Tokenizer {
    pub fn new() -> Tokenizer {
        Tokenizer {
            state: State::Data,
            text: Vec::new(),
            tag: Tag::default(),
            is_end_tag: false,
            name: Vec::new(),
            attr_name: Vec::new(),
            attr_value: Vec::new(),
            value_dropped: false,
            comment: Vec::new(),
            raw: None,
            keep_raw: true,
            decoded: String::new(),
            spare: Vec::new(),
        }
    }

    /// Tokenizes a whole document in one call.
    pub fn run(input: &[u8], sink: &mut dyn Sink) {
        let mut t = Tokenizer::new();
        t.feed(input, sink);
        t.finish(sink);
    }

    pub fn feed(&mut self, chunk: &[u8], sink: &mut dyn Sink) {
        let mut i = 0;
        while i < chunk.len() {
            match self.state {
                // The hot loops: text, raw text and quoted values are copied up to their end byte in one go.
                State::Data => {
                    let window = self.text_window(chunk.get(i..).unwrap_or_default());
                    match copy_until(window, b'<', Some(&mut self.text)) {
                        Some(p) => {
                            self.state = State::TagOpen;
                            i += p + 1;
                        }
                        None => {
                            i += window.len();
                            self.flush_long_run(sink);
                        }
                    }
                    continue;
                }
                State::RawText { kind, matched: 0 } => {
                    let rest = chunk.get(i..).unwrap_or_default();
                    let (window, keep) =
                        if self.keep_raw { (self.text_window(rest), Some(&mut self.text)) } else { (rest, None) };
                    match copy_until(window, b'<', keep) {
                        Some(p) => {
                            self.state = State::RawText { kind, matched: 1 };
                            i += p + 1;
                        }
                        None => {
                            i += window.len();
                            self.flush_long_run(sink);
                        }
                    }
                    continue;
                }
                // Names are copied (lowercased) up to the byte that ends them in one go too.
                State::TagName | State::AttrName => {
                    let rest = chunk.get(i..).unwrap_or_default();
                    let attr = self.state == State::AttrName;
                    let run = rest
                        .iter()
                        .take_while(|&&b| {
                            !(matches!(b, b'\t' | b'\n' | b'\x0c' | b'\r' | b' ' | b'/' | b'>') || attr && b == b'=')
                        })
                        .count();
                    if run > 0 {
                        let name = if attr { &mut self.attr_name } else { &mut self.name };
                        let room = NAME_BYTES_MAX.saturating_sub(name.len());
                        name.extend(rest.iter().take(run.min(room)).map(u8::to_ascii_lowercase));
                        i += run;
                        continue;
                    }
                }
                State::AttrValueQuoted(q) => {
                    let rest = chunk.get(i..).unwrap_or_default();
                    let found = find(rest, q);
                    self.push_value(rest.get(..found.unwrap_or(rest.len())).unwrap_or_default());
                    match found {
                        Some(p) => {
                            self.end_attr();
                            self.state = State::AfterAttrValueQuoted;
                            i += p + 1;
                        }
                        None => i = chunk.len(),
                    }
                    continue;
                }
                _ => {}
            }
            let b = chunk.get(i).copied().unwrap_or(0);
            if self.step(b, sink) {
                i += 1;
            }
        }
    }

    /// Ends the input: pending text is delivered, an unfinished tag is dropped (as browsers do), an unfinished
    /// comment is delivered.
    pub fn finish(&mut self, sink: &mut dyn Sink) {
        match self.state {
            State::TagOpen => self.text.push(b'<'),
            State::EndTagOpen => self.text.extend_from_slice(b"</"),
            State::RawText { kind, matched } if matched > 0 => {
                let prefix = [b"</".as_slice(), kind.name().as_bytes()].concat();
                self.text.extend_from_slice(prefix.get(..usize::from(matched)).unwrap_or_default());
            }
            State::Comment(_) | State::MarkupOpen(_) => {
                self.flush_text(sink);
                sink.comment(&String::from_utf8_lossy(&self.comment));
            }
            _ => {}
        }
        self.flush_text(sink);
        self.state = State::Data;
    }

    /// One byte in a non-text state. Returns false when the byte must be looked at again in the new state.
    fn step(&mut self, b: u8, sink: &mut dyn Sink) -> bool {
        match self.state {
            // `feed` consumes these states itself.
            State::Data | State::AttrValueQuoted(_) => unreachable_state(self),
            State::TagOpen => match b {
                b'!' => {
                    self.comment.clear();
                    self.state = State::MarkupOpen(0);
                }
                b'/' => self.state = State::EndTagOpen,
                b'?' => self.state = State::Bogus,
                _ if b.is_ascii_alphabetic() => {
                    self.begin_tag(false);
                    self.name.push(b.to_ascii_lowercase());
                    self.state = State::TagName;
                }
                _ => {
                    self.text.push(b'<');
                    self.state = State::Data;
                    return false;
                }
            },
            State::EndTagOpen => match b {
                _ if b.is_ascii_alphabetic() => {
                    self.begin_tag(true);
                    self.name.push(b.to_ascii_lowercase());
                    self.state = State::TagName;
                }
                b'>' => self.state = State::Data,
                _ => self.state = State::Bogus,
            },
            State::TagName => match b {
                b'\t' | b'\n' | b'\x0c' | b'\r' | b' ' => self.state = State::BeforeAttrName,
                b'/' => self.state = State::SelfClosing,
                b'>' => self.emit_tag(sink),
                _ => push_name(&mut self.name, b),
            },
            State::BeforeAttrName => match b {
                b'\t' | b'\n' | b'\x0c' | b'\r' | b' ' => {}
                b'/' => self.state = State::SelfClosing,
                b'>' => self.emit_tag(sink),
                _ => {
                    self.attr_name.push(b.to_ascii_lowercase());
                    self.state = State::AttrName;
                }
            },
            State::AttrName => match b {
                b'\t' | b'\n' | b'\x0c' | b'\r' | b' ' => self.state = State::AfterAttrName,
                b'/' => {
                    self.end_attr();
                    self.state = State::SelfClosing;
                }
                b'=' => self.state = State::BeforeAttrValue,
                b'>' => {
                    self.end_attr();
                    self.emit_tag(sink);
                }
                _ => push_name(&mut self.attr_name, b),
            },
            State::AfterAttrName => match b {
                b'\t' | b'\n' | b'\x0c' | b'\r' | b' ' => {}
                b'/' => {
                    self.end_attr();
                    self.state = State::SelfClosing;
                }
                b'=' => self.state = State::BeforeAttrValue,
                b'>' => {
                    self.end_attr();
                    self.emit_tag(sink);
                }
                _ => {
                    self.end_attr();
                    self.state = State::AttrName;
                    return false;
                }
            },
            State::BeforeAttrValue => match b {
                b'\t' | b'\n' | b'\x0c' | b'\r' | b' ' => {}
                b'"' | b'\'' => self.state = State::AttrValueQuoted(b),
                b'>' => {
                    self.end_attr();
                    self.emit_tag(sink);
                }
                _ => {
                    self.state = State::AttrValueUnquoted;
                    return false;
                }
            },
            State::AttrValueUnquoted => match b {
                b'\t' | b'\n' | b'\x0c' | b'\r' | b' ' => {
                    self.end_attr();
                    self.state = State::BeforeAttrName;
                }
                b'>' => {
                    self.end_attr();
                    self.emit_tag(sink);
                }
                _ => self.push_value(&[b]),
            },
            State::AfterAttrValueQuoted => match b {
                b'\t' | b'\n' | b'\x0c' | b'\r' | b' ' => self.state = State::BeforeAttrName,
                b'/' => self.state = State::SelfClosing,
                b'>' => self.emit_tag(sink),
                _ => {
                    self.state = State::BeforeAttrName;
                    return false;
                }
            },
            State::SelfClosing => match b {
                b'>' => {
                    self.tag.self_closing = true;
                    self.emit_tag(sink);
                }
                _ => {
                    self.state = State::BeforeAttrName;
                    return false;
                }
            },
            State::MarkupOpen(dashes) => match (b, dashes) {
                (b'-', 0) => self.state = State::MarkupOpen(1),
                (b'-', _) => self.state = State::Comment(0),
                _ => {
                    self.state = State::Bogus;
                    return false;
                }
            },
            State::Comment(dashes) => match b {
                b'-' => self.state = State::Comment(dashes.saturating_add(1)),
                b'>' if dashes >= 2 => {
                    self.flush_text(sink);
                    sink.comment(&String::from_utf8_lossy(&self.comment));
                    self.comment.clear();
                    self.state = State::Data;
                }
                _ => {
                    if self.comment.len() < COMMENT_BYTES_MAX {
                        for _ in 0..dashes.min(2) {
                            self.comment.push(b'-');
                        }
                        self.comment.push(b);
                    }
                    self.state = State::Comment(0);
                }
            },
            State::Bogus => {
                if b == b'>' {
                    self.state = State::Data;
                }
            }
            State::RawText { kind, matched } => {
                let want = kind.name().as_bytes();
                let m = usize::from(matched);
                // `matched` counts bytes of `</name`: 1 is `<`, 2 is `</`, then the name.
                let expected = if m == 1 { Some(b'/') } else { want.get(m - 2).copied() };
                match expected {
                    Some(e) if b.to_ascii_lowercase() == e => {
                        self.state = State::RawText { kind, matched: matched + 1 };
                    }
                    None if matches!(b, b'\t' | b'\n' | b'\x0c' | b'\r' | b' ' | b'/' | b'>') => {
                        self.flush_text(sink);
                        self.raw = None;
                        sink.end_tag(kind.name());
                        self.state = if b == b'>' { State::Data } else { State::RawEndTail };
                    }
                    _ => {
                        if self.keep_raw {
                            let prefix = [b"</".as_slice(), want].concat();
                            self.text.extend_from_slice(prefix.get(..m).unwrap_or_default());
                        }
                        self.state = State::RawText { kind, matched: 0 };
                        return false;
                    }
                }
            }
            State::RawEndTail => {
                if b == b'>' {
                    self.state = State::Data;
                }
            }
        }
        true
    }

    fn begin_tag(&mut self, is_end: bool) {
        self.is_end_tag = is_end;
        self.name.clear();
        self.spare.append(&mut self.tag.attrs);
        self.tag.self_closing = false;
        self.attr_name.clear();
        self.attr_value.clear();
        self.value_dropped = false;
    }

    /// Appends bytes of the attribute value being read, up to `VALUE_BYTES_MAX`: past it the value is dropped.
    fn push_value(&mut self, bytes: &[u8]) {
        if self.value_dropped {
            return;
        }
        if bytes.len() > VALUE_BYTES_MAX.saturating_sub(self.attr_value.len()) {
            self.value_dropped = true;
            self.attr_value.clear();
            return;
        }
        self.attr_value.extend_from_slice(bytes);
    }

    fn end_attr(&mut self) {
        self.value_dropped = false;
        if self.attr_name.is_empty() {
            self.attr_value.clear();
            return;
        }
        // Valid names, nearly all, are checked by `str::from_utf8`, which takes ASCII a word at a time.
        let name = match std::str::from_utf8(&self.attr_name) {
            Ok(name) => std::borrow::Cow::Borrowed(name),
            Err(_) => String::from_utf8_lossy(&self.attr_name),
        };
        // A repeated attribute is ignored, as browsers do; past the cap every attribute is.
        if self.tag.attrs.len() < ATTRS_MAX && !self.tag.attrs.iter().any(|a| a.name == name) {
            let mut attr = self.spare.pop().unwrap_or_default();
            attr.name.clear();
            attr.name.push_str(&name);
            attr.value.clear();
            decode_into(&self.attr_value, true, &mut attr.value);
            self.tag.attrs.push(attr);
        }
        self.attr_name.clear();
        self.attr_value.clear();
    }

    fn emit_tag(&mut self, sink: &mut dyn Sink) {
        self.flush_text(sink);
        self.tag.name.clear();
        push_lossy(&self.name, &mut self.tag.name);
        self.state = State::Data;
        if self.is_end_tag {
            sink.end_tag(&self.tag.name);
            return;
        }
        sink.start_tag(&self.tag);
        if let Some(kind) = RawKind::of(&self.tag.name).filter(|_| !self.tag.self_closing) {
            self.raw = Some(kind);
            self.keep_raw = matches!(kind, RawKind::Escapable(_)) || sink.wants_raw_text();
            self.state = State::RawText { kind, matched: 0 };
        }
    }

    fn flush_text(&mut self, sink: &mut dyn Sink) {
        self.flush_piece(self.text.len(), sink);
    }

    /// What of `rest` the text buffer can take before it is full (at least a byte: a full buffer is flushed first).
    fn text_window<'a>(&self, rest: &'a [u8]) -> &'a [u8] {
        let room = TEXT_RUN_BYTES_MAX.saturating_sub(self.text.len()).max(1);
        rest.get(..room).unwrap_or(rest)
    }

    /// A full text buffer delivers a piece of the run (see `TEXT_RUN_BYTES_MAX`) and keeps the rest.
    #[inline]
    fn flush_long_run(&mut self, sink: &mut dyn Sink) {
        if self.text.len() >= TEXT_RUN_BYTES_MAX {
            self.flush_run_piece(sink);
        }
    }

    /// Out of the hot loop: only runs longer than `TEXT_RUN_BYTES_MAX` come here.
    #[cold]
    #[inline(never)]
    fn flush_run_piece(&mut self, sink: &mut dyn Sink) {
        let decoded = !matches!(self.raw, Some(RawKind::Raw(_)));
        self.flush_piece(piece_end(&self.text, decoded), sink);
    }

    /// Delivers the first `end` bytes of the pending text.
    fn flush_piece(&mut self, end: usize, sink: &mut dyn Sink) {
        let piece = self.text.get(..end).unwrap_or_default();
        if piece.is_empty() {
            return;
        }
        self.decoded.clear();
        if matches!(self.raw, Some(RawKind::Raw(_))) {
            push_lossy(piece, &mut self.decoded);
        } else {
            decode_into(piece, false, &mut self.decoded);
        }
        sink.text(&self.decoded);
        self.text.drain(..end);
    }
}

/// Appends a byte of a name, lowercased, up to `NAME_BYTES_MAX`.
fn push_name(name: &mut Vec<u8>, b: u8) {
    if name.len() < NAME_BYTES_MAX {
        name.push(b.to_ascii_lowercase());
    }
}

/// Where a piece of a full text buffer ends (see `TEXT_RUN_BYTES_MAX`); `decoded` when character references are.
fn piece_end(text: &[u8], decoded: bool) -> usize {
    let half = text.len() / 2;
    let tail = text.get(half..).unwrap_or_default();
    let ends_all = |b: &u8| b.is_ascii() && !b.is_ascii_alphanumeric() && *b != b'&' && *b != b'#';
    if decoded {
        if let Some(p) = tail.iter().rposition(ends_all) {
            return half + p + 1;
        }
        if let Some(p) = tail.iter().rposition(|&b| b == b'&') {
            return half + p;
        }
    }
    // The last character that starts in the last three bytes is kept (it may be incomplete); when none does, the
    // last character started four bytes back or more, and is whole (or invalid anyway).
    (text.len().saturating_sub(3)..text.len())
        .rev()
        .find(|&p| text.get(p).is_some_and(|b| b & 0xC0 != 0x80))
        .unwrap_or(text.len())
}

/// The first position of `byte`, eight bytes at a time (the tokenizer's inner loop: text runs, scripts, values).
fn find(haystack: &[u8], byte: u8) -> Option<usize> {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGHS: u64 = 0x8080_8080_8080_8080;
    let pattern = ONES.wrapping_mul(u64::from(byte));
    let mut chunks = haystack.chunks_exact(8);
    let mut offset = 0;
    for chunk in chunks.by_ref() {
        let mut word = [0u8; 8];
        word.copy_from_slice(chunk);
        let x = u64::from_le_bytes(word) ^ pattern;
        // A zero byte in `x` is a match; this sets its high bit (and only bits at or above the first match).
        let found = x.wrapping_sub(ONES) & !x & HIGHS;
        if found != 0 {
            return Some(offset + (found.trailing_zeros() / 8) as usize);
        }
        offset += 8;
    }
    chunks.remainder().iter().position(|&b| b == byte).map(|p| offset + p)
}

/// Appends `rest` up to the first `end` byte to `out` (when given); the position of that byte, if any.
fn copy_until(rest: &[u8], end: u8, out: Option<&mut Vec<u8>>) -> Option<usize> {
    let found = find(rest, end);
    if let Some(out) = out {
        out.extend_from_slice(rest.get(..found.unwrap_or(rest.len())).unwrap_or_default());
    }
    found
}

/// `step` is never called in the states `feed` consumes itself; if it were, treat the byte as text.
fn unreachable_state(t: &mut Tokenizer) {
    t.state = State::Data;
}

/// Decodes character references in `raw` and appends the text to `out` (invalid UTF-8 becomes U+FFFD).
pub fn decode_into(raw: &[u8], in_attr: bool, out: &mut String) {
    let mut i = 0;
    while i < raw.len() {
        let rest = raw.get(i..).unwrap_or_default();
        let Some(amp) = find(rest, b'&') else {
            push_lossy(rest, out);
            return;
        };
        push_lossy(rest.get(..amp).unwrap_or_default(), out);
        let after = rest.get(amp + 1..).unwrap_or_default();
        match decode_reference(after, in_attr, out) {
            Some(consumed) => i += amp + 1 + consumed,
            None => {
                out.push('&');
                i += amp + 1;
            }
        }
    }
}

/// Appends `bytes` as text (invalid UTF-8 becomes U+FFFD). Valid text, nearly all of it, is checked by
/// `str::from_utf8`, which takes ASCII a word at a time (`from_utf8_lossy` looks at each byte).
pub fn push_lossy(bytes: &[u8], out: &mut String) {
    match std::str::from_utf8(bytes) {
        Ok(text) => out.push_str(text),
        Err(_) => out.push_str(&String::from_utf8_lossy(bytes)),
    }
}

/// The reference after a `&`: appends what it stands for to `out` and says how many bytes it takes.
fn decode_reference(after: &[u8], in_attr: bool, out: &mut String) -> Option<usize> {
    if after.first() == Some(&b'#') {
        let (consumed, c) = decode_numeric(after)?;
        out.push(c);
        return Some(consumed);
    }
    let name_len = after.iter().take(entities::NAME_MAX).take_while(|b| b.is_ascii_alphanumeric()).count();
    if name_len == 0 {
        return None;
    }
    let name = after.get(..name_len)?;
    if after.get(name_len) == Some(&b';') {
        let with_semi = after.get(..=name_len)?;
        if let Some(v) = lookup(with_semi) {
            out.push_str(v);
            return Some(name_len + 1);
        }
    }
    // Legacy references without `;`: the longest known prefix (no legacy name is longer than `LEGACY_NAME_MAX`).
    for len in (2..=name_len.min(entities::LEGACY_NAME_MAX)).rev() {
        let prefix = name.get(..len)?;
        if let Some(v) = lookup(prefix) {
            let next = after.get(len).copied();
            if in_attr && next.is_some_and(|n| n == b'=' || n.is_ascii_alphanumeric()) {
                return None;
            }
            out.push_str(v);
            return Some(len);
        }
    }
    None
}

/// A name's value: the references most pages use are matched directly, the others searched in the table.
fn lookup(name: &[u8]) -> Option<&'static str> {
    match name {
        b"amp;" | b"amp" => Some("&"),
        b"quot;" | b"quot" => Some("\""),
        b"nbsp;" | b"nbsp" => Some("\u{a0}"),
        b"lt;" | b"lt" => Some("<"),
        b"gt;" | b"gt" => Some(">"),
        _ => entities::lookup(std::str::from_utf8(name).ok()?),
    }
}

/// `#123;` or `#x1F600;` (the `;` optional), with the replacements browsers apply: the bytes taken and the character.
fn decode_numeric(after: &[u8]) -> Option<(usize, char)> {
    let (hex, start) = match after.get(1) {
        Some(b'x' | b'X') => (true, 2),
        _ => (false, 1),
    };
    let digits =
        after.get(start..)?.iter().take_while(|b| if hex { b.is_ascii_hexdigit() } else { b.is_ascii_digit() }).count();
    if digits == 0 {
        return None;
    }
    let mut value: u32 = 0;
    for &d in after.get(start..start + digits)? {
        let v = char::from(d).to_digit(if hex { 16 } else { 10 }).unwrap_or(0);
        value = value.saturating_mul(if hex { 16 } else { 10 }).saturating_add(v);
    }
    let mut consumed = start + digits;
    if after.get(consumed) == Some(&b';') {
        consumed += 1;
    }
    let c = match value {
        0 => '\u{FFFD}',
        0x80..=0x9F => windows_1252(value),
        _ => char::from_u32(value).unwrap_or('\u{FFFD}'),
    };
    Some((consumed, c))
}

/// The C1 range, read as Windows-1252 (what the page author meant).
fn windows_1252(value: u32) -> char {
    const TABLE: [u32; 32] = [
        0x20AC, 0x81, 0x201A, 0x0192, 0x201E, 0x2026, 0x2020, 0x2021, 0x02C6, 0x2030, 0x0160, 0x2039, 0x0152, 0x8D,
        0x017D, 0x8F, 0x90, 0x2018, 0x2019, 0x201C, 0x201D, 0x2022, 0x2013, 0x2014, 0x02DC, 0x2122, 0x0161, 0x203A,
        0x0153, 0x9D, 0x017E, 0x0178,
    ];
    let mapped = TABLE.get((value - 0x80) as usize).copied().unwrap_or(value);
    char::from_u32(mapped).unwrap_or('\u{FFFD}')
}

/// The largest character boundary of `s` at or before byte `at` (`at` past the end: the end), where a text is cut to a
/// byte budget: std's `str::floor_char_boundary`, which Rust 1.88 (the release toolchain) does not have yet.
pub fn floor_char_boundary(s: &str, at: usize) -> usize {
    let mut at = at.min(s.len());
    while !s.is_char_boundary(at) {
        at -= 1;
    }
    at
}

/// Collapses runs of whitespace (including no-break spaces) into single spaces and trims: how titles and snippets
/// are shown.
pub fn collapse_whitespace(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for word in text.split(|c: char| c.is_whitespace()).filter(|w| !w.is_empty()) {
        if !out.is_empty() {
            out.push(' ');
        }
        out.push_str(word);
    }
    out
}

#[cfg(test)]
pub(crate) mod tests;
