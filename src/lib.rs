//! websearchd: a self-hostable web search service for software agents, paid per call over x402 and signed with
//! Ed25519. ARCHITECTURE.md maps the modules.

pub mod answer;
pub mod apikeys;
pub mod app;
pub mod cache;
pub mod cli;
pub mod clock;
pub mod codec;
pub mod config;
pub mod discovery;
pub mod embedded;
pub mod error;
pub mod fetch;
pub mod http;
pub mod idna;
pub mod jcs;
pub mod journal;
pub mod json_out;
pub mod logger;
pub mod map;
pub mod mcp;
pub mod mesh;
pub mod metrics;
pub mod notary;
pub mod openapi;
pub mod origins;
pub mod page;
pub mod reader;
pub mod search;
pub mod searx;
pub mod sign;
pub mod statedir;
pub mod store;
pub mod tavily;
pub mod urls;
pub mod x402;

// The tokenizer and the extractor live in the package `extract` (`src/extract`), kept at opt "s" while
// this crate is built at opt "z" (Cargo.toml); their paths here are the ones they had as modules.
pub use extract;
pub use extract::html;
