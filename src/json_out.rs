//! JSON written straight into bytes, member by member, for the answers made many times a second on the reactor
//! (`/health`): no value tree, no map of owned keys. The caller writes the braces and brackets and keeps the members
//! in the order it wants them (sorted, as `serde_json` writes a `Value`'s). Strings are escaped by `serde_json`.

/// Opens member `key` (with the comma before it unless the object has just opened).
pub fn key(out: &mut Vec<u8>, key: &str) {
    if !matches!(out.last(), Some(b'{' | b'[') | None) {
        out.push(b',');
    }
    string(out, key);
    out.push(b':');
}

/// A JSON string.
pub fn string(out: &mut Vec<u8>, s: &str) {
    // Writing into a Vec cannot fail, and a str always serialises.
    let _ = serde_json::to_writer(&mut *out, s);
}

pub fn opt_string(out: &mut Vec<u8>, s: Option<&str>) {
    match s {
        Some(s) => string(out, s),
        None => out.extend_from_slice(b"null"),
    }
}

pub fn opt_u64(out: &mut Vec<u8>, n: Option<u64>) {
    match n {
        Some(n) => {
            let _ = serde_json::to_writer(&mut *out, &n);
        }
        None => out.extend_from_slice(b"null"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn members_as_serde_json_writes_them() {
        let mut out = b"{".to_vec();
        key(&mut out, "a");
        string(&mut out, "q\"\n\u{1}");
        key(&mut out, "b");
        opt_u64(&mut out, Some(7));
        key(&mut out, "c");
        opt_string(&mut out, None);
        out.push(b'}');
        let expected = serde_json::json!({ "a": "q\"\n\u{1}", "b": 7, "c": null });
        assert_eq!(out, serde_json::to_vec(&expected).expect("json"));
    }
}
