//! The work of a search call, below the doors (`/service`, the MCP tools, the SearXNG door and the search page):
//! the engine's answer, the pages of its first results when the call asks for them, and the `kid` of the result
//! key that is to sign it. It imports no door.

use serde_json::Value;

use crate::error::ApiError;
use crate::search::{Engine, SearchRequest};

/// The answer to one search call: the engine's answer, the pages of its first results when `extract` asks for
/// them (each cut for the search's query when over its budget, on the extraction pool as `caller`'s), and the `kid`
/// of the result key that is to sign it.
pub fn search_answer(
    (engine, pages): (&Engine, &crate::page::Pages),
    kid: &str,
    search: &SearchRequest,
    (caller, request_id): (crate::page::Caller, &str),
) -> Result<Value, ApiError> {
    let mut answer = engine.search(search, request_id)?;
    if search.extract > 0 {
        pages.add_to_answer(caller, &mut answer, search.extract, search.extract_tokens, &search.query);
    }
    if let Some(map) = answer.as_object_mut() {
        map.insert("kid".into(), kid.into());
    }
    Ok(answer)
}
