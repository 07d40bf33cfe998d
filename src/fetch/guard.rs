//! The SSRF guard for URLs chosen by third parties (the top search result, a redirect a source or a feed answers
//! with): what may be fetched and which addresses may be connected to. Pure functions over URLs and addresses;
//! `fetch::untrusted` applies them to every hop (and `fetch::Client` to every redirect that leaves the origin it was
//! asked for), resolving each host once and connecting only to the addresses that passed (no second lookup, so DNS
//! rebinding cannot swap a checked address for a private one).

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use crate::urls::Host;

/// Why an untrusted URL is not fetched.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refusal {
    Url(String),
    Scheme(String),
    Userinfo,
    Port(u16),
    /// The address is in a range that is never fetched (named).
    Address {
        host: String,
        ip: IpAddr,
        range: &'static str,
    },
    Resolve(String),
}

/// The code of a host name that does not resolve, whether the guard or the client resolved it.
pub const RESOLVE_FAILED: &str = "resolve_failed";

impl Refusal {
    pub fn code(&self) -> &'static str {
        match self {
            Refusal::Url(_) => "url_invalid",
            Refusal::Scheme(_) => "scheme_refused",
            Refusal::Userinfo => "userinfo_refused",
            Refusal::Port(_) => "port_refused",
            Refusal::Address { .. } => "address_refused",
            Refusal::Resolve(_) => RESOLVE_FAILED,
        }
    }
}

impl std::fmt::Display for Refusal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Refusal::Url(why) => write!(f, "not a fetchable URL: {why}"),
            Refusal::Scheme(s) => write!(f, "scheme {s:?} is not fetched (only http and https)"),
            Refusal::Userinfo => f.write_str("URLs with user:password@ are not fetched"),
            Refusal::Port(p) => write!(f, "port {p} is not fetched (only 80 and 443, and WEBSEARCHD_FETCH_PORTS)"),
            Refusal::Address { host, ip, range } => {
                write!(f, "{host} is {ip}, in the {range} range, which is never fetched")
            }
            Refusal::Resolve(why) => write!(f, "cannot resolve: {why}"),
        }
    }
}

impl std::error::Error for Refusal {}

/// A URL that passed the syntactic checks.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Target {
    pub https: bool,
    /// Lowercase; an IPv4 literal in any form is normalised to dotted decimal; IPv6 without brackets.
    pub host: String,
    pub port: u16,
    /// Path and query, at least `/`.
    pub path: String,
}

impl Target {
    /// The URL with the normalised host, as it will be requested.
    pub fn url(&self) -> String {
        let scheme = if self.https { "https" } else { "http" };
        let default = if self.https { 443 } else { 80 };
        let host = if self.host.contains(':') { format!("[{}]", self.host) } else { self.host.clone() };
        if self.port == default {
            format!("{scheme}://{host}{}", self.path)
        } else {
            format!("{scheme}://{host}:{}{}", self.port, self.path)
        }
    }

    /// Whether both have the same origin: scheme, host and port.
    pub fn same_origin(&self, other: &Target) -> bool {
        self.https == other.https && self.host == other.host && self.port == other.port
    }

    /// The host as an IP address, if it is a literal.
    pub fn ip(&self) -> Option<IpAddr> {
        self.host.parse().ok()
    }
}

#[derive(Debug, Clone, Default)]
pub struct Policy {
    /// `host:port` pairs that may be fetched whatever their address (tests, operators' own hosts).
    pub allow: Vec<(String, u16)>,
    /// Ports allowed besides 80 and 443.
    pub ports: Vec<u16>,
}

impl Policy {
    pub fn allowlisted(&self, t: &Target) -> bool {
        self.allow.iter().any(|(h, p)| *h == t.host && *p == t.port)
    }

    /// The syntactic checks: scheme, userinfo, port, and IP literals in every notation.
    pub fn check_url(&self, url: &str) -> Result<Target, Refusal> {
        let target = parse_url(url)?;
        if !self.allowlisted(&target) && ![80, 443].contains(&target.port) && !self.ports.contains(&target.port) {
            return Err(Refusal::Port(target.port));
        }
        if let Some(ip) = target.ip() {
            if !self.allowlisted(&target) {
                check_ip(ip).map_err(|range| Refusal::Address { host: target.host.clone(), ip, range })?;
            }
        }
        Ok(target)
    }

    /// Filters resolved addresses: all of them must be public (one private address refuses the host, so a name
    /// that mixes public and private answers cannot be used to reach the private one).
    pub fn check_addresses(&self, t: &Target, addrs: &[IpAddr]) -> Result<(), Refusal> {
        if self.allowlisted(t) {
            return Ok(());
        }
        if addrs.is_empty() {
            return Err(Refusal::Resolve(format!("{} has no address", t.host)));
        }
        for &ip in addrs {
            check_ip(ip).map_err(|range| Refusal::Address { host: t.host.clone(), ip, range })?;
        }
        Ok(())
    }
}

/// Reads an http or https URL into a `Target` (scheme, host in its standard form, port, path), refusing other
/// schemes, userinfo and malformed hosts; no policy is applied (see `Policy::check_url`).
pub fn parse_url(url: &str) -> Result<Target, Refusal> {
    let url = url.trim();
    if url.chars().any(|c| c.is_control() || c == ' ' || c == '\\') {
        return Err(Refusal::Url("control characters, spaces or backslashes".into()));
    }
    let (scheme, rest) = url.split_once("://").ok_or_else(|| Refusal::Url("no scheme".into()))?;
    let https = match scheme.to_ascii_lowercase().as_str() {
        "http" => false,
        "https" => true,
        other => return Err(Refusal::Scheme(other.to_owned())),
    };
    let end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    let (authority, tail) = rest.split_at(end);
    if authority.contains('@') {
        return Err(Refusal::Userinfo);
    }
    let (host, port) = split_host_port(authority)?;
    let port = port.unwrap_or(if https { 443 } else { 80 });
    let host = normalize_host(&host)?;
    let tail = tail.split('#').next().unwrap_or("");
    let path = if tail.starts_with('/') { tail.to_owned() } else { format!("/{tail}") };
    Ok(Target { https, host, port, path })
}

/// An authority (`host[:port]` or `[v6][:port]`, no userinfo) split into its host (brackets kept) and port.
pub fn split_host_port(authority: &str) -> Result<(String, Option<u16>), Refusal> {
    if authority.is_empty() {
        return Err(Refusal::Url("no host".into()));
    }
    if let Some(v6) = authority.strip_prefix('[') {
        let (host, after) = v6.split_once(']').ok_or_else(|| Refusal::Url("unclosed [".into()))?;
        let port = match after.strip_prefix(':') {
            Some(p) => Some(parse_port(p)?),
            None if after.is_empty() => None,
            None => return Err(Refusal::Url("junk after ]".into())),
        };
        return Ok((format!("[{host}]"), port));
    }
    match authority.rsplit_once(':') {
        // An IPv6 address is in brackets (WHATWG): `2001:db8::1:80` says neither which address nor which port.
        Some((h, _)) if h.contains(':') => Err(Refusal::Url("an IPv6 address without brackets".into())),
        Some((h, p)) => Ok((h.to_owned(), Some(parse_port(p)?))),
        None => Ok((authority.to_owned(), None)),
    }
}

fn parse_port(p: &str) -> Result<u16, Refusal> {
    if p.is_empty() || p.len() > 5 || !p.bytes().all(|b| b.is_ascii_digit()) {
        return Err(Refusal::Url(format!("bad port {p:?}")));
    }
    p.parse().map_err(|_| Refusal::Url(format!("bad port {p:?}")))
}

/// A host as a browser reads it (`urls::Host::parse`: escapes, compatibility forms and case mapped, labels of other
/// than ASCII in punycode, decimal, octal, hexadecimal and short IPv4 forms such as `2130706433`, `0177.0.0.1`,
/// `0x7f.1` or `127.1` in dotted decimal, `[v6]` as the address without brackets), so that the guard judges the
/// host a request then goes to; a domain must also be a name DNS can hold (`urls::valid_host`).
pub fn normalize_host(host: &str) -> Result<String, Refusal> {
    match crate::urls::Host::parse(host) {
        Some(Host::Ipv6(ip)) => Ok(crate::urls::ipv6_text(&ip)),
        Some(Host::Domain(d)) if !crate::urls::valid_host(&d) => Err(Refusal::Url(format!("bad host {d:?}"))),
        Some(h) => Ok(h.to_string()),
        None => Err(Refusal::Url(format!("bad host {host:?}"))),
    }
}

/// `Err(range name)` for addresses that are never fetched: every block of the IANA IPv4 and IPv6 special-purpose
/// address registries, multicast, and every IPv6 address outside 2000::/3 (the only space the IPv6 Address Space
/// registry allocates as global unicast). Blocks the registries mark globally reachable are refused too (anycast
/// service addresses, DNS sinks, identifiers: never a page), with two deliberate exceptions that are judged by the
/// IPv4 address they carry: NAT64's well-known prefix 64:ff9b::/96 (a DNS64 network hands out such an address for
/// every IPv4-only site) and 6to4, 2002::/16. `fetch/guard/tests.rs` checks each registry row.
pub fn check_ip(ip: IpAddr) -> Result<(), &'static str> {
    match ip {
        IpAddr::V4(v4) => check_v4(v4),
        IpAddr::V6(v6) => check_v6(v6),
    }
}

fn in_v4(ip: Ipv4Addr, net: [u8; 4], bits: u32) -> bool {
    let mask = if bits == 0 { 0 } else { u32::MAX << (32 - bits) };
    u32::from(ip) & mask == u32::from(Ipv4Addr::from(net)) & mask
}

fn check_v4(ip: Ipv4Addr) -> Result<(), &'static str> {
    // A block of the registry inside a wider one here (192.0.0.0/29, 192.0.0.170/32, 192.88.99.2/32,
    // 255.255.255.255/32, ...) is refused with the wider one.
    const RANGES: &[([u8; 4], u32, &str)] = &[
        ([0, 0, 0, 0], 8, "this-network (0.0.0.0/8)"),
        ([10, 0, 0, 0], 8, "private (10.0.0.0/8)"),
        ([100, 64, 0, 0], 10, "carrier-grade NAT (100.64.0.0/10)"),
        ([127, 0, 0, 0], 8, "loopback (127.0.0.0/8)"),
        ([169, 254, 0, 0], 16, "link-local (169.254.0.0/16)"),
        ([172, 16, 0, 0], 12, "private (172.16.0.0/12)"),
        ([192, 0, 0, 0], 24, "IETF protocol assignments (192.0.0.0/24)"),
        ([192, 0, 2, 0], 24, "documentation (192.0.2.0/24)"),
        ([192, 31, 196, 0], 24, "AS112 DNS sink (192.31.196.0/24)"),
        ([192, 52, 193, 0], 24, "AMT relay anycast (192.52.193.0/24)"),
        ([192, 88, 99, 0], 24, "6to4 relay anycast (192.88.99.0/24)"),
        ([192, 168, 0, 0], 16, "private (192.168.0.0/16)"),
        ([192, 175, 48, 0], 24, "AS112 DNS sink (192.175.48.0/24)"),
        ([198, 18, 0, 0], 15, "benchmarking (198.18.0.0/15)"),
        ([198, 51, 100, 0], 24, "documentation (198.51.100.0/24)"),
        ([203, 0, 113, 0], 24, "documentation (203.0.113.0/24)"),
        ([224, 0, 0, 0], 4, "multicast (224.0.0.0/4)"),
        ([240, 0, 0, 0], 4, "reserved (240.0.0.0/4, with broadcast)"),
    ];
    match RANGES.iter().find(|(net, bits, _)| in_v4(ip, *net, *bits)) {
        Some((_, _, name)) => Err(name),
        None => Ok(()),
    }
}

fn check_v6(ip: Ipv6Addr) -> Result<(), &'static str> {
    let s = ip.segments();
    let embedded = |hi: u16, lo: u16| Ipv4Addr::new((hi >> 8) as u8, hi as u8, (lo >> 8) as u8, lo as u8);
    // The blocks that embed an IPv4 address, and the special blocks outside 2000::/3, named first so a refusal
    // says which block it is (the catch-all below would refuse them all the same).
    if s[..5] == [0, 0, 0, 0, 0] {
        return Err(match s[5] {
            0xffff => "IPv4-mapped (::ffff:0:0/96)",
            0 if ip.is_unspecified() => "unspecified (::)",
            0 if ip.is_loopback() => "loopback (::1)",
            0 => "IPv4-compatible (::/96)",
            _ => "reserved by the IETF (::/8)",
        });
    }
    if s[..4] == [0, 0, 0, 0] && s[4] == 0xffff && s[5] == 0 {
        return Err("IPv4-translated (::ffff:0:0:0/96)");
    }
    if s[0] == 0x0064 && s[1] == 0xff9b && s[2..6] == [0, 0, 0, 0] {
        check_v4(embedded(s[6], s[7])).map_err(|_| "NAT64 (64:ff9b::/96) with an embedded non-public address")?;
        return Ok(());
    }
    if s[0] == 0x0064 && s[1] == 0xff9b && s[2] == 1 {
        return Err("local-use NAT64 (64:ff9b:1::/48)");
    }
    if s[0] == 0x0100 && s[1..3] == [0, 0] && s[3] <= 1 {
        return Err(if s[3] == 0 { "discard-only (100::/64)" } else { "dummy prefix (100:0:0:1::/64)" });
    }
    const RANGES: &[(u16, u16, &str)] = &[
        (0x5f00, 0xffff, "SRv6 SIDs (5f00::/16)"),
        (0xfc00, 0xfe00, "unique local (fc00::/7)"),
        (0xfe80, 0xffc0, "link-local (fe80::/10)"),
        (0xfec0, 0xffc0, "site-local (fec0::/10)"),
        (0xff00, 0xff00, "multicast (ff00::/8)"),
    ];
    if let Some((_, _, name)) = RANGES.iter().find(|(net, mask, _)| s[0] & mask == *net) {
        return Err(name);
    }
    if s[0] & 0xe000 != 0x2000 {
        return Err("reserved by the IETF (outside 2000::/3, the global unicast space)");
    }
    // Inside 2000::/3.
    if s[0] == 0x2001 && s[1] == 0 {
        return Err("Teredo (2001::/32)");
    }
    if s[0] == 0x2001 && s[1] < 0x0200 {
        return Err("IETF protocol assignments (2001::/23)");
    }
    if s[0] == 0x2001 && s[1] == 0x0db8 {
        return Err("documentation (2001:db8::/32)");
    }
    if s[0] == 0x2002 {
        check_v4(embedded(s[1], s[2])).map_err(|_| "6to4 (2002::/16) with an embedded non-public address")?;
    }
    if s[0] == 0x2620 && s[1] == 0x004f && s[2] == 0x8000 {
        return Err("AS112 DNS sink (2620:4f:8000::/48)");
    }
    if s[0] == 0x3fff && s[1] < 0x1000 {
        return Err("documentation (3fff::/20)");
    }
    Ok(())
}

#[cfg(test)]
mod tests;
