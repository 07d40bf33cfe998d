use std::io::BufReader;

use super::*;

/// Every line of `input` as `next_line` reads it with a `max_bytes` limit, the input arriving `chunk` bytes at a time.
fn lines(input: &[u8], chunk: usize, max_bytes: usize) -> Vec<Result<String, Line>> {
    let mut reader = BufReader::with_capacity(chunk, input);
    let mut buf = Vec::new();
    let mut out = Vec::new();
    loop {
        match next_line(&mut reader, &mut buf, max_bytes).expect("in-memory reads do not fail") {
            Line::End => return out,
            Line::Message => out.push(Ok(String::from_utf8(buf.clone()).expect("UTF-8 in these tests"))),
            other => out.push(Err(other)),
        }
    }
}

#[track_caller]
fn check(input: &str, max_bytes: usize, expected: &[Result<&str, Line>]) {
    let expected: Vec<Result<String, Line>> =
        expected.iter().map(|e| e.as_ref().map(|s| s.to_string()).map_err(|l| *l)).collect();
    for chunk in [1, 2, 3, 7, 64, input.len().max(1)] {
        assert_eq!(lines(input.as_bytes(), chunk, max_bytes), expected, "chunks of {chunk}: {input:?}");
    }
}

#[test]
fn lines_are_split_at_newlines_whatever_the_chunks() {
    check("", 16, &[]);
    check("{}\n", 16, &[Ok("{}")]);
    check("{}\r\n[]\n", 16, &[Ok("{}"), Ok("[]")]);
    check("{}\n\n{\"a\":1}", 16, &[Ok("{}"), Ok(""), Ok("{\"a\":1}")]);
}

#[test]
fn a_line_over_the_limit_is_dropped_whole_and_the_next_one_read() {
    let long = "x".repeat(40);
    check(&format!("{long}\n{{}}\n"), 16, &[Err(Line::TooLong), Ok("{}")]);
    check(&format!("{}\n", "y".repeat(16)), 16, &[Ok(&"y".repeat(16))]);
    check(&format!("{}\n", "y".repeat(17)), 16, &[Err(Line::TooLong)]);
    check(&long, 16, &[Err(Line::TooLong)]);
}

/// Issue 33, finding 10: the CR of a CRLF line is not part of the message, so it does not count against the limit;
/// any other byte past it does, wherever the chunks cut the line.
#[test]
fn the_cr_of_a_crlf_line_is_not_counted() {
    let full = "y".repeat(16);
    check(&format!("{full}\r\n{{}}\r\n"), 16, &[Ok(&full), Ok("{}")]);
    check(&format!("{full}x\r\n{{}}\n"), 16, &[Err(Line::TooLong), Ok("{}")]);
    check(&format!("{full}x\n"), 16, &[Err(Line::TooLong)]);
    check(&format!("{full}\r\r\n"), 16, &[Err(Line::TooLong)]);
    // At the end of the input, without a newline, a CR is an ordinary byte.
    check(&format!("{full}x"), 16, &[Err(Line::TooLong)]);
    check(&format!("{full}\r"), 16, &[Err(Line::TooLong)]);
    check(&full, 16, &[Ok(&full)]);
}

#[test]
fn the_buffer_never_holds_more_than_the_limit() {
    let input = format!("{}\n", "z".repeat(10_000));
    let mut reader = BufReader::with_capacity(64, input.as_bytes());
    let mut buf = Vec::new();
    assert_eq!(next_line(&mut reader, &mut buf, 100).expect("read"), Line::TooLong);
    assert!(buf.capacity() <= 200, "the dropped line was not kept: capacity {}", buf.capacity());
}

#[test]
fn unsupported_versions_name_the_supported_ones() {
    let params = json!({ "_meta": { META_PROTOCOL_VERSION: "2099-01-01", META_CLIENT_CAPABILITIES: {} } });
    let e = modern_envelope(params.as_object().expect("object")).expect_err("refused");
    assert_eq!(e.code, UNSUPPORTED_PROTOCOL_VERSION);
    assert_eq!(
        e.data,
        Some(json!({ "supported": ["2026-07-28", "2025-11-25", "2025-06-18"], "requested": "2099-01-01" }))
    );
    let params = json!({ "_meta": { META_PROTOCOL_VERSION: "2026-07-28" } });
    assert_eq!(modern_envelope(params.as_object().expect("object")).map_err(|e| e.code), Err(INVALID_PARAMS));
    let params = json!({ "_meta": { META_PROTOCOL_VERSION: "2026-07-28", META_CLIENT_CAPABILITIES: {} } });
    assert_eq!(modern_envelope(params.as_object().expect("object")), Ok(()));
}

/// The tools' text says the limits the code enforces.
#[test]
fn the_tool_definitions_parse_and_say_the_limits() {
    let tools = tools::definitions();
    let names: Vec<&str> = tools.iter().filter_map(|t| t["name"].as_str()).collect();
    assert_eq!(names, ["web_search", "extract_page"]);
    let extract = &tools[1]["inputSchema"]["properties"];
    assert_eq!(extract["url"]["maxLength"], tools::URL_BYTES_MAX);
    assert_eq!(extract["tokens"]["minimum"], crate::search::EXTRACT_TOKENS_MIN);
    assert_eq!(extract["tokens"]["maximum"], crate::search::EXTRACT_TOKENS_MAX);
    assert_eq!(extract["tokens"]["default"], crate::search::EXTRACT_TOKENS_DEFAULT);
    for tool in &tools {
        assert_eq!(tool["outputSchema"]["properties"]["signature"]["properties"]["alg"]["const"], "Ed25519");
        assert!(tool["outputSchema"]["required"].as_array().unwrap().contains(&json!("signature")));
    }
}
