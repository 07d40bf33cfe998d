use super::*;

#[track_caller]
fn check(input: &str, expected: Option<&str>) {
    assert_eq!(to_ascii(input).as_deref(), expected, "{input:?}");
}

#[test]
fn the_table_is_read_whole() {
    let t = tables();
    // The counts of the lines of each section of tables.txt.
    let text = include_str!("tables.txt");
    let count = |name: &str| {
        let from = text.find(&format!("@{name}\n")).unwrap();
        text[from + name.len() + 2..].lines().take_while(|l| !l.starts_with('@')).count()
    };
    assert_eq!(t.map.len(), count("map"));
    assert_eq!(t.ccc.len(), count("ccc"));
    assert_eq!(t.compositions.len(), count("compose"));
    assert!(t.map.len() > 5_000 && t.compositions.len() > 500, "{} {}", t.map.len(), t.compositions.len());
}

/// The look-alikes of issue 41, and the kinds of compatibility forms: each is the name a browser opens.
#[test]
fn compatibility_forms_are_their_letters() {
    for look_alike in [
        "𝐞𝐯𝐢𝐥.com",
        "ⓔⓥⓘⓛ.com",
        "ⒺⓋⒾⓁ.com",
        "eviⅼ.com",
        "evil.cℴm",
        "ＥＶＩＬ．ｃｏｍ",
        "evil｡com",
        "evil。com",
        "𝕖𝕧𝕚𝕝.𝕔𝕠𝕞",
        "ev\u{AD}il\u{200B}.com",
        "e\u{FE0F}vil.com",
    ] {
        check(look_alike, Some("evil.com"));
    }
    check("ǅ.example", Some("xn--d-toa.example"));
    check("Ⅻ.example", Some("xii.example"));
    check("①②⑦.0.0.1", Some("127.0.0.1"));
    check("㎡", Some("m2"));
    check("ﬁle.example", Some("file.example"));
}

/// Vectors of UTS #46's conformance file (IdnaTestV2.txt, Unicode 17), with the URL standard's options:
/// nontransitional (deviations kept), no hyphen, STD3 or length rules.
#[test]
fn uts46_conformance_vectors() {
    let table: &[(&str, Option<&str>)] = &[
        ("fass.de", Some("fass.de")),
        ("faß.de", Some("xn--fa-hia.de")),
        ("Faß.de", Some("xn--fa-hia.de")),
        ("xn--fa-hia.de", Some("xn--fa-hia.de")),
        ("à.\u{5D0}\u{308}", Some("xn--0ca.xn--ssa73l")),
        ("a\u{300}.\u{5D0}\u{308}", Some("xn--0ca.xn--ssa73l")),
        ("A\u{300}.\u{5D0}\u{308}", Some("xn--0ca.xn--ssa73l")),
        ("xn--0ca.xn--ssa73l", Some("xn--0ca.xn--ssa73l")),
        ("a.b.c。d。", Some("a.b.c.d.")),
        ("U\u{308}.xn--tda", Some("xn--tda.xn--tda")),
        ("xn--u-ccb", None),
        ("a⒈com", None),
        ("xn--a-ecp.ru", None),
        ("xn--0.pt", None),
        ("xn--a.pt", None),
        ("xn--a-Ä.pt", None),
        ("日本語。ＪＰ", Some("xn--wgv71a119e.jp")),
        ("☕.us", Some("xn--53h.us")),
        ("Ⅎ", Some("xn--73g")),
        ("\u{2132}.example", Some("xn--73g.example")),
        ("ß", Some("xn--zca")),
        ("ς", Some("xn--3xa")),
        ("Σ", Some("xn--4xa")),
        ("xn---", None),
        ("xn--ASCII-", None),
        ("\u{200D}", Some("xn--1ug")),
        ("\u{AD}", None),
        ("", None),
        ("\u{0}", Some("\u{0}")),
    ];
    for (input, expected) in table {
        check(input, *expected);
    }
}

/// RFC 3492's samples, each way.
#[test]
fn punycode_as_the_rfc_writes_it() {
    let samples = [
        ("bücher", "bcher-kva"),
        ("münchen", "mnchen-3ya"),
        ("例え", "r8jz45g"),
        ("他们为什么不说中文", "ihqwcrb4cv8a8dqg056pqjye"),
        ("почемужеонинеговорятпорусски", "b1abfaaepdrnnbgefbadotcwatmq2g4l"),
        ("3年b組金八先生", "3b-ww4c5e180e575a65lsy2b"),
    ];
    for (label, encoded) in samples {
        let chars: Vec<char> = label.chars().collect();
        assert_eq!(punycode_encode(&chars).as_deref(), Some(encoded));
        assert_eq!(punycode_decode(encoded), Some(chars));
    }
    assert_eq!(punycode_decode("99999999999999999"), None, "overflow");
    assert_eq!(punycode_decode("a-!"), None);
    assert_eq!(punycode_decode("ü-a"), None);
}

/// A name is bounded before it is mapped, and mapping what was mapped changes nothing.
#[test]
fn bounded_and_idempotent() {
    let started = std::time::Instant::now();
    assert_eq!(to_ascii(&"例".repeat(100_000)), None);
    assert!(to_ascii(&"例".repeat(341)).is_some(), "1,023 bytes, one label");
    assert_eq!(to_ascii(&"\u{FDFA}".repeat(300)), None, "each code point mapped to 18: past the bound once mapped");
    assert_eq!(to_ascii(&format!("xn--{}", "a".repeat(1_020))), None);
    assert!(started.elapsed() < std::time::Duration::from_secs(1), "{:?}", started.elapsed());
    for name in ["ÄPFEL.de", "𝐞𝐯𝐢𝐥.com", "faß.de", "日本語。ＪＰ", "a..b", "xn--0ca.xn--ssa73l"] {
        let once = to_ascii(name).unwrap();
        assert_eq!(to_ascii(&once).as_deref(), Some(once.as_str()), "{name}");
    }
}

/// The rules that only refuse a name and would need tables of their own are not applied (the module's comment):
/// browsers refuse these names, which are mapped here to names of their own, no other name's look-alikes.
#[test]
fn the_rules_that_only_refuse_are_not_applied() {
    check("\u{301}a.com", Some("xn--a-wbb.com"));
    check("1.\u{5D0}", Some("1.xn--4db"));
    check("a\u{200C}b", Some("xn--ab-j1t"));
}
