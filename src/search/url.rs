//! URL handling for results: unwrapping DuckDuckGo's and Bing's redirect links, the host, and the normal form used
//! to deduplicate. Pure functions on strings; no URL crate (it would pull in IDNA tables for what is a few splits).

/// Longest result URL kept, in bytes (`extract` takes URLs as long); a longer one is dropped, since a cut URL leads
/// nowhere.
pub const RESULT_URL_BYTES_MAX: usize = 4_096;

/// `application/x-www-form-urlencoded` encoding of a value: unreserved characters stay, space becomes `+`, the rest
/// is `%XX` per UTF-8 byte.
pub fn form_encode(s: &str) -> String {
    let mut out = String::with_capacity(s.len() * 3);
    for b in s.bytes() {
        match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'*' => out.push(char::from(b)),
            b' ' => out.push('+'),
            _ => out.push_str(&format!("%{b:02X}")),
        }
    }
    out
}

/// The value of a query parameter (raw, still percent-encoded).
pub fn query_param<'a>(url: &'a str, name: &str) -> Option<&'a str> {
    let query = url.split_once('?')?.1;
    let query = query.split('#').next().unwrap_or(query);
    query.split('&').find_map(|pair| match pair.split_once('=') {
        Some((k, v)) if k == name => Some(v),
        _ => None,
    })
}

/// Turns a result link into the destination URL: DuckDuckGo's `duckduckgo.com/l/?uddg=<encoded>` wrapper is
/// unwrapped (decoded once), Bing's `bing.com/ck/a?...&u=a1<base64url>` too, protocol-relative links get `https:`.
/// Anything that is not then an absolute http(s) URL of at most `RESULT_URL_BYTES_MAX` is `None`, a root-relative
/// link too (whose site it is on is the caller's to say: see `sources::organic_for`).
pub fn unwrap_result_link(href: &str) -> Option<String> {
    let href = href.trim();
    let absolute = if let Some(rest) = href.strip_prefix("//") { format!("https://{rest}") } else { href.to_owned() };
    let is_ddg_redirect = host(&absolute).is_some_and(|h| h == "duckduckgo.com" || h.ends_with(".duckduckgo.com"))
        && path(&absolute).starts_with("/l/");
    let is_bing_redirect = host(&absolute).is_some_and(|h| h == "bing.com" || h.ends_with(".bing.com"))
        && path(&absolute).starts_with("/ck/a");
    let url = if is_ddg_redirect {
        percent_decode(query_param(&absolute, "uddg")?)
    } else if is_bing_redirect {
        unwrap_bing(query_param(&absolute, "u")?)?
    } else {
        absolute
    };
    let lower = url.get(..8).unwrap_or(&url).to_ascii_lowercase();
    let http = lower.starts_with("http://") || lower.starts_with("https://");
    if http && url.len() <= RESULT_URL_BYTES_MAX && host(&url).is_some_and(|h| valid_host(&h)) {
        Some(url)
    } else {
        None
    }
}

/// Bing's `u` parameter: `a1` then the destination in base64url without padding (a padded or percent-encoded form
/// is accepted too).
fn unwrap_bing(u: &str) -> Option<String> {
    let encoded = percent_decode(u);
    let b64 = encoded.strip_prefix("a1")?.trim_end_matches('=');
    let bytes = crate::codec::base64url_decode(b64)?;
    String::from_utf8(bytes).ok()
}

pub use crate::urls::{host, origin, percent_decode, valid_host};

fn path(url: &str) -> &str {
    let rest = url.split_once("://").map_or(url, |(_, r)| r);
    rest.find('/').map_or("/", |i| rest.get(i..).unwrap_or("/"))
}

/// The key under which two URLs count as the same result: the host as a browser reads it (`urls::host`: case,
/// compatibility forms, escapes and numeric IPv4 forms do not matter) without `www.`; scheme, default port,
/// fragment and a trailing slash do not matter; case matters only in the path and query.
pub fn dedupe_key(url: &str) -> String {
    let Some((_, rest)) = url.split_once("://") else {
        return url.to_owned();
    };
    let rest = rest.split('#').next().unwrap_or(rest);
    let split = rest.find(['/', '?']).unwrap_or(rest.len());
    let (authority, tail) = rest.split_at(split);
    let mut host = match crate::urls::authority(url) {
        Some((_, host, Some(port))) if port != 80 && port != 443 => format!("{host}:{port}"),
        Some((_, host, _)) => host.to_string(),
        None => authority.to_ascii_lowercase(),
    };
    if let Some(h) = host.strip_prefix("www.") {
        host = h.to_owned();
    }
    let tail = tail.strip_suffix('/').unwrap_or(tail);
    format!("{host}{tail}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn origins() {
        assert_eq!(origin("https://html.duckduckgo.com/html/"), "https://html.duckduckgo.com");
        assert_eq!(origin("http://127.0.0.1:9/x"), "http://127.0.0.1:9");
        assert_eq!(origin("http://h"), "http://h");
    }

    #[test]
    fn unwraps_duckduckgo_links() {
        let href = "//duckduckgo.com/l/?uddg=https%3A%2F%2Fexample.com%2Fa%3Fb%3D1%2520c&rut=abc";
        assert_eq!(unwrap_result_link(href).as_deref(), Some("https://example.com/a?b=1%20c"));
        assert_eq!(unwrap_result_link("https://example.com/x").as_deref(), Some("https://example.com/x"));
        assert_eq!(unwrap_result_link("//example.com/x").as_deref(), Some("https://example.com/x"));
        assert_eq!(unwrap_result_link("/l/?uddg=https%3A%2F%2Fe.org"), None, "relative: the caller knows the site");
        assert_eq!(unwrap_result_link("javascript:alert(1)"), None);
        assert_eq!(unwrap_result_link("//duckduckgo.com/l/?rut=abc"), None);
        assert_eq!(unwrap_result_link(""), None);
        let long = format!("https://example.com/{}", "a".repeat(RESULT_URL_BYTES_MAX));
        assert_eq!(unwrap_result_link(&long), None, "longer than RESULT_URL_BYTES_MAX");
        let longest = &long[..RESULT_URL_BYTES_MAX];
        assert_eq!(unwrap_result_link(longest).as_deref(), Some(longest));
    }

    #[test]
    fn unwraps_bing_links() {
        let href = "https://www.bing.com/ck/a?!&&p=2ebc&ptn=3&ver=2&hsh=4&u=a1aHR0cHM6Ly9wbWMubmNiaS5ubG0ubmloLmdvdi9hcnRpY2xlcy9QTUM2MjkyMjQ2Lw&ntb=1";
        assert_eq!(unwrap_result_link(href).as_deref(), Some("https://pmc.ncbi.nlm.nih.gov/articles/PMC6292246/"));
        assert_eq!(unwrap_result_link("https://www.bing.com/ck/a?!&&p=1&ntb=1"), None, "no destination");
        assert_eq!(unwrap_result_link("https://www.bing.com/ck/a?u=a1%%%"), None);
        assert_eq!(unwrap_result_link("https://www.bing.com/ck/a?u=a1amF2YXNjcmlwdDphbGVydCgxKQ"), None, "javascript:");
        assert_eq!(
            unwrap_result_link("https://www.bing.com/search?q=x").as_deref(),
            Some("https://www.bing.com/search?q=x")
        );
    }

    #[test]
    fn host_validity() {
        assert!(
            valid_host("example.com") && valid_host("xn--bcher-kva.de") && valid_host("[::1]") && valid_host("a.b.")
        );
        assert!(!valid_host(".wikiquote.orgduckduckgo.com") && !valid_host("a..b") && !valid_host("a b.com"));
        assert!(!valid_host("") && !valid_host("-x.com") && !valid_host("[::1") && !valid_host("bücher.de"));
        assert_eq!(unwrap_result_link("https://.bad.example/"), None);
    }

    #[test]
    fn hosts() {
        assert_eq!(host("https://User@Example.COM:8080/x").as_deref(), Some("example.com"));
        assert_eq!(host("http://[::1]:80/").as_deref(), Some("[::1]"));
        assert_eq!(host("no scheme"), None);
    }

    #[test]
    fn dedupe_keys() {
        assert_eq!(dedupe_key("https://www.Example.com:443/a/#frag"), "example.com/a");
        assert_eq!(dedupe_key("http://example.com/a"), "example.com/a");
        assert_ne!(dedupe_key("https://example.com/A"), dedupe_key("https://example.com/a"));
        assert_eq!(dedupe_key("https://example.com/?q=1"), "example.com/?q=1");
        // Issue 41: the host a browser reads, in any notation.
        for same in ["https://ＥＸＡＭＰＬＥ.com/a", "http://www.example%2Ecom:80/a/", "https://u@𝐞𝐱𝐚𝐦𝐩𝐥𝐞.com/a"]
        {
            assert_eq!(dedupe_key(same), "example.com/a", "{same}");
        }
        assert_eq!(dedupe_key("http://2130706433:8080/x"), "127.0.0.1:8080/x");
    }

    #[test]
    fn form_encoding() {
        assert_eq!(form_encode("rust lang & c++/é"), "rust+lang+%26+c%2B%2B%2F%C3%A9");
    }
}
