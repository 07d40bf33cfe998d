//! The application: routes, their handlers, and the metrics they feed. The HTTP layer gives it complete requests;
//! it answers with `Response`s and turns every `ApiError` into its JSON form in one place (`Handler::handle`).

use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::json;

use crate::config::Config;
use crate::error::ApiError;
use crate::http::{Handler, Request, Response, ServerStats};
use crate::metrics::Metrics;
use crate::search::{Engine, SearchRequest};

pub struct App {
    config: Config,
    started: Instant,
    stats: Arc<ServerStats>,
    metrics: Metrics,
    engine: Engine,
}

/// The routes, as metric labels and for `Allow` headers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Route {
    Health,
    Metrics,
    Service,
    Unknown,
}

impl Route {
    fn of(path: &str) -> Route {
        match path {
            "/health" => Route::Health,
            "/metrics" => Route::Metrics,
            "/service" => Route::Service,
            _ => Route::Unknown,
        }
    }

    fn label(self) -> &'static str {
        match self {
            Route::Health => "health",
            Route::Metrics => "metrics",
            Route::Service => "service",
            Route::Unknown => "unknown",
        }
    }
}

impl App {
    pub fn new(config: Config, stats: Arc<ServerStats>, engine: Engine) -> App {
        App {
            config,
            started: Instant::now(),
            stats,
            metrics: Metrics::default(),
            engine,
        }
    }

    pub fn config(&self) -> &Config {
        &self.config
    }

    pub fn engine(&self) -> &Engine {
        &self.engine
    }

    fn route(&self, req: &Request) -> Result<Response, ApiError> {
        let method = req.method.as_str();
        match (Route::of(&req.path), method) {
            (Route::Health, "GET" | "HEAD") => Ok(self.health()),
            (Route::Metrics, "GET" | "HEAD") => Ok(self.metrics()),
            (Route::Service, "POST") => self.service(req),
            (Route::Health | Route::Metrics, _) => {
                Err(ApiError::method_not_allowed(method, "GET, HEAD"))
            }
            (Route::Service, _) => Err(ApiError::method_not_allowed(method, "POST")),
            (Route::Unknown, _) => Err(ApiError::not_found(&req.path)),
        }
    }

    fn health(&self) -> Response {
        Response::json(
            200,
            &json!({
                "status": "ok",
                "version": env!("CARGO_PKG_VERSION"),
                "uptime_s": self.started.elapsed().as_secs(),
                "sources": self.engine.health(),
            }),
        )
    }

    fn metrics(&self) -> Response {
        let text = self
            .metrics
            .render(&self.stats, self.started.elapsed(), &self.engine.metrics());
        Response::new(200, "text/plain; version=0.0.4; charset=utf-8", text)
            .header("Cache-Control", "no-store")
    }

    fn service(&self, req: &Request) -> Result<Response, ApiError> {
        require_json(req)?;
        let search = SearchRequest::from_json(&req.body)?;
        let answer = self.engine.search(&search, &req.request_id)?;
        Ok(Response::json(200, &answer))
    }
}

/// 415 unless the body is declared as `application/json` (parameters such as `charset=utf-8` are fine).
fn require_json(req: &Request) -> Result<(), ApiError> {
    let media_type = req
        .header("content-type")
        .map(|v| v.split(';').next().unwrap_or("").trim());
    match media_type {
        Some(t) if t.eq_ignore_ascii_case("application/json") => Ok(()),
        Some(t) => Err(ApiError::new(
            415,
            "unsupported_media_type",
            format!("Content-Type must be application/json, not {t:?}"),
        )),
        None => Err(ApiError::new(
            415,
            "unsupported_media_type",
            "Content-Type: application/json is required",
        )),
    }
}

impl Handler for App {
    fn handle(&self, request: &Request) -> Response {
        self.route(request).unwrap_or_else(ApiError::into_response)
    }

    fn completed(&self, request: &Request, status: u16, elapsed: Duration) {
        self.metrics
            .record(Route::of(&request.path).label(), status, elapsed);
    }
}
