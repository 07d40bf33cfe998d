//! Pieces of a URL the parts share (the fetcher's guard, the map, the search sources): its origin, its host, and
//! whether a host name is one a browser could open. The ground floor: it imports nothing of ours.

/// A host a browser could open: an IPv6 literal, or dot-separated labels that are not empty and hold letters,
/// digits, hyphens, underscores or non-ASCII (internationalised) characters.
pub fn valid_host(host: &str) -> bool {
    if host.contains(':') {
        return host.parse::<std::net::Ipv6Addr>().is_ok();
    }
    let host = host.strip_suffix('.').unwrap_or(host);
    !host.is_empty()
        && host.len() <= 253
        && host.split('.').all(|label| {
            !label.is_empty()
                && label.len() <= 63
                && !label.starts_with('-')
                && label.chars().all(|c| c.is_alphanumeric() || c == '-' || c == '_')
        })
}

/// `scheme://host[:port]` of a URL.
pub fn origin(url: &str) -> &str {
    let after_scheme = url.find("://").map_or(0, |i| i + 3);
    let end = url.get(after_scheme..).and_then(|r| r.find('/')).map_or(url.len(), |i| after_scheme + i);
    url.get(..end).unwrap_or(url)
}

/// The host of an absolute URL, lowercased, without port or userinfo.
pub fn host(url: &str) -> Option<String> {
    let rest = url.split_once("://")?.1;
    let authority = rest.split(['/', '?', '#']).next()?;
    let authority = authority.rsplit_once('@').map_or(authority, |(_, h)| h);
    let host =
        if let Some(v6) = authority.strip_prefix('[') { v6.split(']').next()? } else { authority.split(':').next()? };
    Some(host.to_ascii_lowercase())
}
