//! Pieces of a URL the parts share (the fetcher's guard, the map, the search sources, the doors' origins): its
//! origin, and its host as a browser reads it. The ground floor: it imports nothing of ours but `idna`.
//!
//! Every place that compares hosts (the domain filters, the results' deduplication, the fetch guard, the origins
//! allowed to call) compares what `Host::parse` gives: the URL standard's host parser for http(s) URLs, so that
//! `https://𝐞𝐯𝐢𝐥.com/`, `https://ⓔⓥⓘⓛ.com/` and `https://evil%2Ecom/` are evil.com, and `http://2130706433/`,
//! `http://0x7f.1/` and `http://127.1/` are 127.0.0.1, as they are to a browser.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

/// A host as the URL standard's host parser gives it for an http(s) URL.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Host {
    /// Lowercase ASCII, each label of other than ASCII in punycode (`idna`).
    Domain(String),
    Ipv4(Ipv4Addr),
    Ipv6(Ipv6Addr),
}

impl Host {
    /// The host parser of the URL standard for a special URL's host as written in it (`[v6]`, percent escapes,
    /// any Unicode): percent-decoded, mapped (`idna::to_ascii`), refused if it holds a code point no host may
    /// hold, and read as an IPv4 address when its last label is a number (decimal, `0x` hex or `0` octal, one to
    /// four parts). `None` where a browser fails to parse the URL.
    pub fn parse(input: &str) -> Option<Host> {
        if let Some(v6) = input.strip_prefix('[') {
            return v6.strip_suffix(']')?.parse().ok().map(Host::Ipv6);
        }
        let decoded = percent_decode(input);
        let ascii = crate::idna::to_ascii(&decoded)?;
        if ascii.bytes().any(|b| b <= 0x20 || b == 0x7F || b"#%/:<>?@[\\]^|".contains(&b)) {
            return None;
        }
        if ends_in_a_number(&ascii) {
            return parse_ipv4(&ascii).map(Host::Ipv4);
        }
        Some(Host::Domain(ascii))
    }

    pub fn ip(&self) -> Option<IpAddr> {
        match self {
            Host::Domain(_) => None,
            Host::Ipv4(ip) => Some(IpAddr::V4(*ip)),
            Host::Ipv6(ip) => Some(IpAddr::V6(*ip)),
        }
    }
}

/// As the URL standard serializes it: the domain, dotted decimal, or `[v6]` with the longest run of zeros as `::`.
impl std::fmt::Display for Host {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Host::Domain(d) => f.write_str(d),
            Host::Ipv4(ip) => write!(f, "{ip}"),
            Host::Ipv6(ip) => write!(f, "[{}]", ipv6_text(ip)),
        }
    }
}

/// An IPv6 address as the URL standard writes it: RFC 5952 (std's form), but an IPv4-mapped one in hex too
/// (`::ffff:7f00:1`, where std writes `::ffff:127.0.0.1`).
pub fn ipv6_text(ip: &Ipv6Addr) -> String {
    match ip.to_ipv4_mapped() {
        Some(v4) => {
            let [a, b, c, d] = v4.octets();
            format!("::ffff:{:x}:{:x}", u16::from_be_bytes([a, b]), u16::from_be_bytes([c, d]))
        }
        None => ip.to_string(),
    }
}

/// Whether the URL standard reads a host (mapped) as an IPv4 address: its last label, a final dot aside, is all
/// digits or an IPv4 number (`0x` hex).
fn ends_in_a_number(host: &str) -> bool {
    let host = host.strip_suffix('.').filter(|h| !h.is_empty()).unwrap_or(host);
    let last = host.rsplit('.').next().unwrap_or("");
    (!last.is_empty() && last.bytes().all(|b| b.is_ascii_digit())) || ipv4_number(last).is_some()
}

/// The URL standard's IPv4 parser: 1 to 4 parts (a final dot aside), each an IPv4 number; every part but the last
/// at most 255, the last filling the bytes left.
pub fn parse_ipv4(host: &str) -> Option<Ipv4Addr> {
    let host = host.strip_suffix('.').filter(|h| !h.is_empty()).unwrap_or(host);
    let parts: Vec<&str> = host.split('.').collect();
    if parts.len() > 4 {
        return None;
    }
    let numbers = parts.iter().map(|p| ipv4_number(p)).collect::<Option<Vec<u64>>>()?;
    let (last, init) = numbers.split_last()?;
    if init.iter().any(|&n| n > 255) || *last >= 1u64 << (8 * (4 - init.len())) {
        return None;
    }
    let high = init.iter().enumerate().fold(0u64, |v, (i, n)| v | n << (24 - 8 * i));
    u32::try_from(high | last).ok().map(Ipv4Addr::from)
}

/// An IPv4 number: decimal, `0x` hex (`0x` alone is 0) or `0`-prefixed octal, any number of digits (a value past
/// 2^32 is kept as 2^32, which no part may be).
fn ipv4_number(part: &str) -> Option<u64> {
    if part.is_empty() {
        return None;
    }
    let (digits, radix) = match part.get(..2) {
        Some("0x" | "0X") => (part.get(2..)?, 16),
        Some(_) if part.starts_with('0') => (part.get(1..)?, 8),
        _ => (part, 10),
    };
    digits.chars().try_fold(0u64, |v, c| Some((v * u64::from(radix) + u64::from(c.to_digit(radix)?)).min(1 << 32)))
}

/// Decodes `%XX` escapes once, as bytes; invalid escapes stay as they are, invalid UTF-8 becomes U+FFFD.
pub fn percent_decode(s: &str) -> String {
    if !s.contains('%') {
        return s.to_owned();
    }
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while let Some(&b) = bytes.get(i) {
        let hex = bytes.get(i + 1..i + 3).and_then(|h| std::str::from_utf8(h).ok());
        match hex.filter(|_| b == b'%').and_then(|h| u8::from_str_radix(h, 16).ok()) {
            Some(v) => {
                out.push(v);
                i += 3;
            }
            None => {
                out.push(b);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// A mapped host a result, a feed or a fetch may name: an IP address, or a domain whose dot-separated labels are
/// not empty and hold letters, digits, hyphens or underscores (a final dot aside), within DNS's lengths.
pub fn valid_host(host: &str) -> bool {
    if let Some(v6) = host.strip_prefix('[') {
        return v6.strip_suffix(']').is_some_and(|a| a.parse::<Ipv6Addr>().is_ok());
    }
    let host = host.strip_suffix('.').unwrap_or(host);
    !host.is_empty()
        && host.len() <= 253
        && host.split('.').all(|label| {
            !label.is_empty()
                && label.len() <= 63
                && !label.starts_with('-')
                && label.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
        })
}

/// `scheme://host[:port]` of a URL, as written.
pub fn origin(url: &str) -> &str {
    let after_scheme = url.find("://").map_or(0, |i| i + 3);
    let end = url.get(after_scheme..).and_then(|r| r.find('/')).map_or(url.len(), |i| after_scheme + i);
    url.get(..end).unwrap_or(url)
}

/// The parts of an http(s) URL a browser reads before the path: whether it is https, its host (`Host::parse`) and
/// its port, if it names one (`None` for a URL a browser fails to parse: no host, a port that is no number).
/// Tabs and newlines anywhere are dropped and leading and trailing spaces or controls trimmed, as the URL
/// standard does; the authority ends at `/`, `\`, `?` or `#`, the host at the last `@` before it and at a `:`
/// outside brackets.
pub fn authority(url: &str) -> Option<(bool, Host, Option<u16>)> {
    let url: String =
        url.trim_matches(|c: char| c <= ' ').chars().filter(|c| !matches!(c, '\t' | '\n' | '\r')).collect();
    let (scheme, rest) = url.split_once(':')?;
    let https = match scheme.to_ascii_lowercase().as_str() {
        "http" => false,
        "https" => true,
        _ => return None,
    };
    let rest = rest.trim_start_matches(['/', '\\']);
    let authority = rest.split(['/', '\\', '?', '#']).next().unwrap_or("");
    let hostport = authority.rsplit_once('@').map_or(authority, |(_, h)| h);
    let colon = if hostport.starts_with('[') { hostport.find(']').map(|i| i + 1) } else { hostport.find(':') };
    let (host, port) = match colon.map(|i| hostport.split_at(i)) {
        Some((host, "")) => (host, None),
        Some((host, port)) => {
            let digits = port.strip_prefix(':').filter(|d| d.bytes().all(|b| b.is_ascii_digit()))?;
            let port = if digits.is_empty() { None } else { Some(digits.parse::<u16>().ok()?) };
            (host, port)
        }
        None => (hostport, None),
    };
    if host.is_empty() {
        return None;
    }
    Some((https, Host::parse(host)?, port))
}

/// The host of an http(s) URL as a browser reads it (`authority`), serialized: `evil.com` for `https://ⓔvil.com/`,
/// `127.0.0.1` for `http://2130706433/`, `[::1]` for `http://[0::1]/`.
pub fn host(url: &str) -> Option<String> {
    authority(url).map(|(_, host, _)| host.to_string())
}

/// The origin of an http(s) URL or `Origin` header as a browser serializes it, to compare: lowercase scheme, host
/// as `host` gives it, the port unless it is the scheme's default (`https://Bücher.example:443/x` is
/// `https://xn--bcher-kva.example`).
pub fn serialized_origin(url: &str) -> Option<String> {
    let (https, host, port) = authority(url)?;
    let scheme = if https { "https" } else { "http" };
    match port.filter(|&p| p != if https { 443 } else { 80 }) {
        Some(port) => Some(format!("{scheme}://{host}:{port}")),
        None => Some(format!("{scheme}://{host}")),
    }
}

#[cfg(test)]
mod tests;
