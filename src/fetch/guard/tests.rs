use super::*;

fn policy() -> Policy {
    Policy::default()
}

#[track_caller]
fn refused(url: &str, code: &str) {
    match policy().check_url(url) {
        Err(r) => assert_eq!(r.code(), code, "{url}: {r}"),
        Ok(t) => panic!("{url} was accepted as {t:?}"),
    }
}

/// Hostile URLs, each refused before any connection, with its reason.
#[test]
fn hostile_urls_are_refused() {
    let table: &[(&str, &str)] = &[
        ("http://127.0.0.1/", "address_refused"),
        ("http://127.255.255.254/", "address_refused"),
        ("http://2130706433/", "address_refused"),
        ("http://0x7f000001/", "address_refused"),
        ("http://0x7f.1/", "address_refused"),
        ("http://0177.0.0.1/", "address_refused"),
        ("http://017700000001/", "address_refused"),
        ("http://127.1/", "address_refused"),
        // Issue 41: the host a browser reads, escapes and compatibility forms mapped.
        ("http://127.0.0.%31/", "address_refused"),
        ("http://%32130706433/", "address_refused"),
        ("http://１２７.０.０.１/", "address_refused"),
        ("http://①②⑦.0.0.1/", "address_refused"),
        ("http://0x7f。1/", "address_refused"),
        ("http://[::ffff:127.0.0.1]:80/", "address_refused"),
        ("http://[::FFFF:7F00:1]/", "address_refused"),
        ("http://exa%20mple.com/", "url_invalid"),
        ("http://xn--/", "url_invalid"),
        ("http://127.0.1/", "address_refused"),
        ("http://0/", "address_refused"),
        ("http://0.0.0.0/", "address_refused"),
        ("http://10.0.0.1/", "address_refused"),
        ("http://172.16.5.4/", "address_refused"),
        ("http://172.31.255.255/", "address_refused"),
        ("http://192.168.1.1/", "address_refused"),
        ("http://169.254.169.254/latest/meta-data/", "address_refused"),
        ("http://0xa9fea9fe/", "address_refused"),
        ("http://100.64.0.1/", "address_refused"),
        ("http://100.127.255.255/", "address_refused"),
        ("http://224.0.0.1/", "address_refused"),
        ("http://239.255.255.250/", "address_refused"),
        ("http://255.255.255.255/", "address_refused"),
        ("http://240.0.0.1/", "address_refused"),
        ("http://192.0.2.1/", "address_refused"),
        ("http://198.51.100.7/", "address_refused"),
        ("http://203.0.113.9/", "address_refused"),
        ("http://198.18.0.1/", "address_refused"),
        ("http://192.0.0.8/", "address_refused"),
        ("http://[::1]/", "address_refused"),
        ("http://[::]/", "address_refused"),
        ("http://[0:0:0:0:0:0:0:1]/", "address_refused"),
        ("http://[::ffff:127.0.0.1]/", "address_refused"),
        ("http://[::ffff:7f00:1]/", "address_refused"),
        ("http://[::ffff:8.8.8.8]/", "address_refused"),
        ("http://[::127.0.0.1]/", "address_refused"),
        ("http://[64:ff9b::10.0.0.1]/", "address_refused"),
        ("http://[64:ff9b::7f00:1]/", "address_refused"),
        ("http://[fd00::1]/", "address_refused"),
        ("http://[fc00::abcd]/", "address_refused"),
        ("http://[fe80::1]/", "address_refused"),
        ("http://[fec0::1]/", "address_refused"),
        ("http://[ff02::1]/", "address_refused"),
        ("http://[2001:db8::1]/", "address_refused"),
        ("http://[2002:c0a8:0101::1]/", "address_refused"),
        ("http://[2001::1]/", "address_refused"),
        ("http://[100::1]/", "address_refused"),
        ("http://user:pass@example.com/", "userinfo_refused"),
        ("http://user@127.0.0.1/", "userinfo_refused"),
        ("ftp://example.com/", "scheme_refused"),
        ("file:///etc/passwd", "scheme_refused"),
        ("gopher://example.com:70/", "scheme_refused"),
        ("javascript:alert(1)", "url_invalid"),
        ("http://example.com:22/", "port_refused"),
        ("https://example.com:8443/", "port_refused"),
        ("http://example.com:0/", "port_refused"),
        ("http://example.com:99999/", "url_invalid"),
        ("http:///path", "url_invalid"),
        ("http://exa mple.com/", "url_invalid"),
        ("http://example.com\\@127.0.0.1/", "url_invalid"),
        ("http://256.1.1.1/", "url_invalid"),
        ("http://1.2.3.4.5/", "url_invalid"),
        ("http://[::1/", "url_invalid"),
        ("http://2001:4860::8888:80/", "url_invalid"),
    ];
    assert!(table.len() >= 40);
    for (url, code) in table {
        refused(url, code);
    }
}

#[test]
fn public_urls_pass_and_are_normalised() {
    let t = policy().check_url("HTTPS://Example.COM/a?b=1#frag").unwrap();
    assert_eq!((t.https, t.host.as_str(), t.port, t.path.as_str()), (true, "example.com", 443, "/a?b=1"));
    assert_eq!(t.url(), "https://example.com/a?b=1");
    let t = policy().check_url("http://8.8.8.8").unwrap();
    assert_eq!(t.url(), "http://8.8.8.8/");
    let t = policy().check_url("http://134744072/").unwrap();
    assert_eq!(t.host, "8.8.8.8", "a decimal literal is read as browsers read it");
    let t = policy().check_url("http://[2606:4700::1111]:80/x").unwrap();
    assert_eq!(t.url(), "http://[2606:4700::1111]/x");
    assert!(policy().check_url("http://[64:ff9b::8.8.8.8]/").is_ok(), "NAT64 of a public address");
    assert!(policy().check_url("http://[2002:0808:0808::1]/").is_ok(), "6to4 of a public address");
    let t = policy().check_url("https://ＥＸＡＭＰＬＥ．ｃｏｍ/x").unwrap();
    assert_eq!(t.url(), "https://example.com/x", "the request goes to the host the guard judged");
    let t = policy().check_url("http://bücher.example/").unwrap();
    assert_eq!(t.url(), "http://xn--bcher-kva.example/");
    let t = policy().check_url("http://[0:0:0:0:0:ffff:808:808]/").unwrap_err();
    assert_eq!(
        t.to_string(),
        "::ffff:808:808 is ::ffff:8.8.8.8, in the IPv4-mapped (::ffff:0:0/96) range, which is never fetched"
    );
}

#[test]
fn the_allowlist_opens_named_host_ports_only() {
    let p = Policy { allow: vec![("127.0.0.1".into(), 8080)], ports: vec![] };
    assert!(p.check_url("http://127.0.0.1:8080/page").is_ok());
    assert_eq!(p.check_url("http://127.0.0.1:8081/").unwrap_err().code(), "port_refused");
    assert_eq!(p.check_url("http://127.0.0.1/").unwrap_err().code(), "address_refused");
    let t = p.check_url("http://127.0.0.1:8080/").unwrap();
    assert!(p.check_addresses(&t, &["127.0.0.1".parse().unwrap()]).is_ok());
    let ports = Policy { allow: vec![], ports: vec![8443] };
    assert!(ports.check_url("https://example.com:8443/").is_ok());
}

#[test]
fn resolved_addresses_are_all_checked() {
    let t = policy().check_url("http://example.com/").unwrap();
    assert!(policy().check_addresses(&t, &["93.184.216.34".parse().unwrap()]).is_ok());
    let mixed = ["93.184.216.34".parse().unwrap(), "10.0.0.5".parse().unwrap()];
    assert_eq!(policy().check_addresses(&t, &mixed).unwrap_err().code(), "address_refused");
    assert_eq!(policy().check_addresses(&t, &[]).unwrap_err().code(), "resolve_failed");
}

/// The IANA special-purpose address registries, one row per entry: (block, name, RFC, Globally Reachable as the
/// registry says). Transcribed from the registries' CSV files (IPv4 as updated 2025, IPv6 as updated 2025-10-09,
/// both as quoted verbatim with access date 2026-07-18); `192.0.0.170/32, 192.0.0.171/32` is one registry row,
/// split in two here. Every block is refused, whatever its Globally Reachable column says: the reachable ones are
/// anycast service addresses, DNS sinks and identifiers, never a page (see `check_v4` and `check_v6`). The first and
/// the last address of each block are checked.
const IANA_IPV4: &[(&str, &str, &str, &str)] = &[
    ("0.0.0.0/8", "\"This network\"", "RFC 791, section 3.2", "False"),
    ("0.0.0.0/32", "\"This host on this network\"", "RFC 1122, section 3.2.1.3", "False"),
    ("10.0.0.0/8", "Private-Use", "RFC 1918", "False"),
    ("100.64.0.0/10", "Shared Address Space", "RFC 6598", "False"),
    ("127.0.0.0/8", "Loopback", "RFC 1122, section 3.2.1.3", "False"),
    ("169.254.0.0/16", "Link Local", "RFC 3927", "False"),
    ("172.16.0.0/12", "Private-Use", "RFC 1918", "False"),
    ("192.0.0.0/24", "IETF Protocol Assignments", "RFC 6890, section 2.1", "False"),
    ("192.0.0.0/29", "IPv4 Service Continuity Prefix", "RFC 7335", "False"),
    ("192.0.0.8/32", "IPv4 dummy address", "RFC 7600", "False"),
    ("192.0.0.9/32", "Port Control Protocol Anycast", "RFC 7723", "True"),
    ("192.0.0.10/32", "Traversal Using Relays around NAT Anycast", "RFC 8155", "True"),
    ("192.0.0.170/32", "NAT64/DNS64 Discovery", "RFC 8880, RFC 7050 section 2.2", "False"),
    ("192.0.0.171/32", "NAT64/DNS64 Discovery", "RFC 8880, RFC 7050 section 2.2", "False"),
    ("192.0.2.0/24", "Documentation (TEST-NET-1)", "RFC 5737", "False"),
    ("192.31.196.0/24", "AS112-v4", "RFC 7535", "True"),
    ("192.52.193.0/24", "AMT", "RFC 7450", "True"),
    ("192.88.99.0/24", "Deprecated (6to4 Relay Anycast)", "RFC 7526", "(terminated 2015-03)"),
    ("192.88.99.2/32", "6a44-relay anycast address", "RFC 6751", "False"),
    ("192.168.0.0/16", "Private-Use", "RFC 1918", "False"),
    ("192.175.48.0/24", "Direct Delegation AS112 Service", "RFC 7534", "True"),
    ("198.18.0.0/15", "Benchmarking", "RFC 2544", "False"),
    ("198.51.100.0/24", "Documentation (TEST-NET-2)", "RFC 5737", "False"),
    ("203.0.113.0/24", "Documentation (TEST-NET-3)", "RFC 5737", "False"),
    ("240.0.0.0/4", "Reserved", "RFC 1112, section 4", "False"),
    ("255.255.255.255/32", "Limited Broadcast", "RFC 8190, RFC 919 section 7", "False"),
];

const IANA_IPV6: &[(&str, &str, &str, &str)] = &[
    ("::1/128", "Loopback Address", "RFC 4291", "False"),
    ("::/128", "Unspecified Address", "RFC 4291", "False"),
    ("::ffff:0:0/96", "IPv4-mapped Address", "RFC 4291", "False"),
    ("64:ff9b::/96", "IPv4-IPv6 Translat.", "RFC 6052", "True"),
    ("64:ff9b:1::/48", "IPv4-IPv6 Translat.", "RFC 8215", "False"),
    ("100::/64", "Discard-Only Address Block", "RFC 6666", "False"),
    ("100:0:0:1::/64", "Dummy IPv6 Prefix", "RFC 9780", "False"),
    ("2001::/23", "IETF Protocol Assignments", "RFC 2928", "False"),
    ("2001::/32", "TEREDO", "RFC 4380, RFC 8190", "N/A"),
    ("2001:1::1/128", "Port Control Protocol Anycast", "RFC 7723", "True"),
    ("2001:1::2/128", "Traversal Using Relays around NAT Anycast", "RFC 8155", "True"),
    ("2001:1::3/128", "DNS-SD Service Registration Protocol Anycast", "RFC 9665", "True"),
    ("2001:2::/48", "Benchmarking", "RFC 5180, RFC Errata 1752", "False"),
    ("2001:3::/32", "AMT", "RFC 7450", "True"),
    ("2001:4:112::/48", "AS112-v6", "RFC 7535", "True"),
    ("2001:10::/28", "Deprecated (previously ORCHID)", "RFC 4843", "(terminated 2014-03)"),
    ("2001:20::/28", "ORCHIDv2", "RFC 7343", "True"),
    ("2001:30::/28", "Drone Remote ID Protocol Entity Tags (DETs) Prefix", "RFC 9374", "True"),
    ("2001:db8::/32", "Documentation", "RFC 3849", "False"),
    ("2002::/16", "6to4", "RFC 3056", "N/A"),
    ("2620:4f:8000::/48", "Direct Delegation AS112 Service", "RFC 7534", "True"),
    ("3fff::/20", "Documentation", "RFC 9637", "False"),
    ("5f00::/16", "Segment Routing (SRv6) SIDs", "RFC 9602", "False"),
    ("fc00::/7", "Unique-Local", "RFC 4193, RFC 8190", "False"),
    ("fe80::/10", "Link-Local Unicast", "RFC 4291", "False"),
];

/// Blocks outside the special-purpose registries that are never a destination either: the IPv6 Address Space
/// registry reserves everything outside 2000::/3 (the global unicast space) but ULA, link-local and multicast.
const OTHER_RESERVED: &[(&str, &str, &str)] = &[
    ("224.0.0.0/4", "Multicast", "RFC 5771"),
    ("::ffff:0:0:0/96", "IPv4-translated (SIIT)", "RFC 2765, RFC 6145"),
    ("::/96", "IPv4-compatible (deprecated)", "RFC 4291"),
    ("::/8", "Reserved by IETF", "RFC 4291"),
    ("100::/8", "Reserved by IETF", "RFC 4291"),
    ("200::/7", "Reserved by IETF", "RFC 4048"),
    ("400::/6", "Reserved by IETF", "RFC 4291"),
    ("800::/5", "Reserved by IETF", "RFC 4291"),
    ("1000::/4", "Reserved by IETF", "RFC 4291"),
    ("4000::/3", "Reserved by IETF", "RFC 4291"),
    ("6000::/3", "Reserved by IETF", "RFC 4291"),
    ("8000::/3", "Reserved by IETF", "RFC 4291"),
    ("a000::/3", "Reserved by IETF", "RFC 4291"),
    ("c000::/3", "Reserved by IETF", "RFC 4291"),
    ("e000::/4", "Reserved by IETF", "RFC 4291"),
    ("f000::/5", "Reserved by IETF", "RFC 4291"),
    ("f800::/6", "Reserved by IETF", "RFC 4291"),
    ("fe00::/9", "Reserved by IETF", "RFC 4291"),
    ("fec0::/10", "Site-local (deprecated)", "RFC 3879"),
    ("ff00::/8", "Multicast", "RFC 4291"),
];

/// The first and the last address of a block.
fn ends(block: &str) -> (IpAddr, IpAddr) {
    let (addr, bits) = block.split_once('/').unwrap();
    let bits: u32 = bits.parse().unwrap();
    match addr.parse::<IpAddr>().unwrap() {
        IpAddr::V4(a) => {
            let host = if bits == 32 { 0 } else { u32::MAX >> bits };
            let first = u32::from(a) & !host;
            (IpAddr::V4(first.into()), IpAddr::V4((first | host).into()))
        }
        IpAddr::V6(a) => {
            let host = if bits == 128 { 0 } else { u128::MAX >> bits };
            let first = u128::from(a) & !host;
            (IpAddr::V6(first.into()), IpAddr::V6((first | host).into()))
        }
    }
}

#[track_caller]
fn refused_ip(ip: IpAddr, row: &str) {
    if let Ok(()) = check_ip(ip) {
        panic!("{ip} ({row}) is accepted");
    }
    // The same through a URL, as a page link would name it.
    let host = if ip.is_ipv6() { format!("[{ip}]") } else { ip.to_string() };
    let url = format!("http://{host}/");
    assert_eq!(policy().check_url(&url).map(|t| t.url()).unwrap_err().code(), "address_refused", "{url} ({row})");
}

#[test]
fn every_special_purpose_block_is_refused() {
    let mut rows = 0;
    for (block, name, rfc, reachable) in IANA_IPV4.iter().chain(IANA_IPV6) {
        let (first, last) = ends(block);
        let row = format!("{block} {name}, {rfc}, globally reachable: {reachable}");
        refused_ip(first, &row);
        refused_ip(last, &row);
        rows += 1;
    }
    for (block, name, rfc) in OTHER_RESERVED {
        let (first, last) = ends(block);
        let row = format!("{block} {name}, {rfc}");
        refused_ip(first, &row);
        refused_ip(last, &row);
        rows += 1;
    }
    assert_eq!(rows, 26 + 25 + 20);
}

/// Issue 13, finding 10: the SIIT form of 127.0.0.1 passed the guard.
#[test]
fn ipv4_translated_addresses_are_refused() {
    for url in ["http://[::ffff:0:127.0.0.1]/", "http://[::ffff:0:7f00:1]/", "http://[::ffff:0:8.8.8.8]/"] {
        refused(url, "address_refused");
    }
}

/// The deliberate decisions on blocks that embed an IPv4 address: NAT64's well-known prefix (globally reachable: a
/// DNS64 network hands out such addresses for every IPv4-only site) and 6to4 are judged by the IPv4 address they
/// carry; Teredo (a host's tunnel, its client address obfuscated), the mapped and the compatible forms are refused
/// whatever they carry.
#[test]
fn embedded_ipv4_decisions() {
    let allowed = ["64:ff9b::8.8.8.8", "64:ff9b::93.184.216.34", "2002:808:808::1", "2002:5db8:d822:1::1"];
    for ip in allowed {
        assert_eq!(check_ip(ip.parse().unwrap()), Ok(()), "{ip}");
    }
    let refused = [
        "64:ff9b::127.0.0.1",
        "64:ff9b::10.1.2.3",
        "64:ff9b::169.254.169.254",
        "64:ff9b::192.168.0.1",
        "64:ff9b::100.64.0.1",
        "64:ff9b::224.0.0.1",
        "2002:7f00:1::1",
        "2002:a9fe:a9fe::1",
        "2002:c0a8:101::1",
        "2002:a00:1::",
        "2001:0:4136:e378:8000:63bf:3fff:fdd2",
        "2001::808:808",
        "::ffff:8.8.8.8",
        "::8.8.8.8",
        "::ffff:0:8.8.8.8",
    ];
    for ip in refused {
        assert!(check_ip(ip.parse().unwrap()).is_err(), "{ip}");
    }
}

#[test]
fn ordinary_public_addresses_pass() {
    for ip in [
        "8.8.8.8",
        "1.1.1.1",
        "93.184.216.34",
        "192.0.1.255",
        "192.0.3.0",
        "192.88.98.255",
        "192.88.100.0",
        "223.255.255.255",
        "2606:4700::1111",
        "2a00:1450:4001:80b::200e",
        "2001:200::1",
        "2620:4f:7fff::1",
        "2620:4f:8001::1",
        "3ffe:ffff::1",
        "3fff:1000::1",
    ] {
        assert_eq!(check_ip(ip.parse().unwrap()), Ok(()), "{ip}");
    }
}
