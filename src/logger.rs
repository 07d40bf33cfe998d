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
    if builder.try_init().is_ok() {
        std::panic::set_hook(Box::new(log_panic));
    }
}

/// The target of the line a panic logs.
pub const PANIC_TARGET: &str = "websearchd::panic";

/// The panic hook `init` installs: one error line (the thread, where, and the message) through the logger, so that
/// under systemd it reaches the journal with its priority like every other line. Release builds abort right after it
/// (`panic = "abort"`) and systemd starts the service again; builds that unwind (tests, debug) go on unwinding, and
/// the server answers the request with a 500.
fn log_panic(info: &std::panic::PanicHookInfo<'_>) {
    let line = panic_line(std::thread::current().name(), info.location(), info.payload());
    log::error!(target: PANIC_TARGET, "{line}");
}

/// The panic hook's line: `thread 'NAME' panicked at FILE:LINE:COLUMN: MESSAGE`, the message on one line.
fn panic_line(
    thread: Option<&str>,
    location: Option<&std::panic::Location<'_>>,
    payload: &(dyn std::any::Any + Send),
) -> String {
    let message = payload
        .downcast_ref::<&str>()
        .copied()
        .or_else(|| payload.downcast_ref::<String>().map(String::as_str))
        .unwrap_or("(no message)");
    let location = location.map_or_else(|| "an unknown place".to_owned(), ToString::to_string);
    format!("thread '{}' panicked at {location}: {}", thread.unwrap_or("unnamed"), message.replace('\n', " "))
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
        if !STDERR_NOT_SOCKET.load(Relaxed) {
            let mut carry = CARRY.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
            match send_lines(stderr.as_raw_fd(), &mut carry, line) {
                Ok(()) => return Ok(line.len()),
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

/// The end of a line a socket took only the start of (its buffer filled mid-line), sent before anything else so
/// that the journal never reads a torn line run into the next one. A line's end longer than `CARRY_BYTES_MAX` is cut
/// there (and still ended).
static CARRY: std::sync::Mutex<Vec<u8>> = std::sync::Mutex::new(Vec::new());
const CARRY_BYTES_MAX: usize = 4 * 1_024;

/// Sends whole `lines` to the socket `fd` without ever waiting: first the end of an earlier line (`carry`), then as
/// much of `lines` as the socket takes now; of the rest, the end of the line it took the start of goes to `carry`,
/// and the lines after it are dropped and counted in `DROPPED_LINES` (a batch of access lines is several lines).
/// Waiting for the rest, as a plain write does, would stall the reactor for as long as journald does not read.
fn send_lines(fd: std::os::fd::RawFd, carry: &mut Vec<u8>, lines: &[u8]) -> io::Result<()> {
    let dropped = |bytes: &[u8]| {
        let n = bytes.iter().filter(|&&b| b == b'\n').count().max(usize::from(!bytes.is_empty()));
        DROPPED_LINES.fetch_add(n as u64, Relaxed);
    };
    while !carry.is_empty() {
        match crate::http::sys::send_nowait(fd, carry) {
            Ok(n) => drop(carry.drain(..n.min(carry.len()))),
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                dropped(lines);
                return Ok(());
            }
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    loop {
        match crate::http::sys::send_nowait(fd, lines) {
            Ok(sent) => {
                let rest = lines.get(sent..).unwrap_or_default();
                // Mid-line: the line's end is kept; at a line's end there is nothing to keep.
                let mid_line = sent > 0 && lines.get(sent - 1) != Some(&b'\n');
                let end =
                    if mid_line { rest.iter().position(|&b| b == b'\n').map_or(rest.len(), |i| i + 1) } else { 0 };
                let (line_end, after) = rest.split_at(end);
                if line_end.len() <= CARRY_BYTES_MAX {
                    carry.extend_from_slice(line_end);
                } else {
                    carry.extend_from_slice(line_end.get(..CARRY_BYTES_MAX - 1).unwrap_or_default());
                    carry.push(b'\n');
                }
                dropped(after);
                return Ok(());
            }
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                dropped(lines);
                return Ok(());
            }
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
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

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Read;
    use std::os::unix::net::UnixStream;

    fn line(n: usize) -> String {
        format!("line {n:06} {}\n", "x".repeat(80))
    }

    #[test]
    fn a_panic_is_one_line_with_the_thread_the_place_and_the_message() {
        let here = std::panic::Location::caller();
        let at = format!("{}:{}:{}", here.file(), here.line(), here.column());
        assert_eq!(
            panic_line(Some("worker-3"), Some(here), &"index 9 out of range\nfor 4"),
            format!("thread 'worker-3' panicked at {at}: index 9 out of range for 4")
        );
        let formatted: Box<dyn std::any::Any + Send> = Box::new(format!("bad {}", 7));
        assert_eq!(panic_line(None, None, &*formatted), "thread 'unnamed' panicked at an unknown place: bad 7");
        assert!(panic_line(None, Some(here), &42_u8).ends_with(": (no message)"));
    }

    /// A journal that stops reading: its socket fills mid-line, the write returns at once, and what the journal
    /// reads afterwards is whole lines only (the torn line's end went first, the lines that did not fit were
    /// dropped and counted).
    #[test]
    fn a_full_socket_costs_whole_lines_and_never_waits() {
        let (writer, mut journal) = UnixStream::pair().unwrap();
        let fd = writer.as_raw_fd();
        let mut carry = Vec::new();
        let mut n = 0;
        // Batches of 3,000 lines (270 KB: a unix socket takes a send in pieces of about half its buffer) until one
        // is cut mid-line: the socket is full.
        let mut read = Vec::new();
        while carry.is_empty() {
            let batch: String = (n..n + 3_000).map(line).collect();
            let before = DROPPED_LINES.load(Relaxed);
            send_lines(fd, &mut carry, batch.as_bytes()).unwrap();
            if carry.is_empty() && DROPPED_LINES.load(Relaxed) - before >= 3_000 {
                // Full, and the last cut fell between lines: make room for another try.
                let mut room = vec![0u8; 100_000];
                let n = journal.read(&mut room).unwrap();
                read.extend_from_slice(room.get(..n).unwrap());
            }
            n += 3_000;
            assert!(n < 1_000_000, "the socket never filled");
        }
        assert!(carry.ends_with(b"\n") && carry.len() < line(0).len(), "{:?}", String::from_utf8_lossy(&carry));
        let dropped_before = DROPPED_LINES.load(Relaxed);
        send_lines(fd, &mut carry, line(n).as_bytes()).unwrap();
        assert!(DROPPED_LINES.load(Relaxed) > dropped_before, "a line the full socket could not take is counted");
        // The journal reads again: the torn line's end goes first, then the next line.
        journal.set_nonblocking(true).unwrap();
        let _ = journal.read_to_end(&mut read);
        send_lines(fd, &mut carry, line(n + 1).as_bytes()).unwrap();
        assert!(carry.is_empty());
        let _ = journal.read_to_end(&mut read);
        let text = String::from_utf8(read).unwrap();
        assert!(text.ends_with(&line(n + 1)));
        for l in text.lines() {
            assert!(l.len() == line(0).len() - 1 && l.starts_with("line "), "a torn line: {l:?}");
        }
    }
}
