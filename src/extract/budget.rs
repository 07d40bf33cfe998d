//! Token budgets: an estimate of cl100k tokens (the OpenAI tokenizer most agents budget with) that errs on the high
//! side, and the cut of an extract at a block boundary so that it fits.
//!
//! The estimate follows cl100k's pre-tokenisation: a word (with its leading space) is one token up to a length and
//! more beyond it, digits go in groups of three, each punctuation mark is a token, and characters outside ASCII cost
//! what their scripts cost on average, rounded up. The benchmark (`cargo bench --bench extract`) measures it against
//! the real tokenizer.

/// Common English words: their share in a text says whether cl100k's vocabulary covers its words whole.
const ENGLISH: &[&str] = &[
    "the", "and", "of", "to", "in", "is", "that", "for", "it", "on", "was", "with", "as", "he", "be", "by", "at",
    "are", "this", "have", "from", "or", "an", "they", "which", "but", "not", "his", "her", "has", "had", "were",
    "their", "been", "we", "you", "will", "said", "would", "can", "who", "more", "about", "than",
];

/// Tokens of `text`, estimated from above.
pub fn estimate(text: &str) -> usize {
    // Words of a language cl100k knows well (English) are mostly one token each; words of other languages
    // written in Latin letters split into pieces of about three letters.
    let (mut words, mut common) = (0usize, 0usize);
    for w in text.split(|c: char| !c.is_ascii_alphabetic()).filter(|w| !w.is_empty()) {
        words += 1;
        if w.len() <= 5 && ENGLISH.iter().any(|e| e.eq_ignore_ascii_case(w)) {
            common += 1;
        }
    }
    let english = words > 0 && common * 100 >= words * 18;
    let word_cost = |len: usize| -> usize {
        if english {
            if len <= 8 {
                1
            } else {
                1 + (len - 5) / 5
            }
        } else {
            len.div_ceil(3).max(1)
        }
    };
    let mut tokens = 0usize;
    // Characters outside ASCII are counted in tenths of a token.
    let mut tenths = 0usize;
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        if c.is_ascii_alphabetic() {
            let mut len = 1;
            while chars.peek().is_some_and(|n| n.is_ascii_alphabetic()) {
                chars.next();
                len += 1;
            }
            tokens += word_cost(len);
        } else if c.is_ascii_digit() {
            let mut len = 1usize;
            while chars.peek().is_some_and(char::is_ascii_digit) {
                chars.next();
                len += 1;
            }
            tokens += len.div_ceil(3);
        } else if c == ' ' {
            // A single space joins the next word; runs of spaces are tokens of their own.
            let mut run = 1;
            while chars.peek() == Some(&' ') {
                chars.next();
                run += 1;
            }
            if run > 1 {
                tokens += 1;
            }
        } else if c == '\n' || c == '\t' || c == '\r' {
            while chars.peek().is_some_and(|n| *n == '\n' || *n == '\r') {
                chars.next();
            }
            tokens += 1;
        } else if c.is_ascii() {
            tokens += 1;
        } else {
            tenths += non_ascii_tenths(c);
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
        0x0370..=0x052F => 8,
        // CJK, kana, Hangul: about one token per character; rare characters take more.
        0x3040..=0x30FF | 0x4E00..=0x9FFF | 0xAC00..=0xD7AF => 14,
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
}

/// Joins blocks (separated by a blank line) while they fit in `budget` tokens (0: no budget). The cut falls between
/// blocks; only when not even the first body block fits is that block cut, at a word boundary.
pub fn fit(blocks: &[String], budget: usize) -> Fitted {
    const SEPARATOR_TOKENS: usize = 1;
    // The estimate errs high, but not on every page by the same amount: keep 3% in hand.
    let budget = if budget == 0 { 0 } else { (budget * 97 / 100).max(1) };
    let mut out = String::new();
    let mut used = 0usize;
    let mut truncated = false;
    for (i, block) in blocks.iter().enumerate() {
        let cost = estimate(block) + if i > 0 { SEPARATOR_TOKENS } else { 0 };
        if budget > 0 && used + cost > budget {
            truncated = true;
            // Nothing of the body fits: cut this block at the last word boundary that fits.
            if used == 0 || (i == 1 && blocks.first().is_some_and(|b| b.starts_with("# "))) {
                let room = budget.saturating_sub(used + if i > 0 { SEPARATOR_TOKENS } else { 0 });
                let part = cut_words(block, room);
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
    Fitted { markdown: out, tokens: used, truncated }
}

/// The longest prefix of `text` ending at a word boundary whose estimate fits in `room`.
fn cut_words(text: &str, room: usize) -> String {
    let mut best = 0;
    for (i, c) in text.char_indices() {
        if c.is_whitespace() {
            if estimate(&text[..i]) > room {
                break;
            }
            best = i;
        }
    }
    text[..best].trim_end().to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn estimates() {
        assert_eq!(estimate("the world is"), 3);
        assert_eq!(estimate("the internationalization of"), 6);
        assert_eq!(estimate("pemberontakan"), 5);
        assert_eq!(estimate("1234567"), 3);
        assert_eq!(estimate("a, b."), 4);
        assert_eq!(estimate("日本"), 3);
        assert_eq!(estimate(""), 0);
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
        let tiny = fit(&blocks, 6);
        assert_eq!(tiny.markdown, "# Title\n\none");
        assert!(tiny.truncated && tiny.tokens <= 6);
    }
}
