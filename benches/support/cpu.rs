//! CPU time of the calling thread: on a shared machine a measure of work that other processes' load hardly moves
//! (wall time counts the time the thread waited for a core).

/// Seconds of CPU (user and system) the calling thread has used so far.
pub fn thread_seconds() -> f64 {
    // SAFETY: getrusage writes a plain struct; zeroed is a valid starting value for it.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: `usage` is a valid, writable rusage for the call's duration.
    let rc = unsafe { libc::getrusage(libc::RUSAGE_THREAD, &mut usage) };
    if rc != 0 {
        return f64::NAN;
    }
    let secs = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    secs(usage.ru_utime) + secs(usage.ru_stime)
}
