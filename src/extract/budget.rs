//! Token budgets: an estimate of cl100k tokens (the OpenAI tokenizer most agents budget with) and the cut of an
//! extract at a block boundary so that it fits.
//!
//! The estimate follows cl100k's pre-tokenisation: a word, with the space or punctuation mark before it, is one
//! token when the vocabulary has it (looked up in a 64 KiB Bloom filter of the vocabulary's letter tokens),
//! otherwise its greedy split into known pieces plus a third; digits go in groups of three, other punctuation marks
//! are a token each, and characters outside ASCII cost what their scripts cost on average. The benchmark
//! (`cargo bench --bench extract`) measures it against the real tokenizer on every page.

/// cl100k's word tokens (ASCII letters, alone or after a space or one ASCII punctuation mark) as a Bloom filter,
/// generated from the tokenizer's vocabulary (tiktoken, MIT licence) by `cargo bench --bench cl100k_words --
/// --write` (without `--write` the bench checks this file). The first two bytes are log2 of the bit count and the
/// number of probes.
static WORDS: &[u8] = include_bytes!("cl100k_words.bloom");

/// The longest word token looked for when splitting an unknown word.
const PIECE_MAX: usize = 16;

/// The bit positions a word sets in a filter of `2^log2_bits` bits; `lead` is the space or punctuation mark
/// before it that is part of the token, or 0.
pub fn word_probes(lead: u8, word: &[u8], log2_bits: u8, probes: u8) -> impl Iterator<Item = usize> {
    // Two FNV-1a hashes with different offsets, combined by double hashing.
    let (mut a, mut b) = (0xcbf2_9ce4_8422_2325u64, 0x8422_2325_cbf2_9ce4u64);
    for &byte in [lead].iter().chain(word) {
        a = (a ^ u64::from(byte)).wrapping_mul(0x0100_0000_01b3);
        b = (b ^ u64::from(byte)).wrapping_mul(0x0000_0100_0000_01b3 ^ 0x2_0000);
    }
    let mask = (1u64 << log2_bits) - 1;
    (0..u64::from(probes)).map(move |i| (a.wrapping_add(i.wrapping_mul(b | 1)) >> 7 & mask) as usize)
}

/// Whether `word` (ASCII letters) is one cl100k token (false positives at the filter's rate, about 1 in 200).
fn is_token(lead: u8, word: &[u8]) -> bool {
    let (Some(&log2_bits), Some(&probes), Some(bits)) = (WORDS.first(), WORDS.get(1), WORDS.get(2..)) else {
        return false;
    };
    word_probes(lead, word, log2_bits, probes)
        .all(|bit| bits.get(bit / 8).is_some_and(|byte| byte & (1 << (bit % 8)) != 0))
}

/// `is_token`, with most of the filter's false positives caught: byte-pair merging made every token of two
/// shorter ones, so a real token splits into two pieces the filter also knows (for a false positive, that is
/// unlikely).
fn is_piece(lead: u8, word: &[u8]) -> bool {
    if !is_token(lead, word) {
        return false;
    }
    let halves = (1..word.len())
        .any(|k| word.get(..k).is_some_and(|a| is_token(lead, a)) && word.get(k..).is_some_and(|b| is_token(0, b)));
    halves || word.len() == 1 && lead == 0 || lead != 0 && is_token(0, word)
}

/// Tokens of a run of ASCII letters: one when the vocabulary has it whole, otherwise its greedy split into the
/// longest known pieces (close to what byte-pair merging arrives at).
fn word_tokens(lead: u8, word: &[u8]) -> usize {
    if word.len() <= PIECE_MAX && is_piece(lead, word) {
        return 1;
    }
    let (mut rest, mut lead, mut tokens) = (word, lead, 0);
    // A punctuation mark that joins no piece of the word is a token of its own (a space always joins a letter).
    if lead != 0 && lead != b' ' && !rest.first().is_some_and(|&c| is_piece(lead, &[c])) {
        lead = 0;
        tokens += 1;
    }
    while !rest.is_empty() {
        let longest = rest.len().min(PIECE_MAX);
        let take = (2..=longest).rev().find(|&n| rest.get(..n).is_some_and(|p| is_piece(lead, p))).unwrap_or(1);
        rest = rest.get(take..).unwrap_or_default();
        lead = 0;
        tokens += 1;
    }
    // Byte-pair merging stops short of the longest pieces more often than not: measured on the benchmark pages,
    // a word the vocabulary lacks takes about a third more tokens than its greedy split.
    tokens + tokens / 3
}

/// Tokens of `text`, estimated (the benchmark measures how close).
pub fn estimate(text: &str) -> usize {
    let mut tokens = 0usize;
    // Characters outside ASCII are counted in tenths of a token.
    let mut tenths = 0usize;
    let bytes = text.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        let Some(&b) = bytes.get(i) else { break };
        if b.is_ascii_alphabetic() {
            let len = bytes.get(i..).unwrap_or_default().iter().take_while(|c| c.is_ascii_alphabetic()).count();
            // A single space before a word is part of its token.
            let space = i > 0 && bytes.get(i - 1) == Some(&b' ') && (i < 2 || bytes.get(i - 2) != Some(&b' '));
            tokens += word_tokens(if space { b' ' } else { 0 }, bytes.get(i..i + len).unwrap_or_default());
            i += len;
        } else if b.is_ascii_digit() {
            let len = bytes.get(i..).unwrap_or_default().iter().take_while(|c| c.is_ascii_digit()).count();
            tokens += len.div_ceil(3);
            i += len;
        } else if b == b' ' {
            // A single space joins the next word or punctuation mark (not a number); runs of spaces are tokens of
            // their own.
            let run = bytes.get(i..).unwrap_or_default().iter().take_while(|c| **c == b' ').count();
            if run > 1 || bytes.get(i + run).is_none_or(u8::is_ascii_digit) {
                tokens += 1;
            }
            i += run;
        } else if b == b'\n' || b == b'\t' || b == b'\r' {
            let run =
                bytes.get(i + 1..).unwrap_or_default().iter().take_while(|c| **c == b'\n' || **c == b'\r').count();
            tokens += 1;
            i += 1 + run;
        } else if b.is_ascii() {
            // One punctuation mark that starts a piece (after a letter, a digit, a line break or at the start) and
            // is followed by letters joins them, as in `.com`, `/path` or `'s`.
            let starts_piece = i == 0 || bytes.get(i - 1).is_some_and(|p| p.is_ascii_alphanumeric() || *p == b'\n');
            let len = bytes.get(i + 1..).unwrap_or_default().iter().take_while(|c| c.is_ascii_alphabetic()).count();
            if starts_piece && len > 0 && b.is_ascii_punctuation() {
                tokens += word_tokens(b, bytes.get(i + 1..i + 1 + len).unwrap_or_default());
                i += 1 + len;
            } else {
                tokens += 1;
                i += 1;
            }
        } else {
            let c = text.get(i..).and_then(|t| t.chars().next()).unwrap_or('\u{FFFD}');
            tenths += non_ascii_tenths(c);
            i += c.len_utf8().max(1);
        }
    }
    tokens + tenths.div_ceil(10)
}

/// Tenths of a token for one non-ASCII character, rounded up from what cl100k spends on its script (measured on
/// the benchmark pages: Korean, Japanese, Russian).
fn non_ascii_tenths(c: char) -> usize {
    match c as u32 {
        // Latin supplements and accents: usually inside a word token, sometimes a token of their own.
        0x00A0..=0x024F => 8,
        // Greek, Cyrillic: about half a token per letter.
        0x0370..=0x052F => 6,
        // Kana and CJK ideographs: about one token per character; rare characters take more.
        0x3040..=0x30FF | 0x4E00..=0x9FFF => 11,
        // Hangul syllables: often more than one.
        0xAC00..=0xD7AF => 14,
        // Typographic punctuation (quotes, dashes, ellipsis).
        0x2000..=0x206F => 10,
        // Everything else (other scripts, symbols, emoji): one token per UTF-8 byte is the most it can be.
        _ => 10 * c.len_utf8(),
    }
}

/// An extract cut to a budget.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Fitted {
    pub markdown: String,
    /// Estimated tokens of `markdown`.
    pub tokens: usize,
    pub truncated: bool,
    /// Which cut made it fit.
    pub cut: Cut,
}

/// Which cut an extract was given to fit its budget.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Cut {
    /// None: the whole extract fit (or there was no budget).
    None,
    /// The head of the page, at a block boundary (`fit`).
    Head,
    /// The title, the lead and the passages most relevant to the query (`focus::fit`).
    Query,
}

impl Cut {
    /// Its name in an answer's `cut` member.
    pub fn name(self) -> &'static str {
        match self {
            Cut::None => "none",
            Cut::Head => "head",
            Cut::Query => "query",
        }
    }
}

/// Joins blocks (separated by a blank line) while they fit in `budget` tokens (0: no budget). The cut falls between
/// blocks; only when not even the first body block fits is that block cut: after its last whole sentence that fits,
/// or, when not even one sentence fits, at a word boundary (never mid-word).
pub fn fit(blocks: &[String], budget: usize) -> Fitted {
    fit_counting(blocks, budget, &mut Vec::new())
}

/// `fit`, which also leaves in `tokens` the estimate of each block it weighed (the first ones, up to the one that
/// did not fit): the query-focused cut weighs them again otherwise.
pub(crate) fn fit_counting(blocks: &[String], budget: usize, tokens: &mut Vec<usize>) -> Fitted {
    const SEPARATOR_TOKENS: usize = 1;
    // The estimate is close but not exact (on the benchmark pages it is at most 3% under the real count on a whole
    // page, more often over): keep 2% in hand.
    let budget = if budget == 0 { 0 } else { (budget * 98 / 100).max(1) };
    let mut out = String::new();
    let mut used = 0usize;
    let mut truncated = false;
    for (i, block) in blocks.iter().enumerate() {
        let own = estimate(block);
        tokens.push(own);
        let cost = own + if i > 0 { SEPARATOR_TOKENS } else { 0 };
        if budget > 0 && used + cost > budget {
            truncated = true;
            // Nothing of the body fits: cut this block at the last word boundary that fits.
            if used == 0 || (i == 1 && blocks.first().is_some_and(|b| b.starts_with("# "))) {
                let room = budget.saturating_sub(used + if i > 0 { SEPARATOR_TOKENS } else { 0 });
                let part = cut_sentences(&cut_words(block, room));
                if !part.is_empty() {
                    if i > 0 {
                        out.push_str("\n\n");
                    }
                    out.push_str(&part);
                    used += estimate(&part) + if i > 0 { SEPARATOR_TOKENS } else { 0 };
                }
            }
            break;
        }
        if i > 0 {
            out.push_str("\n\n");
        }
        out.push_str(block);
        used += cost;
    }
    Fitted { markdown: out, tokens: used, truncated, cut: if truncated { Cut::Head } else { Cut::None } }
}

/// `text` up to its last sentence end (a full stop, question or exclamation mark before a space, or a CJK one), or
/// the whole of it when it has none: a cut block reads as whole sentences whenever one fits.
fn cut_sentences(text: &str) -> String {
    let mut end = None;
    let mut chars = text.char_indices().peekable();
    while let Some((i, c)) = chars.next() {
        let next_is_space = chars.peek().is_some_and(|(_, n)| n.is_whitespace());
        if matches!(c, '。' | '！' | '？') || matches!(c, '.' | '!' | '?' | '…') && next_is_space {
            end = Some(i + c.len_utf8());
        }
    }
    let keep = if text.ends_with(['.', '!', '?', '…', '。', '！', '？']) { Some(text.len()) } else { end };
    keep.and_then(|e| text.get(..e)).unwrap_or(text).to_owned()
}

/// Han, kana, Hangul and the CJK punctuation and full-width forms.
pub(crate) fn is_cjk(c: char) -> bool {
    matches!(c, '\u{3000}'..='\u{9FFF}' | '\u{AC00}'..='\u{D7AF}' | '\u{F900}'..='\u{FAFF}' | '\u{FF00}'..='\u{FFEF}')
}

/// The longest prefix of `text` ending at a word boundary (before a whitespace character, or after a CJK character:
/// those scripts do not separate words with spaces) whose estimate fits in `room`. The estimate grows with the
/// prefix, so the boundary is found by doubling, then halving: O(n log n) in the prefix that fits, where estimating
/// every prefix in turn was quadratic in the block's length.
fn cut_words(text: &str, room: usize) -> String {
    // The last word boundary at or before byte `at`.
    let boundary = |at: usize| -> Option<usize> {
        let at = crate::html::floor_char_boundary(text, at);
        if text.get(at..).is_some_and(|t| t.starts_with(char::is_whitespace)) {
            return Some(at);
        }
        text.get(..at)?.char_indices().rev().find_map(|(i, c)| match c {
            c if c.is_whitespace() => Some(i),
            c if is_cjk(c) => Some(i + c.len_utf8()),
            _ => None,
        })
    };
    // Whether the prefix up to the last boundary at or before `at` fits (trivially, when there is none).
    let fits = |at: usize| boundary(at).is_none_or(|end| estimate(text.get(..end).unwrap_or_default()) <= room);
    let (mut low, mut high) = (0, 64);
    while high < text.len() && fits(high) {
        low = high;
        high *= 2;
    }
    if high >= text.len() && fits(text.len()) {
        low = text.len();
    } else {
        high = high.min(text.len());
        // `fits(low)` holds and `fits(high)` does not.
        while high - low > 1 {
            let mid = low + (high - low) / 2;
            if fits(mid) {
                low = mid;
            } else {
                high = mid;
            }
        }
    }
    let end = boundary(low).unwrap_or(0);
    text.get(..end).unwrap_or_default().trim_end().to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn estimates() {
        // Each against the real cl100k count (in the comment when the estimate differs).
        assert_eq!(estimate("the world is"), 3);
        assert_eq!(estimate("the internationalization of"), 4);
        // p|ember|ont|akan: 4; a word the vocabulary lacks is split greedily, then a third is added.
        assert_eq!(estimate("pemberontakan"), 6);
        assert_eq!(estimate("1234567"), 3);
        assert_eq!(estimate("a, b."), 4);
        // 日|本: 2.
        assert_eq!(estimate("日本"), 3);
        // see| https|://|www|.example|.com|/news|/t|oday| and| Beijing|'s| plan: 13.
        assert_eq!(estimate("see https://www.example.com/news/today and Beijing's plan"), 15);
        // A space before a number is a token of its own: | |22| de: 3.
        assert_eq!(estimate(" 22 de"), 3);
        assert_eq!(estimate(""), 0);
    }

    #[test]
    fn the_word_filter_knows_common_words_and_not_others() {
        for w in ["the", "international", "Beijing", "example"] {
            assert!(is_piece(b' ', w.as_bytes()), "{w}");
        }
        assert!(is_piece(b'.', b"com") && is_piece(b'\'', b"s"));
        // (A Bloom filter has false positives, about 1 in 20 probes here; the split check and the margin absorb
        // them, and the benchmark measures the result.)
        for w in ["qzxv", "Arrizabalaga", "Grzelcyk"] {
            assert!(!is_piece(b' ', w.as_bytes()), "{w}");
        }
    }

    /// The cut before it was made fast: every boundary in turn, up to the first that does not fit.
    fn cut_words_one_by_one(text: &str, room: usize) -> String {
        let mut best = 0;
        for (i, c) in text.char_indices() {
            let cut = match c {
                c if c.is_whitespace() => i,
                c if is_cjk(c) => i + c.len_utf8(),
                _ => continue,
            };
            if estimate(&text[..cut]) > room {
                break;
            }
            best = cut;
        }
        text[..best].trim_end().to_owned()
    }

    /// A first paragraph over the budget in a script without spaces is cut at its last sentence that fits.
    #[test]
    fn text_without_spaces_is_cut_at_a_sentence() {
        let sentence = "这是一个关于航海和天气的很长的句子。";
        let blocks = vec!["# 标题".to_owned(), sentence.repeat(200)];
        let fitted = fit(&blocks, 60);
        assert!(fitted.truncated);
        let body = fitted.markdown.strip_prefix("# 标题\n\n").expect("the title and a cut paragraph");
        assert!(!body.is_empty() && body.ends_with('。'), "{body:?}");
        assert!(fitted.tokens <= 60);
    }

    #[test]
    fn the_cut_is_the_one_a_boundary_by_boundary_scan_finds() {
        let article = String::from_utf8_lossy(include_bytes!("../../fixtures/extract_article.html")).into_owned();
        let texts = [
            article.as_str(),
            "one two  three\tfour\nfive 12 345 6789 https://example.com/a/b?c=d é日本語 x",
            "nowhitespaceatall",
            " leading and trailing ",
            "",
        ];
        for text in texts {
            for room in (0..300).chain([1_000, 5_000]) {
                assert_eq!(cut_words(text, room), cut_words_one_by_one(text, room), "room {room} in {text:?}");
            }
        }
    }

    #[test]
    fn cutting_a_long_block_is_not_quadratic() {
        // A 1 MB first block and the largest service budget: the boundary-by-boundary scan estimated ~8,000
        // prefixes of up to 40 KB each.
        let text = "word ".repeat(200_000);
        let started = std::time::Instant::now();
        let cut = cut_words(&text, 8_000);
        // Debug build, loaded machine: the scan took 44 s here; linear, milliseconds. 10 s allows any load.
        assert!(started.elapsed() < std::time::Duration::from_secs(10), "{:?}", started.elapsed());
        assert!(estimate(&cut) <= 8_000 && estimate(&format!("{cut} word")) > 8_000, "{}", cut.len());
    }

    #[test]
    fn fits_at_block_boundaries() {
        let blocks: Vec<String> = vec!["# Title".into(), "one two three".into(), "four five six".into()];
        let all = fit(&blocks, 0);
        assert_eq!((all.markdown.as_str(), all.truncated), ("# Title\n\none two three\n\nfour five six", false));
        let some = fit(&blocks, 9);
        assert_eq!((some.markdown.as_str(), some.truncated), ("# Title\n\none two three", true));
        assert!(some.tokens <= 9);
        // The first body block does not fit: it is cut at a word boundary, never mid-word.
        let tiny = fit(&blocks, 5);
        assert_eq!(tiny.markdown, "# Title\n\none");
        assert!(tiny.truncated && tiny.tokens <= 5);
    }
}
