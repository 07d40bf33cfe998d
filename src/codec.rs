//! Byte encodings used on the wire: base64 (standard, padded: x402 headers), base64url without padding (JWS), and
//! lowercase hex. Decoders are strict: a character outside the alphabet, bad padding or stray bits is an error.

const STD: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
const URL: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

fn encode_with(data: &[u8], alphabet: &[u8; 64], pad: bool) -> String {
    let mut out = String::with_capacity(data.len().div_ceil(3) * 4);
    for chunk in data.chunks(3) {
        let b = [
            chunk.first().copied().unwrap_or(0),
            chunk.get(1).copied().unwrap_or(0),
            chunk.get(2).copied().unwrap_or(0),
        ];
        let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
        let symbols = chunk.len() + 1;
        for i in 0..4 {
            if i < symbols {
                let idx = ((n >> (18 - 6 * i)) & 63) as usize;
                out.push(char::from(alphabet.get(idx).copied().unwrap_or(b'A')));
            } else if pad {
                out.push('=');
            }
        }
    }
    out
}

fn decode_with(text: &str, alphabet: &[u8; 64], padded: Padding) -> Option<Vec<u8>> {
    let bytes = text.as_bytes();
    let unpadded = bytes.iter().rposition(|&b| b != b'=').map_or(0, |i| i + 1);
    let pads = bytes.len() - unpadded;
    match padded {
        Padding::Required if !bytes.len().is_multiple_of(4) || pads > 2 => return None,
        Padding::Forbidden if pads > 0 => return None,
        _ => {}
    }
    let body = bytes.get(..unpadded)?;
    if body.len() % 4 == 1 {
        return None;
    }
    let mut out = Vec::with_capacity(body.len() * 3 / 4);
    let mut acc: u32 = 0;
    let mut bits = 0;
    for &c in body {
        let v = alphabet.iter().position(|&a| a == c)? as u32;
        acc = (acc << 6) | v;
        bits += 6;
        if bits >= 8 {
            bits -= 8;
            out.push((acc >> bits) as u8);
            acc &= (1 << bits) - 1;
        }
    }
    // Leftover bits must be zero (a canonical encoding).
    if acc != 0 {
        return None;
    }
    Some(out)
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Padding {
    Required,
    Forbidden,
}

/// Standard base64 with padding.
pub fn base64_encode(data: &[u8]) -> String {
    encode_with(data, STD, true)
}

/// Standard base64; padding required, as the x402 clients send it.
pub fn base64_decode(text: &str) -> Option<Vec<u8>> {
    decode_with(text.trim(), STD, Padding::Required)
}

/// base64url without padding (RFC 7515 section 2).
pub fn base64url_encode(data: &[u8]) -> String {
    encode_with(data, URL, false)
}

pub fn base64url_decode(text: &str) -> Option<Vec<u8>> {
    decode_with(text, URL, Padding::Forbidden)
}

pub fn hex_encode(data: &[u8]) -> String {
    let digit = |n: u8| char::from_digit(u32::from(n), 16).unwrap_or('0');
    let mut out = String::with_capacity(data.len() * 2);
    for b in data {
        out.push(digit(b >> 4));
        out.push(digit(b & 15));
    }
    out
}

/// Hex of either case, even length; a `0x` prefix is not accepted here (callers strip it).
pub fn hex_decode(text: &str) -> Option<Vec<u8>> {
    let bytes = text.as_bytes();
    if !bytes.len().is_multiple_of(2) {
        return None;
    }
    bytes
        .chunks(2)
        .map(|pair| {
            let hi = char::from(*pair.first()?).to_digit(16)?;
            let lo = char::from(*pair.get(1)?).to_digit(16)?;
            Some((hi * 16 + lo) as u8)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rfc4648_vectors() {
        for (plain, std) in [
            ("", ""),
            ("f", "Zg=="),
            ("fo", "Zm8="),
            ("foo", "Zm9v"),
            ("foob", "Zm9vYg=="),
            ("fooba", "Zm9vYmE="),
            ("foobar", "Zm9vYmFy"),
        ] {
            assert_eq!(base64_encode(plain.as_bytes()), std);
            assert_eq!(base64_decode(std).as_deref(), Some(plain.as_bytes()));
            let url = std.trim_end_matches('=');
            assert_eq!(base64url_encode(plain.as_bytes()), url);
            assert_eq!(base64url_decode(url).as_deref(), Some(plain.as_bytes()));
        }
    }

    #[test]
    fn strict_decoding() {
        assert_eq!(base64_decode("Zm9vYg"), None, "padding required");
        assert_eq!(base64_decode("Zm9vYh=="), None, "stray bits");
        assert_eq!(base64_decode("Zm9v*mFy"), None);
        assert_eq!(base64_decode("Z==="), None);
        assert_eq!(base64url_decode("Zm8="), None, "no padding in base64url");
        assert_eq!(base64url_decode("-_8"), Some(vec![0xfb, 0xff]));
        assert_eq!(base64_decode("+/8="), Some(vec![0xfb, 0xff]));
    }

    #[test]
    fn hex() {
        assert_eq!(hex_encode(&[0, 0xab, 0xff]), "00abff");
        assert_eq!(hex_decode("00ABff"), Some(vec![0, 0xab, 0xff]));
        assert_eq!(hex_decode("0"), None);
        assert_eq!(hex_decode("zz"), None);
    }
}
