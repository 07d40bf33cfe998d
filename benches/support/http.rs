//! A minimal HTTP/1.1 response reader for the load generators of the benches.

use std::io::Read;
use std::net::TcpStream;

/// Reads one response framed by Content-Length; its status, or `None` if the connection ended.
pub fn read_one(s: &mut TcpStream) -> Option<u16> {
    let mut got = Vec::new();
    let mut buf = [0u8; 16_384];
    loop {
        if let Some(end) = got.windows(4).position(|w| w == b"\r\n\r\n") {
            let head = String::from_utf8_lossy(&got[..end]).to_ascii_lowercase();
            let status = head.split_whitespace().nth(1)?.parse().ok()?;
            let len: usize = head
                .lines()
                .find_map(|l| l.strip_prefix("content-length:"))
                .and_then(|v| v.trim().parse().ok())
                .unwrap_or(0);
            while got.len() < end + 4 + len {
                match s.read(&mut buf) {
                    Ok(0) | Err(_) => return None,
                    Ok(n) => got.extend_from_slice(&buf[..n]),
                }
            }
            return Some(status);
        }
        match s.read(&mut buf) {
            Ok(0) | Err(_) => return None,
            Ok(n) => got.extend_from_slice(&buf[..n]),
        }
    }
}
