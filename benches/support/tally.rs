//! The figures of a load run, as the load generators of the benches print them.

use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// Joins the clients (each hands back its latencies and how many answers were the expected ones) and sums up the run
/// that began at `started`: requests/s, p50 and p99 in ms, the share of expected answers.
pub fn tally(clients: Vec<JoinHandle<(Vec<Duration>, u64)>>, started: Instant) -> (f64, f64, f64, f64) {
    let (mut all, mut expected) = (Vec::new(), 0);
    for client in clients {
        let (latencies, n) = client.join().expect("client");
        all.extend(latencies);
        expected += n;
    }
    let elapsed = started.elapsed();
    all.sort();
    let pct = |p: f64| all.get(((all.len() as f64 * p) as usize).min(all.len().saturating_sub(1)));
    let ms = |d: Option<&Duration>| d.map_or(0.0, |d| d.as_secs_f64() * 1e3);
    let share = if all.is_empty() { 0.0 } else { expected as f64 / all.len() as f64 };
    (all.len() as f64 / elapsed.as_secs_f64(), ms(pct(0.5)), ms(pct(0.99)), share)
}
