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

#[test]
fn ipv4_parser() {
    assert_eq!(parse_ipv4("1.2.3.4"), Some(Ipv4Addr::new(1, 2, 3, 4)));
    assert_eq!(parse_ipv4("0x7f.0.0.1"), Some(Ipv4Addr::new(127, 0, 0, 1)));
    assert_eq!(parse_ipv4("127.65535"), Some(Ipv4Addr::new(127, 0, 255, 255)));
    assert_eq!(parse_ipv4("127.65536"), Some(Ipv4Addr::new(127, 1, 0, 0)));
    assert_eq!(parse_ipv4("127.16777216"), None);
    assert_eq!(parse_ipv4("4294967295"), Some(Ipv4Addr::new(255, 255, 255, 255)));
    assert_eq!(parse_ipv4("4294967296"), None);
    assert_eq!(parse_ipv4("08.0.0.1"), None, "8 is not an octal digit");
}
