//! The map page: `GET <map>/` answers one small HTML page and `<map>/map.js` its script, both embedded in the binary
//! (no build step, no framework). The page draws the layers of `<map>/mapstate` and `<map>/api/capa/<slug>` on a
//! Leaflet map. Leaflet and the base tiles load from configurable URLs (a public CDN and OpenStreetMap's tiles by
//! default); Leaflet is pinned with Subresource Integrity, so an operator's own copy must be the same bytes. The page
//! is sent with a strict Content-Security-Policy: scripts and styles from this service and the assets' folder only
//! (our one inline `<style>` by its hash, no inline script), images from the tile origin, connections to this
//! service only.
//!
//! What it leaves to others: the data and its freshness (`map`), routing and headers common to every answer (`app`).

use sha2::{Digest, Sha256};

/// The page and its script, deflated by `build.rs` (about 5.1 KB in the binary instead of 12.7 KB).
static PAGE_HTML_DEFLATED: &[u8] = crate::embedded::deflated!("src/map/page.html");
static PAGE_JS_DEFLATED: &[u8] = crate::embedded::deflated!("src/map/page.js");

/// What the page costs the binary (HTML and script together), and what a phone downloads from us besides Leaflet.
pub const PAGE_BYTES_MAX: usize = 24 * 1_024;

/// Leaflet's version, and the SHA-256 (base64, as SRI writes it) of `dist/leaflet.js` and `dist/leaflet.css` in the
/// npm package `leaflet@1.9.4`: the same bytes the CDNs serve for that version (checked against the npm copy by
/// `tests/map_page.rs`, whose browser refuses a file that differs).
pub const LEAFLET_VERSION: &str = "1.9.4";
pub const LEAFLET_JS_SRI: &str = "sha256-20nQCchB9co0qIjJZRGuk2/Z9VM+kNiyxNV1lvTlZBo=";
pub const LEAFLET_CSS_SRI: &str = "sha256-p4NxAoJBhIIN+hmNHrzRCf9tD/miZyoHS5obTRR9BMY=";

/// Where Leaflet's `leaflet.js` and `leaflet.css` are fetched from, unless configured.
pub const ASSETS_URL_DEFAULT: &str = "https://unpkg.com/leaflet@1.9.4/dist";
/// The base map's tiles, unless configured (OpenStreetMap's tile usage policy allows light use with attribution).
pub const TILES_URL_DEFAULT: &str = "https://tile.openstreetmap.org/{z}/{x}/{y}.png";
const TILES_ATTRIBUTION_OSM: &str = "&copy; OpenStreetMap contributors";
/// The longest asset or tile URL accepted (it goes into a header and the page).
const URL_BYTES_MAX: usize = 512;

/// The page as served, built once at start.
#[derive(Debug, Clone)]
pub struct Page {
    html: String,
    script: String,
    csp: String,
}

/// The address of the assets and of the tiles (`None`: no base map).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Settings {
    pub assets_url: String,
    pub tiles_url: Option<String>,
}

impl Default for Settings {
    fn default() -> Settings {
        Settings { assets_url: ASSETS_URL_DEFAULT.into(), tiles_url: Some(TILES_URL_DEFAULT.into()) }
    }
}

/// An asset base URL as configured: http(s), a host, a path without query or fragment; the trailing slash dropped.
/// Only characters that need no escaping in HTML attributes and CSP source lists are taken.
pub fn assets_url(raw: &str) -> Option<String> {
    let url = raw.trim().trim_end_matches('/');
    (origin(url).is_some() && url.bytes().all(|b| plain(b) && !b"{}?&".contains(&b))).then(|| url.to_owned())
}

/// A tile URL template: http(s), with `{z}`, `{x}` and `{y}` (no `{s}`: the CSP names one origin).
pub fn tiles_url(raw: &str) -> Option<String> {
    let url = raw.trim();
    let placeholders = ["{z}", "{x}", "{y}"].iter().all(|p| url.contains(p));
    let braces_known = url.replace("{z}", "").replace("{x}", "").replace("{y}", "").replace("{r}", "");
    (origin(url).is_some() && placeholders && url.bytes().all(plain) && !braces_known.contains(['{', '}']))
        .then(|| url.to_owned())
}

/// Bytes allowed in the URLs: letters, digits and the URL punctuation that is inert in HTML attributes and CSP.
fn plain(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b"-._~/:@%+=&?{}!$()*[]".contains(&b)
}

/// `scheme://host[:port]` of an http(s) URL, or `None`.
fn origin(url: &str) -> Option<&str> {
    if url.len() > URL_BYTES_MAX || url.contains('#') {
        return None;
    }
    let rest = url.strip_prefix("https://").or_else(|| url.strip_prefix("http://"))?;
    let host_len = rest.find(['/', '?']).unwrap_or(rest.len());
    let host = &rest[..host_len];
    let valid = !host.is_empty()
        && host.bytes().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'-' | b':' | b'[' | b']'))
        && !host.starts_with([':', '.']);
    valid.then(|| &url[..url.len() - rest.len() + host_len])
}

impl Page {
    pub fn new(settings: &Settings) -> Page {
        let assets = settings.assets_url.as_str();
        let (tiles, attribution) = match &settings.tiles_url {
            Some(t) if t == TILES_URL_DEFAULT => (t.as_str(), TILES_ATTRIBUTION_OSM),
            Some(t) => (t.as_str(), ""),
            None => ("", ""),
        };
        let html = crate::embedded::inflate(PAGE_HTML_DEFLATED)
            .replace("{{ASSETS}}", assets)
            .replace("{{LEAFLET_JS_SRI}}", LEAFLET_JS_SRI)
            .replace("{{LEAFLET_CSS_SRI}}", LEAFLET_CSS_SRI)
            // `&` is the one URL byte taken that HTML reads specially (`?a=1&amp;b` would lose its `amp;`).
            .replace("{{TILES}}", &tiles.replace('&', "&amp;"))
            .replace("{{TILES_ATTRIBUTION}}", attribution);
        // The assets by their folder, not their origin: a public CDN serves every package's scripts from one origin.
        let asset_dir = format!("{assets}/");
        let tile_origin = settings.tiles_url.as_deref().and_then(origin).unwrap_or("");
        let style = style_hash(&html);
        let csp = format!(
            "default-src 'none'; script-src 'self' {asset_dir}; style-src 'self' {asset_dir} '{style}'; \
             img-src 'self' {tile_origin} {asset_dir}; connect-src 'self'; base-uri 'none'; form-action 'none'; \
             frame-ancestors 'none'"
        );
        Page { html, script: crate::embedded::inflate(PAGE_JS_DEFLATED), csp }
    }

    pub fn html(&self) -> &str {
        &self.html
    }

    pub fn script(&self) -> &str {
        &self.script
    }

    /// The Content-Security-Policy the page is served with.
    pub fn csp(&self) -> &str {
        &self.csp
    }
}

/// `sha256-<base64>` of the page's one inline `<style>` element's text, for the CSP.
fn style_hash(html: &str) -> String {
    let text =
        html.split_once("<style>").and_then(|(_, rest)| rest.split_once("</style>")).map_or("", |(style, _)| style);
    format!("sha256-{}", crate::codec::base64_encode(&Sha256::digest(text.as_bytes())))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_page_keeps_to_its_size_budget_and_inflates_to_its_files() {
        let (html, script) = (include_str!("page.html"), include_str!("page.js"));
        let size = html.len() + script.len();
        assert!(size <= PAGE_BYTES_MAX, "the map page is {size} bytes, over its budget of {PAGE_BYTES_MAX}");
        assert_eq!(crate::embedded::inflate(PAGE_HTML_DEFLATED), html);
        assert_eq!(Page::new(&Settings::default()).script(), script);
        assert!(PAGE_HTML_DEFLATED.len() + PAGE_JS_DEFLATED.len() < size / 2);
    }

    #[test]
    fn the_page_names_the_assets_with_their_hashes_and_the_csp_their_origins() {
        let page = Page::new(&Settings::default());
        assert!(page.html().contains(&format!(
            "src=\"https://unpkg.com/leaflet@1.9.4/dist/leaflet.js\" integrity=\"{LEAFLET_JS_SRI}\""
        )));
        assert!(page.html().contains(&format!("integrity=\"{LEAFLET_CSS_SRI}\"")));
        assert!(!page.html().contains("{{"), "every placeholder is filled");
        assert!(!page.html().contains("<script>"), "no inline script");
        let csp = page.csp();
        assert!(csp.contains("script-src 'self' https://unpkg.com/leaflet@1.9.4/dist/;"), "{csp}");
        assert!(csp.contains("style-src 'self' https://unpkg.com/leaflet@1.9.4/dist/ 'sha256-"), "{csp}");
        assert!(csp.contains("img-src 'self' https://tile.openstreetmap.org https://unpkg.com/leaflet@1.9.4/dist/;"));
        assert!(csp.contains("connect-src 'self';"), "{csp}");
        assert!(!csp.contains("unsafe"), "{csp}");
        // The style's hash is the one of the text between the tags.
        let style = page.html().split_once("<style>").unwrap().1.split_once("</style>").unwrap().0;
        assert!(csp.contains(&format!("'sha256-{}'", crate::codec::base64_encode(&Sha256::digest(style.as_bytes())))));

        let own = Settings {
            assets_url: "http://127.0.0.1:9000/vendor/leaflet".into(),
            tiles_url: Some("https://tiles.example.org:8443/osm/{z}/{x}/{y}.png".into()),
        };
        let page = Page::new(&own);
        assert!(page.html().contains("src=\"http://127.0.0.1:9000/vendor/leaflet/leaflet.js\""));
        assert!(page.csp().contains("script-src 'self' http://127.0.0.1:9000/vendor/leaflet/;"), "{}", page.csp());
        assert!(page
            .csp()
            .contains("img-src 'self' https://tiles.example.org:8443 http://127.0.0.1:9000/vendor/leaflet/;"));
        let keyed = Settings { tiles_url: Some("https://t.example/{z}/{x}/{y}.png?a=1&amp=2".into()), ..own.clone() };
        assert!(Page::new(&keyed).html().contains("data-tiles=\"https://t.example/{z}/{x}/{y}.png?a=1&amp;amp=2\""));
        let none = Page::new(&Settings { tiles_url: None, ..own });
        assert!(none.html().contains("data-tiles=\"\""));
    }

    #[test]
    fn urls_that_could_break_out_of_the_page_or_the_csp_are_refused() {
        assert_eq!(assets_url("https://cdn.example/leaflet/").as_deref(), Some("https://cdn.example/leaflet"));
        assert_eq!(assets_url("http://[::1]:8080/l").as_deref(), Some("http://[::1]:8080/l"));
        for bad in [
            "ftp://cdn.example/l",
            "https://",
            "https:///l",
            "https://cdn.example/l\"><script>",
            "https://cdn.example/l; script-src *",
            "https://cdn.example/l,x",
            "https://cdn.example/l#x",
            "https://cdn.exa mple/l",
            "https://cdn.example/{z}",
            "https://cdn.example/l?v=1",
            "//cdn.example/l",
        ] {
            assert_eq!(assets_url(bad), None, "{bad}");
        }
        assert!(tiles_url("https://tile.openstreetmap.org/{z}/{x}/{y}.png").is_some());
        assert!(tiles_url("https://t.example/{z}/{x}/{y}{r}.png?key=abc").is_some());
        for bad in [
            "https://{s}.tile.example/{z}/{x}/{y}.png",
            "https://t.example/{z}/{x}.png",
            "https://t.example/{z}/{x}/{y}.png'",
            "https://t.example/{z}/{x}/{y}.png<",
            "https://t.example/{z}/{x}/{y}.png;",
        ] {
            assert_eq!(tiles_url(bad), None, "{bad}");
        }
    }
}
