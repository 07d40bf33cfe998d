//! The properties each fuzz target checks, in one file shared by the fuzz targets (`fuzz_targets/*.rs`) and the
//! corpus replay test (`tests/fuzz_replay.rs`), which runs them on stable Rust in CI.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)]

use websearchd::html::{Sink, Tag, Tokenizer};
use websearchd::http::client_addr::{self, Cidr};
use websearchd::http::parse_head;
use websearchd::search::sources::{xml_char, Kind, Page, REASON_CHARS_MAX, SNIPPET_CHARS_MAX, TITLE_CHARS_MAX};
use websearchd::search::{url, SearchRequest, MAX_RESULTS_MAX, QUERY_CHARS_MAX};

#[derive(Default, PartialEq, Debug)]
struct Record(Vec<String>);

impl Sink for Record {
    fn start_tag(&mut self, tag: &Tag) {
        self.0.push(format!("<{} {:?} {}", tag.name, tag.attrs, tag.self_closing));
    }
    fn end_tag(&mut self, name: &str) {
        self.0.push(format!("</{name}"));
    }
    fn text(&mut self, text: &str) {
        // Text may arrive in pieces: merge them, so only the token stream is compared.
        match self.0.last_mut() {
            Some(last) if last.starts_with('"') => last.push_str(text),
            _ => self.0.push(format!("\"{text}")),
        }
    }
    fn comment(&mut self, text: &str) {
        self.0.push(format!("<!--{text}"));
    }
}

/// The first byte picks a chunk size; the tokens must not depend on it.
pub fn html_tokenizer(data: &[u8]) {
    let Some((&first, input)) = data.split_first() else {
        return;
    };
    let chunk = usize::from(first % 64) + 1;
    let mut whole = Record::default();
    Tokenizer::run(input, &mut whole);
    let mut t = Tokenizer::new();
    let mut chunked = Record::default();
    for piece in input.chunks(chunk) {
        t.feed(piece, &mut chunked);
    }
    t.finish(&mut chunked);
    assert_eq!(whole, chunked, "chunk size {chunk}");
}

/// The first byte picks the source; results are always organic, absolute http(s) links with a title, each within
/// the bounds of a result, and a page's reason within its bound.
pub fn search_page(data: &[u8]) {
    let Some((&first, body)) = data.split_first() else {
        return;
    };
    let kind = Kind::ALL[usize::from(first) % Kind::ALL.len()];
    let status = if first & 0x80 != 0 { 202 } else { 200 };
    let page = kind.parse(status, body);
    if let Page::Blocked(why) | Page::Unparseable(why) = &page {
        assert!(why.chars().count() <= REASON_CHARS_MAX, "{why}");
        assert!(why.chars().all(xml_char), "{why:?}");
    }
    if let Page::Results(hits) = page {
        assert!(!hits.is_empty());
        for h in hits {
            assert!(!h.title.is_empty());
            assert!(h.title.chars().count() <= TITLE_CHARS_MAX && h.snippet.chars().count() <= SNIPPET_CHARS_MAX);
            assert!(h.url.len() <= url::RESULT_URL_BYTES_MAX, "{h:?}");
            assert!([&h.title, &h.url, &h.snippet].iter().all(|t| t.chars().all(xml_char)), "{h:?}");
            let scheme = h.url.get(..8).unwrap_or(&h.url).to_ascii_lowercase();
            assert!(scheme.starts_with("http://") || scheme.starts_with("https://"), "{h:?}");
            let host = url::host(&h.url).unwrap_or_default();
            assert!(url::valid_host(&host), "{h:?}");
            // DuckDuckGo's own links are never results of its pages; another engine may list duckduckgo.com.
            let ddg = host == "duckduckgo.com" || host.ends_with(".duckduckgo.com");
            assert!(!matches!(kind, Kind::DdgHtml | Kind::DdgLite) || !ddg, "{h:?}");
        }
    }
}

pub fn http_head(data: &[u8]) {
    match parse_head(data, 8_192, 64, 16_384) {
        Ok(Some(head)) => {
            assert!(head.framing.head_bytes <= data.len());
            assert!(head.framing.content_length <= 16_384);
            let headers = head.headers(data);
            assert!(headers.len() <= 64);
            for (name, value) in headers.iter() {
                assert!(!name.is_empty() && name.bytes().all(|b| b.is_ascii_graphic() && b != b':'), "{name:?}");
                assert!(value.as_ptr() >= data.as_ptr() && value.len() <= head.framing.head_bytes);
            }
            let (method, path) = (head.method(data), head.path(data));
            assert!(!method.is_empty() && !path.is_empty(), "{method:?} {path:?}");
            forwarded(&headers);
        }
        Ok(None) => assert!(data.len() <= 8_192),
        Err(_) => {}
    }
}

/// Who the client is, from any headers: without trusted proxies always the peer; from a trusted peer, the peer or an
/// address from a forwarding header; local only when that address is loopback.
fn forwarded(headers: &websearchd::http::Headers<'_>) {
    let peer: std::net::IpAddr = "127.0.0.1".parse().unwrap();
    let header = client_addr::ForwardedHeader::XForwardedFor;
    let untrusted = client_addr::client(peer, headers, &[], header);
    assert_eq!(untrusted.ip, peer);
    let trusted = [Cidr::parse("127.0.0.0/8").unwrap(), Cidr::parse("10.0.0.0/8").unwrap()];
    let c = client_addr::client(peer, headers, &trusted, header);
    assert!(!c.local || c.ip.is_loopback());
    if c.ip != peer {
        let forwarding = headers
            .iter()
            .any(|(n, _)| n.eq_ignore_ascii_case("forwarded") || n.eq_ignore_ascii_case("x-forwarded-for"));
        assert!(forwarding, "{:?} came from no forwarding header", c.ip);
    }
}

pub fn service_request(data: &[u8]) {
    use websearchd::search::controls::{Region, SafeSearch, DOMAINS_MAX, DOMAIN_BYTES_MAX, SITE_QUERY_BYTES_MAX};
    use websearchd::search::sources::Kind;
    if let Ok(r) = SearchRequest::from_json(data) {
        assert!(!r.query.is_empty() && r.query.chars().count() <= QUERY_CHARS_MAX);
        assert!(r.query == r.query.trim() && !r.query.contains("  "));
        assert!((1..=MAX_RESULTS_MAX).contains(&r.max_results));
        assert!(r.extract <= websearchd::search::EXTRACT_PAGES_MAX);
        // The controls: each domain in its one form, and what every source is sent stays within its bounds.
        let c = r.controls.resolve(&Region::parse("us-en").unwrap(), SafeSearch::Moderate);
        for list in [&c.include_domains, &c.exclude_domains] {
            assert!(list.len() <= DOMAINS_MAX);
            for d in list.iter() {
                assert!(d.len() <= DOMAIN_BYTES_MAX && !d.is_empty(), "{d:?}");
                assert!(d.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-' || b == b'.'));
            }
        }
        assert_eq!(c.region.code().len(), 5);
        for kind in Kind::ALL {
            let sent = c.ask(kind, &r.query, 20_000);
            assert!(sent.query.starts_with(&r.query));
            assert!(sent.query.len() <= SITE_QUERY_BYTES_MAX.max(r.query.len()), "{}", sent.query);
            let _ = c.unsupported(kind, kind.default_url(), &c.region);
        }
        // A subdomain of an included domain passes unless an excluded domain covers it.
        for d in c.include_domains.iter() {
            let host = format!("www.{d}");
            let excluded = c.exclude_domains.iter().any(|x| host == *x || host.ends_with(&format!(".{x}")));
            assert_eq!(c.admits(&format!("https://{host}/page")), !excluded, "{host}");
        }
    }
}

pub fn result_url(data: &[u8]) {
    let s = String::from_utf8_lossy(data);
    if let Some(u) = url::unwrap_result_link(&s) {
        assert!(url::host(&u).is_some_and(|h| !h.is_empty()));
    }
    let _ = url::dedupe_key(&s);
    let _ = url::percent_decode(&s);
    let _ = url::form_encode(&s);
}

/// A host as a browser reads it (`urls::Host`, `idna::to_ascii`, the guard's `normalize_host`): never a panic, ASCII
/// out, within the bound, and mapping what was mapped gives it again; punycode decodes what it encodes.
pub fn host_map(data: &[u8]) {
    use websearchd::{idna, urls};
    let s = String::from_utf8_lossy(data);
    if let Some(ascii) = idna::to_ascii(&s) {
        assert!(ascii.is_ascii() && !ascii.is_empty() && ascii.len() <= idna::DOMAIN_BYTES_MAX, "{s:?}");
        assert_eq!(idna::to_ascii(&ascii).as_deref(), Some(ascii.as_str()), "{s:?}");
    }
    if let Some(host) = urls::Host::parse(&s) {
        let text = host.to_string();
        assert!(text.is_ascii() && !text.is_empty(), "{s:?}");
        assert_eq!(urls::Host::parse(&text), Some(host), "{s:?}");
    }
    if let Some(origin) = urls::serialized_origin(&format!("https://{s}/")) {
        assert_eq!(urls::serialized_origin(&origin).as_deref(), Some(origin.as_str()), "{s:?}");
    }
    let label: String = s.chars().take(63).collect();
    if let Some(decoded) = idna::punycode_decode(&label) {
        if let Some(encoded) = idna::punycode_encode(&decoded) {
            assert_eq!(idna::punycode_decode(&encoded), Some(decoded), "{s:?}");
        }
    }
    let _ = websearchd::fetch::guard::normalize_host(&s);
}

/// A payment header: decoding and the local checks never panic, and what passes is for the terms.
pub fn x402_payment(data: &[u8]) {
    use websearchd::x402::payment::{check, decode};
    use websearchd::x402::{Network, Terms};
    let Some((&first, rest)) = data.split_first() else {
        return;
    };
    let version = 1 + (first & 1);
    let header = String::from_utf8_lossy(rest);
    // Raw bytes are also tried as the JSON itself, base64-encoded, to reach past the base64 layer.
    let encoded = websearchd::codec::base64_encode(rest);
    let pay_to = websearchd::x402::eip712::parse_address("0x209693Bc6afc0C5328bA36FaF03C514EF312287C").unwrap();
    let terms = Terms { network: Network::Base, pay_to, price: 5_000, max_timeout_s: 60 };
    for h in [header.as_ref(), encoded.as_str()] {
        if let Ok(p) = decode(h, version) {
            if check(&p, &terms, 1_800_000_000).is_ok() {
                assert_eq!(p.authorization.to, pay_to);
                assert_eq!(p.authorization.value, 5_000);
            }
        }
    }
}

/// The extractor: no panic on any input, the same output whatever the chunking (the first byte picks the chunk
/// size), and a budgeted extract within its budget.
pub fn extract(data: &[u8]) {
    use websearchd::extract::{budget, focus, Extractor, Options};
    let Some((&first, html)) = data.split_first() else {
        return;
    };
    let whole = Extractor::run(html, Options::default());
    let mut e = Extractor::new(Options::default());
    for chunk in html.chunks(usize::from(first % 64) + 1) {
        e.feed(chunk);
    }
    assert_eq!(e.finish(), whole);
    let budget_tokens = 100 + usize::from(first) * 8;
    let fitted = budget::fit(&whole.blocks, budget_tokens);
    assert!(fitted.tokens <= budget_tokens);
    // The query-focused cut, for words of the page itself (so that passages match).
    let words: Vec<&str> = fitted.markdown.split_whitespace().skip(usize::from(first % 32)).take(3).collect();
    let focused = focus::fit(&whole.blocks, budget_tokens, &words.join(" "));
    assert!(focused.tokens <= budget_tokens);
}

/// A notary request body: parsing never panics and what passes is exactly one SHA-256 in lowercase hex. The same
/// bytes read as a receipt record (or a list of them) never panic the offline verifier or the chain check.
pub fn notary_request(data: &[u8]) {
    if let Ok(hash) = websearchd::notary::parse_request(data) {
        assert!(hash.len() == 64 && hash.bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b)));
    }
    if let Ok(v) = serde_json::from_slice::<serde_json::Value>(data) {
        let keys = websearchd::sign::keys_from_jwks(&v);
        let _ = websearchd::notary::verify_record(&v, &keys);
        if let Some(items) = v.as_array() {
            let _ = websearchd::notary::check_links(items);
        }
    }
}

/// RFC 8785: canonical JSON parses back to the same value, and canonicalising it again changes nothing.
pub fn canonical_json(data: &[u8]) {
    let Ok(v) = serde_json::from_slice::<serde_json::Value>(data) else { return };
    let canonical = websearchd::jcs::canonicalize(&v);
    let again: serde_json::Value = serde_json::from_str(&canonical).expect("canonical JSON parses");
    assert_eq!(websearchd::jcs::canonicalize(&again), canonical);
}

/// Map feeds: the first byte picks the parser; no panic, the cap holds, and every feature is a valid point.
pub fn map_feed(data: &[u8]) {
    use websearchd::map::feeds;
    let Some((&pick, body)) = data.split_first() else { return };
    let max = 50;
    let parsed = match pick % 9 {
        0 => feeds::usgs(body, max),
        1 => feeds::adsb_v2(body, max),
        2 => feeds::opensky(body, max),
        3 => feeds::digitraffic(body, max),
        4 => feeds::opentopodata(body, max),
        5 => feeds::ucdp(body, max),
        6 => feeds::gdelt_events(body, max),
        7 => {
            let _ = feeds::gdelt_manifest(body);
            let _ = feeds::unzip_first(body, 1 << 16);
            return;
        }
        _ => {
            // A gzip feed body, read as the map's client reads it (`fetch::body::decoded`, within a cap).
            use std::io::Read as _;
            let gzip = websearchd::fetch::body::Coding::Gzip;
            let mut out = Vec::new();
            let _ = websearchd::fetch::body::decoded(body, gzip).take((1 << 16) + 1).read_to_end(&mut out);
            assert!(out.len() <= (1 << 16) + 1);
            return;
        }
    };
    if let Ok(p) = parsed {
        assert!(p.features.count() <= max);
        let features = p.features.values();
        assert_eq!(features.len(), p.features.count(), "the rendered features read back");
        for f in &features {
            let c = f["geometry"]["coordinates"].as_array().expect("coordinates");
            let (lon, lat) = (c[0].as_f64().expect("lon"), c[1].as_f64().expect("lat"));
            assert!((-180.0..=180.0).contains(&lon) && (-90.0..=90.0).contains(&lat));
        }
    }
}

/// The map feeds' bounded JSON reader: never panics; a body it reads as a value it also skips, to the same end; what
/// serde_json reads it reads too, and the same value when nothing of it is past the reader's bounds (every body of
/// at most 200 bytes is within the cost and string caps; nesting is checked).
pub fn map_json(data: &[u8]) {
    use websearchd::map::json::{Reader, VALUE_DEPTH_MAX};
    fn depth(v: &serde_json::Value) -> usize {
        match v {
            serde_json::Value::Array(a) => 1 + a.iter().map(depth).max().unwrap_or(0),
            serde_json::Value::Object(o) => 1 + o.values().map(depth).max().unwrap_or(0),
            _ => 0,
        }
    }
    let mut r = Reader::new(data);
    let value = r.value().and_then(|v| r.end().map(|()| v));
    let mut s = Reader::new(data);
    let skipped = s.skip().and_then(|()| s.end());
    if let Err(e) = &skipped {
        assert!(value.is_err(), "read but not skipped: {e}");
    }
    if let Ok(expected) = serde_json::from_slice::<serde_json::Value>(data) {
        match &value {
            Ok(v) if data.len() <= 200 && depth(&expected) <= VALUE_DEPTH_MAX => assert_eq!(v, &expected),
            Ok(_) => {}
            Err(e) => assert!(e.contains("number too long"), "serde_json reads it, the reader does not: {e}"),
        }
    }
}

/// A tool set for the MCP checks: `t` answers, `p` asks for payment, anything else is no tool.
struct StubTools;

impl websearchd::mcp::Tools for StubTools {
    fn list(&self) -> Vec<serde_json::Value> {
        vec![serde_json::json!({ "name": "t", "inputSchema": { "type": "object" } })]
    }

    fn call(
        &self,
        name: &str,
        arguments: &serde_json::Map<String, serde_json::Value>,
        meta: &serde_json::Map<String, serde_json::Value>,
    ) -> Option<websearchd::mcp::ToolResult> {
        use websearchd::mcp::ToolResult;
        // A payment in `_meta` is read as the server reads it: never a panic, whatever it holds.
        if let Some(payment) = meta.get("x402/payment") {
            let _ = websearchd::x402::payment::from_object(payment);
        }
        match name {
            "t" => Some(ToolResult::new(serde_json::Value::Object(arguments.clone()), String::new(), false)),
            "p" => Some(ToolResult::payment_required(serde_json::json!({ "x402Version": 2, "accepts": [] }))),
            _ => None,
        }
    }
}

/// MCP's JSON-RPC messages as stdio lines and as HTTP bodies: the first byte picks the chunk size, the line limit
/// and the door. Lines do not depend on the chunking and stay within the limit; every answer is one JSON-RPC 2.0
/// response with exactly one of `result` and `error`, its id the request's (a string or an integer) or null; an
/// `Mcp-Name` header value decodes without panic.
pub fn mcp_message(data: &[u8]) {
    use websearchd::mcp::{next_line, Line, Session};
    let Some((&first, rest)) = data.split_first() else {
        return;
    };
    let max_bytes = 16 + usize::from(first >> 4) * 64;
    let read = |chunk: usize| {
        let mut reader = std::io::BufReader::with_capacity(chunk, rest);
        let (mut buf, mut lines) = (Vec::new(), Vec::new());
        loop {
            match next_line(&mut reader, &mut buf, max_bytes).expect("in-memory reads do not fail") {
                Line::End => return lines,
                Line::TooLong => lines.push(None),
                Line::Message => {
                    assert!(buf.len() <= max_bytes);
                    lines.push(Some(buf.clone()));
                }
            }
        }
    };
    let lines = read(rest.len().max(1));
    assert_eq!(read(usize::from(first % 7) + 1), lines, "the lines depend on the chunking");
    let tools = StubTools;
    let mut stdio = Session::new(&tools);
    let paid = first & 1 == 1;
    let handshake = if first & 2 == 2 { Some("2025-11-25") } else { None };
    for line in lines.iter().flatten().map(Vec::as_slice).chain([rest]) {
        let answers = [stdio.handle(line), Session::stateless(&tools, handshake, paid).handle(line)];
        for answer in answers.into_iter().flatten() {
            assert_eq!(answer["jsonrpc"], "2.0", "{answer}");
            assert!(
                answer["id"].is_null() || answer["id"].is_string() || answer["id"].is_i64() || answer["id"].is_u64()
            );
            assert!(answer.get("result").is_some() != answer.get("error").is_some(), "{answer}");
            if let Some(code) = answer.pointer("/error/code") {
                assert!(code.is_i64(), "{answer}");
            }
        }
    }
    let _ = websearchd::mcp::http::decode_header_value(&String::from_utf8_lossy(rest));
}

/// Redis replies (`store::resp`): the first byte picks a chunk size; the replies and the error must not depend on
/// it, and every reply is within the parser's bounds (its values, nested ones included, within `REPLY_ELEMENTS_MAX`).
pub fn resp_reply(data: &[u8]) {
    use websearchd::store::resp::{Parser, Reply, ARRAY_LEN_MAX, BULK_BYTES_MAX, DEPTH_MAX, REPLY_ELEMENTS_MAX};
    fn parse(input: &[u8], chunk: usize) -> (Vec<Reply>, Option<String>) {
        let (mut parser, mut replies) = (Parser::new(), Vec::new());
        for piece in input.chunks(chunk) {
            let mut at = 0;
            while at < piece.len() {
                match parser.feed(&piece[at..]) {
                    Ok((used, reply)) => {
                        at += used;
                        replies.extend(reply);
                    }
                    Err(e) => return (replies, Some(e.to_string())),
                }
            }
        }
        (replies, None)
    }
    /// The values in `reply`, itself included.
    fn within(reply: &Reply, depth: usize) -> usize {
        match reply {
            Reply::Bulk(b) => {
                assert!(b.len() <= BULK_BYTES_MAX);
                1
            }
            Reply::Array(items) => {
                assert!(items.len() <= ARRAY_LEN_MAX && depth < DEPTH_MAX, "{} items at depth {depth}", items.len());
                1 + items.iter().map(|r| within(r, depth + 1)).sum::<usize>()
            }
            _ => 1,
        }
    }
    let Some((&first, input)) = data.split_first() else {
        return;
    };
    let chunk = usize::from(first % 64) + 1;
    let whole = parse(input, input.len().max(1));
    assert_eq!(whole, parse(input, chunk), "chunk size {chunk}");
    for reply in &whole.0 {
        let values = within(reply, 0);
        assert!(values <= REPLY_ELEMENTS_MAX, "{values} values in one reply");
    }
}

/// A third party's page body (`fetch::body`), the first byte picking its content type, its coding and the size of
/// the pieces it arrives in: decoded or refused, inflated within a cap, the same whatever the pieces, and UTF-16
/// always decoded to valid UTF-8 of at most twice its bytes.
pub fn page_body(data: &[u8]) {
    use std::io::Read;
    use websearchd::fetch::body::{decoded, Coding, Utf16};
    const CONTENT_TYPES: [&str; 4] =
        ["text/html", "text/html; charset=utf-16", "text/html; charset=UTF-16BE", "text/plain; charset=utf-8"];
    const CODINGS: [Coding; 4] = [Coding::Identity, Coding::Gzip, Coding::Deflate, Coding::Identity];
    const INFLATED_BYTES_MAX: u64 = 1 << 20;
    /// Hands out a body `n` bytes per read.
    struct Pieces<'a>(&'a [u8], usize);
    impl Read for Pieces<'_> {
        fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
            let n = self.1.min(buf.len()).min(self.0.len());
            buf[..n].copy_from_slice(&self.0[..n]);
            self.0 = &self.0[n..];
            Ok(n)
        }
    }
    let Some((&first, body)) = data.split_first() else {
        return;
    };
    let content_type = CONTENT_TYPES[usize::from(first & 3)];
    let coding = CODINGS[usize::from(first >> 2 & 3)];
    let piece = usize::from(first >> 4) + 1;
    let inflate = |n: usize| {
        let mut out = Vec::new();
        decoded(Pieces(body, n), coding).take(INFLATED_BYTES_MAX).read_to_end(&mut out).map(|_| out).ok()
    };
    let inflated = inflate(body.len().max(1));
    assert_eq!(inflated, inflate(piece), "reads of {piece}");
    let text = inflated.unwrap_or_default();
    let transcode = |n: usize| {
        let mut t = Utf16::new(content_type);
        let mut out = Vec::new();
        for chunk in text.chunks(n) {
            t.feed(chunk, &mut |b| out.extend_from_slice(b));
        }
        t.finish(&mut |b| out.extend_from_slice(b));
        (out, t.is_utf16())
    };
    let (whole, utf16) = transcode(text.len().max(1));
    assert_eq!((&whole, utf16), (&transcode(piece).0, transcode(piece).1), "chunks of {piece}");
    if utf16 {
        assert!(std::str::from_utf8(&whole).is_ok(), "UTF-16 decodes to UTF-8");
        assert!(whole.len() <= 2 * text.len() + 3, "{} bytes out of {}", whole.len(), text.len());
    } else {
        assert_eq!(whole, text, "a body that is not UTF-16 passes as it is");
    }
}

/// Answers read back from the shared store: the first byte picks `max_results` (1 to 20). An entry of any bytes
/// opens only if sealed (never by chance here), and one sealed opens to its bytes, under its own name only; an
/// answer taken has at most `max_results` results, each in the shape and bounds a source's result has.
pub fn shared_answer(data: &[u8]) {
    use websearchd::search::shared::answer;
    use websearchd::store::{entry, ANSWER_BYTES_MAX};
    let Some((&first, rest)) = data.split_first() else {
        return;
    };
    let max_results = usize::from(first) % MAX_RESULTS_MAX + 1;
    let secret = entry::Secret::new(&[0x5e; 32]).unwrap();
    let (now, ttl) = (1_800_000_000_000, 600_000);
    assert!(entry::open(&secret, "k", rest, now, ttl, ANSWER_BYTES_MAX).is_err(), "unsealed bytes opened");
    let sealed = entry::seal(&secret, "k", now, rest);
    let opened = entry::open(&secret, "k", &sealed, now, ttl, ANSWER_BYTES_MAX);
    assert_eq!(opened.ok(), (rest.len() <= ANSWER_BYTES_MAX).then_some((rest, 0)));
    // As old as its seal, whatever Redis says of its TTL: stale once the TTL has passed.
    assert!(entry::open(&secret, "k", &sealed, now + ttl, ttl, ANSWER_BYTES_MAX).is_err(), "opened past its life");
    assert!(entry::open(&secret, "j", &sealed, now, ttl, ANSWER_BYTES_MAX).is_err(), "opened under another name");
    let Ok((results, sources)) = answer(rest, max_results) else {
        return;
    };
    assert!(results.len() <= max_results);
    for (i, r) in results.iter().enumerate() {
        assert_eq!(r["position"].as_u64(), Some(i as u64 + 1));
        assert!(r["title"].as_str().unwrap().chars().count() <= TITLE_CHARS_MAX);
        assert!(r["snippet"].as_str().unwrap().chars().count() <= SNIPPET_CHARS_MAX);
        let link = r["url"].as_str().unwrap();
        assert!(link.len() <= url::RESULT_URL_BYTES_MAX && link.starts_with("http"));
        assert!(r["source"].is_string());
    }
    assert!(sources.iter().all(|s| s["name"].is_string() && s["status"].is_string()));
}

/// SearXNG's parameters (`searx`): any query string parses or is refused with a code; a parsed search stays within
/// `/service`'s bounds and asks 10 or 20 results; whatever text the page shows comes out escaped.
pub fn searx_params(data: &[u8]) {
    use websearchd::searx::{self, page::escape, RESULTS_PER_PAGE};
    let text = String::from_utf8_lossy(data);
    let Ok(pairs) = searx::parse_lists(&[&text]) else { return };
    assert!(pairs.len() <= searx::PARAMS_MAX);
    match searx::parse(&pairs) {
        Ok(p) => {
            assert!(!p.search.query.is_empty() && p.search.query.chars().count() <= QUERY_CHARS_MAX);
            assert!(p.pageno >= 1);
            assert!([RESULTS_PER_PAGE, 2 * RESULTS_PER_PAGE].contains(&p.search.max_results));
            if let Some(region) = &p.search.controls.region {
                assert_eq!(region.code().len(), 5, "{}", region.code());
            }
        }
        Err(e) => assert!(e.status == 400 && !e.code.is_empty()),
    }
    for (k, v) in &pairs {
        for shown in [escape(k), escape(v)] {
            assert!(!shown.contains(['<', '>', '"', '\'']), "{shown}");
        }
    }
}

/// A reader body (`POST /extract`): parsing never panics, and an accepted request is within its bounds: 1 to 5 URLs
/// the guard reads as URLs (or refuses for a reason that is a page's, never `Url`), each trimmed and within the URL
/// cap, the budget in range, the query normalised; a refusal is a 400 naming a field or the body.
pub fn reader_request(data: &[u8]) {
    use websearchd::fetch::guard::{parse_url, Refusal};
    use websearchd::reader::{ReaderRequest, URLS_MAX};
    use websearchd::search::{EXTRACT_TOKENS_MAX, EXTRACT_TOKENS_MIN};
    match ReaderRequest::from_json(data) {
        Ok(r) => {
            assert!((1..=URLS_MAX).contains(&r.pages()));
            for url in &r.urls {
                assert!(url.len() <= websearchd::mcp::tools::URL_BYTES_MAX && url == url.trim(), "{url:?}");
                assert!(!matches!(parse_url(url), Err(Refusal::Url(_))), "{url:?}");
            }
            assert!((EXTRACT_TOKENS_MIN..=EXTRACT_TOKENS_MAX).contains(&r.tokens));
            assert!(r.query.chars().count() <= QUERY_CHARS_MAX && r.query == r.query.trim());
        }
        Err(e) => assert_eq!(e.status, 400, "{}", e.code),
    }
}

/// The Tavily door's bodies (`POST /tavily/search`, `/tavily/extract`): any bytes are a call whose every value is in
/// range, or a 400; and the passages of a page for any query are the page's own text.
pub fn tavily_request(data: &[u8]) {
    use websearchd::tavily::request::{
        Context, ExtractCall, SearchCall, EXTRACT_CHUNKS_MAX, SEARCH_CHUNKS_MAX, URLS_MAX,
    };
    let context = Context { today: 20_000, cache_ttl_s: 600, answer_within: std::time::Duration::from_secs(23) };
    match SearchCall::from_json(data, context) {
        Ok(c) => {
            assert!(c.max_results <= MAX_RESULTS_MAX && c.search.max_results >= 1);
            assert!((1..=SEARCH_CHUNKS_MAX).contains(&c.chunks));
            assert!(c.pages() <= websearchd::search::EXTRACT_PAGES_MAX);
            assert!(c.search.query.chars().count() <= QUERY_CHARS_MAX);
        }
        Err(e) => assert_eq!(e.status, 400, "{}", e.code),
    }
    match ExtractCall::from_json(data) {
        Ok(c) => {
            assert!((1..=URLS_MAX).contains(&c.urls.len()) && c.readable().len() <= c.urls.len());
            for (asked, _) in c.urls.iter().filter_map(|u| u.as_ref().err()) {
                assert!(asked.len() <= websearchd::tavily::request::ASKED_BYTES_MAX, "{asked:?}");
            }
            assert!((1..=EXTRACT_CHUNKS_MAX).contains(&c.chunks));
            assert!(c.query.len() <= websearchd::extract::focus::QUERY_BYTES_MAX);
        }
        Err(e) => assert_eq!(e.status, 400, "{}", e.code),
    }
    // The bytes as a page and its first line as the query: every passage chosen is the page's text.
    let text = String::from_utf8_lossy(data);
    let query = text.lines().next().unwrap_or("");
    let blocks: Vec<String> = text.split("\n\n").map(str::to_owned).collect();
    for chosen in websearchd::extract::focus::best(&blocks, query, 3, false) {
        for part in chosen.text.split('\n') {
            assert!(text.contains(part), "{part:?}");
        }
    }
    let _ = websearchd::tavily::plain(&text);
}
