//! The application: routes, their handlers, and the metrics they feed. The HTTP layer gives it complete requests;
//! it answers with `Response`s and turns every `ApiError` into its JSON form in one place (`Handler::handle`).

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::apikeys::ApiKeys;
use crate::clock::Clock;
use crate::config::Config;
use crate::discovery::Documents;
use crate::error::ApiError;
use crate::http::{Handler, Prepared, Reply, Request, Response, ServerStats};
use crate::mesh::Mesh;
use crate::metrics::Metrics;
use crate::notary::Notary;
use crate::search::{Engine, SearchRequest, MAX_RESULTS_MAX, QUERY_CHARS_MAX};
use crate::sign::{Keyring, SignedObject};
use crate::x402::{Admission, Gate, Refusal, Resource, Unserved};

pub struct App {
    config: Config,
    started: Instant,
    stats: Arc<ServerStats>,
    metrics: Metrics,
    engine: Engine,
    gate: Gate,
    search_resource: Resource,
    /// The reader door's resource at one page's price (`POST /extract`; a call is priced per URL).
    reader_resource: Resource,
    keys: Arc<Keyring>,
    documents: Documents,
    notary: Option<Notary>,
    notary_resource: Resource,
    api_keys: ApiKeys,
    /// The names and origins a free instance answers (`origins`).
    names: crate::origins::Names,
    /// Calls through the Tavily door by API key (`tavily::KeyCounts`).
    tavily_keys: crate::tavily::KeyCounts,
    mesh: Mesh,
    clock: Arc<dyn Clock>,
    map: Option<Arc<crate::map::MapService>>,
    /// The map page, rendered at start (with the map on).
    map_page: crate::map::page::Page,
    /// Extractions by URL (`extract: true`), kept as long as search answers.
    pages: crate::page::Pages,
    mcp: McpDoor,
    /// The SearXNG door's resource (for the 402 of a caller no free rule admits) and the search page.
    searx_resource: Resource,
    searx_page: crate::searx::page::Page,
    fixed: Fixed,
    /// `/health` as last answered. A probe whose body comes out the same (no source, breaker or store changed within
    /// the second) reuses its rendered head and framing, so only the body is written per probe.
    health_last: Mutex<Option<Arc<Prepared>>>,
}

/// The responses that depend on the configuration only, rendered once at start (the keys, the terms and the
/// documents do not change while the server runs) and answered by the reactor itself (`Handler::handle_inline`)
/// with the request id and date spliced in.
#[derive(Default)]
struct Fixed {
    /// `POST /service` without payment; `None` with payments off.
    search_challenge: Option<Arc<Prepared>>,
    /// The notary's challenge; `None` with payments or the notary off.
    notary_challenge: Option<Arc<Prepared>>,
    /// Each document path: its answer, and its `304 Not Modified`.
    documents: HashMap<&'static str, [Arc<Prepared>; 2]>,
    /// CORS preflights, by their `Access-Control-Allow-Methods`.
    preflights: Vec<(&'static str, Arc<Prepared>)>,
    /// The map page's paths (`<map>`, `<map>/`, `<map>/map.js`) and their answers; empty with the map off.
    map_page: Vec<(String, Arc<Prepared>)>,
    /// The search page's home (`/`, `/search` without parameters) and `/opensearch.xml`; `None` with the SearXNG door
    /// off.
    searx_home: Option<Arc<Prepared>>,
    opensearch: Option<Arc<Prepared>>,
    /// The SearXNG door's 402s (the JSON, the page) for a caller no free rule admits; `None` with payments or the door
    /// off.
    searx_challenges: Option<[Arc<Prepared>; 2]>,
}

impl Fixed {
    fn build(app: &App) -> Fixed {
        let fix = |response: Response| Arc::new(Prepared::new(&cors(response)));
        let challenge = |resource: &Resource| {
            let terms = app.gate.terms_for(resource)?;
            Some(fix(app.gate.render_challenge(&terms, resource, None)))
        };
        let documents = app
            .documents
            .iter()
            .map(|(path, doc)| (path, [fix(document_response(doc, false)), fix(document_response(doc, true))]))
            .collect();
        let preflights = Route::ALLOW.iter().map(|methods| (*methods, fix(preflight(methods)))).collect();
        let map_page = (app.config.map_path.iter())
            .flat_map(|base| ["", "/", "/map.js"].map(|rest| format!("{base}{rest}")))
            .map(|path| {
                let answer = fix(app.map_page(&path));
                (path, answer)
            })
            .collect();
        let searx = app.config.searxng.then_some(&app.searx_page);
        Fixed {
            search_challenge: challenge(&app.search_resource),
            notary_challenge: app.notary.as_ref().and_then(|_| challenge(&app.notary_resource)),
            documents,
            preflights,
            map_page,
            searx_home: searx.map(|page| fix(page.home())),
            opensearch: searx.map(|page| fix(page.opensearch())),
            searx_challenges: searx.zip(app.gate.terms_for(&app.searx_resource)).map(|(page, terms)| {
                let error = (crate::searx::NOT_PAYABLE, crate::searx::NOT_PAYABLE_MESSAGE.into());
                [fix(app.gate.render_challenge(&terms, &app.searx_resource, Some(error))), fix(page.payment_required())]
            }),
        }
    }
}

/// What `/mcp` serves besides the search's parts: made once.
struct McpDoor {
    definitions: Vec<Value>,
    resources: Vec<(&'static str, Resource)>,
    origins: crate::mcp::http::Origins,
}

/// `Retry-After` when the notary journal cannot be written (a disk problem for the operator, not a blip).
const JOURNAL_RETRY_AFTER_S: u32 = 30;
/// Room for a `/health` answer with every source listed.
const HEALTH_BYTES: usize = 2_048;
/// How long clients and proxies may reuse a map answer: the fastest layers refresh every 60 s.
const MAP_CACHE_CONTROL: &str = crate::map::CACHE_CONTROL;

/// Headers a browser-based client may read, and those it may send (x402 clients send the last one too).
const CORS_EXPOSE: &str = "PAYMENT-REQUIRED, PAYMENT-RESPONSE, X-PAYMENT-RESPONSE, X-Request-Id, Retry-After, \
                           X-Signature, X-Signature-Kid, X-Signed-Object, ETag";
const CORS_ALLOW_HEADERS: &str =
    "Content-Type, PAYMENT-SIGNATURE, X-PAYMENT, X-WALLET, Access-Control-Expose-Headers, X-Request-Id, \
     X-Signed-Object, If-None-Match, Authorization, X-Client-Source, X-Tavily-Access-Mode";

/// The routes, as metric labels and for `Allow` headers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Route {
    Health,
    Metrics,
    Service,
    /// `/extract`, the reader door.
    Reader,
    Mcp,
    Document,
    NotaryService,
    /// `<notary>/receipts/<seq>`; the seq is read from the path again.
    NotaryReceipt,
    CoreState,
    CoreMeshgraph,
    MapState,
    /// `<map>/api/capa/<slug>`.
    MapLayer,
    /// `<map>/` (the page), `<map>` (a redirect to it) and `<map>/map.js`.
    MapPage,
    /// `/search`, and `/` (the SearXNG API with `q`, the search page without).
    Searx,
    /// `/opensearch.xml`.
    OpenSearch,
    /// `/tavily/search`, `/tavily/extract`: Tavily's API (`tavily`).
    TavilySearch,
    TavilyExtract,
    Unknown,
}

impl Route {
    fn label(self) -> &'static str {
        match self {
            Route::Health => "health",
            Route::Metrics => "metrics",
            Route::Service => "service",
            Route::Reader => "extract",
            Route::Mcp => "mcp",
            Route::Document => "discovery",
            Route::NotaryService => "notary",
            Route::NotaryReceipt => "notary_receipt",
            Route::CoreState => "core_state",
            Route::CoreMeshgraph => "core_meshgraph",
            Route::MapState => "map_state",
            Route::MapLayer => "map_layer",
            Route::MapPage => "map_page",
            Route::Searx => "searx",
            Route::OpenSearch => "opensearch",
            Route::TavilySearch => "tavily_search",
            Route::TavilyExtract => "tavily_extract",
            Route::Unknown => "unknown",
        }
    }

    /// The `Allow` sets of the routes.
    const ALLOW: [&'static str; 3] = ["GET, HEAD, OPTIONS", "POST, OPTIONS", "GET, HEAD, POST, OPTIONS"];

    /// The methods a route answers (its preflight's and its 405's), `None` for an unknown path.
    fn allow(self) -> Option<&'static str> {
        let [get, post, both] = Route::ALLOW;
        match self {
            Route::Service | Route::Reader | Route::Mcp | Route::TavilySearch | Route::TavilyExtract => Some(post),
            Route::NotaryService | Route::Searx => Some(both),
            Route::Unknown => None,
            _ => Some(get),
        }
    }

    /// Routes a second listener for the notary serves.
    fn on_notary_listener(self) -> bool {
        matches!(self, Route::Health | Route::NotaryService | Route::NotaryReceipt)
    }
}

impl App {
    /// The application; opens the notary's journal (checking its chain) when the notary is on.
    pub fn new(
        config: Config,
        stats: Arc<ServerStats>,
        engine: Engine,
        gate: Gate,
        keys: Arc<Keyring>,
        clock: Arc<dyn Clock>,
    ) -> Result<App, String> {
        let notary = match &config.notary_path {
            Some(_) => {
                let path = config.notary_journal_path();
                let notary = Notary::open(&path, keys.clone(), config.notary_url.clone(), clock.clone())
                    .map_err(|e| format!("the notary journal {}: {e}", path.display()))?;
                Some(notary)
            }
            None => None,
        };
        let map = config
            .map_path
            .as_ref()
            .map(|_| Arc::new(crate::map::MapService::new(config.map.clone(), clock.clone()).answering_with(cors)));
        let documents = Documents::build(&config, &keys, gate.terms(), gate.free_rules(), map.as_deref());
        let notary_resource = Resource {
            url: format!("{}/service", config.notary_url),
            description: "Notary: a SHA-256 hash in an append-only chain; a receipt signed with Ed25519.".into(),
            mime_type: "application/json".into(),
            bazaar: Some(notary_bazaar()),
            price: Some(config.notary_price_atomic),
        };
        let api_keys = ApiKeys::new(&config.api_keys_file);
        let search_resource = Resource {
            url: format!("{}/service", config.public_url),
            description: "Web search for agents: ranked results from live public sources, signed with Ed25519.".into(),
            mime_type: "application/json".into(),
            bazaar: Some(search_bazaar()),
            price: None,
        };
        let reader_resource = Resource {
            url: format!("{}/extract", config.public_url),
            description: "Web page reader: the main content of 1 to 5 public pages as markdown, signed with Ed25519."
                .into(),
            mime_type: "application/json".into(),
            bazaar: Some(reader_bazaar()),
            price: Some(config.extract_price_atomic),
        };
        let pages = crate::page::Pages::new(&config, config.workers);
        let mcp = McpDoor::new(&config);
        let map_page = crate::map::page::Page::new(&config.map_page);
        let searx_resource = Resource {
            url: format!("{}/search", config.public_url),
            description: "SearXNG's search API: web search results from live public sources.".into(),
            mime_type: "application/json".into(),
            bazaar: None,
            price: None,
        };
        let names = crate::origins::Names::new(&config.public_url, config.listen, &config.allowed_origins);
        let searx_page = crate::searx::page::Page::new(
            config.map_path.clone(),
            &config.public_url,
            crate::searx::source_names(&engine),
            gate.terms().is_some(),
        );
        let mut app = App {
            config,
            started: Instant::now(),
            stats,
            metrics: Metrics::default(),
            engine,
            gate,
            search_resource,
            reader_resource,
            keys,
            documents,
            notary,
            notary_resource,
            api_keys,
            tavily_keys: crate::tavily::KeyCounts::default(),
            mesh: Mesh::default(),
            clock,
            map,
            map_page,
            pages,
            mcp,
            searx_resource,
            searx_page,
            names,
            // Rendered from the app itself, just below.
            fixed: Fixed::default(),
            health_last: Mutex::new(None),
        };
        app.fixed = Fixed::build(&app);
        Ok(app)
    }

    /// The map, for the poller to be started (when the map is on).
    pub fn map(&self) -> Option<Arc<crate::map::MapService>> {
        self.map.clone()
    }

    fn route_of(&self, path: &str) -> Route {
        match path {
            "/health" => return Route::Health,
            "/metrics" => return Route::Metrics,
            "/service" => return Route::Service,
            "/extract" => return Route::Reader,
            "/mcp" => return Route::Mcp,
            "/search" | "/" if self.config.searxng => return Route::Searx,
            "/opensearch.xml" if self.config.searxng => return Route::OpenSearch,
            "/tavily/search" if self.config.tavily => return Route::TavilySearch,
            "/tavily/extract" if self.config.tavily => return Route::TavilyExtract,
            "/.well-known/jwks.json"
            | "/agent-card.json"
            | "/.well-known/agent-card.json"
            | "/pubkey"
            | "/catalog.json"
            | "/llms.txt"
            | "/openapi.json" => return Route::Document,
            _ => {}
        }
        if let Some(rest) = self.config.notary_path.as_deref().and_then(|p| path.strip_prefix(p)) {
            if rest == "/service" {
                return Route::NotaryService;
            }
            if rest.strip_prefix("/receipts/").is_some_and(|seq| !seq.is_empty() && !seq.contains('/')) {
                return Route::NotaryReceipt;
            }
        }
        if let Some(rest) = self.config.map_path.as_deref().and_then(|p| path.strip_prefix(p)) {
            if rest == "/mapstate" {
                return Route::MapState;
            }
            if rest.strip_prefix("/api/capa/").is_some_and(|slug| !slug.contains('/')) {
                return Route::MapLayer;
            }
            if matches!(rest, "" | "/" | "/map.js") {
                return Route::MapPage;
            }
        }
        if let Some(rest) = self.config.core_path.as_deref().and_then(|p| path.strip_prefix(p)) {
            match rest {
                "/state" => return Route::CoreState,
                "/meshgraph" => return Route::CoreMeshgraph,
                _ => {}
            }
        }
        Route::Unknown
    }

    /// A handler for a second listener that serves the notary only.
    pub fn notary_only(self: &Arc<App>) -> Arc<dyn Handler> {
        Arc::new(NotaryOnly(self.clone()))
    }

    fn route(&self, req: &Request) -> Result<Response, ApiError> {
        self.dispatch(self.route_of(req.path()), req)
    }

    fn dispatch(&self, route: Route, req: &Request) -> Result<Response, ApiError> {
        let method = req.method();
        let Some(allow) = route.allow() else { return Err(ApiError::not_found(req.path())) };
        match (route, method) {
            // `/mcp` answers its own methods, preflights included (with the MCP headers a browser client sends).
            (Route::Mcp, _) => Ok(self.mcp(req)),
            (_, "OPTIONS") => Ok(preflight(allow)),
            (Route::Health, "GET" | "HEAD") => Ok(self.health()),
            (Route::Metrics, "GET" | "HEAD") => Ok(self.metrics()),
            (Route::Service, "POST") => self.service(req),
            (Route::Reader, "POST") => self.reader(req),
            (Route::Document, "GET" | "HEAD") => Ok(self.document(req)),
            // A GET or a POST without payment gets the challenge; the body is checked first on a POST.
            (Route::NotaryService, "POST") => self.notary_service(req),
            (Route::NotaryService, "GET" | "HEAD") => self.notary_challenge(req),
            (Route::NotaryReceipt, "GET" | "HEAD") => self.notary_receipt(req),
            (Route::CoreState, "GET" | "HEAD") => self.core(req, |app| app.core_state()),
            (Route::CoreMeshgraph, "GET" | "HEAD") => self.core(req, |app| app.meshgraph()),
            (Route::MapState, "GET" | "HEAD") => Ok(self.map_state()),
            (Route::MapLayer, "GET" | "HEAD") => self.map_layer(req),
            (Route::MapPage, "GET" | "HEAD") => Ok(self.map_page(req.path())),
            (Route::Searx, "GET" | "HEAD" | "POST") => Ok(self.searx(req)),
            (Route::OpenSearch, "GET" | "HEAD") => Ok(self.searx_page.opensearch()),
            (Route::TavilySearch, "POST") => Ok(self.tavily(req, true)),
            (Route::TavilyExtract, "POST") => Ok(self.tavily(req, false)),
            _ => Err(ApiError::method_not_allowed(method, allow)),
        }
    }

    fn health(&self) -> Response {
        health_response(self.health_body())
    }

    /// `/health` as the reactor answers it: the last answer again when its body is the same.
    fn health_prepared(&self) -> Arc<Prepared> {
        let body = self.health_body();
        let mut last = self.health_last.lock().unwrap_or_else(PoisonError::into_inner);
        match last.as_ref() {
            Some(prepared) if prepared.body() == body.as_slice() => prepared.clone(),
            _ => {
                let prepared = Arc::new(Prepared::new(&cors(health_response(body))));
                *last = Some(prepared.clone());
                prepared
            }
        }
    }

    /// Written member by member (sorted), not through a value tree: the reactor answers it, often.
    fn health_body(&self) -> Vec<u8> {
        use crate::json_out::{key, opt_u64, string};
        let mut body = Vec::with_capacity(HEALTH_BYTES);
        body.push(b'{');
        // Whether the facilitator serves the network (from its `/supported`, read in memory: never asked here).
        let start = body.len();
        key(&mut body, "facilitator");
        if !self.gate.write_facilitator_health(&mut body) {
            // Payments off: no member.
            body.truncate(start);
        }
        key(&mut body, "mode");
        string(&mut body, if self.gate.terms().is_some() { "paid" } else { "free" });
        key(&mut body, "shared_cache");
        self.engine.write_shared_cache(&mut body);
        key(&mut body, "sources");
        self.engine.write_health(&mut body);
        key(&mut body, "status");
        string(&mut body, "ok");
        // The shared store's state as last seen (never asked here).
        if let Some(store) = self.engine.store() {
            key(&mut body, "store");
            let _ = serde_json::to_writer(&mut body, &store.health());
        }
        key(&mut body, "uptime_s");
        opt_u64(&mut body, Some(self.started.elapsed().as_secs()));
        key(&mut body, "version");
        string(&mut body, env!("CARGO_PKG_VERSION"));
        body.extend_from_slice(b"}\n");
        body
    }

    fn metrics(&self) -> Response {
        let store = self.engine.store().map(|s| s.metrics()).unwrap_or_default();
        let map = self.map.as_ref().map(|m| m.metrics()).unwrap_or_default();
        let notary = self.notary.as_ref().map(Notary::metrics).unwrap_or_default();
        let tavily = if self.config.tavily { self.tavily_keys.metrics() } else { String::new() };
        let extra = format!("{}{}{store}{map}{notary}{tavily}", self.engine.metrics(), self.gate.metrics());
        let text = self.metrics.render(&self.stats, self.started.elapsed(), &extra);
        Response::new(200, "text/plain; version=0.0.4; charset=utf-8", text).header("Cache-Control", "no-store")
    }

    fn document(&self, req: &Request) -> Response {
        let Some(doc) = self.documents.get(req.path()) else { return ApiError::not_found(req.path()).into_response() };
        document_response(doc, fresh(req, &doc.etag))
    }

    /// What the reactor answers from `Fixed` without a worker: documents, the map page, the search page's home and
    /// `/opensearch.xml`, preflights, and the challenge
    /// to a call that is certain to get it (`unpaid_challenge`). `None` for the rest.
    fn fixed_reply(&self, route: Route, req: &Request) -> Option<Arc<Prepared>> {
        let fixed = &self.fixed;
        match (route, req.method()) {
            (Route::Unknown | Route::Mcp, _) => None,
            (_, "OPTIONS") => {
                let allow = route.allow()?;
                fixed.preflights.iter().find(|(m, _)| *m == allow).map(|(_, p)| p.clone())
            }
            (Route::MapPage, "GET" | "HEAD") => {
                fixed.map_page.iter().find(|(path, _)| *path == req.path()).map(|(_, answer)| answer.clone())
            }
            // Without parameters, `/` and `/search` are the home page (parameters go to the worker: a `q`, a format).
            (Route::Searx, "GET" | "HEAD") if req.query().is_none_or(str::is_empty) => fixed.searx_home.clone(),
            (Route::OpenSearch, "GET" | "HEAD") => fixed.opensearch.clone(),
            (Route::Searx, "GET" | "HEAD" | "POST") => self.searx_challenge(req),
            (Route::Document, "GET" | "HEAD") => {
                let [full, not_modified] = fixed.documents.get(req.path())?;
                let doc = self.documents.get(req.path())?;
                Some(if fresh(req, &doc.etag) { not_modified } else { full }.clone())
            }
            // A call priced for its extra pages gets its own challenge from the worker's gate.
            (Route::Service, "POST") => self.unpaid_challenge(req, fixed.search_challenge.as_ref(), |body| {
                SearchRequest::from_json(body)
                    .is_ok_and(|s| s.extract <= 1 || self.config.extract_page_price_atomic == 0)
            }),
            (Route::NotaryService, "POST") => self.unpaid_challenge(req, fixed.notary_challenge.as_ref(), |body| {
                crate::notary::parse_request(body).is_ok()
            }),
            // A GET asks for the terms: no payment or free rule applies.
            (Route::NotaryService, "GET" | "HEAD") => {
                let challenge = fixed.notary_challenge.clone()?;
                self.gate.count_challenge(None);
                Some(challenge)
            }
            _ => None,
        }
    }

    /// The SearXNG door's rendered 402 for a call that would reach the gate when no free rule can let it through
    /// (the door takes no payment: SearXNG clients cannot pay). `None` for the rest, which a worker answers.
    fn searx_challenge(&self, req: &Request) -> Option<Arc<Prepared>> {
        let [json, page] = self.fixed.searx_challenges.as_ref()?;
        if self.maybe_free(req) {
            return None;
        }
        let html = crate::searx::gated(&self.searx_page, req)?;
        self.gate.count_challenge(Some(crate::searx::NOT_PAYABLE));
        Some(if html { page } else { json }.clone())
    }

    /// A browser page of another site, or a name rebound to this instance, may not use a free one (`origins`): the
    /// doors of a free instance, and of a paid one for a local caller the loopback rule admits, check the request's
    /// `Host` and `Origin`. `/mcp` checks its own `Origin`s (MCP's rule: loopback pages too), and its `Host` here.
    /// What is not a door (health, metrics, the documents, the map) is public either way.
    fn browser_guard(&self, route: Route, req: &Request) -> Result<(), ApiError> {
        // Every route that does work for its caller (a new one too) is a door; these only read what is public.
        let public = matches!(
            route,
            Route::Health
                | Route::Metrics
                | Route::Document
                | Route::OpenSearch
                | Route::MapState
                | Route::MapLayer
                | Route::MapPage
                | Route::NotaryReceipt
                | Route::CoreState
                | Route::CoreMeshgraph
                | Route::Unknown
        );
        // The public reads (the reactor's inline answers among them) ask nothing more.
        if public {
            return Ok(());
        }
        let free = self.gate.terms().is_none() || (self.gate.free_rules().loopback && req.client.local);
        if !free {
            return Ok(());
        }
        match self.names.check(req) {
            Err(e) if route == Route::Mcp && e.code == "origin_refused" => Ok(()),
            checked => checked,
        }
    }

    /// Whether a free rule might admit this caller (a trial, or the loopback rule for a local one): the reactor then
    /// leaves the call to a worker, whose gate decides and counts.
    fn maybe_free(&self, req: &Request) -> bool {
        let free = self.gate.free_rules();
        free.trial_calls_per_day > 0 || (free.loopback && req.client.local)
    }

    /// The rendered challenge for a valid call the gate is certain to answer with it: payments on, no payment, no
    /// free rule that could let it through (with a trial or the loopback rule on, the call goes to a worker, whose
    /// gate decides and counts), and a body the route would take (`valid`; a 400 is the worker's to say). The body is
    /// read last: a paid call goes to its worker unparsed here.
    fn unpaid_challenge(
        &self,
        req: &Request,
        challenge: Option<&Arc<Prepared>>,
        valid: impl FnOnce(&[u8]) -> bool,
    ) -> Option<Arc<Prepared>> {
        let challenge = challenge?;
        if self.maybe_free(req) || crate::x402::Call::of_request(req).payment.is_some() {
            return None;
        }
        if req.require_json().is_err() || !valid(req.body()) || signed_object(req).is_err() {
            return None;
        }
        self.gate.count_challenge(None);
        Some(challenge.clone())
    }

    /// Validation first (400s never ask for payment), then the gate, the search, and settlement only for an answer.
    fn service(&self, req: &Request) -> Result<Response, ApiError> {
        req.require_json()?;
        let search = SearchRequest::from_json(req.body())?;
        let object = signed_object(req)?;
        let work = (&self.engine, &self.pages);
        let (base, per_page) = (self.config.price_atomic, self.config.extract_page_price_atomic);
        let priced = self.search_resource.for_pages(base, per_page, search.extract);
        let resource = priced.as_ref().unwrap_or(&self.search_resource);
        self.gated(req, ("search", resource), object, || {
            crate::answer::search_answer(work, &self.keys.result.kid, &search, (caller_of(req), &req.request_id))
        })
    }

    /// `POST /extract`, the reader door: validation first (400s never ask for payment), then the gate at one page's
    /// price per URL asked, the pages, signing and settlement as `/service`'s.
    fn reader(&self, req: &Request) -> Result<Response, ApiError> {
        req.require_json()?;
        let read = crate::reader::ReaderRequest::from_json(req.body())?;
        let object = signed_object(req)?;
        let per_page = self.config.extract_price_atomic;
        let priced = self.reader_resource.for_pages(per_page, per_page, read.pages());
        let resource = priced.as_ref().unwrap_or(&self.reader_resource);
        // The mesh graph counts the reader's callers with the search's, as `/mcp` counts `extract_page`'s.
        self.gated(req, ("search", resource), object, || {
            let now = self.clock.now_unix_ms();
            let who = (caller_of(req), req.request_id.as_str());
            Ok(crate::reader::answer((&self.pages, &self.keys.result.kid), &read, who, now))
        })
    }

    /// `/search` and `/`: SearXNG's search API and the search page (`searx`).
    fn searx(&self, req: &Request) -> Response {
        let door = crate::searx::Door {
            engine: &self.engine,
            pages: &self.pages,
            kid: &self.keys.result.kid,
            gate: &self.gate,
            resource: &self.searx_resource,
            page: &self.searx_page,
        };
        crate::searx::handle(&door, req)
    }

    /// `/mcp`: the MCP tools over Streamable HTTP, paid per call through the same gate (`mcp::http`).
    fn mcp(&self, req: &Request) -> Response {
        let door = crate::mcp::http::Door {
            parts: crate::mcp::tools::Parts {
                engine: &self.engine,
                config: &self.config,
                pages: &self.pages,
                keys: &self.keys,
                clock: self.clock.as_ref(),
            },
            gate: &self.gate,
            definitions: &self.mcp.definitions,
            resources: &self.mcp.resources,
            origins: &self.mcp.origins,
        };
        let (response, payer) = crate::mcp::http::handle(&door, req);
        if let Some((address, served)) = payer {
            self.record_agent(Some((address, true)), "search", served);
        }
        response
    }

    /// A call through the gate: `Gate::admit`, then `Gate::serve` runs the work, signs its answer (over exactly the
    /// bytes sent) and settles for it. The answer with the settlement header, the refusal, or the work's error; the
    /// caller is recorded either way.
    fn gated(
        &self,
        req: &Request,
        (service, resource): (&'static str, &Resource),
        object: SignedObject,
        work: impl FnOnce() -> Result<Value, ApiError>,
    ) -> Result<Response, ApiError> {
        let admission = match self.gate.admit(req, resource) {
            Ok(a) => a,
            Err(refusal) => return Ok(refusal),
        };
        let withheld = |refusal| self.gate.refusal_response(refusal, resource);
        self.serve_admitted(req, admission, (service, resource), object, Box::new(work), &withheld)
    }

    /// An admitted call's work, signed and settled (`Gate::serve`); the caller is recorded either way. `withheld`
    /// renders the refusal sent when the settlement does not go through.
    fn serve_admitted(
        &self,
        req: &Request,
        admission: Admission,
        (service, resource): (&'static str, &Resource),
        object: SignedObject,
        // Boxed, not generic: one copy of the gate's serving and signing for every door (the static binaries' size).
        work: Box<dyn FnOnce() -> Result<Value, ApiError> + '_>,
        withheld: &dyn Fn(Refusal) -> Response,
    ) -> Result<Response, ApiError> {
        let agent = agent_of(req, &admission);
        let served = self.gate.serve(admission, resource, || work().map(|answer| self.signed(&answer, object)));
        self.record_agent(agent, service, served.is_ok());
        match served {
            Ok((response, None)) => Ok(response),
            Ok((response, Some(settlement))) => {
                let (name, value) = settlement.header();
                Ok(response.header(name, value))
            }
            Err(Unserved::Failed(e)) => Err(e),
            Err(Unserved::Withheld(refusal)) => Ok(withheld(*refusal)),
        }
    }

    /// `POST /tavily/search` (`search`) and `POST /tavily/extract`: Tavily's API (`tavily`), every answer and error
    /// in its shapes. Validation first (a 400 never asks for payment), then who may call (`tavily_admit`), then the
    /// work, signed and settled as `/service`'s; a search is priced as `/service` with the pages it reads, an extract
    /// as `/extract` per URL.
    fn tavily(&self, req: &Request, search: bool) -> Response {
        let answered = req.require_json().and_then(|()| {
            let object = signed_object(req)?;
            let now_ms = self.clock.now_unix_ms();
            let config = &self.config;
            let fetch_deadline = Duration::from_millis(config.fetch_timeout_ms);
            let answer_within = Duration::from_millis(config.search_deadline_ms) + fetch_deadline;
            let today = now_ms / 86_400_000;
            let context = crate::tavily::Context { today, cache_ttl_s: config.cache_ttl_s, answer_within };
            let (engine, pages, kid) = (&self.engine, &self.pages, self.keys.result.kid.as_str());
            let (caller, parallel) = (caller_of(req), config.extract_parallel);
            let work = crate::tavily::Work { engine, pages, kid, caller, now_ms, fetch_deadline, parallel };
            let id = &req.request_id;
            let withheld = |refusal| crate::tavily::error_response(tavily_refusal(refusal, false));
            if search {
                let call = crate::tavily::SearchCall::from_json(req.body(), context)?;
                let (base, per_page) = (self.config.price_atomic, self.config.extract_page_price_atomic);
                let priced = self.search_resource.for_pages(base, per_page, call.pages());
                let resource = priced.as_ref().unwrap_or(&self.search_resource);
                let admission = self.tavily_admit(req, resource, call.api_key.as_deref())?;
                let run = || crate::tavily::search(&work, &call, id);
                self.serve_admitted(req, admission, ("search", resource), object, Box::new(run), &withheld)
            } else {
                let call = crate::tavily::ExtractCall::from_json(req.body())?;
                let per_page = self.config.extract_price_atomic;
                // Priced by the URLs that can be read (one at least: a call of none still asks for an answer).
                let priced = self.reader_resource.for_pages(per_page, per_page, call.readable().len().max(1));
                let resource = priced.as_ref().unwrap_or(&self.reader_resource);
                let admission = self.tavily_admit(req, resource, call.api_key.as_deref())?;
                let run = || Ok(crate::tavily::extract(&work, &call, id));
                self.serve_admitted(req, admission, ("search", resource), object, Box::new(run), &withheld)
            }
        });
        answered.unwrap_or_else(crate::tavily::error_response)
    }

    /// Who may call the Tavily door: everyone when payments are off; on a paid instance the holder of an API key the
    /// operator issued (`Authorization: Bearer`, or `api_key` in the body; counted per key), a call paying through x402, or one the free rules
    /// admit; anyone else gets 401 saying how to get access (with the x402 terms beside the words).
    fn tavily_admit(&self, req: &Request, resource: &Resource, body_key: Option<&str>) -> Result<Admission, ApiError> {
        if self.gate.terms_for(resource).is_none() {
            return Ok(Admission::Free(crate::x402::Free::PaymentsOff));
        }
        let call = crate::x402::Call::of_request(req);
        let bearer = req.header("authorization").and_then(|h| {
            let (scheme, key) = h.trim().split_once(' ')?;
            scheme.eq_ignore_ascii_case("bearer").then(|| key.trim()).filter(|k| !k.is_empty())
        });
        let bearer = bearer.or(body_key).filter(|_| call.payment.is_none());
        if let Some(id) = bearer.and_then(|key| self.api_keys.matches(key, Instant::now())) {
            self.tavily_keys.count(id);
            return Ok(Admission::Free(crate::x402::Free::ApiKey));
        }
        // The free rules first: a key that is not one of ours counts as a failed attempt only for a caller they
        // refuse (LangChain's tools always send a key, whatever the instance).
        let refused = self.gate.admit_call(&call, resource);
        let key_refused = match (&refused, bearer) {
            (Err(_), Some(key)) => {
                let client = crate::http::client_addr::key(req.client.ip);
                match self.api_keys.find(Some(key), client, Instant::now()) {
                    Err(e) if e.code == "api_key_invalid" => true,
                    Err(e) => return Err(e),
                    // Added to the file since `matches` looked.
                    Ok(id) => {
                        self.tavily_keys.count(id);
                        return Ok(Admission::Free(crate::x402::Free::ApiKey));
                    }
                }
            }
            _ => false,
        };
        refused.map_err(|refusal| {
            let x402 = match &refusal {
                Refusal::Challenge { terms, error, .. } => Some(terms.challenge(resource, error.as_ref().map(|e| e.0))),
                Refusal::Error(_) => None,
            };
            let e = tavily_refusal(refusal, key_refused);
            match x402 {
                Some(x402) => e.detail("x402", x402),
                None => e,
            }
        })
    }

    /// An answer as sent, with its signature headers.
    fn signed(&self, answer: &Value, object: SignedObject) -> Response {
        let mut response = Response::json(200, answer);
        for (name, value) in crate::sign::sign_answer(&self.keys.result, &response.body, object) {
            response = response.header(name, value);
        }
        response
    }

    fn record_agent(&self, agent: Option<(String, bool)>, service: &'static str, ok: bool) {
        if let Some((address, verified)) = agent {
            self.mesh.call(&address, service, ok, verified, self.clock.now_unix_ms());
        }
    }

    fn notary(&self) -> Result<&Notary, ApiError> {
        self.notary.as_ref().ok_or_else(|| ApiError::not_found("the notary is off"))
    }

    /// `GET <notary>/service`: the terms (a 402 challenge), or, with payments off, how to call it.
    fn notary_challenge(&self, req: &Request) -> Result<Response, ApiError> {
        self.notary()?;
        match self.gate.terms_for(&self.notary_resource) {
            Some(terms) => Ok(self.gate.challenge(&terms, &self.notary_resource, None)),
            None => Err(ApiError::method_not_allowed(req.method(), "POST, OPTIONS")),
        }
    }

    /// `POST <notary>/service`: validation, the gate, the durable receipt, then settlement.
    fn notary_service(&self, req: &Request) -> Result<Response, ApiError> {
        let notary = self.notary()?;
        req.require_json()?;
        let hash = crate::notary::parse_request(req.body())?;
        let object = signed_object(req)?;
        self.gated(req, ("notary", &self.notary_resource), object, || {
            notary.notarize(&hash).map_err(|e| {
                log::error!("notary: the receipt could not be written: {e}");
                ApiError::unavailable(
                    "journal_unavailable",
                    "the receipt could not be stored; nothing was charged",
                    JOURNAL_RETRY_AFTER_S,
                )
            })
        })
    }

    /// `GET <notary>/receipts/<seq>`: a stored receipt, public like a transparency log's entries.
    fn notary_receipt(&self, req: &Request) -> Result<Response, ApiError> {
        let notary = self.notary()?;
        let seq_text = req.path().rsplit('/').next().unwrap_or("");
        // Plain decimal only: one spelling per receipt (`u64::from_str` would also take `+1`).
        let seq = Some(seq_text)
            .filter(|t| t.bytes().all(|b| b.is_ascii_digit()) && !t.starts_with('0'))
            .and_then(|t| t.parse::<u64>().ok())
            .ok_or_else(|| {
                ApiError::bad_request("seq_invalid", "the receipt number must be a positive integer in plain decimal")
            })?;
        // A receipt the journal cannot read back is the server's fault (logged), not a number never issued.
        let record = notary.get(seq).map_err(|_| ApiError::internal())?.ok_or_else(|| {
            ApiError::new(404, "receipt_not_found", format!("there is no receipt {seq}"))
                .detail("receipts", notary.head().receipts)
        })?;
        Ok(Response::json(200, &record).header("Cache-Control", "public, max-age=31536000, immutable"))
    }

    /// `<map>/`: the page, with its CSP; `<map>/map.js`: its script; `<map>`: a redirect to `<map>/`, so that the
    /// page's relative addresses (`mapstate`, `api/capa/<slug>`) resolve under the map's path.
    fn map_page(&self, path: &str) -> Response {
        let base = self.config.map_path.as_deref().unwrap_or("/map");
        let response = match path.strip_prefix(base).unwrap_or("") {
            "" => return Response::new(308, "text/plain", Vec::new()).header("Location", format!("{base}/")),
            "/map.js" => Response::new(200, "text/javascript; charset=utf-8", self.map_page.script()),
            _ => Response::new(200, "text/html; charset=utf-8", self.map_page.html())
                .header("Content-Security-Policy", self.map_page.csp())
                .header("X-Frame-Options", "DENY")
                .header("Referrer-Policy", "no-referrer"),
        };
        response.header("X-Content-Type-Options", "nosniff").header("Cache-Control", "public, max-age=300")
    }

    fn map_state(&self) -> Response {
        let state = self.map.as_ref().map_or(Value::Null, |m| m.state());
        Response::json(200, &state).header("Cache-Control", MAP_CACHE_CONTROL)
    }

    /// `<map>/api/capa/<slug>`: the layer's last good data, never waiting on its upstream. A worker sends the
    /// layer's shared document (`Handler::reply`); this copy of it is for a caller of `handle`.
    fn map_layer(&self, req: &Request) -> Result<Response, ApiError> {
        let document = self.map_document(req)?;
        Ok(Response::new(200, "application/json", document.body().to_vec()).header("Cache-Control", MAP_CACHE_CONTROL))
    }

    /// A map layer's document, rendered at most once a second and shared by its readers (issue 33).
    fn map_document(&self, req: &Request) -> Result<Arc<Prepared>, ApiError> {
        let Some(map) = &self.map else { return Err(ApiError::not_found(req.path())) };
        let slug = req.path().rsplit('/').next().unwrap_or("");
        map.layer_document(slug).ok_or_else(|| {
            ApiError::new(404, "layer_unknown", format!("there is no layer {slug:?}"))
                .detail("valid_slugs", map.slugs())
        })
    }

    /// A core endpoint: the API key first, then the document (never cached by intermediaries).
    fn core(&self, req: &Request, document: impl Fn(&App) -> Value) -> Result<Response, ApiError> {
        let client = crate::http::client_addr::key(req.client.ip);
        self.api_keys.check(req.header("x-wallet"), client, std::time::Instant::now())?;
        Ok(Response::json(200, &document(self)).header("Cache-Control", "no-store"))
    }

    fn core_state(&self) -> Value {
        let s = &self.stats;
        let rejected: serde_json::Map<String, Value> =
            crate::http::Reject::ALL.iter().map(|r| (r.label().to_owned(), Value::from(s.rejected(*r)))).collect();
        let notary = self.notary.as_ref().map(|n| {
            let head = n.head();
            json!({
                "url": n.issuer(),
                "price_atomic": self.config.notary_price_atomic.to_string(),
                "receipts": head.receipts,
                "head": head.head,
                "last_ts": head.last_ts,
            })
        });
        use std::sync::atomic::Ordering::Relaxed;
        json!({
            "version": env!("CARGO_PKG_VERSION"),
            "generated_at": crate::clock::rfc3339_ms(self.clock.now_unix_ms()),
            "uptime_s": self.started.elapsed().as_secs(),
            "mode": if self.gate.terms().is_some() { "paid" } else { "free" },
            "search": self.engine.state(),
            "payments": self.gate.state(),
            "notary": notary,
            "map": self.map.as_ref().map(|m| m.summary()),
            "server": {
                "workers": s.workers.load(Relaxed),
                "queue_capacity": s.queue_capacity.load(Relaxed),
                "queued": s.queued.load(Relaxed),
                "in_flight": s.in_flight.load(Relaxed),
                "connections_open": s.connections_open.load(Relaxed),
                "connections_accepted": s.connections_accepted.load(Relaxed),
                "accept_errors": s.accept_errors.load(Relaxed),
                "rejected": rejected,
            },
            "requests": self.metrics.by_route(),
            "mesh": { "agents": self.mesh.agents(), "agents_max": crate::mesh::AGENTS_MAX },
        })
    }

    fn meshgraph(&self) -> Value {
        let base = &self.config.public_url;
        let service_id = |s: &str| format!("service:{s}");
        let mut nodes = vec![
            json!({ "id": service_id("search"), "kind": "service", "label": "websearchd search", "url": format!("{base}/service") }),
        ];
        if let Some(n) = &self.notary {
            nodes.push(json!({ "id": service_id("notary"), "kind": "service", "label": "websearchd notary", "url": format!("{}/service", n.issuer()) }));
        }
        let mut edges = Vec::new();
        let state = self.engine.state();
        for src in state.get("sources").and_then(Value::as_array).into_iter().flatten() {
            let endpoint = src.get("endpoint").and_then(Value::as_str).unwrap_or("");
            let id = format!("source:{endpoint}");
            nodes.push(json!({
                "id": id,
                "kind": "source",
                "label": src.get("name"),
                "url": endpoint,
                "breaker": src.get("breaker"),
            }));
            let n = |k: &str| src.get(k).and_then(Value::as_u64).unwrap_or(0);
            let last = [src.get("last_success"), src.get("last_failure")]
                .into_iter()
                .flatten()
                .filter_map(Value::as_str)
                .max()
                .map(str::to_owned);
            edges.push(json!({
                "from": service_id("search"),
                "to": id,
                "kind": "searches",
                "count": n("ok") + n("empty") + n("failed"),
                "last_at": last,
                "failures": n("failed"),
            }));
        }
        let payments = self.gate.state();
        if self.gate.terms().is_some() {
            let f = |key: &str| payments.pointer(&format!("/facilitator/{key}")).cloned().unwrap_or(Value::Null);
            let url = f("url").as_str().unwrap_or("").to_owned();
            let id = format!("facilitator:{url}");
            nodes.push(json!({ "id": id, "kind": "facilitator", "label": "x402 facilitator", "url": url }));
            let last = f("last_call_ms").as_u64().filter(|ms| *ms > 0).map(crate::clock::rfc3339);
            // One edge for every paid operation: the facilitator's counters are not kept per operation.
            let operations: Vec<&str> =
                ["search", "notary"].into_iter().filter(|s| *s == "search" || self.notary.is_some()).collect();
            edges.push(json!({
                "from": service_id("search"),
                "to": id,
                "kind": "verifies_and_settles",
                "count": f("calls"),
                "last_at": last,
                "failures": f("failures"),
                "operations": operations,
            }));
        }
        if let Some(map) = &self.map {
            let url = format!("{base}{}", self.config.map_path.as_deref().unwrap_or("/map"));
            nodes.push(json!({ "id": service_id("map"), "kind": "service", "label": "websearchd map", "url": url }));
            for (layer, source, url, health) in map.feed_health() {
                let id = format!("feed:{source}");
                if !nodes.iter().any(|n| n.get("id").and_then(Value::as_str) == Some(id.as_str())) {
                    nodes.push(json!({ "id": id, "kind": "map_feed", "label": source, "url": url }));
                }
                edges.push(json!({
                    "from": service_id("map"),
                    "to": id,
                    "kind": "polls",
                    "layer": layer,
                    "count": health.0 + health.1,
                    "last_at": health.2.map(crate::clock::rfc3339),
                    "failures": health.1,
                }));
            }
        }
        let (agent_nodes, agent_edges) = self.mesh.agent_part(service_id);
        nodes.extend(agent_nodes);
        edges.extend(agent_edges);
        json!({
            "generated_at": crate::clock::rfc3339_ms(self.clock.now_unix_ms()),
            "nodes": nodes,
            "edges": edges,
            "agents_max": crate::mesh::AGENTS_MAX,
        })
    }
}

impl McpDoor {
    fn new(config: &Config) -> McpDoor {
        let resource = |tool: &str, what: &str| Resource {
            url: format!("{}/mcp", config.public_url),
            description: format!("MCP tool {tool}: {what}, signed with Ed25519."),
            mime_type: "application/json".into(),
            bazaar: None,
            price: None,
        };
        let resources = vec![
            ("web_search", resource("web_search", "ranked results from live public sources")),
            ("extract_page", resource("extract_page", "one public page's main content as markdown")),
        ];
        let own = crate::config::base_origin(&config.public_url);
        let origins = crate::mcp::http::Origins::new(own.into_iter().chain(config.mcp_origins.iter().cloned()));
        McpDoor { definitions: crate::mcp::tools::definitions(), resources, origins }
    }
}

/// Who is calling, for the mesh graph: a verified payer's address, or an `X-WALLET` address hint on a free call
/// (never a key, never payment).
fn agent_of(req: &Request, admission: &Admission) -> Option<(String, bool)> {
    match admission {
        Admission::Paid(p) => Some((p.payer(), true)),
        Admission::Free(_) => req.header("x-wallet").and_then(crate::mesh::agent_address).map(|a| (a, false)),
    }
}

/// A refusal of the gate as the Tavily door says it: 401 with how to get access (a refused payment's code and words
/// when one was refused), or the error it is.
fn tavily_refusal(refusal: Refusal, key_refused: bool) -> ApiError {
    match refusal {
        Refusal::Challenge { error: Some((code, words)), .. } => {
            ApiError::new(401, code, format!("the x402 payment was refused: {words}"))
                .header("WWW-Authenticate", BEARER)
        }
        Refusal::Challenge { error: None, .. } => {
            let who = if key_refused {
                "the API key is not one this instance's operator issued"
            } else {
                "this instance is paid"
            };
            ApiError::new(
                401,
                if key_refused { "api_key_invalid" } else { "payment_required" },
                format!(
                    "{who}: send an API key its operator made with `websearchd apikey new --agent` as the Tavily API key, or \
                     pay for the call through x402 (an X-PAYMENT or PAYMENT-SIGNATURE header; the terms are in \
                     detail.x402)"
                ),
            )
            .header("WWW-Authenticate", BEARER)
        }
        Refusal::Error(e) => e,
    }
}

/// The Tavily door's challenge to a caller without access (RFC 6750).
const BEARER: &str = "Bearer realm=\"websearchd\"";

/// Who a call's pages are extracted for on the pool: its client's address key.
fn caller_of(req: &Request) -> crate::page::Caller {
    crate::http::client_addr::key(req.client.ip)
}

fn signed_object(req: &Request) -> Result<SignedObject, ApiError> {
    match req.header("x-signed-object") {
        None => Ok(SignedObject::Raw),
        Some(name) => SignedObject::from_name(name)
            .ok_or_else(|| ApiError::bad_request("signed_object_unknown", "X-Signed-Object must be raw or sha256-hex")),
    }
}

/// The second listener's handler: the notary and `/health`; everything else is not found there.
struct NotaryOnly(Arc<App>);

impl Handler for NotaryOnly {
    fn handle(&self, request: &Request) -> Response {
        let route = self.0.route_of(request.path());
        let result = if route.on_notary_listener() {
            self.0.dispatch(route, request)
        } else {
            Err(ApiError::not_found(request.path()))
        };
        cors(result.unwrap_or_else(ApiError::into_response))
    }

    fn completed(&self, request: &Request, status: u16, elapsed: Duration) {
        self.0.completed(request, status, elapsed);
    }
}

/// Whether a conditional GET names the document's current `ETag`.
fn fresh(req: &Request, etag: &str) -> bool {
    req.header("if-none-match").is_some_and(|tags| tags.split(',').any(|t| t.trim() == etag || t.trim() == "*"))
}

/// A discovery document's answer, or its `304 Not Modified` when the client's copy is `fresh`.
fn document_response(doc: &crate::discovery::Document, fresh: bool) -> Response {
    let response = if fresh {
        Response::new(304, doc.content_type, Vec::new())
    } else {
        Response::new(200, doc.content_type, doc.body.clone())
    };
    response.header("ETag", doc.etag.clone()).header("Cache-Control", "public, max-age=300")
}

/// The answer to a CORS preflight.
fn preflight(methods: &str) -> Response {
    Response::new(204, "text/plain", Vec::new())
        .header("Access-Control-Allow-Methods", methods)
        .header("Access-Control-Allow-Headers", CORS_ALLOW_HEADERS)
        .header("Access-Control-Max-Age", "86400")
}

/// A bazaar discovery extension for a POST with a JSON body: an example call and the JSON Schema of the call. It
/// travels in every 402's `PAYMENT-REQUIRED` header and clients copy it into their payment, so it is kept small: no
/// example answer nor answer schema (docs/api.md, `llms.txt` and the catalogue describe the answers).
fn bazaar(example_body: Value, body_schema: Value) -> Value {
    json!({
        "info": { "input": { "type": "http", "method": "POST", "bodyType": "json", "body": example_body } },
        "schema": {
            "$schema": "https://json-schema.org/draft/2020-12/schema",
            "type": "object",
            "properties": {
                "input": {
                    "type": "object",
                    "properties": {
                        "type": { "const": "http" },
                        "method": { "enum": ["POST"] },
                        "body": body_schema,
                    },
                    "required": ["type", "method", "body"],
                },
            },
            "required": ["input"],
        },
    })
}

/// The bazaar discovery extension of the notary.
fn notary_bazaar() -> Value {
    bazaar(
        json!({ "op": "notarize", "hash": "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08" }),
        json!({
            "type": "object",
            "properties": {
                "op": { "enum": ["notarize"] },
                "hash": { "type": "string", "pattern": "^[0-9a-f]{64}$" },
            },
            "required": ["op", "hash"],
        }),
    )
}

/// The bazaar discovery extension of `/extract`.
fn reader_bazaar() -> Value {
    bazaar(
        json!({ "urls": ["https://example.com/"], "query": "pricing" }),
        json!({
            "type": "object",
            "properties": {
                "urls": { "type": "array", "items": { "type": "string" }, "minItems": 1, "maxItems": crate::reader::URLS_MAX },
                "query": { "type": "string", "maxLength": QUERY_CHARS_MAX },
                "tokens": { "type": "integer" },
            },
            "required": ["urls"],
        }),
    )
}

/// The bazaar discovery extension of `/service`.
fn search_bazaar() -> Value {
    bazaar(
        json!({ "query": "rust async runtime", "max_results": 5 }),
        json!({
            "type": "object",
            "properties": {
                "query": { "type": "string", "maxLength": QUERY_CHARS_MAX },
                "max_results": { "type": "integer", "maximum": MAX_RESULTS_MAX },
                // The PAYMENT-REQUIRED header carries this schema (its headers kept under 2 KB): the controls agents
                // ask most; all of them, with their values and bounds, are in /openapi.json.
                "extract": { "type": ["boolean", "integer"] },
                "time_range": { "type": "string" },
                "include_domains": { "type": "array" },
            },
            "required": ["query"],
        }),
    )
}

impl Handler for App {
    fn handle(&self, request: &Request) -> Response {
        // The Tavily door's paths answer errors in Tavily's shape, whichever part refused (404, 405).
        let error = if request.path().starts_with("/tavily/") && self.config.tavily {
            crate::tavily::error_response
        } else {
            ApiError::into_response
        };
        let answered = self.browser_guard(self.route_of(request.path()), request).and_then(|()| self.route(request));
        cors(answered.unwrap_or_else(error))
    }

    /// A map layer's document is sent from its shared bytes; the rest as `handle` answers it.
    fn reply(&self, request: &Request) -> Reply {
        let layer = matches!(self.route_of(request.path()), Route::MapLayer);
        if layer && matches!(request.method(), "GET" | "HEAD") {
            if let Ok(document) = self.map_document(request) {
                return Reply::Prepared(document);
            }
        }
        Reply::Built(self.handle(request))
    }

    /// Answered without a worker: `/health` (it reads counters and the breakers' in-memory state, locks that are
    /// never held across I/O, and must answer while every worker waits on an upstream), and what `Fixed` holds (the
    /// documents, the map page, the preflights, the challenge to an unpaid call that no free rule can let through).
    /// A call with a payment, or one a free rule might admit, goes to a worker.
    fn handle_inline(&self, request: &Request) -> Option<Reply> {
        let route = self.route_of(request.path());
        if matches!(route, Route::Health) && matches!(request.method(), "GET" | "HEAD") {
            return Some(Reply::Prepared(self.health_prepared()));
        }
        // A request the browser guard refuses is a worker's to answer (with its 403).
        if self.browser_guard(route, request).is_err() {
            return None;
        }
        self.fixed_reply(route, request).map(Reply::Prepared)
    }

    fn completed(&self, request: &Request, status: u16, elapsed: Duration) {
        self.metrics.record(self.route_of(request.path()).label(), status, elapsed);
    }
}

fn health_response(body: Vec<u8>) -> Response {
    Response::new(200, "application/json", body).header("Cache-Control", "no-store")
}

fn cors(response: Response) -> Response {
    response.header("Access-Control-Allow-Origin", "*").header("Access-Control-Expose-Headers", CORS_EXPOSE)
}
