//! Admission: a circuit breaker per endpoint (a block opens it at once for a cool-down that doubles on each further
//! block; three other failures in a row open it for the base cool-down) and a minimum interval between searches per
//! provider (`Pace`, shared by the provider's endpoints). An endpoint that is not ready is skipped, never waited for;
//! only a next page of a search already admitted waits, for a short gap. Time is passed in (`Instant`), so tests can
//! move it.

use std::time::{Duration, Instant};

/// Failures other than blocks that open the breaker.
const FAILURES_TO_OPEN: u32 = 3;

#[derive(Debug, Clone)]
pub struct Settings {
    pub cooldown: Duration,
    pub cooldown_max: Duration,
}

/// The minimum interval between searches sent to one provider.
#[derive(Debug, Clone, Default)]
pub struct Pace {
    interval: Duration,
    last_request: Option<Instant>,
}

impl Pace {
    pub fn new(interval: Duration) -> Pace {
        Pace { interval, last_request: None }
    }

    pub fn interval(&self) -> Duration {
        self.interval
    }

    /// Takes the provider's turn now, or says how long until it is ready. `now` may be a little older than the
    /// last request (a caller reads the clock before the lock, and another may take the turn in between): that is
    /// no time since it, so without an interval the turn is always free, and the last request never goes back.
    pub fn take(&mut self, now: Instant) -> Result<(), Skip> {
        if let Some(last) = self.last_request {
            let since = now.saturating_duration_since(last);
            if since < self.interval {
                return Err(Skip::NotReady(self.interval - since));
            }
        }
        self.last_request = Some(self.last_request.map_or(now, |last| last.max(now)));
        Ok(())
    }

    /// A next page of a search that took the provider's turn: it is sent `min(interval, gap_max)` after the
    /// provider's last request (not a full interval: it is the same search, as a person paging on), and counts as
    /// the provider's last request, so the next search waits a full interval after it. Returns how long to wait, or
    /// `None` (nothing taken) when the page could not be sent before `deadline`.
    pub fn next_page(&mut self, now: Instant, gap_max: Duration, deadline: Instant) -> Option<Duration> {
        let gap = self.interval.min(gap_max);
        let at = self.last_request.map_or(now, |last| (last + gap).max(now));
        if at >= deadline {
            return None;
        }
        self.last_request = Some(at);
        Some(at - now)
    }
}

#[derive(Debug, Clone, Default)]
pub struct Breaker {
    open_until: Option<Instant>,
    blocks_in_a_row: u32,
    failures_in_a_row: u32,
}

/// Why an endpoint is skipped, and for how long.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Skip {
    /// The breaker is open.
    CoolingDown(Duration),
    /// Asked too recently.
    NotReady(Duration),
}

impl Skip {
    pub fn code(self) -> &'static str {
        match self {
            Skip::CoolingDown(_) => "cooling_down",
            Skip::NotReady(_) => "not_ready",
        }
    }

    pub fn retry_in(self) -> Duration {
        match self {
            Skip::CoolingDown(d) | Skip::NotReady(d) => d,
        }
    }
}

impl Breaker {
    /// Admits a request now, or says how long the breaker stays open.
    pub fn admit(&mut self, now: Instant) -> Result<(), Skip> {
        if let Some(until) = self.open_until {
            if now < until {
                return Err(Skip::CoolingDown(until - now));
            }
            self.open_until = None;
        }
        Ok(())
    }

    pub fn success(&mut self) {
        self.blocks_in_a_row = 0;
        self.failures_in_a_row = 0;
    }

    pub fn blocked(&mut self, now: Instant, s: &Settings) {
        self.blocks_in_a_row = self.blocks_in_a_row.saturating_add(1);
        let factor = 1u32 << self.blocks_in_a_row.saturating_sub(1).min(16);
        let cooldown = s.cooldown.saturating_mul(factor).min(s.cooldown_max.max(s.cooldown));
        self.open_until = Some(now + cooldown);
    }

    pub fn failed(&mut self, now: Instant, s: &Settings) {
        self.failures_in_a_row = self.failures_in_a_row.saturating_add(1);
        if self.failures_in_a_row >= FAILURES_TO_OPEN {
            self.failures_in_a_row = 0;
            self.open_until = Some(now + s.cooldown);
        }
    }

    /// "closed" (admitting), or "open" (cooling down) at this instant.
    pub fn state(&self, now: Instant) -> &'static str {
        match self.open_until {
            Some(until) if now < until => "open",
            _ => "closed",
        }
    }

    pub fn open_for(&self, now: Instant) -> Option<Duration> {
        self.open_until.filter(|u| now < *u).map(|u| u - now)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const S: Settings = Settings { cooldown: Duration::from_secs(60), cooldown_max: Duration::from_secs(200) };

    #[test]
    fn interval_between_requests() {
        let t0 = Instant::now();
        let mut p = Pace::new(Duration::from_secs(2));
        assert_eq!(p.take(t0), Ok(()));
        assert_eq!(p.take(t0 + Duration::from_secs(1)), Err(Skip::NotReady(Duration::from_secs(1))));
        assert_eq!(p.take(t0 + Duration::from_secs(2)), Ok(()));
        // A caller that read the clock before another took the turn: no time since it.
        let late = t0 + Duration::from_secs(10);
        assert_eq!(p.take(late), Ok(()));
        assert_eq!(p.take(late - Duration::from_millis(1)), Err(Skip::NotReady(Duration::from_secs(2))));
        let mut free = Pace::new(Duration::ZERO);
        assert_eq!(free.take(late), Ok(()));
        assert_eq!(free.take(late - Duration::from_millis(1)), Ok(()), "no interval: always free");
        assert_eq!(free.take(late), Ok(()), "the last request never goes back");
    }

    #[test]
    fn next_pages_wait_a_short_gap_and_count_as_the_last_request() {
        let t0 = Instant::now();
        let far = t0 + Duration::from_secs(60);
        let mut p = Pace::new(Duration::from_secs(2));
        assert_eq!(p.take(t0), Ok(()));
        let gap = Duration::from_millis(500);
        assert_eq!(p.next_page(t0 + Duration::from_millis(100), gap, far), Some(Duration::from_millis(400)));
        assert_eq!(p.next_page(t0 + Duration::from_secs(5), gap, far), Some(Duration::ZERO), "long after: at once");
        assert_eq!(p.take(t0 + Duration::from_secs(6)), Err(Skip::NotReady(Duration::from_secs(1))), "from the page");
        assert_eq!(p.next_page(t0 + Duration::from_secs(5), gap, t0 + Duration::from_millis(5_200)), None);
        assert_eq!(Pace::new(Duration::ZERO).next_page(t0, gap, far), Some(Duration::ZERO), "no interval, no gap");
    }

    #[test]
    fn blocks_cool_down_and_grow() {
        let t0 = Instant::now();
        let mut b = Breaker::default();
        b.blocked(t0, &S);
        assert_eq!(b.admit(t0 + Duration::from_secs(10)), Err(Skip::CoolingDown(Duration::from_secs(50))));
        assert_eq!(b.state(t0 + Duration::from_secs(10)), "open");
        let t1 = t0 + Duration::from_secs(60);
        assert_eq!(b.admit(t1), Ok(()));
        b.blocked(t1, &S);
        assert_eq!(b.open_for(t1), Some(Duration::from_secs(120)), "doubled");
        let t2 = t1 + Duration::from_secs(120);
        b.blocked(t2, &S);
        assert_eq!(b.open_for(t2), Some(Duration::from_secs(200)), "capped");
        b.success();
        b.blocked(t2, &S);
        assert_eq!(b.open_for(t2), Some(Duration::from_secs(60)), "a success resets the growth");
    }

    #[test]
    fn three_failures_open_the_breaker() {
        let t0 = Instant::now();
        let mut b = Breaker::default();
        b.failed(t0, &S);
        b.failed(t0, &S);
        assert_eq!(b.state(t0), "closed");
        b.failed(t0, &S);
        assert_eq!(b.open_for(t0), Some(Duration::from_secs(60)));
    }
}
