//! Keep-alive load clients for the benches: each sends requests one after another for a while, and the run is summed
//! up by `tally`. Include it beside `http` and `tally` (it uses both).

use std::io::Write;
use std::net::{SocketAddr, TcpStream};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The bytes of request `n` (from 1) of client `client`.
pub type Make = Arc<dyn Fn(usize, u64) -> Vec<u8> + Send + Sync>;

/// `clients` keep-alive clients for `duration`, each sending its requests to `addrs` in turn (one connection to each,
/// opened again when it ends): requests/s, p50 and p99 in ms, and the share of answers with status `expect`.
pub fn run(addrs: &[SocketAddr], clients: usize, duration: Duration, make: Make, expect: u16) -> (f64, f64, f64, f64) {
    let started = Instant::now();
    let threads: Vec<_> = (0..clients)
        .map(|client| {
            let (addrs, make) = (addrs.to_vec(), make.clone());
            std::thread::spawn(move || {
                let mut conns: Vec<TcpStream> = addrs.iter().map(|a| TcpStream::connect(a).expect("connect")).collect();
                let (mut latencies, mut expected, mut n) = (Vec::new(), 0u64, 0u64);
                while started.elapsed() < duration {
                    n += 1;
                    let request = make(client, n);
                    let i = (n as usize) % conns.len();
                    let t0 = Instant::now();
                    let conn = &mut conns[i];
                    match conn.write_all(&request).ok().and_then(|()| crate::http::read_one(conn)) {
                        Some(code) => {
                            latencies.push(t0.elapsed());
                            expected += u64::from(code == expect);
                        }
                        None => conns[i] = TcpStream::connect(addrs[i]).expect("reconnect"),
                    }
                }
                (latencies, expected)
            })
        })
        .collect();
    crate::tally::tally(threads, started)
}
