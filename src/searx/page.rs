//! The search page for people: `GET /` without `q` is a home page with one search box; a search with `format=html`
//! (or none) answers a results page: each result (title linked, snippet, source, date where known), the controls
//! (time range, region, safe search) as a plain GET form, which sources answered, failed or were skipped and why,
//! and a link to the map when the map is on. Plain HTML and CSS: no script at all, a phone layout, and a strict
//! Content-Security-Policy (`default-src 'none'`; the one inline `<style>` by its hash). The stylesheet is embedded
//! deflated (`embedded`); the HTML is written here, every text it shows escaped. `/opensearch.xml` lets a browser
//! add the instance as a search engine.

use serde_json::Value;
use sha2::{Digest, Sha256};

use super::Params;
use crate::error::ApiError;
use crate::http::Response;
use crate::search::sources::{xml_char, Kind};

static PAGE_CSS_DEFLATED: &[u8] = crate::embedded::deflated!("src/searx/page.css");

/// What the page costs: its stylesheet and the home page as served (a results page adds its results).
pub const PAGE_BYTES_MAX: usize = 8 * 1_024;

/// The page's parts, made once at start.
#[derive(Debug, Clone)]
pub struct Page {
    css: String,
    csp: String,
    /// The map page's path, when the map is on.
    map: Option<String>,
    /// The instance's public URL (for `/opensearch.xml`).
    public_url: String,
    /// The configured sources' names, for the home page and the door (fixed at start).
    sources: Vec<String>,
    /// The names a call's `engines` may pick a source by: each configured source's name and its provider's.
    selectable: Vec<&'static str>,
    /// Whether payments are on (the home page says who may search).
    paid: bool,
}

/// Time ranges, regions and safe search levels the form offers (value, label).
const TIME_RANGES: [(&str, &str); 5] =
    [("", "any time"), ("day", "past day"), ("week", "past week"), ("month", "past month"), ("year", "past year")];
const LANGUAGES: [(&str, &str); 12] = [
    ("all", "all regions"),
    ("en-US", "English (US)"),
    ("en-GB", "English (UK)"),
    ("de-DE", "Deutsch"),
    ("fr-FR", "Français"),
    ("es-ES", "Español"),
    ("it-IT", "Italiano"),
    ("nl-NL", "Nederlands"),
    ("pt-BR", "Português (BR)"),
    ("pl-PL", "Polski"),
    ("sv-SE", "Svenska"),
    ("ja-JP", "日本語"),
];
const SAFESEARCH: [(&str, &str); 4] = [("", "default"), ("0", "off"), ("1", "moderate"), ("2", "strict")];

impl Page {
    pub fn new(map: Option<String>, public_url: &str, sources: Vec<String>, paid: bool) -> Page {
        let css = crate::embedded::inflate(PAGE_CSS_DEFLATED);
        let hash = crate::codec::base64_encode(&Sha256::digest(css.as_bytes()));
        let csp = format!(
            "default-src 'none'; style-src 'sha256-{hash}'; img-src data:; form-action 'self'; base-uri 'none'; \
             frame-ancestors 'none'"
        );
        let selectable = sources
            .iter()
            .filter_map(|n| Kind::ALL.iter().find(|k| k.name() == n.as_str()))
            .flat_map(|k| [k.name(), k.provider()])
            .collect();
        Page { css, csp, map, public_url: public_url.to_owned(), sources, selectable, paid }
    }

    /// The configured sources' names.
    pub fn sources(&self) -> &[String] {
        &self.sources
    }

    /// The names `engines` may name: each configured source's and its provider's.
    pub fn selectable(&self) -> &[&'static str] {
        &self.selectable
    }

    pub fn public_url(&self) -> &str {
        &self.public_url
    }

    pub fn csp(&self) -> &str {
        &self.csp
    }

    /// `GET /` without `q`.
    pub fn home(&self) -> Response {
        let mut body = self.form("", "all", "", "", true);
        body.push_str("<p class=\"meta\">Searches ");
        body.push_str(&escape(&self.sources.join(", ")));
        body.push_str(" and ranks their results; each search lists which sources answered.</p>");
        if self.paid {
            body.push_str(
                "<p class=\"meta\">This instance is paid per call (x402): the page serves the callers its free \
                 rules admit.</p>",
            );
        }
        self.respond(200, "websearchd", &body)
    }

    /// A results page: the form, the results, the sources' report.
    pub fn results(&self, params: &Params, answer: &Value) -> Response {
        let get = |k: &str| answer.get(k).and_then(Value::as_array).cloned().unwrap_or_default();
        let time = params.search.controls.time_range.map(|t| t.name()).unwrap_or("");
        let safe = params.search.controls.safesearch.map(|s| s.level().to_string()).unwrap_or_default();
        let language = if params.language.is_empty() { "all" } else { params.language.as_str() };
        let mut body = self.form(&params.search.query, language, time, &safe, false);
        let results = get("results");
        // "No results" only when a source said so (or answered a page past its last): a failure is shown as one.
        let answered = get("sources").iter().any(|s| matches!(s["status"].as_str(), Some("ok" | "empty")));
        if results.is_empty() && answered {
            body.push_str("<p>No results.</p>");
        } else if results.is_empty() {
            body.push_str(
                "<p class=\"error\">No source answered this search: each failed or could not be asked now (the \
                 sources below say why). Try again in a moment.</p>",
            );
        } else {
            let first = (params.pageno - 1) * super::RESULTS_PER_PAGE + 1;
            body.push_str(&format!("<ol class=\"results\" start=\"{first}\">"));
            for r in &results {
                result(&mut body, r);
            }
            body.push_str("</ol>");
        }
        if params.pageno < super::PAGES_MAX && results.len() == super::RESULTS_PER_PAGE {
            let mut next = params.clone();
            next.pageno += 1;
            body.push_str(&format!("<nav class=\"pages\"><a href=\"{}\">Next page</a></nav>", escape(&link(&next))));
        }
        sources(&mut body, &get("sources"), &get("unresponsive_engines"));
        let title = format!("{} - websearchd", params.search.query);
        self.respond(200, &title, &body)
    }

    /// A bad parameter, on the page.
    pub fn error(&self, pairs: &[(String, String)], e: &ApiError) -> Response {
        let q = pairs.iter().find(|(k, _)| k == "q").map(|(_, v)| v.as_str()).unwrap_or("");
        let mut body = self.form(q, "all", "", "", false);
        body.push_str(&format!(
            "<p class=\"error\">{} <span class=\"meta\">({})</span></p>",
            escape(&e.message),
            escape(e.code)
        ));
        self.respond(e.status, "websearchd", &body)
    }

    /// A caller the free rules do not admit on a paid instance.
    pub fn payment_required(&self) -> Response {
        let body = "<p>This instance is paid per call with x402 (USDC): a search costs a payment, which a browser \
                    page cannot make. Agents pay through <code>POST /service</code> or the MCP door <code>/mcp</code>; \
                    the terms are in <a href=\"/openapi.json\">/openapi.json</a> and <a href=\"/llms.txt\">/llms.txt</a>. \
                    The operator's own machine and trial calls may search here.</p>";
        self.respond(402, "Payment required - websearchd", body)
    }

    /// `/opensearch.xml`.
    pub fn opensearch(&self) -> Response {
        let base = escape(&self.public_url);
        let xml = format!(
            "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<OpenSearchDescription \
             xmlns=\"http://a9.com/-/spec/opensearch/1.1/\">\n<ShortName>websearchd</ShortName>\n<Description>Web \
             search through websearchd</Description>\n<InputEncoding>UTF-8</InputEncoding>\n<Url type=\"text/html\" \
             method=\"get\" template=\"{base}/search?q={{searchTerms}}\"/>\n<Url \
             type=\"application/opensearchdescription+xml\" rel=\"self\" \
             template=\"{base}/opensearch.xml\"/>\n</OpenSearchDescription>\n"
        );
        Response::new(200, "application/opensearchdescription+xml; charset=utf-8", xml)
            .header("Cache-Control", "public, max-age=300")
            .header("X-Content-Type-Options", "nosniff")
    }

    /// The search form: the query and the controls, sent by GET to `/search`.
    fn form(&self, q: &str, language: &str, time: &str, safe: &str, autofocus: bool) -> String {
        let mut out = String::with_capacity(2_048);
        out.push_str("<header><h1><a href=\"/\">websearchd</a></h1></header>");
        out.push_str("<form class=\"search\" method=\"get\" action=\"/search\" role=\"search\">");
        out.push_str(&format!(
            "<input type=\"search\" name=\"q\" value=\"{}\" aria-label=\"Search\" required maxlength=\"{}\"{}>",
            escape(q),
            crate::search::QUERY_CHARS_MAX,
            if autofocus { " autofocus" } else { "" }
        ));
        out.push_str("<button type=\"submit\">Search</button><div class=\"controls\">");
        select(&mut out, "time_range", "Time range", &TIME_RANGES, time);
        select(&mut out, "language", "Region", &LANGUAGES, language);
        select(&mut out, "safesearch", "Safe search", &SAFESEARCH, safe);
        out.push_str("</div></form>");
        out
    }

    fn respond(&self, status: u16, title: &str, body: &str) -> Response {
        let mut html = String::with_capacity(body.len() + self.css.len() + 1_024);
        html.push_str("<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\">");
        html.push_str("<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">");
        html.push_str("<meta name=\"referrer\" content=\"no-referrer\"><link rel=\"icon\" href=\"data:,\">");
        html.push_str(
            "<link rel=\"search\" type=\"application/opensearchdescription+xml\" title=\"websearchd\" \
             href=\"/opensearch.xml\">",
        );
        html.push_str(&format!("<title>{}</title><style>{}</style></head><body>", escape(title), self.css));
        html.push_str(body);
        html.push_str("<footer>websearchd");
        if let Some(map) = &self.map {
            html.push_str(&format!(" · <a href=\"{}/\">Map</a>", escape(map)));
        }
        html.push_str(" · <a href=\"/llms.txt\">For agents</a> · <a href=\"/health\">Sources' health</a></footer>");
        html.push_str("</body></html>\n");
        Response::new(status, "text/html; charset=utf-8", html)
            .header("Content-Security-Policy", self.csp.clone())
            .header("X-Content-Type-Options", "nosniff")
            .header("X-Frame-Options", "DENY")
            .header("Referrer-Policy", "no-referrer")
            .header("Cache-Control", "no-store")
    }
}

fn select(out: &mut String, name: &str, label: &str, options: &[(&str, &str)], chosen: &str) {
    out.push_str(&format!("<label>{label} <select name=\"{name}\">"));
    let known = options.iter().any(|(v, _)| v.eq_ignore_ascii_case(chosen));
    if !known {
        // A value the form does not list (a language from the address bar): kept, so the next search keeps it.
        out.push_str(&format!("<option value=\"{0}\" selected>{0}</option>", escape(chosen)));
    }
    for (value, text) in options {
        let selected = if value.eq_ignore_ascii_case(chosen) { " selected" } else { "" };
        out.push_str(&format!("<option value=\"{value}\"{selected}>{text}</option>"));
    }
    out.push_str("</select></label>");
}

/// One result: the title linked (http and https only), the address, source and date, the snippet.
fn result(out: &mut String, r: &Value) {
    let s = |k: &str| r.get(k).and_then(Value::as_str).unwrap_or("");
    let url = s("url");
    let title = if s("title").is_empty() { url } else { s("title") };
    out.push_str("<li><h2>");
    if url.starts_with("https://") || url.starts_with("http://") {
        out.push_str(&format!("<a href=\"{}\" rel=\"noreferrer noopener\">{}</a>", escape(url), escape(title)));
    } else {
        out.push_str(&escape(title));
    }
    out.push_str(&format!("</h2><div class=\"meta\">{} · {}", escape(url), escape(s("engine"))));
    if let Some(date) = r.get("publishedDate").and_then(Value::as_str) {
        let day = date.get(..10).unwrap_or(date);
        out.push_str(&format!(" · <time datetime=\"{0}\">{0}</time>", escape(day)));
    }
    out.push_str(&format!("</div><p class=\"snippet\">{}</p></li>", escape(s("content"))));
}

/// The sources' report: each source, what it did, and why when it did not answer.
fn sources(out: &mut String, sources: &[Value], unresponsive: &[Value]) {
    out.push_str("<section class=\"sources\"><h2>Sources</h2><table><thead><tr><th>Source</th><th>State</th>");
    out.push_str("<th>Why</th></tr></thead><tbody>");
    for s in sources {
        let field = |k: &str| s.get(k).and_then(Value::as_str).unwrap_or("");
        let status = field("status");
        let (state, why) = match status {
            "ok" => {
                let n = s.get("results").and_then(Value::as_u64).unwrap_or(0);
                ("answered".to_owned(), format!("{n} results"))
            }
            "empty" => ("answered".to_owned(), "no results".to_owned()),
            other => {
                let mut why = field("error").to_owned();
                if !field("control").is_empty() {
                    why.push_str(&format!(" ({})", field("control")));
                }
                if !field("detail").is_empty() {
                    why.push_str(&format!(": {}", field("detail")));
                }
                (other.to_owned(), why)
            }
        };
        let page = s.get("page").and_then(Value::as_u64).map(|p| format!(" (page {p})")).unwrap_or_default();
        out.push_str(&format!(
            "<tr class=\"{}\"><td>{}{}</td><td>{}</td><td>{}</td></tr>",
            escape(status),
            escape(field("name")),
            escape(&page),
            escape(&state),
            escape(&why)
        ));
    }
    if sources.is_empty() {
        // No search was made (a category not served, a page past the last): the reasons alone.
        for pair in unresponsive {
            let at = |i: usize| pair.get(i).and_then(Value::as_str).unwrap_or("");
            out.push_str(&format!(
                "<tr class=\"skipped\"><td>{}</td><td>skipped</td><td>{}</td></tr>",
                escape(at(0)),
                escape(at(1))
            ));
        }
    }
    out.push_str("</tbody></table></section>");
}

/// The page's address for `params` (the next page's link).
fn link(params: &Params) -> String {
    use crate::search::url::form_encode;
    let mut url = format!("/search?q={}&pageno={}", form_encode(&params.search.query), params.pageno);
    if let Some(t) = params.search.controls.time_range {
        url.push_str(&format!("&time_range={}", t.name()));
    }
    if !params.language.is_empty() {
        url.push_str(&format!("&language={}", form_encode(&params.language)));
    }
    if let Some(s) = params.search.controls.safesearch {
        url.push_str(&format!("&safesearch={}", s.level()));
    }
    if !params.engines.is_empty() {
        url.push_str(&format!("&engines={}", form_encode(&params.engines.join(","))));
    }
    url
}

/// Text for HTML (and the RSS's XML) text and attribute values; a character XML does not allow is left out (the
/// sources' text is cleaned as it is read, `sources::xml_text`: this is the writers' own guard, for the query too).
pub fn escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            c if !xml_char(c) => {}
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}
