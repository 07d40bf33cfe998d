//! Request counters and latency histograms, rendered in the Prometheus text exposition format (version 0.0.4).
//! Label values come from fixed sets (route names, status codes), so the number of series is bounded.

use std::collections::BTreeMap;
use std::fmt::Write;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::Mutex;
use std::time::Duration;

use crate::http::{Reject, ServerStats};

/// Upper bounds of the latency buckets, in seconds.
const LATENCY_BUCKETS_S: [f64; 12] = [0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0];

#[derive(Debug, Default)]
pub struct Metrics {
    requests: Mutex<BTreeMap<(&'static str, u16), u64>>,
    latency: Mutex<BTreeMap<&'static str, Histogram>>,
}

#[derive(Debug, Default, Clone)]
struct Histogram {
    buckets: [u64; LATENCY_BUCKETS_S.len()],
    count: u64,
    sum_s: f64,
}

impl Metrics {
    pub fn record(&self, route: &'static str, status: u16, elapsed: Duration) {
        let mut requests = self.requests.lock().unwrap_or_else(|p| p.into_inner());
        *requests.entry((route, status)).or_default() += 1;
        drop(requests);
        let secs = elapsed.as_secs_f64();
        let mut latency = self.latency.lock().unwrap_or_else(|p| p.into_inner());
        let h = latency.entry(route).or_default();
        for (bucket, le) in h.buckets.iter_mut().zip(LATENCY_BUCKETS_S) {
            if secs <= le {
                *bucket += 1;
            }
        }
        h.count += 1;
        h.sum_s += secs;
    }

    /// Requests answered, by route and then status, for `/core/state`.
    pub fn by_route(&self) -> serde_json::Value {
        let mut out = serde_json::Map::new();
        for ((route, status), n) in self.requests.lock().unwrap_or_else(|p| p.into_inner()).iter() {
            if let Some(map) =
                out.entry(*route).or_insert_with(|| serde_json::Value::Object(serde_json::Map::new())).as_object_mut()
            {
                map.insert(status.to_string(), (*n).into());
            }
        }
        serde_json::Value::Object(out)
    }

    /// The exposition text: these counters, the server's figures, and whatever `extra` adds.
    pub fn render(&self, server: &ServerStats, uptime: Duration, extra: &str) -> String {
        let mut out = String::with_capacity(4_096);
        let v = env!("CARGO_PKG_VERSION");
        family(&mut out, "websearchd_build_info", "gauge", "Build information.");
        let _ = writeln!(out, "websearchd_build_info{{version=\"{v}\"}} 1");
        family(&mut out, "websearchd_uptime_seconds", "gauge", "Seconds since the server started.");
        let _ = writeln!(out, "websearchd_uptime_seconds {}", uptime.as_secs());

        family(&mut out, "websearchd_http_requests_total", "counter", "Requests answered, by route and status.");
        for ((route, status), n) in self.requests.lock().unwrap_or_else(|p| p.into_inner()).iter() {
            let _ = writeln!(out, "websearchd_http_requests_total{{route=\"{route}\",status=\"{status}\"}} {n}");
        }
        let name = "websearchd_http_request_duration_seconds";
        family(&mut out, name, "histogram", "Time from a complete request to its written response.");
        for (route, h) in self.latency.lock().unwrap_or_else(|p| p.into_inner()).iter() {
            for (n, le) in h.buckets.iter().zip(LATENCY_BUCKETS_S) {
                let _ = writeln!(out, "{name}_bucket{{route=\"{route}\",le=\"{le}\"}} {n}");
            }
            let _ = writeln!(out, "{name}_bucket{{route=\"{route}\",le=\"+Inf\"}} {}", h.count);
            let _ = writeln!(out, "{name}_sum{{route=\"{route}\"}} {}", h.sum_s);
            let _ = writeln!(out, "{name}_count{{route=\"{route}\"}} {}", h.count);
        }

        let gauges = [
            ("websearchd_http_requests_in_flight", "Requests a worker is running now.", &server.in_flight),
            ("websearchd_http_queue_depth", "Complete requests waiting for a worker.", &server.queued),
            ("websearchd_http_queue_capacity", "Bound of the request queue.", &server.queue_capacity),
            ("websearchd_workers", "Worker threads.", &server.workers),
            ("websearchd_http_connections_open", "Open client connections.", &server.connections_open),
            (
                "websearchd_http_write_pending_bytes",
                "Response bytes waiting for slow readers to take them.",
                &server.write_pending_bytes,
            ),
        ];
        for (name, help, value) in gauges {
            family(&mut out, name, "gauge", help);
            let _ = writeln!(out, "{name} {}", value.load(Relaxed));
        }
        let counters = [
            ("websearchd_http_connections_accepted_total", "Connections accepted.", &server.connections_accepted),
            ("websearchd_http_accept_errors_total", "Failed accept() calls.", &server.accept_errors),
            (
                "websearchd_log_lines_dropped_total",
                "Log lines dropped because journald's socket was full (it was not reading).",
                &crate::logger::DROPPED_LINES,
            ),
        ];
        for (name, help, value) in counters {
            family(&mut out, name, "counter", help);
            let _ = writeln!(out, "{name} {}", value.load(Relaxed));
        }
        let name = "websearchd_http_rejected_total";
        family(&mut out, name, "counter", "Connections and requests the server refused before any handler, by reason.");
        for reason in Reject::ALL {
            let _ = writeln!(out, "{name}{{reason=\"{}\"}} {}", reason.label(), server.rejected(reason));
        }
        out.push_str(extra);
        out
    }
}

/// Writes the `# HELP` and `# TYPE` lines of a metric family.
pub fn family(out: &mut String, name: &str, kind: &str, help: &str) {
    let _ = writeln!(out, "# HELP {name} {help}\n# TYPE {name} {kind}");
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renders_counters_and_histograms() {
        let m = Metrics::default();
        m.record("health", 200, Duration::from_millis(3));
        m.record("health", 200, Duration::from_millis(30));
        m.record("service", 400, Duration::from_millis(1));
        let text = m.render(&ServerStats::default(), Duration::from_secs(7), "");
        assert!(text.contains("websearchd_http_requests_total{route=\"health\",status=\"200\"} 2\n"));
        assert!(text.contains("websearchd_http_requests_total{route=\"service\",status=\"400\"} 1\n"));
        assert!(text.contains("websearchd_http_request_duration_seconds_bucket{route=\"health\",le=\"0.005\"} 1\n"));
        assert!(text.contains("websearchd_http_request_duration_seconds_bucket{route=\"health\",le=\"0.05\"} 2\n"));
        assert!(text.contains("websearchd_http_request_duration_seconds_count{route=\"health\"} 2\n"));
        assert!(text.contains("websearchd_uptime_seconds 7\n"));
        assert!(text.contains("websearchd_http_rejected_total{reason=\"queue_full\"} 0\n"));
    }
}
