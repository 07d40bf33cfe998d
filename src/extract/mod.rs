//! Main-content extraction: HTML in (pushed in chunks as it arrives), the page's main content out as clean
//! markdown. A push parser over the shared tokenizer: `feed` builds a flat list of text blocks, each with its
//! context (the containers around it, boilerplate and content hints, link density); `finish` scores the containers
//! (text, commas, link density, class and id hints), picks the main one and its worthy siblings, drops what is
//! boilerplate inside it, and renders markdown. The output does not depend on chunking.
//!
//! Limits: memory is bounded by named caps, not by the input. The element stack keeps at most `DEPTH_MAX` entries;
//! one page yields at most `BLOCKS_MAX` blocks, `NODES_MAX` containers and `TEXT_BYTES_MAX` bytes of block text,
//! and renders to at most `MARKDOWN_BYTES_MAX` bytes. Past a cap the rest of the page is not collected and the
//! extract says it was truncated. Every step is linear in the input (or in what the caps let through), and an
//! extractor given a deadline stops working once it has passed.

pub mod budget;
mod builder;
pub mod focus;
mod forum;
mod listing;
mod render;
mod select;
mod signals;

/// The streaming tokenizer the extractor and the search sources' parsers run on.
pub mod html;

pub use render::Markdown;

use std::time::Instant;

use crate::html::Tokenizer;
use builder::Builder;

/// Elements kept on the stack; deeper nesting is counted, not stored.
pub const DEPTH_MAX: usize = 256;

/// Blocks (paragraphs, headings, items, table rows) collected from one page. The benchmark's 181 real pages have at
/// most 517 (eight times less than the cap); a block costs about 100 bytes besides its text, so the cap holds the
/// per-block overhead to about 400 KB (1.6 MB at the former 16,384) where a page of 700,000 one-letter paragraphs
/// once took 150 MB.
pub const BLOCKS_MAX: usize = 4_096;

/// Containers (scored elements: `div`, `section`, `td`...) collected from one page; the benchmark's pages have at
/// most 662 (a 25th of the cap). A container costs 24 bytes in the extract and 72 bytes of scores while choosing:
/// about 1.6 MB at the cap (6.3 MB at the former 65,536).
pub const NODES_MAX: usize = 16_384;

/// Bytes of block text (markdown, links included; a quoted block also pays for its `> ` prefixes) collected from
/// one page: about 250,000 tokens, thirty times the largest budget a request may ask for, and ten times the
/// most a benchmark page holds (102 KB) (the selection needs the whole page, not only what the budget keeps, so the cap
/// cannot follow the budget down). It does not depend on the budget: with no budget (0) it is what the extract can
/// hold at most.
pub const TEXT_BYTES_MAX: usize = 1 << 20;

/// Cells kept per table row; later cells are dropped (and the extract says so). It bounds the padding a table's
/// widest row adds to every other row.
pub const CELLS_MAX: usize = 64;

/// Bytes of a title kept (a longer `<title>` is cut at a character boundary).
pub const TITLE_BYTES_MAX: usize = 1_024;

/// Bytes of rendered markdown at most: the collected text plus what rendering adds (heading marks, list indents,
/// table pipes and padding).
pub const MARKDOWN_BYTES_MAX: usize = 2 * TEXT_BYTES_MAX;

/// Input fed to the tokenizer between two looks at the deadline, so that a whole document fed at once is checked
/// too.
const FEED_SLICE_BYTES: usize = 64 * 1_024;

#[derive(Debug, Clone)]
pub struct Options {
    /// Images as `![alt](src)`.
    pub image_links: bool,
    /// Otherwise, an image's alt text (of three words or more) in the text; by default images are left out.
    pub image_alt: bool,
    /// Links as `[text](href)`; otherwise their text alone.
    pub links: bool,
    /// The page's URL, to resolve relative links.
    pub base_url: Option<String>,
}

impl Default for Options {
    fn default() -> Self {
        Options { image_links: false, image_alt: false, links: true, base_url: None }
    }
}

/// What was extracted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Extract {
    pub title: Option<String>,
    /// The markdown blocks, in order (the title first when there is one).
    pub blocks: Vec<String>,
    /// A cap was reached: the page held more than the extract does.
    pub truncated: bool,
}

impl Extract {
    pub fn markdown(&self) -> String {
        self.blocks.join("\n\n")
    }
}

pub struct Extractor {
    tokenizer: Tokenizer,
    builder: Builder,
    deadline: Option<Instant>,
    timed_out: bool,
}

impl Extractor {
    pub fn new(options: Options) -> Extractor {
        Extractor { tokenizer: Tokenizer::new(), builder: Builder::new(options), deadline: None, timed_out: false }
    }

    /// An extractor that stops working once `deadline` has passed: further input is ignored and `timed_out` says
    /// so (the caller reports a timeout instead of finishing).
    pub fn with_deadline(options: Options, deadline: Instant) -> Extractor {
        Extractor { deadline: Some(deadline), ..Extractor::new(options) }
    }

    pub fn feed(&mut self, chunk: &[u8]) {
        for slice in chunk.chunks(FEED_SLICE_BYTES) {
            if self.timed_out || self.deadline.is_some_and(|d| Instant::now() >= d) {
                self.timed_out = true;
                return;
            }
            // Past a cap nothing more is collected: the rest of the input is not even tokenized.
            if self.builder.full() {
                return;
            }
            self.tokenizer.feed(slice, &mut self.builder);
        }
    }

    /// Whether the deadline passed before the input was all taken in.
    pub fn timed_out(&self) -> bool {
        self.timed_out
    }

    /// Ends the input and chooses the main content: bounded work (the caps bound what it looks at).
    pub fn finish(mut self) -> Extract {
        self.tokenizer.finish(&mut self.builder);
        let page = self.builder.finish();
        select::extract(page)
    }

    /// Extracts a whole document in one call.
    pub fn run(html: &[u8], options: Options) -> Extract {
        let mut e = Extractor::new(options);
        e.feed(html);
        e.finish()
    }
}

#[cfg(test)]
mod tests;
