//! Log output through `log` and `env_logger`. Under systemd (`JOURNAL_STREAM` is set) each line starts with the
//! sd-daemon priority prefix (`<3>` for errors ... `<7>` for debug) so journald files it at the right level and adds
//! its own timestamp; elsewhere each line starts with an RFC 3339 UTC timestamp and the level.
//!
//! Secrets never reach this module: callers log key ids and addresses, never keys.

use std::io::Write;

use log::Level;

use crate::clock::{rfc3339_ms, Clock, SystemClock};

/// Installs the global logger with an env_logger-style filter (`info`, `warn,websearchd::http=debug`). Calling it
/// twice is harmless.
pub fn init(filter: &str) {
    let journald = std::env::var_os("JOURNAL_STREAM").is_some();
    let mut builder = env_logger::Builder::new();
    builder.parse_filters(filter).format(move |buf, record| {
        let target = record.target();
        if journald {
            writeln!(buf, "<{}>{}: {}", priority(record.level()), target, record.args())
        } else {
            let now = rfc3339_ms(SystemClock.now_unix_ms());
            writeln!(buf, "{now} {:<5} {target}: {}", record.level(), record.args())
        }
    });
    // A second init (tests, or `search` after a failed start) keeps the first logger.
    let _ = builder.try_init();
}

/// The syslog priority of a level, as sd-daemon(3) prefixes expect.
fn priority(level: Level) -> u8 {
    match level {
        Level::Error => 3,
        Level::Warn => 4,
        Level::Info => 6,
        Level::Debug | Level::Trace => 7,
    }
}
