//! Who the client is. Directly connected, it is the peer. Behind a reverse proxy the operator lists as trusted
//! (`WEBSEARCHD_TRUSTED_PROXIES`), it is the address the proxy forwarded in the one header the operator names
//! (`WEBSEARCHD_FORWARDED_HEADER`: `X-Forwarded-For` by default, or `Forwarded`, RFC 7239), read right to left,
//! skipping the trusted hops. A forwarded address is believed only from a trusted peer and only in that header:
//! anyone can send either header, and a proxy that writes one passes the other through as the client sent it. A
//! request that carries any header a proxy writes about its client (`X-Real-IP`, `Via`, the `X-Forwarded-` family,
//! ...) from a peer the operator did not list was relayed, and is never local. And the key under which an address
//! is counted (connections per address, free trials): an IPv4 address, or an IPv6 /64, the smallest allocation one subscriber gets.
//!
//! Pure: no I/O. The work per request is bounded by the header limits and `FORWARDED_HOPS_MAX`.

use std::net::{IpAddr, Ipv6Addr};

use super::request::Headers;

/// IPv6 addresses are counted per prefix of this many bits: one subscriber usually holds a whole /64.
pub const IPV6_PREFIX_BITS: u32 = 64;

/// Forwarded hops read at most, from the right, across the forwarding headers of one request.
pub const FORWARDED_HOPS_MAX: usize = 16;

/// Headers a proxy writes about the client it relays (besides the `x-forwarded-` family, matched by its prefix). A
/// request from a peer the operator did not list that carries any of them was relayed by a proxy, so it is never
/// local, whichever of them that proxy writes: nginx's common snippet writes only `X-Real-IP`, a cache only `Via`.
const RELAY_HEADERS: [&str; 16] = [
    "forwarded",
    "forwarded-for",
    "x-forwarded",
    "x-real-ip",
    "via",
    "true-client-ip",
    "cf-connecting-ip",
    "cf-connecting-ipv6",
    "x-client-ip",
    "x-cluster-client-ip",
    "fastly-client-ip",
    "client-ip",
    "x-original-forwarded-for",
    "x-originating-ip",
    "x-envoy-external-address",
    "x-azure-clientip",
];

/// The prefix of the de facto family `X-Forwarded-For`, `-Host`, `-Proto`, `-Port`, `-Server`, `-Prefix`, ...
const RELAY_HEADER_PREFIX: &str = "x-forwarded-";

/// An address range, like `10.0.0.0/8`, `::1/128` or a single address.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Cidr {
    net: IpAddr,
    bits: u32,
}

impl Cidr {
    /// `a.b.c.d`, `a.b.c.d/n`, an IPv6 address, or `ipv6/n`; the network must have no host bits set.
    pub fn parse(s: &str) -> Option<Cidr> {
        let (addr, bits) = match s.split_once('/') {
            Some((a, b)) if !b.is_empty() && b.bytes().all(|c| c.is_ascii_digit()) && b.len() <= 3 => {
                (a, Some(b.parse::<u32>().ok()?))
            }
            Some(_) => return None,
            None => (s, None),
        };
        let net = canonical(addr.parse::<IpAddr>().ok()?);
        let max = if net.is_ipv4() { 32 } else { 128 };
        let bits = bits.unwrap_or(max);
        if bits > max || mask(net, bits) != net {
            return None;
        }
        Some(Cidr { net, bits })
    }

    pub fn contains(&self, ip: IpAddr) -> bool {
        let ip = canonical(ip);
        ip.is_ipv4() == self.net.is_ipv4() && mask(ip, self.bits) == self.net
    }
}

impl std::fmt::Display for Cidr {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}", self.net, self.bits)
    }
}

/// An IPv4-mapped IPv6 address (`::ffff:a.b.c.d`, what a dual-stack socket reports) as the IPv4 address it is.
pub fn canonical(ip: IpAddr) -> IpAddr {
    match ip {
        IpAddr::V6(v6) => v6.to_ipv4_mapped().map_or(ip, IpAddr::V4),
        v4 => v4,
    }
}

/// The key an address is counted under: the IPv4 address itself, or its IPv6 /`IPV6_PREFIX_BITS` network.
pub fn key(ip: IpAddr) -> IpAddr {
    let ip = canonical(ip);
    if ip.is_ipv4() {
        ip
    } else {
        mask(ip, IPV6_PREFIX_BITS)
    }
}

fn mask(ip: IpAddr, bits: u32) -> IpAddr {
    match ip {
        IpAddr::V4(v4) => {
            let m = u32::MAX.checked_shl(32 - bits.min(32)).unwrap_or(0);
            IpAddr::V4((u32::from(v4) & m).into())
        }
        IpAddr::V6(v6) => {
            let m = u128::MAX.checked_shl(128 - bits.min(128)).unwrap_or(0);
            IpAddr::V6(Ipv6Addr::from(u128::from(v6) & m))
        }
    }
}

/// The client of one request, as far as the server can tell.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Client {
    /// The client's address (the peer's, unless a trusted proxy forwarded another).
    pub ip: IpAddr,
    /// The caller is on this machine: its address is loopback, known for certain, and no proxy the operator has
    /// not listed relayed the request (a relayed request comes from the proxy's loopback address, but not from a
    /// local caller). The free-loopback rule asks this, never `ip` alone.
    pub local: bool,
}

/// The header a trusted proxy writes the client into.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ForwardedHeader {
    XForwardedFor,
    /// RFC 7239 `Forwarded: for=...`.
    Forwarded,
}

impl ForwardedHeader {
    pub fn from_name(name: &str) -> Option<ForwardedHeader> {
        match name.to_ascii_lowercase().as_str() {
            "x-forwarded-for" => Some(ForwardedHeader::XForwardedFor),
            "forwarded" => Some(ForwardedHeader::Forwarded),
            _ => None,
        }
    }

    fn name(self) -> &'static str {
        match self {
            ForwardedHeader::XForwardedFor => "x-forwarded-for",
            ForwardedHeader::Forwarded => "forwarded",
        }
    }
}

/// Finds the client of a request from `peer` with these headers; `header` is the one trusted proxies write.
pub fn client(peer: IpAddr, headers: &Headers<'_>, trusted: &[Cidr], header: ForwardedHeader) -> Client {
    let peer = canonical(peer);
    let named = |name: &str| headers.iter().any(|(n, _)| n.eq_ignore_ascii_case(name));
    let relayed = headers.iter().any(|(n, _)| relay_header(n));
    if !trusted.iter().any(|c| c.contains(peer)) {
        // Forwarding headers from an untrusted peer are ignored; from a loopback peer they mean a proxy on this
        // machine relayed someone else's request.
        return Client { ip: peer, local: peer.is_loopback() && !relayed };
    }
    if !named(header.name()) {
        // The trusted proxy's own request (a health check from its host), unless a forwarding header it does not
        // write says someone else is behind it.
        return Client { ip: peer, local: peer.is_loopback() && !relayed };
    }
    match forwarded_client(headers, trusted, header) {
        Some(ip) => Client { ip, local: ip.is_loopback() },
        // The chain could not be read (`unknown`, an obfuscated name, garbage, too many hops): the client is
        // counted under the proxy's address and is not local.
        None => Client { ip: peer, local: false },
    }
}

/// Whether a header is one a proxy writes about the client it relays (`RELAY_HEADERS`, the `x-forwarded-` family).
fn relay_header(name: &str) -> bool {
    let prefix = name.get(..RELAY_HEADER_PREFIX.len());
    prefix.is_some_and(|p| p.eq_ignore_ascii_case(RELAY_HEADER_PREFIX))
        || RELAY_HEADERS.iter().any(|h| name.eq_ignore_ascii_case(h))
}

/// The nearest untrusted hop of `header` (several lines of it are one list, in order). When every hop is trusted,
/// the nearest one: the address our own proxy wrote, never one further left, which the client may have written.
fn forwarded_client(headers: &Headers<'_>, trusted: &[Cidr], header: ForwardedHeader) -> Option<IpAddr> {
    let lines = headers.iter().rev().filter(|(n, _)| n.eq_ignore_ascii_case(header.name()));
    let mut hops = 0;
    let mut nearest = None;
    for (_, line) in lines {
        let text = std::str::from_utf8(line).ok()?;
        for element in text.rsplit(',') {
            hops += 1;
            if hops > FORWARDED_HOPS_MAX {
                return None;
            }
            let hop = match header {
                ForwardedHeader::Forwarded => forwarded_for(element)?,
                ForwardedHeader::XForwardedFor => node(element.trim())?,
            };
            if !trusted.iter().any(|c| c.contains(hop)) {
                return Some(hop);
            }
            nearest = nearest.or(Some(hop));
        }
    }
    nearest
}

/// The `for=` parameter of one `Forwarded` element, as an address (`None` for `unknown`, obfuscated names and
/// anything malformed).
fn forwarded_for(element: &str) -> Option<IpAddr> {
    let value = element.split(';').find_map(|pair| {
        let (k, v) = pair.split_once('=')?;
        k.trim().eq_ignore_ascii_case("for").then_some(v.trim())
    })?;
    let value = match value.strip_prefix('"') {
        Some(quoted) => quoted.strip_suffix('"')?,
        None => value,
    };
    node(value)
}

/// A node: `192.0.2.1`, `192.0.2.1:8080`, `[2001:db8::1]`, `[2001:db8::1]:8080`, or a bare IPv6 address (as
/// `X-Forwarded-For` writes it).
fn node(s: &str) -> Option<IpAddr> {
    if let Some(rest) = s.strip_prefix('[') {
        let (addr, after) = rest.split_once(']')?;
        if !(after.is_empty() || after.strip_prefix(':').is_some_and(is_port)) {
            return None;
        }
        return addr.parse::<Ipv6Addr>().ok().map(|v6| canonical(IpAddr::V6(v6)));
    }
    if let Ok(ip) = s.parse::<IpAddr>() {
        return Some(canonical(ip));
    }
    let (addr, port) = s.rsplit_once(':')?;
    if !is_port(port) {
        return None;
    }
    addr.parse::<std::net::Ipv4Addr>().ok().map(IpAddr::V4)
}

fn is_port(s: &str) -> bool {
    !s.is_empty() && s.len() <= 5 && s.bytes().all(|b| b.is_ascii_digit())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::http::{parse_head, HEADERS_CAP, HEAD_BYTES_CAP};

    fn ip(s: &str) -> IpAddr {
        s.parse().unwrap()
    }

    /// The client of a request from `peer` with these header fields, as the server parses them.
    fn client_of(peer: &str, fields: &[(&str, &str)], trusted: &[Cidr], header: ForwardedHeader) -> Client {
        let mut wire = String::from("GET / HTTP/1.1\r\n");
        for (name, value) in fields {
            wire.push_str(&format!("{name}: {value}\r\n"));
        }
        wire.push_str("\r\n");
        let bytes = wire.as_bytes();
        let head = parse_head(bytes, HEAD_BYTES_CAP, HEADERS_CAP, 0).unwrap().unwrap();
        client(ip(peer), &head.headers(bytes), trusted, header)
    }

    /// The client as found with `X-Forwarded-For`, the default header.
    fn found(peer: &str, fields: &[(&str, &str)], trusted: &[Cidr]) -> Client {
        client_of(peer, fields, trusted, ForwardedHeader::XForwardedFor)
    }

    #[test]
    fn ranges_parse_and_match() {
        let c = Cidr::parse("10.0.0.0/8").unwrap();
        assert!(c.contains(ip("10.200.1.1")) && !c.contains(ip("11.0.0.1")));
        assert!(c.contains(ip("::ffff:10.1.2.3")), "a mapped address is the IPv4 address");
        assert_eq!(Cidr::parse("127.0.0.1").unwrap().to_string(), "127.0.0.1/32");
        assert!(Cidr::parse("2001:db8::/32").unwrap().contains(ip("2001:db8:ffff::1")));
        assert!(Cidr::parse("0.0.0.0/0").unwrap().contains(ip("203.0.113.9")));
        for bad in ["10.0.0.1/8", "10.0.0.0/33", "::1/129", "10.0.0.0/", "10.0.0.0/+8", "host", "", "1.2.3.4/8/1"] {
            assert_eq!(Cidr::parse(bad), None, "{bad}");
        }
    }

    #[test]
    fn ipv6_is_counted_per_64_and_mapped_ipv4_as_ipv4() {
        assert_eq!(key(ip("2001:db8:1:2:aaaa::1")), ip("2001:db8:1:2::"));
        assert_eq!(key(ip("2001:db8:1:2:ffff:ffff:ffff:ffff")), key(ip("2001:db8:1:2::7")));
        assert_ne!(key(ip("2001:db8:1:3::1")), key(ip("2001:db8:1:2::1")));
        assert_eq!(key(ip("::ffff:198.51.100.7")), ip("198.51.100.7"));
        assert_eq!(key(ip("198.51.100.7")), ip("198.51.100.7"));
    }

    #[test]
    fn forwarded_addresses_count_only_from_trusted_peers() {
        let proxies = [Cidr::parse("127.0.0.1").unwrap(), Cidr::parse("10.0.0.0/8").unwrap()];
        let xff = [("X-Forwarded-For", "203.0.113.5")];
        // Untrusted peer: the header is ignored.
        assert_eq!(found("198.51.100.1", &xff, &proxies), Client { ip: ip("198.51.100.1"), local: false });
        // Trusted peer: the forwarded client.
        assert_eq!(found("127.0.0.1", &xff, &proxies), Client { ip: ip("203.0.113.5"), local: false });
        // Right to left, trusted hops skipped; a spoofed left-most entry is never reached.
        let chain = [("X-Forwarded-For", "127.0.0.1, 203.0.113.5, 10.1.1.1")];
        assert_eq!(found("127.0.0.1", &chain, &proxies).ip, ip("203.0.113.5"));
        // Several header lines form one list.
        let lines = [("X-Forwarded-For", "1.1.1.1"), ("X-Forwarded-For", "203.0.113.9, 10.0.0.2")];
        assert_eq!(found("10.0.0.3", &lines, &proxies).ip, ip("203.0.113.9"));
        // The proxy's own request.
        assert_eq!(found("127.0.0.1", &[], &proxies), Client { ip: ip("127.0.0.1"), local: true });
        // A loopback client behind the trusted proxy is local.
        assert!(found("127.0.0.1", &[("X-Forwarded-For", "::1")], &proxies).local);
        // Every hop trusted: the nearest is the client (our proxy wrote it); what stands left of it the client may
        // have written, so a host in a trusted range cannot pass for loopback.
        let all_trusted = [("X-Forwarded-For", "127.0.0.1, 10.0.0.7")];
        assert_eq!(found("10.0.0.8", &all_trusted, &proxies), Client { ip: ip("10.0.0.7"), local: false });
    }

    #[test]
    fn a_relayed_request_is_never_local() {
        // No proxies configured, a proxy on this machine relays a remote client: not a local caller.
        let xff = [("x-forwarded-for", "203.0.113.5")];
        assert_eq!(found("127.0.0.1", &xff, &[]), Client { ip: ip("127.0.0.1"), local: false });
        assert!(!found("127.0.0.1", &[("Forwarded", "for=1.2.3.4")], &[]).local);
        assert!(found("127.0.0.1", &[("Accept", "*/*")], &[]).local);
        // Issue 33, finding 7: a proxy that writes neither of those headers still relays: any header a proxy writes
        // about its client makes the request relayed, in any case, whatever its value.
        for name in [
            "X-Real-IP",
            "Via",
            "x-forwarded-host",
            "X-Forwarded-Proto",
            "True-Client-IP",
            "CF-Connecting-IP",
            "X-Client-IP",
            "X-Cluster-Client-IP",
            "Fastly-Client-IP",
            "Client-IP",
            "Forwarded-For",
            "X-Forwarded",
        ] {
            let relayed = [("Accept", "*/*"), (name, "127.0.0.1")];
            assert_eq!(found("127.0.0.1", &relayed, &[]), Client { ip: ip("127.0.0.1"), local: false }, "{name}");
            // The same from a trusted proxy that writes `X-Forwarded-For`, without it: not its own request.
            let proxies = [Cidr::parse("127.0.0.1").unwrap()];
            assert!(!found("127.0.0.1", &relayed, &proxies).local, "{name} through a trusted proxy");
        }
        // Names that only look alike are not relay headers.
        for name in ["Viaduct", "X-Real-IPs", "X-Forwarde", "Forwarded-By-Nobody"] {
            assert!(found("127.0.0.1", &[(name, "1")], &[]).local, "{name}");
        }
        assert!(found("::ffff:127.0.0.1", &[], &[]).local);
        // A trusted proxy forwarding what cannot be read: counted under the proxy, not local.
        let proxies = [Cidr::parse("127.0.0.1").unwrap()];
        for value in ["unknown", "garbage", "", "203.0.113.1, unknown"] {
            let got = found("127.0.0.1", &[("X-Forwarded-For", value)], &proxies);
            assert_eq!(got, Client { ip: ip("127.0.0.1"), local: false }, "{value:?}");
        }
    }

    #[test]
    fn the_standard_header_is_read_with_quotes_ports_and_brackets() {
        let proxies = [Cidr::parse("127.0.0.1").unwrap()];
        let cases = [
            ("for=192.0.2.60;proto=http;by=203.0.113.43", Some("192.0.2.60")),
            ("for=\"[2001:db8:cafe::17]:4711\"", Some("2001:db8:cafe::17")),
            ("For=\"192.0.2.43:47011\", for=127.0.0.1", Some("192.0.2.43")),
            ("for=198.51.100.17;by=127.0.0.1, for=\"_hidden\"", None),
            ("for=unknown", None),
            ("proto=https", None),
            ("for=\"[2001:db8::1\"", None),
        ];
        for (value, want) in cases {
            let got = client_of("127.0.0.1", &[("Forwarded", value)], &proxies, ForwardedHeader::Forwarded);
            let want =
                want.map_or(Client { ip: ip("127.0.0.1"), local: false }, |w| Client { ip: ip(w), local: false });
            assert_eq!(got, want, "{value}");
        }
        // Only the named header is read: a proxy that writes one passes the other through as the client sent it.
        let both = [("X-Forwarded-For", "198.51.100.1"), ("Forwarded", "for=127.0.0.1")];
        assert_eq!(found("127.0.0.1", &both, &proxies), Client { ip: ip("198.51.100.1"), local: false });
        let got = client_of("127.0.0.1", &both, &proxies, ForwardedHeader::Forwarded);
        assert_eq!(got, Client { ip: ip("127.0.0.1"), local: true });
        // The named header absent, the other present: relayed, so not local, and counted under the proxy.
        let other = [("Forwarded", "for=127.0.0.1")];
        assert_eq!(found("127.0.0.1", &other, &proxies), Client { ip: ip("127.0.0.1"), local: false });
        assert_eq!(ForwardedHeader::from_name("X-Forwarded-For"), Some(ForwardedHeader::XForwardedFor));
        assert_eq!(ForwardedHeader::from_name("x-real-ip"), None);
    }

    #[test]
    fn the_hops_read_are_bounded() {
        let proxies = [Cidr::parse("10.0.0.0/8").unwrap()];
        let many = vec!["10.0.0.1"; FORWARDED_HOPS_MAX + 1].join(",");
        let got = found("10.0.0.9", &[("X-Forwarded-For", &format!("203.0.113.1,{many}"))], &proxies);
        assert_eq!(got, Client { ip: ip("10.0.0.9"), local: false });
        let few = vec!["10.0.0.1"; FORWARDED_HOPS_MAX - 1].join(",");
        let got = found("10.0.0.9", &[("X-Forwarded-For", &format!("203.0.113.1,{few}"))], &proxies);
        assert_eq!(got.ip, ip("203.0.113.1"));
    }
}
