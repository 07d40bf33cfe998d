//! Search: the request, the sources and their fallback, the answer.

mod request;

pub use request::{SearchRequest, MAX_RESULTS_DEFAULT, MAX_RESULTS_MAX, QUERY_CHARS_MAX};

use serde_json::Value;

use crate::error::ApiError;

/// Runs searches. The sources arrive with the search issue; until then every search fails honestly.
#[derive(Debug, Default)]
pub struct Engine {}

impl Engine {
    pub fn search(&self, _request: &SearchRequest) -> Result<Value, ApiError> {
        Err(ApiError::unavailable(
            "no_sources",
            "no search source is configured",
            60,
        ))
    }
}
