//! RFC 8785 JSON Canonicalization Scheme: the one byte form of a JSON value that signatures are made over. Object
//! keys sorted by UTF-16 code units, no whitespace, strings with the minimal escapes, numbers as ECMAScript writes
//! them. Independent of serde_json's map ordering and number printing; checked against the official vectors.

use serde_json::Value;

/// The canonical form. Fails only for numbers JSON cannot carry (never produced by serde_json).
pub fn canonicalize(value: &Value) -> String {
    let mut out = String::new();
    write_value(value, &mut out);
    out
}

fn write_value(v: &Value, out: &mut String) {
    match v {
        Value::Null => out.push_str("null"),
        Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Value::Number(n) => {
            if let Some(u) = n.as_u64() {
                write_number(u as f64, Some(u.to_string()).filter(|_| u <= (1 << 53)), out)
            } else if let Some(i) = n.as_i64() {
                write_number(i as f64, Some(i.to_string()).filter(|_| i.unsigned_abs() <= (1 << 53)), out)
            } else {
                write_number(n.as_f64().unwrap_or(0.0), None, out)
            }
        }
        Value::String(s) => write_string(s, out),
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_value(item, out);
            }
            out.push(']');
        }
        Value::Object(map) => {
            let mut entries: Vec<(&String, &Value)> = map.iter().collect();
            // Unstable: an object's keys are distinct.
            entries.sort_unstable_by(|a, b| a.0.encode_utf16().cmp(b.0.encode_utf16()));
            out.push('{');
            for (i, (k, v)) in entries.into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_string(k, out);
                out.push(':');
                write_value(v, out);
            }
            out.push('}');
        }
    }
}

fn write_string(s: &str, out: &mut String) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\u{8}' => out.push_str("\\b"),
            '\t' => out.push_str("\\t"),
            '\n' => out.push_str("\\n"),
            '\u{c}' => out.push_str("\\f"),
            '\r' => out.push_str("\\r"),
            c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
}

/// ECMAScript `Number.prototype.toString` for a finite double (exact integers pass through as written).
fn write_number(f: f64, exact_integer: Option<String>, out: &mut String) {
    if let Some(s) = exact_integer {
        out.push_str(&s);
        return;
    }
    if f == 0.0 || !f.is_finite() {
        out.push('0');
        return;
    }
    if f < 0.0 {
        out.push('-');
    }
    // Rust's `{:e}` gives the shortest digits that round-trip, as ECMAScript requires: "d.ddde[-]x".
    let sci = format!("{:e}", f.abs());
    let (mantissa, exp) = sci.split_once('e').unwrap_or((&sci, "0"));
    let digits: String = mantissa.chars().filter(char::is_ascii_digit).collect();
    let k = digits.len() as i32;
    // value = 0.digits * 10^n
    let n = exp.parse::<i32>().unwrap_or(0) + 1;
    if k <= n && n <= 21 {
        out.push_str(&digits);
        out.extend(std::iter::repeat_n('0', (n - k) as usize));
    } else if 0 < n && n <= 21 {
        let (int, frac) = digits.split_at(n as usize);
        out.push_str(int);
        out.push('.');
        out.push_str(frac);
    } else if -6 < n && n <= 0 {
        out.push_str("0.");
        out.extend(std::iter::repeat_n('0', (-n) as usize));
        out.push_str(&digits);
    } else {
        let (first, rest) = digits.split_at(1);
        out.push_str(first);
        if !rest.is_empty() {
            out.push('.');
            out.push_str(rest);
        }
        out.push('e');
        out.push(if n > 0 { '+' } else { '-' });
        out.push_str(&(n - 1).abs().to_string());
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[track_caller]
    fn check(v: Value, expected: &str) {
        assert_eq!(canonicalize(&v), expected);
    }

    #[test]
    fn numbers_as_ecmascript_writes_them() {
        check(json!(1.0), "1");
        check(json!(-0.0), "0");
        check(json!(1e21), "1e+21");
        check(json!(1e20), "100000000000000000000");
        check(json!(0.000001), "0.000001");
        check(json!(1e-7), "1e-7");
        check(json!(123.456), "123.456");
        check(json!(-1.5e-10), "-1.5e-10");
        check(json!(9007199254740993u64), "9007199254740992");
        check(json!(42), "42");
        check(json!(-42), "-42");
        check(serde_json::from_str("333333333.33333329").unwrap(), "333333333.3333333");
    }

    #[test]
    fn strings_and_key_order() {
        check(json!({"b": 1, "a": "\u{1}\u{7f}\n\"/"}), "{\"a\":\"\\u0001\u{7f}\\n\\\"/\",\"b\":1}");
        // UTF-16 order puts U+1F602 (a surrogate pair, 0xD83D...) before U+FB33.
        check(json!({"\u{fb33}": 1, "\u{1f602}": 2}), "{\"\u{1f602}\":2,\"\u{fb33}\":1}");
    }

    /// The official vectors in `../shared/fixtures/jcs/testdata`.
    #[test]
    fn official_vectors() {
        let dir = std::env::var("WEBSEARCHD_SHARED_DIR")
            .unwrap_or_else(|_| format!("{}/../shared", env!("CARGO_MANIFEST_DIR")));
        let input = std::path::Path::new(&dir).join("fixtures/jcs/testdata/input");
        let Ok(entries) = std::fs::read_dir(&input) else {
            eprintln!("notice: {} is absent; skipping the JCS vectors", input.display());
            return;
        };
        let mut n = 0;
        for e in entries.flatten() {
            let name = e.file_name();
            let text = std::fs::read_to_string(e.path()).unwrap();
            let expected = std::fs::read(input.parent().unwrap().join("output").join(&name)).unwrap();
            let v: Value = serde_json::from_str(&text).unwrap();
            assert_eq!(canonicalize(&v).as_bytes(), expected.as_slice(), "{name:?}");
            n += 1;
        }
        assert!(n >= 6);
    }
}
