//! Main-content extraction: HTML in (pushed in chunks as it arrives), the page's main content out as clean
//! markdown. A push parser over the shared tokenizer: `feed` builds a flat list of text blocks, each with its
//! context (the containers around it, boilerplate and content hints, link density); `finish` scores the containers
//! (text, commas, link density, class and id hints), picks the main one and its worthy siblings, drops what is
//! boilerplate inside it, and renders markdown. Memory is bounded by the input (which callers cap) and independent
//! of nesting depth: the element stack keeps at most `DEPTH_MAX` entries. The output does not depend on chunking.

pub mod budget;
mod builder;
mod render;
mod select;

pub use render::Markdown;

use crate::html::Tokenizer;
use builder::Builder;

/// Elements kept on the stack; deeper nesting is counted, not stored.
pub const DEPTH_MAX: usize = 256;

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
}

impl Extract {
    pub fn markdown(&self) -> String {
        self.blocks.join("\n\n")
    }
}

pub struct Extractor {
    tokenizer: Tokenizer,
    builder: Builder,
}

impl Extractor {
    pub fn new(options: Options) -> Extractor {
        Extractor { tokenizer: Tokenizer::new(), builder: Builder::new(options) }
    }

    pub fn feed(&mut self, chunk: &[u8]) {
        self.tokenizer.feed(chunk, &mut self.builder);
    }

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
