//! The query-focused cut: when an extract is over its budget and the call says what it asked about, the cut keeps
//! the title, the lead (the first passage or two), then the passages most relevant to the query, in document order,
//! each with its heading (a table row with the table's header), and a marker line (`[…]`) where text was left out.
//! Without a query, or when no passage has a word of it, the cut is the head of the page (`budget::fit`).
//!
//! A page's blocks are read as passages: a heading, a table row or a code block whole; a paragraph's, a list item's
//! or a quote's line as runs of whole sentences of at most `PASSAGE_BYTES`. Each passage is scored with
//! BM25 over the page's passages, the words of the headings above it (and of a table's header over a row) counting
//! for it at `HEADING_WEIGHT`. Everything is linear in the markdown (and the query's terms, at most
//! `QUERY_TERMS_MAX`), but the sort of the scored passages.

use super::budget::{self, estimate, Cut, Fitted};

/// Bytes of a query read at most (a search query is at most 400 characters).
pub const QUERY_BYTES_MAX: usize = 1_024;

/// Distinct words of a query looked for at most.
pub const QUERY_TERMS_MAX: usize = 16;

/// Passages a page is read in at most; the text after them is not scored (it can still fill the budget's rest).
pub const PASSAGES_MAX: usize = 16_384;

/// Bytes of a paragraph's passage at most, unless it is one sentence.
const PASSAGE_BYTES: usize = 320;

/// Bytes of a passage at most when a sentence does not end: past it, the text is cut at a space.
const PASSAGE_BYTES_MAX: usize = 4 * PASSAGE_BYTES;

/// The lead: the first passages of the body, at most this many, within `LEAD_PERCENT` of the budget (beside the
/// title).
const LEAD_PASSAGES_MAX: usize = 2;
const LEAD_PERCENT: usize = 30;

/// How much a word of the headings over a passage (or of a table's header over its row) counts beside the passage's
/// own.
const HEADING_WEIGHT: f32 = 0.5;

/// BM25's term saturation (its usual value) and length normalisation (less than the usual 0.75: a sentence of the
/// passage asked about should not lose to a short line that has one of its words).
const K1: f32 = 1.2;
const B: f32 = 0.5;

/// The line that stands where text was left out.
pub const MARKER: &str = "[…]";

/// Tokens of the marker and the blank line before it (estimated once, by a test, to match).
const MARKER_TOKENS: usize = 4;

/// Times the selection is made again, with the budget less what the last one overran (the estimate of the whole
/// is not quite the sum of its parts'), before the head cut is taken instead.
const ROUNDS_MAX: usize = 3;

/// Words a query is made of that say nothing of what it asks about.
const STOP_WORDS: &[&str] = &[
    "a", "an", "and", "are", "as", "at", "be", "by", "can", "do", "does", "for", "from", "how", "i", "in", "is", "it",
    "of", "on", "or", "that", "the", "this", "to", "was", "what", "when", "where", "which", "who", "why", "with",
];

/// No passage.
const NONE: u32 = u32::MAX;

/// `blocks` (the markdown blocks of an extract, its title first) cut to `budget` tokens (0: no budget) for `query`:
/// whole when they fit; the query-focused cut when `query` has a word some passage holds; otherwise the head.
pub fn fit(blocks: &[String], budget: usize, query: &str) -> Fitted {
    let room = (budget * 98 / 100).max(1);
    let terms = terms(query);
    if budget == 0 || terms.is_empty() {
        return budget::fit(blocks, budget);
    }
    // Each run of ASCII letters and digits is a token at least: a page with more runs than the budget has tokens
    // is over it, and the head cut is weighed only for a page that may fit (it is the answer when it does) or for
    // want of a passage asked about.
    let runs = blocks.iter().flat_map(|b| b.as_bytes().windows(2)).filter(|w| {
        w.first().is_some_and(|a| !a.is_ascii_alphanumeric()) && w.get(1).is_some_and(u8::is_ascii_alphanumeric)
    });
    let over = runs.take(room + 1).count() > room;
    let mut weighed = Vec::new();
    let mut head = (!over).then(|| budget::fit_counting(blocks, budget, &mut weighed));
    if let Some(head) = head.take_if(|h| !h.truncated) {
        return head;
    }
    let mut passages = passages(blocks);
    if !score(&mut passages, &terms) {
        return head.unwrap_or_else(|| budget::fit(blocks, budget));
    }
    // A passage that is a whole block the head cut weighed is not weighed again.
    for p in &mut passages {
        let whole = blocks.get(p.block as usize).is_some_and(|b| b.len() == p.text.len());
        if let Some(&t) = weighed.get(p.block as usize).filter(|_| whole) {
            p.tokens.set(Some(t.try_into().unwrap_or(u32::MAX)));
        }
    }
    let mut room = room;
    for _ in 0..ROUNDS_MAX {
        let Some(kept) = select(&passages, room) else { break };
        let (markdown, tokens) = render(&passages, &kept);
        if tokens <= room {
            return Fitted { markdown, tokens, truncated: true, cut: Cut::Query };
        }
        room = room.saturating_sub(tokens - room);
    }
    head.unwrap_or_else(|| budget::fit(blocks, budget))
}

/// Passages `best` chooses at most.
pub const BEST_MAX: usize = 16;

/// A passage of the page chosen for a query (`best`).
#[derive(Debug, Clone, PartialEq)]
pub struct Chosen {
    /// The passage as it stands on the page; a table row after its table's header row and rule.
    pub text: String,
    pub score: f32,
    /// Sentences of a paragraph, a list item or a quote (not a table row or code).
    pub prose: bool,
}

/// The passages of `blocks` most relevant to `query`, at most `n`, best first (equals in document order): passages
/// of the body that hold a word of the query themselves (a heading's words still raise the passages under it), and
/// with `prose_only` only sentences. None when the query has no word or no passage holds one. What a caller quotes
/// as "the page's passages about the query" (the Tavily door's chunks and extractive answer): each is text of the
/// page as it stands, a run of whole sentences, a list item, a table row or a code block.
pub fn best(blocks: &[String], query: &str, n: usize, prose_only: bool) -> Vec<Chosen> {
    let terms = terms(query);
    let mut passages = passages(blocks);
    if n == 0 || terms.is_empty() || !score(&mut passages, &terms) {
        return Vec::new();
    }
    let holds = |text: &str| {
        let mut found = false;
        words(text, &mut |w| found = found || terms.iter().any(|t| t.eq_ignore_ascii_case(stem(w))));
        found
    };
    // The best `n` in one pass (no sort: its code would be the binary's for this one use), an equal score after the
    // one before it: equals keep document order.
    let n = n.min(BEST_MAX);
    let mut ranked: Vec<&Passage<'_>> = Vec::with_capacity(n + 1);
    let candidates = passages.iter().filter(|p| p.role == Role::Body && p.score > 0.0 && (p.prose || !prose_only));
    for p in candidates {
        let at = ranked.iter().position(|r| r.score < p.score).unwrap_or(ranked.len());
        if at < n && holds(p.text) {
            ranked.insert(at, p);
            ranked.truncate(n);
        }
    }
    let header = |p: &Passage<'_>| passages.get(p.needs as usize).filter(|h| h.role == Role::Header).map(|h| h.text);
    ranked
        .into_iter()
        .map(|p| Chosen {
            text: header(p).map_or_else(|| p.text.to_owned(), |h| format!("{h}\n{}", p.text)),
            score: p.score,
            prose: p.prose,
        })
        .collect()
}

/// The words looked for: the query's words (`words`) but stop words, at most `QUERY_TERMS_MAX` distinct stems.
fn terms(query: &str) -> Vec<String> {
    let query = query.get(..crate::html::floor_char_boundary(query, QUERY_BYTES_MAX)).unwrap_or_default();
    let mut terms: Vec<String> = Vec::new();
    words(query, &mut |w| {
        let w = w.to_ascii_lowercase();
        if terms.len() < QUERY_TERMS_MAX && !STOP_WORDS.contains(&w.as_str()) && !terms.iter().any(|t| t == stem(&w)) {
            terms.push(stem(&w).to_owned());
        }
    });
    terms
}

/// Calls `f` with each word of `md` as it is compared (ignoring ASCII case): letters and digits, a word with
/// letters outside ASCII lowercased, a character of a script written without spaces (Han, kana, Hangul) a word of
/// its own; link targets (`](...)`) are passed over.
fn words(md: &str, f: &mut dyn FnMut(&str)) {
    // Bytes, with the characters outside ASCII decoded where they start: most text is ASCII.
    let bytes = md.as_bytes();
    let char_at = |i: usize| md.get(i..).and_then(|t| t.chars().next()).unwrap_or(' ');
    let letter = |c: char| c.is_alphanumeric() && !budget::is_cjk(c);
    let mut i = 0;
    while let Some(&b) = bytes.get(i) {
        if b.is_ascii() && !b.is_ascii_alphanumeric() {
            i += 1;
            // A link's target is passed over whole.
            if b == b'(' && i >= 2 && bytes.get(i - 2) == Some(&b']') {
                i += bytes.get(i..).and_then(|t| t.iter().position(|&c| c == b')')).unwrap_or(bytes.len());
            }
            continue;
        }
        let c = char_at(i);
        if !c.is_ascii() && !letter(c) {
            if c.is_alphanumeric() {
                f(md.get(i..i + c.len_utf8()).unwrap_or_default());
            }
            i += c.len_utf8();
            continue;
        }
        // A word: ASCII letters and digits, and letters of other scripts written with spaces.
        let (start, mut ascii) = (i, true);
        loop {
            i += bytes.get(i..).map_or(0, |t| t.iter().take_while(|c| c.is_ascii_alphanumeric()).count());
            match bytes.get(i) {
                Some(b) if !b.is_ascii() && letter(char_at(i)) => {
                    ascii = false;
                    i += char_at(i).len_utf8();
                }
                _ => break,
            }
        }
        let w = md.get(start..i).unwrap_or_default();
        if ascii {
            f(w);
        } else {
            f(&w.to_lowercase());
        }
    }
}

/// A word as it is compared: a plural's `s` dropped (`prices`, `price`; not `glass`).
fn stem(word: &str) -> &str {
    match word.strip_suffix(['s', 'S']) {
        Some(stem) if stem.len() >= 3 && !stem.ends_with(['s', 'u', 'i', 'S', 'U', 'I']) => stem,
        _ => word,
    }
}

/// How a passage follows the one before it in its block.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Join {
    /// The first of its block: after a blank line.
    Block,
    /// A list item or a table row: after a line break.
    Line,
    /// A paragraph's next sentences: after a space.
    Space,
}

/// What a passage is to the others.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Role {
    /// A heading (the title too): kept for the passages under it, and for itself.
    Heading,
    /// A table's header row and rule: kept for its rows only.
    Header,
    /// Text.
    Body,
}

/// A passage of the extract.
#[derive(Debug)]
struct Passage<'a> {
    text: &'a str,
    join: Join,
    block: u32,
    role: Role,
    /// The passage kept with it: its heading (a heading's own: the heading above it), a row's table header.
    needs: u32,
    /// Its estimated tokens, once asked (`Passage::tokens`): most passages of a long page are never weighed.
    tokens: std::cell::Cell<Option<u32>>,
    /// Its words (`words`), which it has at least half as many tokens as, and its score.
    words: u32,
    score: f32,
    /// Sentences of a paragraph, a list item or a quote (not a heading, a table row or code).
    prose: bool,
}

impl Passage<'_> {
    fn tokens(&self) -> usize {
        let tokens = self.tokens.get().unwrap_or_else(|| estimate(self.text).try_into().unwrap_or(u32::MAX));
        self.tokens.set(Some(tokens));
        tokens as usize
    }
}

/// The extract's blocks as passages, in order, at most `PASSAGES_MAX`.
fn passages(blocks: &[String]) -> Vec<Passage<'_>> {
    let mut out: Vec<Passage<'_>> = Vec::new();
    // The heading open at each level (1 to 6), to find a passage's own.
    let mut open = [NONE; 7];
    for (b, block) in blocks.iter().enumerate() {
        let at = out.len() as u32;
        let heading = open.iter().rev().copied().find(|&h| h != NONE).unwrap_or(NONE);
        let level = block.bytes().take_while(|&c| c == b'#').count();
        if b == 0 && level == 1 && block.starts_with("# ") {
            // The title is kept anyway: it heads nothing.
            push(&mut out, block, Join::Block, b, Role::Heading, NONE);
        } else if (1..=6).contains(&level) && block.as_bytes().get(level) == Some(&b' ') {
            let parent = open.get(..level).and_then(|o| o.iter().rev().copied().find(|&h| h != NONE));
            push(&mut out, block, Join::Block, b, Role::Heading, parent.unwrap_or(NONE));
            open.iter_mut().skip(level).for_each(|h| *h = NONE);
            if let Some(h) = open.get_mut(level) {
                *h = at;
            }
        } else if block.starts_with("```") {
            push(&mut out, block, Join::Block, b, Role::Body, heading);
        } else if block.starts_with('|') {
            // The header row and its rule are the table's header; each row after them a passage that needs it.
            let rule = block.match_indices('\n').nth(1).map_or(block.len(), |(i, _)| i);
            let (header, rows) = block.split_at(rule);
            push(&mut out, header, Join::Block, b, Role::Header, heading);
            for row in rows.split('\n').filter(|r| !r.is_empty()) {
                push(&mut out, row, Join::Line, b, Role::Body, at);
            }
        } else {
            // A paragraph, a list or a quote: its lines (items), each as runs of sentences.
            for (l, line) in block.split('\n').enumerate() {
                for (s, part) in sentences(line).enumerate() {
                    let join = match (l, s) {
                        (0, 0) => Join::Block,
                        (_, 0) => Join::Line,
                        _ => Join::Space,
                    };
                    push(&mut out, part, join, b, Role::Body, heading);
                    if let Some(p) = out.last_mut().filter(|p| std::ptr::eq(p.text, part)) {
                        p.prose = true;
                    }
                }
            }
        }
    }
    out
}

/// Adds a passage, while there are fewer than `PASSAGES_MAX`.
fn push<'a>(out: &mut Vec<Passage<'a>>, text: &'a str, join: Join, block: usize, role: Role, needs: u32) {
    if out.len() < PASSAGES_MAX {
        let tokens = std::cell::Cell::new(None);
        out.push(Passage { text, join, block: block as u32, role, needs, tokens, words: 0, score: 0.0, prose: false });
    }
}

/// `line` as runs of whole sentences of at most `PASSAGE_BYTES` (or one longer sentence; a sentence ends at a full
/// stop, a question or exclamation mark before a space), a sentence longer than `PASSAGE_BYTES_MAX` cut at a space,
/// never inside a link's brackets; the spaces between them left out.
fn sentences(line: &str) -> impl Iterator<Item = &str> {
    let mut rest = line;
    std::iter::from_fn(move || {
        if rest.len() <= PASSAGE_BYTES {
            // One passage (the common case): no sentence to look for.
            return (!rest.is_empty()).then(|| std::mem::take(&mut rest));
        }
        let (mut depth, mut end, mut last) = (0u32, rest.len(), None);
        // The last space outside brackets, and the last one at all (the brackets may never close).
        let (mut space, mut loose) = (None, None);
        // Whether a whitespace character starts at byte `at` (or the line ends there).
        let space_at = |at: usize| rest.get(at..).is_none_or(|t| t.is_empty() || t.starts_with(char::is_whitespace));
        // Bytes, not characters: every mark looked for is ASCII but the ellipsis and the CJK stops, whose UTF-8
        // sequences are compared whole.
        for (i, &b) in rest.as_bytes().iter().enumerate() {
            // Past the size, the passage ends after its last whole sentence.
            if let Some(e) = last.filter(|_| i >= PASSAGE_BYTES) {
                end = e;
                break;
            }
            match b {
                b'[' | b'(' => depth += 1,
                b']' | b')' => depth = depth.saturating_sub(1),
                b' ' | b'\t' => {
                    loose = Some(i);
                    if depth == 0 {
                        space = Some(i);
                    }
                }
                b'.' | b'!' | b'?' if depth == 0 && space_at(i + 1) => last = Some(i + 1),
                0xE2 | 0xE3 | 0xEF if depth == 0 => {
                    let mark = rest.as_bytes().get(i..i + 3);
                    if mark == Some("…".as_bytes()) && space_at(i + 3)
                        || ["。", "！", "？"].iter().any(|m| mark == Some(m.as_bytes()))
                    {
                        last = Some(i + 3);
                    }
                }
                _ => {}
            }
            // A sentence that does not end: cut at a space.
            if let Some(s) = space.or(loose).filter(|_| i >= PASSAGE_BYTES_MAX) {
                end = s;
                break;
            }
        }
        let (part, tail) = rest.split_at_checked(end)?;
        rest = tail.trim_start();
        Some(part)
    })
}

/// Scores each passage for `terms` (BM25 over the page's passages, a heading's words counting for the passages
/// under it); whether any passage has one of them.
fn score(passages: &mut [Passage<'_>], terms: &[String]) -> bool {
    // Each passage's count of each term (saturated), and its length in words.
    let mut counts: Vec<[u8; QUERY_TERMS_MAX]> = Vec::with_capacity(passages.len());
    let mut lengths: Vec<u32> = Vec::with_capacity(passages.len());
    let mut df = [0u32; QUERY_TERMS_MAX];
    // The first bytes of the terms, either case: most words are passed over on their first byte.
    let mut first = [false; 256];
    for b in terms.iter().filter_map(|t| t.as_bytes().first()) {
        for b in [b.to_ascii_lowercase(), b.to_ascii_uppercase()] {
            if let Some(f) = first.get_mut(usize::from(b)) {
                *f = true;
            }
        }
    }
    for p in passages.iter_mut() {
        let mut count = [0u8; QUERY_TERMS_MAX];
        let mut length = 0u32;
        words(p.text, &mut |w| {
            length += 1;
            if !w.as_bytes().first().is_some_and(|&b| first.get(usize::from(b)).copied().unwrap_or(false)) {
                return;
            }
            let w = stem(w);
            if let Some(c) = terms.iter().position(|t| t.eq_ignore_ascii_case(w)).and_then(|t| count.get_mut(t)) {
                *c = c.saturating_add(1);
            }
        });
        for (d, c) in df.iter_mut().zip(count) {
            *d += u32::from(c > 0);
        }
        counts.push(count);
        lengths.push(length);
        p.words = length;
    }
    if df.iter().all(|&d| d == 0) {
        return false;
    }
    let n = passages.len() as f32;
    let idf = df.map(|d| (1.0 + (n - d as f32 + 0.5) / (d as f32 + 0.5)).ln());
    let average = (lengths.iter().map(|&l| l as f32).sum::<f32>() / n).max(1.0);
    // The words of the headings (and table headers) over each passage, weighed: a heading's are its own and those
    // of the headings over it. A passage needs only passages before it, so one pass in order has them.
    let mut context: Vec<[f32; QUERY_TERMS_MAX]> = Vec::with_capacity(passages.len());
    for (i, p) in passages.iter_mut().enumerate() {
        let above = context.get(p.needs as usize).copied().unwrap_or([0.0; QUERY_TERMS_MAX]);
        let own = counts.get(i).copied().unwrap_or_default();
        let length = lengths.get(i).copied().unwrap_or(0) as f32;
        let norm = K1 * (1.0 - B + B * length / average);
        p.score = (0..terms.len())
            .map(|t| {
                let tf = f32::from(own.get(t).copied().unwrap_or(0))
                    + if p.role == Role::Heading { 0.0 } else { HEADING_WEIGHT * above.get(t).unwrap_or(&0.0) };
                idf.get(t).unwrap_or(&0.0) * tf * (K1 + 1.0) / (tf + norm)
            })
            .sum::<f32>();
        let mut mine = above;
        if p.role != Role::Body {
            for (m, c) in mine.iter_mut().zip(own) {
                *m += f32::from(c);
            }
        }
        context.push(mine);
    }
    true
}

/// Which passages to keep within `room` tokens: the title, the lead, then the best-scored passages that fit (each
/// with the passages it needs), then, while they fit, the passages from the top; `None` when nothing of the body
/// fits.
fn select(passages: &[Passage<'_>], room: usize) -> Option<Vec<bool>> {
    let mut kept = vec![false; passages.len()];
    // The marker after the last passage kept, when text follows it.
    let mut used = MARKER_TOKENS;
    // Keeps `i` and what it needs when they fit in `limit`.
    let keep = |i: usize, kept: &mut Vec<bool>, used: &mut usize, limit: usize| -> bool {
        let mut cost = 0;
        let mut chain = Vec::new();
        let mut at = i as u32;
        while let Some(p) = passages.get(at as usize).filter(|_| !kept.get(at as usize).copied().unwrap_or(true)) {
            chain.push(at as usize);
            // A passage after one left out brings a marker with it.
            let gap = at > 0 && !kept.get(at as usize - 1).copied().unwrap_or(false);
            cost += p.tokens() + 1 + if gap { MARKER_TOKENS } else { 0 };
            // `needs` is always an earlier passage: the walk ends.
            at = if p.needs < at { p.needs } else { NONE };
        }
        if *used + cost > limit {
            return false;
        }
        *used += cost;
        for c in chain {
            if let Some(k) = kept.get_mut(c) {
                *k = true;
            }
        }
        true
    };
    // The title (`passages` made it a heading that heads nothing).
    if passages.first().is_some_and(|p| p.role == Role::Heading && p.needs == NONE && p.text.starts_with("# ")) {
        keep(0, &mut kept, &mut used, room);
    }
    let lead = used + room * LEAD_PERCENT / 100;
    let body = |p: &&Passage<'_>| p.role == Role::Body;
    for (i, _) in passages.iter().enumerate().filter(|(_, p)| body(p)).take(LEAD_PASSAGES_MAX) {
        if !keep(i, &mut kept, &mut used, lead) {
            break;
        }
    }
    // Best first, in document order among equals: each passage scored as a key of its score (positive: its bits
    // order as it does) over its index.
    let mut ranked: Vec<u64> = passages
        .iter()
        .enumerate()
        .filter(|(_, p)| p.score > 0.0 && p.role != Role::Header)
        .map(|(i, p)| u64::from(u32::MAX - p.score.to_bits()) << 32 | i as u64)
        .collect();
    ranked.sort_unstable();
    // The same text again (a card's line repeated down a listing) is not kept twice for its score.
    let mut seen = std::collections::HashSet::new();
    for i in ranked.into_iter().map(|key| (key & u64::from(u32::MAX)) as usize) {
        // What cannot fit is not weighed.
        if passages.get(i).is_some_and(|p| used + p.words as usize / 2 < room && seen.insert(p.text)) {
            keep(i, &mut kept, &mut used, room);
        }
    }
    for (i, _) in passages.iter().enumerate().filter(|(_, p)| body(p)) {
        if !kept.get(i).copied().unwrap_or(true) && !keep(i, &mut kept, &mut used, room) {
            break;
        }
    }
    passages.iter().zip(&kept).any(|(p, &k)| k && p.role == Role::Body).then_some(kept)
}

/// The passages kept, in order, and their estimated tokens: a passage after the one before it in its block joined as
/// it was, and the marker where text was left out (inside a paragraph, in its line; inside a list or a table, after
/// it). The estimate of markdown is the sum of its lines' and one for each line break or blank line (`estimate`
/// counts a run of line breaks as one token, and reads a line after one as it reads the start of a text): a line
/// that is one passage is weighed already; a paragraph's runs kept side by side are weighed together.
fn render(passages: &[Passage<'_>], kept: &[bool]) -> (String, usize) {
    let mut out = String::new();
    let mut tokens = 0usize;
    // The last passage written, whether text of its block was left out since, and where the line being written
    // started when it holds more than one passage.
    let (mut last, mut gap_in_block, mut line) = (None::<usize>, false, None::<usize>);
    let end_line = |out: &str, line: &mut Option<usize>, tokens: &mut usize| {
        if let Some(start) = line.take() {
            *tokens += out.get(start..).map_or(0, estimate);
        }
    };
    for (i, p) in passages.iter().enumerate().filter(|(i, _)| kept.get(*i).copied().unwrap_or(false)) {
        let skipped = last.map_or(i > 0, |l| l + 1 < i);
        let same_block =
            last.and_then(|l| passages.get(l)).is_some_and(|l| l.block == p.block) && p.join != Join::Block;
        if same_block && p.join == Join::Space {
            // The line goes on: it is weighed whole once it ends, not passage by passage.
            if line.is_none() {
                tokens = tokens.saturating_sub(last.and_then(|l| passages.get(l)).map_or(0, Passage::tokens));
                line = Some(out.rfind('\n').map_or(0, |n| n + 1));
            }
            out.push_str(if skipped { " […] " } else { " " });
        } else {
            end_line(&out, &mut line, &mut tokens);
            if same_block {
                gap_in_block |= skipped;
                out.push('\n');
                tokens += 1;
            } else {
                if !out.is_empty() {
                    out.push_str("\n\n");
                    tokens += 1;
                }
                if skipped || gap_in_block {
                    out.push_str(MARKER);
                    out.push_str("\n\n");
                    tokens += MARKER_TOKENS;
                }
                gap_in_block = false;
            }
            tokens += p.tokens();
        }
        out.push_str(p.text);
        last = Some(i);
    }
    end_line(&out, &mut line, &mut tokens);
    if gap_in_block || last.is_some_and(|l| l + 1 < passages.len()) {
        out.push_str("\n\n");
        out.push_str(MARKER);
        tokens += MARKER_TOKENS;
    }
    (out, tokens)
}

#[cfg(test)]
mod tests;
