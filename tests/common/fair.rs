//! The starved-pool scenario of issue 41 (item 4), shared by tests/fair_pool.rs and benches/fair_pool.rs: a site
//! whose `/hang/N` pages never answer and whose `/fast` page answers at once, a server in its default configuration
//! behind a trusted proxy (so that callers can come from several addresses over loopback), hostile callers that ask
//! for five hanging pages each, and one more caller's fast page through each door.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)]

use std::time::{Duration, Instant};

use serde_json::{json, Value};

use super::upstream::{Answer, Upstream};
use super::{own_fixture, results_pointing_at, Server};

/// The address the hostile callers come from (through the trusted proxy's header), and the fifth caller's.
pub const HOSTILE: &str = "192.0.2.1";
pub const OTHER: &str = "198.51.100.7";

/// The MCP version the server speaks on HTTP.
const MCP_VERSION: &str = "2026-07-28";

/// The site, and a search source whose results point at `/hang/1`..`/hang/5` (the `/service` callers' `extract: 5`).
pub struct World {
    pub site: Upstream,
    pub source: Upstream,
    pub server: Server,
}

pub fn world(extra: &[(&str, &str)]) -> World {
    let site = Upstream::start(|seen| match seen.path() {
        "/fast" => Answer::html(200, own_fixture("extract_article.html")),
        _ => Answer::Hang(Duration::from_secs(60)),
    });
    // DuckDuckGo's recorded page, its top result pointed at the fast page for a search of "fast", else at a
    // hanging one.
    let (fast, hanging) = (results_pointing_at(&site.url("/fast")), results_pointing_at(&site.url("/hang/search")));
    let source = Upstream::start(move |seen| {
        let asked_fast = seen.param("q").is_some_and(|q| q.contains("fast"));
        Answer::html(200, if asked_fast { fast.clone() } else { hanging.clone() })
    });
    let mut env: Vec<(String, String)> = super::sources_env(&source, "ddg_html");
    env.push(("WEBSEARCHD_FETCH_ALLOW".into(), format!("127.0.0.1:{}", site.addr.port())));
    env.push(("WEBSEARCHD_TRUSTED_PROXIES".into(), "127.0.0.1".into()));
    env.extend(extra.iter().map(|(k, v)| (k.to_string(), v.to_string())));
    let server = Server::start(&super::pairs(&env));
    World { site, source, server }
}

impl World {
    /// A call from `client` (the header the trusted proxy writes).
    pub fn post(&self, client: &str, path: &str, body: &Value) -> super::Reply {
        let headers = [("Content-Type", "application/json"), ("X-Forwarded-For", client)];
        self.server.request("POST", path, &headers, body.to_string().as_bytes())
    }

    /// `callers` hostile calls in the background, each asking for five hanging pages through the reader door, from
    /// `HOSTILE` or (`spread`) each from an address of its own; back once the site has been asked `held` of them.
    pub fn starve(&self, callers: usize, held: usize, spread: bool) -> Vec<std::thread::JoinHandle<()>> {
        let addr = self.server.addr;
        let urls: Vec<String> = (1..=5).map(|i| self.site.url(&format!("/hang/{i}"))).collect();
        let calls = (0..callers)
            .map(|i| {
                let body = json!({ "urls": urls }).to_string();
                let client = if spread { format!("192.0.2.{}", 10 + i) } else { HOSTILE.to_owned() };
                std::thread::spawn(move || {
                    let headers = [("Content-Type", "application/json"), ("X-Forwarded-For", client.as_str())];
                    // The answer, if any: the server may be gone first.
                    let Ok(mut stream) = std::net::TcpStream::connect(addr) else { return };
                    super::write_request(&mut stream, "POST", "/extract", &headers, body.as_bytes());
                    let _ = super::read_reply(&mut stream);
                })
            })
            .collect();
        let started = Instant::now();
        while self.hanging() < held && started.elapsed() < Duration::from_secs(10) {
            std::thread::sleep(Duration::from_millis(20));
        }
        calls
    }

    /// Hanging pages asked of the site so far.
    pub fn hanging(&self) -> usize {
        self.site.seen().iter().filter(|s| s.path().starts_with("/hang/")).count()
    }

    /// The fifth caller's fast page through `door` (`extract`, `service`, `mcp`): its status as the door reports it
    /// (`ok`, `timeout`, ...) and how long the call took.
    pub fn fast_page(&self, client: &str, door: &str) -> (String, Duration) {
        let fast = self.site.url("/fast");
        let started = Instant::now();
        let status = match door {
            "extract" => {
                let r = self.post(client, "/extract", &json!({ "urls": [fast] }));
                r.json()["pages"][0]["status"].as_str().unwrap_or("?").to_owned()
            }
            "mcp" => {
                // A 2026-07-28 call as a conforming client sends it: the envelope in `_meta`, the headers mirroring
                // the body.
                let meta = json!({
                    "io.modelcontextprotocol/protocolVersion": MCP_VERSION,
                    "io.modelcontextprotocol/clientCapabilities": {},
                    "io.modelcontextprotocol/clientInfo": { "name": "fair", "version": "1" },
                });
                let call = json!({ "jsonrpc": "2.0", "id": 1, "method": "tools/call",
                                   "params": { "name": "extract_page", "arguments": { "url": fast }, "_meta": meta } });
                let headers = [
                    ("Content-Type", "application/json"),
                    ("MCP-Protocol-Version", MCP_VERSION),
                    ("Mcp-Method", "tools/call"),
                    ("Mcp-Name", "extract_page"),
                    ("X-Forwarded-For", client),
                ];
                let r = self.server.request("POST", "/mcp", &headers, call.to_string().as_bytes());
                let text = r.text();
                if text.contains("\"isError\":true") || r.status != 200 {
                    if text.contains("timeout") { "timeout" } else { "failed" }.to_owned()
                } else {
                    "ok".to_owned()
                }
            }
            _ => {
                // A search whose top result is the fast page.
                let r = self.post(client, "/service", &json!({ "query": "fast page", "extract": 1 }));
                r.json()["extract"]["status"].as_str().unwrap_or("?").to_owned()
            }
        };
        (status, started.elapsed())
    }
}
