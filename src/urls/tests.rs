use super::*;

/// The host a browser reads in `url` (`None`: the URL does not parse).
#[track_caller]
fn check(url: &str, expected: Option<&str>) {
    assert_eq!(host(url).as_deref(), expected, "{url:?}");
}

/// The URL standard's host parser, on vectors of the web platform tests (`url/resources/urltestdata.json`) and
/// others, each checked against a browser engine's URL parser (ada, in Node.js).
#[test]
fn hosts_as_the_url_standard_parses_them() {
    let table: &[(&str, Option<&str>)] = &[
        ("http://ExAmPlE.CoM", Some("example.com")),
        ("http://www.foo。bar.com", Some("www.foo.bar.com")),
        ("http://Ｇｏ.com", Some("go.com")),
        ("http://你好你好", Some("xn--6qqa088eba")),
        ("https://faß.ExAmPlE/", Some("xn--fa-hia.example")),
        ("http://!\"$&'()*+,-.;=_`{}~/", Some("!\"$&'()*+,-.;=_`{}~")),
        ("http://a..b", Some("a..b")),
        ("http://xn--fa-hia.de.", Some("xn--fa-hia.de.")),
        ("http://XN--FA-HIA.de", Some("xn--fa-hia.de")),
        ("http://09.com", Some("09.com")),
        // Compatibility forms, ignored code points and NFC.
        ("http://𝐞𝐯𝐢𝐥.com", Some("evil.com")),
        ("http://ⓔⓥⓘⓛ.com", Some("evil.com")),
        ("http://eviⅼ.com", Some("evil.com")),
        ("http://evil.cℴm", Some("evil.com")),
        ("http://ev\u{AD}il.com", Some("evil.com")),
        ("http://e\u{301}.com", Some("xn--9ca.com")),
        ("http://e%CC%81.com", Some("xn--9ca.com")),
        ("http://u\u{308}\u{304}.com", Some("xn--1ja.com")),
        ("http://á\u{323}.com", Some("xn--lsa752l.com")),
        ("http://a\u{323}\u{301}.com", Some("xn--lsa752l.com")),
        ("http://\u{1100}\u{1161}.com", Some("xn--o39a.com")),
        ("http://xn--e-ufa.com", Some("xn--e-ufa.com")),
        // Failures: a code point no host holds, before or after mapping, bad punycode, an empty host.
        ("http://GOO \u{3000}goo.com", None),
        ("http://\u{FDD0}zyx.com", None),
        ("http://％４１.com", None),
        ("http://%ef%bc%85%ef%bc%94%ef%bc%91.com", None),
        ("http://a<b", None),
        ("http://%00.com", None),
        ("http://\u{AD}/", None),
        ("http://a.b.c.xn--pokxncvks", None),
        ("http://xn--a.com", None),
        ("http://xn--ASCII-.com", None),
        ("http://[www.google.com]/", None),
        // IPv4 in every notation; a number last and no address is a failure.
        ("http://0x7f.1", Some("127.0.0.1")),
        ("http://127.1", Some("127.0.0.1")),
        ("http://0177.0.0.1", Some("127.0.0.1")),
        ("http://2130706433", Some("127.0.0.1")),
        ("http://①②⑦.0.0.1", Some("127.0.0.1")),
        ("http://%30%78%63%30%2e%30%32%35%30.01", Some("192.168.0.1")),
        ("http://0x.0x.0", Some("0.0.0.0")),
        ("http://4294967295", Some("255.255.255.255")),
        ("http://4294967296", None),
        ("http://0xffffffff1", None),
        ("http://256.256.256.256", None),
        ("http://192.168.0.257", None),
        ("http://1.2.3.4.5", None),
        ("http://1.2.3.4.5.", None),
        ("http://foo.09", None),
        ("http://foo.0x4", None),
        ("http://1.0x.08", None),
        ("http://0999999999999999999/", None),
        ("http://10.0.0.xn--pokxncvks", None),
        // IPv6, as the standard writes it.
        ("http://[1:0::]", Some("[1::]")),
        ("http://[0:0:0:0:0:0:13.1.68.3]", Some("[::d01:4403]")),
        ("http://[::ffff:127.0.0.1]", Some("[::ffff:7f00:1]")),
        ("http://[1:0:0:2::3:0]", Some("[1::2:0:0:3:0]")),
        ("http://[1::2:0:0:3:0:0]", Some("[1:0:2::3:0:0]")),
        ("http://[::127.0.0.1.]", None),
    ];
    for (url, expected) in table {
        check(url, *expected);
    }
}

/// What a browser reads before the host: the scheme, slashes and backslashes, userinfo, the port, tabs and newlines.
#[test]
fn the_authority_as_a_browser_reads_it() {
    check("https://evil.com\\@good.com/", Some("evil.com"));
    check("https://user:pass@Example.COM:8080/x", Some("example.com"));
    check("https:\\\\example.com/", Some("example.com"));
    check("http:example.com", Some("example.com"));
    check(" http://exa\tmp\nle.com/ ", Some("example.com"));
    check("https://example.com:+80/", None);
    check("https://example.com:65536/", None);
    check("https://[::1]x/", None);
    check("https:///", None);
    check("ftp://example.com/", None);
    check("no scheme", None);
    assert_eq!(authority("https://example.com:443/"), Some((true, Host::Domain("example.com".into()), Some(443))));
    assert_eq!(authority("http://[::1]:/"), Some((false, Host::Ipv6(Ipv6Addr::LOCALHOST), None)));
}

#[test]
fn origins_as_a_browser_serializes_them() {
    assert_eq!(serialized_origin("https://Bücher.example:443/x").as_deref(), Some("https://xn--bcher-kva.example"));
    assert_eq!(serialized_origin("HTTP://127.1:80").as_deref(), Some("http://127.0.0.1"));
    assert_eq!(serialized_origin("http://[0::1]:8080").as_deref(), Some("http://[::1]:8080"));
    assert_eq!(serialized_origin("null"), None);
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
    assert_eq!(parse_ipv4("0x00000000000000000000000000007f.1"), Some(Ipv4Addr::new(127, 0, 0, 1)), "any zeros");
    assert_eq!(parse_ipv4("+1.2.3.4"), None);
    assert_eq!(parse_ipv4("1.2.3.4."), Some(Ipv4Addr::new(1, 2, 3, 4)));
    assert_eq!(parse_ipv4("1.2.3.4.."), None);
}

#[test]
fn percent_decoding() {
    assert_eq!(percent_decode("a%20b%zz%4"), "a b%zz%4");
    assert_eq!(percent_decode("%E6%97%A5"), "日");
    assert_eq!(percent_decode("a+b"), "a+b");
    assert_eq!(percent_decode("%ff"), "\u{FFFD}");
}
