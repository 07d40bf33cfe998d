//! Host name lookups bounded by a deadline. The system resolver (`getaddrinfo`) has no timeout of its own, so a
//! lookup runs on a thread of its own that the caller's deadline can leave behind. While DNS hangs, those threads
//! live until the C resolver gives up (its own timeouts and attempts), so each user of lookups caps how many of its
//! own run at once (`Lookups`): past the cap none is started and the caller fails at once.

use std::net::{SocketAddr, ToSocketAddrs};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

/// The lookups of one user (the SSRF guard, the shared store's client), at most `max` running at once.
pub struct Lookups {
    in_flight: AtomicUsize,
    max: usize,
}

/// Why a lookup gave no address.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LookupError {
    /// `max` lookups are running, or no thread could be started: none was.
    Busy,
    /// The deadline came first (the lookup goes on, in its place among the `max`, until the resolver gives up).
    TimedOut,
    /// The resolver answered: the host has no address, or its error (the message names the host).
    Failed(String),
}

/// One lookup's place among its `Lookups`, given back when its thread ends.
struct Slot(&'static Lookups);

impl Drop for Slot {
    fn drop(&mut self) {
        self.0.in_flight.fetch_sub(1, Ordering::AcqRel);
    }
}

impl Lookups {
    pub const fn new(max: usize) -> Lookups {
        Lookups { in_flight: AtomicUsize::new(0), max }
    }

    fn take(&'static self) -> Option<Slot> {
        self.in_flight
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| (n < self.max).then_some(n + 1))
            .ok()
            .map(|_| Slot(self))
    }

    /// The addresses of `host`, looked up on a thread of its own and waited for `within` at most.
    pub fn resolve(&'static self, host: &str, port: u16, within: Duration) -> Result<Vec<SocketAddr>, LookupError> {
        let slot = self.take().ok_or(LookupError::Busy)?;
        let (tx, rx) = std::sync::mpsc::channel();
        let name = host.to_owned();
        std::thread::Builder::new()
            .name("lookup".into())
            .spawn(move || {
                let found = (name.as_str(), port).to_socket_addrs().map(Iterator::collect::<Vec<_>>);
                // The place is free before the answer is: a caller that has it may look up again at once.
                drop(slot);
                let _ = tx.send(found);
            })
            .map_err(|_| LookupError::Busy)?;
        match rx.recv_timeout(within) {
            Ok(Ok(addrs)) if !addrs.is_empty() => Ok(addrs),
            Ok(Ok(_)) => Err(LookupError::Failed(format!("{host} has no address"))),
            Ok(Err(e)) => Err(LookupError::Failed(format!("{host}: {e}"))),
            Err(_) => Err(LookupError::TimedOut),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Lookups left running by hung DNS are capped: once every place is taken no lookup starts, and a place given
    /// back lets the next one start. (Its own `Lookups`: the guard's are not taken from tests running beside it.)
    #[test]
    fn lookups_in_flight_are_capped() {
        static CAPPED: Lookups = Lookups::new(3);
        let mut slots: Vec<Slot> = std::iter::from_fn(|| CAPPED.take()).collect();
        assert_eq!(slots.len(), 3);
        assert!(CAPPED.take().is_none(), "a lookup started past the cap");
        assert_eq!(CAPPED.resolve("localhost", 80, Duration::from_secs(5)), Err(LookupError::Busy));
        slots.pop();
        assert!(CAPPED.take().is_some());
    }

    #[test]
    fn a_literal_resolves_and_a_bad_name_fails() {
        static LOOKUPS: Lookups = Lookups::new(1);
        let within = Duration::from_secs(5);
        assert_eq!(LOOKUPS.resolve("127.0.0.1", 6379, within), Ok(vec![SocketAddr::from(([127, 0, 0, 1], 6379))]));
        // A label of 64 characters (DNS allows 63) fails inside the C library: no query leaves the machine.
        let bad = format!("{}.invalid", "a".repeat(64));
        assert!(matches!(LOOKUPS.resolve(&bad, 80, within), Err(LookupError::Failed(e)) if e.starts_with(&bad)));
    }
}
