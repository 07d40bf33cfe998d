//! The operating-system calls std does not offer: `poll(2)` over many sockets, waiting for SIGTERM/SIGINT on a
//! thread of our own (`sigwait(3)`) instead of in an async signal handler, the allocator's bounds and handing freed
//! heap back to the system (`mallopt(3)`, `malloc_trim(3)`, glibc only), a send that never waits (`MSG_DONTWAIT`,
//! for the log). All `unsafe` in the crate is here.

use std::io;
use std::os::fd::RawFd;
use std::time::Duration;

pub use libc::pollfd as PollFd;
pub const POLLIN: i16 = libc::POLLIN;

/// Waits for input; on Linux also reports the peer's end of input (`POLLRDHUP`), so that a reader can stop at a
/// short read without one more call to learn whether the client has closed its side.
pub fn poll_fd(fd: RawFd) -> PollFd {
    PollFd { fd, events: POLLIN | RDHUP, revents: 0 }
}

#[cfg(any(target_os = "linux", target_os = "android"))]
const RDHUP: i16 = libc::POLLRDHUP;
#[cfg(not(any(target_os = "linux", target_os = "android")))]
const RDHUP: i16 = 0;

/// Whether the peer may have closed its side: a reader must then read on to the end of input. Without `POLLRDHUP`
/// (outside Linux) this is always true.
pub fn peer_may_have_closed(p: &PollFd) -> bool {
    RDHUP == 0 || p.revents & (RDHUP | libc::POLLHUP | libc::POLLERR) != 0
}

/// Waits for room to write instead of for input.
pub fn poll_fd_out(fd: RawFd) -> PollFd {
    PollFd { fd, events: libc::POLLOUT, revents: 0 }
}

/// Readable or writable (as asked), closed or in error: anything that calls for a read or write attempt.
pub fn is_ready(p: &PollFd) -> bool {
    p.revents & (libc::POLLIN | libc::POLLOUT | libc::POLLHUP | libc::POLLERR | libc::POLLNVAL) != 0
}

/// Waits until a descriptor is ready or the timeout passes. EINTR counts as a wake-up with nothing ready.
pub fn poll(fds: &mut [PollFd], timeout: Duration) -> io::Result<usize> {
    let timeout_ms = timeout.as_millis().min(i32::MAX as u128) as libc::c_int;
    // SAFETY: `fds` is a valid, exclusively borrowed slice of `pollfd` for the whole call, and its length is
    // passed with it.
    let n = unsafe { libc::poll(fds.as_mut_ptr(), fds.len() as libc::nfds_t, timeout_ms) };
    if n < 0 {
        let err = io::Error::last_os_error();
        return if err.kind() == io::ErrorKind::Interrupted { Ok(0) } else { Err(err) };
    }
    Ok(n as usize)
}

/// Sends what the socket `fd` takes now of `bytes`, without waiting (`MSG_DONTWAIT`: for this call only, the
/// descriptor's own flags untouched): `WouldBlock` when its buffer is full, the OS error `ENOTSOCK` when `fd` is
/// not a socket.
pub fn send_nowait(fd: RawFd, bytes: &[u8]) -> io::Result<usize> {
    // SAFETY: the pointer and length are those of a live borrowed slice, which send(2) only reads.
    let n = unsafe { libc::send(fd, bytes.as_ptr().cast(), bytes.len(), libc::MSG_DONTWAIT) };
    if n < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(n as usize)
}

/// Returns the allocator's free memory to the system. glibc keeps what a worker thread freed in that thread's arena
/// (and the top of the main heap) for reuse, so one large extraction would otherwise stay in the resident set for
/// good; musl's allocator returns memory by itself, and there this does nothing.
pub fn trim_heap() {
    #[cfg(target_env = "gnu")]
    // SAFETY: malloc_trim takes a plain integer (the padding to keep) and only walks the allocator's own arenas,
    // under their locks; it is safe to call from any thread at any time.
    unsafe {
        libc::malloc_trim(0);
    }
}

/// Allocations at least this large are mapped on their own and unmapped when freed (glibc: `M_MMAP_THRESHOLD`).
/// Setting it also fixes the threshold past which the top of an arena is given back (`M_TRIM_THRESHOLD`, 128 KiB by
/// default): left to itself, glibc raises both after each large block it frees (up to 32 and 64 MiB), so that after
/// one 3 MB body every worker's arena kept up to twice that of freed memory (the soak: 4 to 10 MB in each of four
/// arenas, about 5 MB of it in use in all).
pub const MMAP_THRESHOLD_BYTES: usize = 128 * 1_024;

/// Allocator arenas at most (glibc: `M_ARENA_MAX`; its default is 8 per core). Each arena keeps the memory its
/// threads freed for its own reuse, so with one per worker the freed memory of every worker stays resident; with two,
/// the workers share what they free. Small allocations take no arena lock (glibc's per-thread cache serves them).
pub const ARENAS_MAX: usize = 2;

/// Sets the allocator's bounds (`MMAP_THRESHOLD_BYTES`, `ARENAS_MAX`) with glibc, unless the operator set its
/// malloc tunables (`GLIBC_TUNABLES=glibc.malloc.*`), which then stand. Call before spawning threads. musl's
/// allocator maps large blocks on their own and returns freed memory by itself; there this does nothing.
pub fn tune_allocator() {
    #[cfg(target_env = "gnu")]
    {
        let operator_set = std::env::var("GLIBC_TUNABLES").is_ok_and(|t| t.contains("glibc.malloc."));
        if !operator_set {
            // SAFETY: mallopt takes two plain integers and only sets the allocator's parameters, under its own lock.
            unsafe {
                libc::mallopt(libc::M_MMAP_THRESHOLD, MMAP_THRESHOLD_BYTES as libc::c_int);
                libc::mallopt(libc::M_ARENA_MAX, ARENAS_MAX as libc::c_int);
            }
        }
    }
}

/// The termination signals, blocked in the calling thread (and so in every thread it spawns afterwards) so that
/// only `wait` receives them.
pub struct TerminationSignals {
    set: libc::sigset_t,
}

impl TerminationSignals {
    /// Blocks SIGTERM and SIGINT. Call before spawning any thread.
    pub fn block() -> io::Result<TerminationSignals> {
        // SAFETY: sigset_t is plain data, initialised by sigemptyset before use; the pointers are to locals that
        // live for the calls.
        unsafe {
            let mut set: libc::sigset_t = std::mem::zeroed();
            libc::sigemptyset(&mut set);
            libc::sigaddset(&mut set, libc::SIGTERM);
            libc::sigaddset(&mut set, libc::SIGINT);
            let rc = libc::pthread_sigmask(libc::SIG_BLOCK, &set, std::ptr::null_mut());
            if rc != 0 {
                return Err(io::Error::from_raw_os_error(rc));
            }
            Ok(TerminationSignals { set })
        }
    }

    /// Blocks until SIGTERM or SIGINT arrives; returns its name.
    pub fn wait(&self) -> &'static str {
        loop {
            let mut sig: libc::c_int = 0;
            // SAFETY: `self.set` is an initialised signal set and `sig` a valid out-pointer.
            let rc = unsafe { libc::sigwait(&self.set, &mut sig) };
            if rc == 0 {
                return if sig == libc::SIGINT { "SIGINT" } else { "SIGTERM" };
            }
        }
    }
}

// SAFETY: a sigset_t is a plain bit set, read-only after construction.
unsafe impl Send for TerminationSignals {}
