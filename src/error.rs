//! The one place where a failure becomes an HTTP answer: every error the service returns is an `ApiError`, a
//! status with a stable snake_case code and a human message, rendered as
//! `{"error":{"code":"...","message":"...", ...details}}`.
//!
//! Modules keep their own error types; they convert into `ApiError` at the edge (the router or the HTTP layer).

use serde_json::{json, Map, Value};

use crate::http::Response;

#[derive(Debug, Clone, PartialEq)]
pub struct ApiError {
    pub status: u16,
    /// Stable, documented, snake_case: clients branch on it.
    pub code: &'static str,
    pub message: String,
    /// Extra members of the `error` object (for example `field`), or extra top-level members of the body.
    pub details: Map<String, Value>,
    /// Extra response headers (`Allow`, `Retry-After`).
    pub headers: Vec<(&'static str, String)>,
}

impl ApiError {
    pub fn new(status: u16, code: &'static str, message: impl Into<String>) -> ApiError {
        ApiError { status, code, message: message.into(), details: Map::new(), headers: Vec::new() }
    }

    pub fn bad_request(code: &'static str, message: impl Into<String>) -> ApiError {
        ApiError::new(400, code, message)
    }

    /// 400 for a field of the request body, naming the field.
    pub fn invalid_field(code: &'static str, field: &str, message: impl Into<String>) -> ApiError {
        ApiError::new(400, code, message).detail("field", field)
    }

    pub fn not_found(path: &str) -> ApiError {
        ApiError::new(404, "not_found", format!("no such endpoint: {path}"))
    }

    pub fn method_not_allowed(method: &str, allow: &'static str) -> ApiError {
        ApiError::new(405, "method_not_allowed", format!("method {method} is not allowed here; allowed: {allow}"))
            .header("Allow", allow)
    }

    pub fn internal() -> ApiError {
        ApiError::new(500, "internal_error", "the server failed while handling this request; it has been logged")
    }

    /// 503 that tells the client when to come back.
    pub fn unavailable(code: &'static str, message: impl Into<String>, retry_after_s: u32) -> ApiError {
        ApiError::new(503, code, message).header("Retry-After", retry_after_s.to_string())
    }

    pub fn detail(mut self, key: &str, value: impl Into<Value>) -> ApiError {
        self.details.insert(key.to_owned(), value.into());
        self
    }

    pub fn header(mut self, name: &'static str, value: impl Into<String>) -> ApiError {
        self.headers.push((name, value.into()));
        self
    }

    pub fn body(&self) -> Value {
        let mut error = Map::new();
        error.insert("code".into(), Value::from(self.code));
        error.insert("message".into(), Value::from(self.message.clone()));
        for (k, v) in &self.details {
            error.insert(k.clone(), v.clone());
        }
        json!({ "error": error })
    }

    pub fn into_response(self) -> Response {
        let mut response = Response::json(self.status, &self.body());
        for (name, value) in self.headers {
            response = response.header(name, value);
        }
        response
    }
}

impl std::fmt::Display for ApiError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} {}: {}", self.status, self.code, self.message)
    }
}

impl std::error::Error for ApiError {}
