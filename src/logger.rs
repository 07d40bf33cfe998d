//! Log output through `log` and `env_logger`. Under systemd (`JOURNAL_STREAM` is set) each line starts with the
//! sd-daemon priority prefix (`<3>` for errors ... `<7>` for debug) so journald files it at the right level and adds
//! its own timestamp; elsewhere each line starts with an RFC 3339 UTC timestamp and the level.
//!
//! Lines go to stderr. Under systemd that is journald's stream socket, which fills when journald does not read (busy,
//! restarting): a line the socket cannot take at once is dropped and counted (`DROPPED_LINES`, in `/metrics`), so
//! that no thread waits on the log; the reactor writes the access line of every answer it makes itself. Elsewhere
//! (a terminal, a pipe, a file) writes wait as usual.
//!
//! Secrets never reach this module: callers log key ids and addresses, never keys.

use std::io::{self, Write};
use std::os::fd::AsRawFd;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};

use log::Level;

use crate::clock::{Clock, Rfc3339Ms, SystemClock};

/// Installs the global logger with an env_logger-style filter (`info`, `warn,websearchd::http=debug`). Calling it
/// twice is harmless.
pub fn init(filter: &str) {
    JOURNALD.store(std::env::var_os("JOURNAL_STREAM").is_some(), Relaxed);
    let mut builder = env_logger::Builder::new();
    builder.parse_filters(filter).format(|buf, record| {
        write_prefix(buf, record.level(), record.target())?;
        writeln!(buf, "{}", record.args())
    });
    builder.target(env_logger::Target::Pipe(Box::new(Stderr)));
    // A second init (tests, or `search` after a failed start) keeps the first logger.
    let _ = builder.try_init();
}

/// Whether lines carry journald's priority prefix (`init` saw `JOURNAL_STREAM`) rather than a timestamp.
static JOURNALD: AtomicBool = AtomicBool::new(false);

/// The start of every line, access lines included: journald's priority prefix, or the time and the level.
fn write_prefix(out: &mut impl Write, level: Level, target: &str) -> io::Result<()> {
    if JOURNALD.load(Relaxed) {
        write!(out, "<{}>{target}: ", priority(level))
    } else {
        write!(out, "{} {level:<5} {target}: ", Rfc3339Ms(SystemClock.now_unix_ms()))
    }
}

/// The target of access lines.
pub const ACCESS_TARGET: &str = "websearchd::access";

/// A thread's access lines not yet written: `access_line` adds to them, `flush_access_lines` writes them in one go.
const ACCESS_BATCH_BYTES_MAX: usize = 32 * 1_024;

thread_local! {
    static ACCESS_LINES: std::cell::RefCell<Vec<u8>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// One access line (one answer: `websearchd::access` at `info`), in the format of every other line, formatted straight
/// into this thread's batch: no allocation once the batch has grown to its usual size, no trip through `log`'s
/// formatter and its lock. With `batch`, the line waits for `flush_access_lines` (the reactor flushes once per
/// wake-up: one write for all the answers it made in it, instead of one each) or for the batch to pass
/// `ACCESS_BATCH_BYTES_MAX`; without, it is written at once. Nothing is written when the filter leaves access lines
/// out.
pub fn access_line(batch: bool, message: std::fmt::Arguments<'_>) {
    if !log::log_enabled!(target: ACCESS_TARGET, Level::Info) {
        return;
    }
    let full = ACCESS_LINES.with(|lines| {
        let Ok(mut lines) = lines.try_borrow_mut() else { return false };
        let _ = write_prefix(&mut *lines, Level::Info, ACCESS_TARGET);
        let _ = lines.write_fmt(message);
        lines.push(b'\n');
        lines.len() >= ACCESS_BATCH_BYTES_MAX
    });
    if full || !batch {
        flush_access_lines();
    }
}

/// Writes this thread's waiting access lines in one write.
pub fn flush_access_lines() {
    ACCESS_LINES.with(|lines| {
        let Ok(mut lines) = lines.try_borrow_mut() else { return };
        if lines.is_empty() {
            return;
        }
        let _ = Stderr.write(&lines);
        lines.clear();
        // A burst of long lines (long paths) does not keep its memory.
        if lines.capacity() > 2 * ACCESS_BATCH_BYTES_MAX {
            lines.shrink_to(ACCESS_BATCH_BYTES_MAX);
        }
    });
}

/// Log lines dropped because stderr, a socket, could not take them without waiting.
pub static DROPPED_LINES: AtomicU64 = AtomicU64::new(0);

/// Set once stderr has proved not to be a socket: plain writes from then on.
static STDERR_NOT_SOCKET: AtomicBool = AtomicBool::new(false);

/// Stderr, written a whole line at a time (env_logger hands each record over in one `write_all`; a batch of access
/// lines comes whole too).
struct Stderr;

impl Write for Stderr {
    fn write(&mut self, line: &[u8]) -> io::Result<usize> {
        // Held across the send too, so that lines do not interleave with other writers of stderr.
        let mut stderr = io::stderr().lock();
        while !STDERR_NOT_SOCKET.load(Relaxed) {
            match crate::http::sys::send_nowait(stderr.as_raw_fd(), line) {
                // A line goes whole or not at all unless it is longer than the socket takes in one send (half its
                // buffer, some 100 KB, far beyond any line logged): then the rest waits.
                Ok(sent) => {
                    stderr.write_all(line.get(sent..).unwrap_or_default())?;
                    return Ok(line.len());
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                    // A batch of access lines is several lines.
                    let lines = line.iter().filter(|&&b| b == b'\n').count().max(1);
                    DROPPED_LINES.fetch_add(lines as u64, Relaxed);
                    return Ok(line.len());
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) if e.raw_os_error() == Some(libc::ENOTSOCK) => STDERR_NOT_SOCKET.store(true, Relaxed),
                Err(e) => return Err(e),
            }
        }
        stderr.write_all(line)?;
        Ok(line.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
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
