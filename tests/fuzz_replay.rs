//! Replays the fuzz targets' checks (fuzz/checks.rs) on stable Rust: over the project's fixtures, the recorded pages
//! in ../shared (when present), the hand-made seeds in fuzz/seeds/<target>/ (hostile shapes: many attributes, many
//! tiny blocks, deep nesting...), every regression input in fuzz/regressions/<target>/, and truncations of each, so
//! CI exercises every parser of untrusted input with what the fuzzers found.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)]

mod common;

#[path = "../fuzz/checks.rs"]
mod checks;

use std::path::Path;

fn files_in(dir: &Path) -> Vec<Vec<u8>> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut paths: Vec<_> = entries.filter_map(|e| e.ok().map(|e| e.path())).filter(|p| p.is_file()).collect();
    paths.sort();
    paths.into_iter().filter_map(|p| std::fs::read(p).ok()).collect()
}

fn seeds(target: &str) -> Vec<Vec<u8>> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut all = files_in(&root.join("fixtures/search"));
    let shared = common::shared_dir().join("fixtures/search");
    if shared.is_dir() {
        all.extend(files_in(&shared).into_iter().filter(|f| f.len() < 200_000));
    } else {
        eprintln!("notice: {} is absent; replaying the project's own seeds only", shared.display());
    }
    all.extend(files_in(&root.join("fuzz/seeds").join(target)));
    all.extend(files_in(&root.join("fuzz/regressions").join(target)));
    all
}

/// Runs `check` on each seed with each prefix byte in `prefixes`, and on truncations of it.
fn replay(target: &str, prefixes: &[u8], check: fn(&[u8])) {
    let seeds = seeds(target);
    assert!(!seeds.is_empty());
    for seed in &seeds {
        for &p in prefixes {
            let mut input = vec![p];
            input.extend_from_slice(seed);
            check(&input);
            let step = (input.len() / 13).max(1);
            for end in (1..input.len()).step_by(step) {
                check(&input[..end]);
            }
        }
    }
}

#[test]
fn html_tokenizer() {
    replay("html_tokenizer", &[0, 1, 2, 6, 63], checks::html_tokenizer);
}

/// The first byte picks the content type (bits 0-1: UTF-16 declared or not), the coding (bits 2-3: identity, gzip,
/// deflate) and the piece size (the high half): the recorded pages and the seeds (UTF-16 with and without a mark,
/// gzip, zlib and raw deflate streams, a gzip bomb) read every way.
#[test]
fn page_body() {
    replay("page_body", &[0x00, 0x01, 0x02, 0x13, 0x24, 0x65, 0x38, 0xfa], checks::page_body);
}

/// The first byte picks the source (`Kind::ALL[byte % 7]`) and, with its high bit, the status 202: every source's
/// parser (Bing 4, Brave 5, Wikipedia 6 included) reads every seed.
#[test]
fn search_page() {
    replay("search_page", &[0, 1, 2, 3, 4, 5, 6, 0x80, 0x81], checks::search_page);
}

#[test]
fn http_head() {
    let heads: [&[u8]; 4] = [
        b"GET /health HTTP/1.1\r\nHost: a\r\n\r\n",
        b"POST /service HTTP/1.1\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}",
        b"GET http://x/y?z HTTP/1.0\r\nConnection: keep-alive\r\n\r\n",
        b"POST / HTTP/1.1\r\nExpect: 100-continue\r\nContent-Length: 99999\r\n\r\n",
    ];
    for h in heads {
        for end in 0..=h.len() {
            checks::http_head(&h[..end]);
        }
    }
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = files_in(&root.join("fuzz/regressions/http_head"));
    files.extend(files_in(&root.join("fuzz/seeds/http_head")));
    for f in files {
        for end in 0..=f.len() {
            checks::http_head(&f[..end]);
        }
    }
}

#[test]
fn service_request() {
    let bodies: [&[u8]; 9] = [
        br#"{"query":"rust","max_results":5,"extract":true}"#,
        br#"{"query":"q","time_range":"week","region":"DE-de","safesearch":"strict","extract":5}"#,
        r#"{"query":"q","include_domains":["bücher.de","Docs.Python.org."],"exclude_domains":["a.b"]}"#.as_bytes(),
        br#"{"query":"q","include_domains":["a.com"],"exclude_domains":["www.a.com","x..y","https://z/"]}"#,
        br#"{"query":"q","exclude_domains":["a.com","b.com","c.com","d.com","e.com","f.com","g.com","h.com"]}"#,
        br#"{"query":"  a  b  "}"#,
        br#"{"query":"\u0000"}"#,
        br#"{"query":"q","max_results":1e3}"#,
        br#"[{"query":"q"}]"#,
    ];
    for b in bodies {
        for end in 0..=b.len() {
            checks::service_request(&b[..end]);
        }
    }
    for f in files_in(&Path::new(env!("CARGO_MANIFEST_DIR")).join("fuzz/regressions/service_request")) {
        checks::service_request(&f);
    }
}

#[test]
fn result_url() {
    for u in [
        "//duckduckgo.com/l/?uddg=https%3A%2F%2Fexample.com%2F&rut=x",
        "https://[::1]:80/a#b",
        "http://user@host:99/%zz%",
        "/l/?uddg=%",
    ] {
        for end in 0..=u.len() {
            checks::result_url(&u.as_bytes()[..end]);
        }
    }
}

/// Hosts in every notation a browser reads (fuzz/seeds/host_map: the look-alikes of issue 41, numeric IPv4 forms,
/// punycode, IPv6, compositions), and every prefix of each.
#[test]
fn host_map() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut inputs = files_in(&root.join("fuzz/seeds/host_map"));
    inputs.extend(files_in(&root.join("fuzz/regressions/host_map")));
    assert!(inputs.len() >= 10);
    for input in &inputs {
        for end in 0..=input.len() {
            checks::host_map(&input[..end]);
        }
    }
}

#[test]
fn x402_payment() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut inputs = files_in(&root.join("fuzz/seeds/x402_payment"));
    inputs.extend(files_in(&root.join("fuzz/regressions/x402_payment")));
    assert!(!inputs.is_empty());
    for input in inputs {
        for end in 0..=input.len() {
            checks::x402_payment(&input[..end]);
        }
    }
}

#[test]
fn extract() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut inputs = files_in(&root.join("fixtures/search"));
    inputs.push(std::fs::read(root.join("fixtures/extract_article.html")).unwrap());
    inputs.extend(files_in(&root.join("fuzz/seeds/extract")));
    inputs.extend(files_in(&root.join("fuzz/regressions/extract")));
    for input in &inputs {
        for first in [0u8, 2, 6, 63] {
            let mut data = vec![first];
            data.extend_from_slice(input);
            checks::extract(&data);
            let step = (data.len() / 7).max(1);
            for end in (1..data.len()).step_by(step) {
                checks::extract(&data[..end]);
            }
        }
    }
}

/// The extractor gives the same markdown at chunk sizes 1, 2, 3, 7, 64 and whole on real benchmark pages.
#[test]
fn extract_is_chunk_independent_on_benchmark_pages() {
    use std::io::Read;
    use websearchd::extract::{Extractor, Options};
    let dir = common::shared_dir().join("bench/aeb/html");
    let Ok(entries) = std::fs::read_dir(&dir) else {
        eprintln!("notice: {} is absent; skipping", dir.display());
        return;
    };
    let mut files: Vec<_> = entries.flatten().map(|e| e.path()).collect();
    files.sort_by_key(|p| std::fs::metadata(p).map(|m| m.len()).unwrap_or(0));
    for path in files.iter().take(4) {
        let mut html = Vec::new();
        flate2::read::GzDecoder::new(std::fs::File::open(path).unwrap()).read_to_end(&mut html).unwrap();
        let whole = Extractor::run(&html, Options::default());
        assert!(!whole.blocks.is_empty(), "{}", path.display());
        for size in [1, 2, 3, 7, 64] {
            let mut e = Extractor::new(Options::default());
            for chunk in html.chunks(size) {
                e.feed(chunk);
            }
            assert_eq!(e.finish(), whole, "{} at chunk size {size}", path.display());
        }
    }
}

/// Runs `check` on every prefix of each seed and of each committed seed file (`fuzz/seeds/<target>/`), then on the
/// target's committed regressions.
fn replay_prefixes(target: &str, seeds: &[&str], check: fn(&[u8])) {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let files = files_in(&root.join("fuzz/seeds").join(target));
    for seed in seeds.iter().map(|s| s.as_bytes()).chain(files.iter().map(Vec::as_slice)) {
        for end in 0..=seed.len() {
            check(&seed[..end]);
        }
    }
    for f in files_in(&root.join("fuzz/regressions").join(target)) {
        check(&f);
    }
}

#[test]
fn reader_request() {
    let seeds = [
        r#"{"urls":["https://a.example/"," http://127.0.0.1:9/x ","ftp://a/"],"query":" q  r ","tokens":100}"#,
        r#"{"urls":["http://[::1/","http:///p","a b",5,null],"tokens":8001}"#,
        r#"{"urls":["http://a/","http://a/","http://a/","http://a/","http://a/","http://a/"]}"#,
        r#"{"urls":"http://a/","query":"\u0000"}"#,
    ];
    replay_prefixes("reader_request", &seeds, checks::reader_request);
}

#[test]
fn tavily_request() {
    let seeds = [
        r#"{"query":"rust \"async io\"","search_depth":"advanced","max_results":0,"days":3,"country":"germany","exact_match":true,"include_domains_mode":"prefer","include_domains":["a.example"]}"#,
        r#"{"query":"q","start_date":"2024-02-30","end_date":"9999-12-31","time_range":"y","language":"de-CH","include_raw_content":"text"}"#,
        r#"{"urls":["https://a.example/","http://127.0.0.1:9/"],"query":"crashes","chunks_per_source":5,"format":"text"}"#,
        "crashes per month

| Metric | C |
| --- | --- |
| Crashes per month | 40 |

- crashes, **fewer** [x](y)",
    ];
    replay_prefixes("tavily_request", &seeds, checks::tavily_request);
}

#[test]
fn notary_request() {
    let body = format!(r#"{{"op":"notarize","hash":"{}"}}"#, "0".repeat(64));
    let seeds = [
        body.as_str(),
        r#"{"receipt":{"v":1,"type":"notary-receipt","kid":"result-x","seq":1},"signature":"AA"}"#,
        r#"[{"seq":1,"prev":"0"},{"seq":2}]"#,
        r#"{"keys":[{"kty":"OKP","crv":"Ed25519","x":"AAAA","kid":"k"}]}"#,
    ];
    replay_prefixes("notary_request", &seeds, checks::notary_request);
}

#[test]
fn mcp_message() {
    let seeds = [
        "\x00{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}\n{\"jsonrpc\":\"2.0\",\"method\":\"n\"}",
        "\x03{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":{\"name\":\"p\"}}",
        "\x01=?base64?4pyTIMOgIGxhIG1vZGU=?=",
    ];
    replay_prefixes("mcp_message", &seeds, checks::mcp_message);
}

#[test]
fn canonical_json() {
    let seeds = [
        r#"{"b":[1,2.5,-0.0,1e21,1e-7],"a":"\u00e9\ud83d\ude00","":null}"#,
        r#"[true,false,{"\u0001":"x","z":{"y":1}}]"#,
        "123456789012345678901234567890",
    ];
    replay_prefixes("canonical_json", &seeds, checks::canonical_json);
}

/// Every recorded map response (../shared/fixtures/map) and the hostile shapes of `fuzz/seeds/map_json`.
fn map_inputs() -> Vec<Vec<u8>> {
    let dir = common::shared_dir().join("fixtures/map");
    let mut inputs: Vec<Vec<u8>> = Vec::new();
    for sub in ["terremotos", "vuelos", "buques", "satelites", "conflictos", "fondo-marino"] {
        inputs.extend(files_in(&dir.join(sub)));
    }
    inputs.extend(files_in(&Path::new(env!("CARGO_MANIFEST_DIR")).join("fuzz/seeds/map_json")));
    inputs
}

#[test]
fn map_feed() {
    // Every recorded map response, through every parser, cut at a few lengths.
    let mut inputs = map_inputs();
    inputs.push(br#"{"features":[{"geometry":{"coordinates":[500,1e308]},"properties":{}}]}"#.to_vec());
    inputs.push(b"PK\x03\x04\x14\x00\x00\x00\x08\x00".to_vec());
    for input in &inputs {
        for pick in 0..9u8 {
            for end in [input.len(), input.len() / 2, 7.min(input.len())] {
                let mut data = vec![pick];
                data.extend_from_slice(&input[..end]);
                checks::map_feed(&data);
            }
        }
    }
    for f in files_in(&Path::new(env!("CARGO_MANIFEST_DIR")).join("fuzz/regressions/map_feed")) {
        checks::map_feed(&f);
    }
}

/// Answers read back from the shared store: the seeds (an answer as a node writes it, forged and oversized ones),
/// each prefix.
#[test]
fn shared_answer() {
    let seeds = [
        "\u{1}{\"results\":[{\"position\":1,\"title\":\"t\",\"url\":\"https://a.example/\",\"snippet\":\"s\",\"source\":\"x\"}],\"sources\":[]}",
        "\u{13}{\"results\":[{},{},{}],\"sources\":[{\"name\":\"x\",\"status\":\"ok\"}]}",
        "\u{0}FORGED",
    ];
    replay_prefixes("shared_answer", &seeds, checks::shared_answer);
    // The seed written as a node writes an answer is taken whole (the check reaches past the refusals).
    let written =
        std::fs::read(Path::new(env!("CARGO_MANIFEST_DIR")).join("fuzz/seeds/shared_answer/answer_as_written.json"));
    let (results, sources) = websearchd::search::shared::answer(&written.unwrap()[1..], 20).unwrap();
    assert_eq!((results.len(), sources.len()), (10, 2));
}

/// The feeds' bounded JSON reader: every recorded map response and the hostile seeds (`fuzz/seeds/map_json`), and
/// their truncations.
#[test]
fn map_json() {
    let mut inputs = map_inputs();
    inputs.extend(files_in(&Path::new(env!("CARGO_MANIFEST_DIR")).join("fuzz/regressions/map_json")));
    assert!(inputs.len() > 3);
    for input in &inputs {
        let step = (input.len() / 29).max(1);
        for end in (0..=input.len()).step_by(step).chain([input.len()]) {
            checks::map_json(&input[..end]);
        }
    }
    for small in [r#"{"a":"\u00e9","b":[1.5e3,-0,-0.0,0.1]}"#, r#"[{"x":[[[[[1]]]]]}]"#, "\"\\ud83d\\ude00\"", "1e400"]
    {
        checks::map_json(small.as_bytes());
    }
}

/// Redis replies: the seeds of every type (RESP2 and RESP3), deep and wide aggregates, replies of more values than
/// a reply may hold (tiny nulls, an attribute's), and each one's prefixes.
#[test]
fn resp_reply() {
    let seeds = ["\u{1}+OK\r\n:42\r\n$3\r\nabc\r\n*2\r\n$-1\r\n_\r\n", "\u{0}$3\r\nab", "\u{2}*-1\r\n%1\r\n"];
    replay_prefixes("resp_reply", &seeds, checks::resp_reply);
}

/// SearXNG's parameters: the replayed clients' query strings (fuzz/seeds/searx_params/) and these, every prefix.
#[test]
fn searx_params() {
    let seeds = [
        "q=x&format=html&time_range=year&language=de&safesearch=2&pageno=2",
        "q=%3Cb%3E'%22&format=json&language=all",
        "q=+&pageno=0&time_range=decade",
    ];
    replay_prefixes("searx_params", &seeds, checks::searx_params);
}
