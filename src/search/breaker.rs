//! Admission, per endpoint and per provider, with time passed in (`Instant`) so that tests can move it:
//! - `Health`: an endpoint is backed off by what it said. A wall or a 429 backs it off for `wall_backoff`, twice as
//!   long for each wall in a row before it (since its last answer). What may be chance (a timeout, a reset, a 5xx,
//!   broken HTTP) costs nothing the first time: the endpoint is only asked after the healthy ones, and a search may
//!   ask it once more; from the second such failure in a row, and from the first failure that will not pass by
//!   itself (a 404, an unreadable page), `failure_backoff`, doubling with each. Back-offs are jittered (80% to
//!   120%), capped by `backoff_max`, and a longer `Retry-After` from the provider is kept. When a back-off is over the
//!   endpoint is half-open: one trial request at a time decides (an answer closes it and resets the counts, a
//!   failure backs it off again, longer).
//! - `Pace`: a token bucket per provider (shared by its endpoints; each SearXNG instance has its own): a sustained
//!   `interval` between requests with a `burst` of requests that may go at once (GCRA: a theoretical arrival time).
//!   A search reserves the provider's next slot and may wait for it; a slot reserved and not used is given back.

use std::time::{Duration, Instant};

/// What each wall in a row multiplies a wall's back-off by: a provider that walls again after its back-off is asked
/// more and more rarely (3, 6, 12, 24, 48 s ... with a 3 s base), one that walled by chance comes back in seconds.
/// (Four times, tried in the weather bench, left an unlucky provider out for minutes: 84% answered in a world of
/// another seed, 98% with two.)
const WALL_GROWTH: u32 = 2;

#[derive(Debug, Clone)]
pub struct Settings {
    /// The first back-off after a wall or a 429.
    pub wall_backoff: Duration,
    /// The first back-off after another failure (a timeout, a 5xx, a reset, a page that could not be read).
    pub failure_backoff: Duration,
    pub backoff_max: Duration,
    /// A trial request not answered within this is taken as lost (every request ends within the source timeout).
    pub trial_max: Duration,
}

/// What a failed request said about its endpoint.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Failure {
    /// A bot wall, a captcha, 403 or 429: "not from you, not now".
    Wall,
    /// What may be chance: a timeout, a reset, a 5xx, broken HTTP.
    Transient,
    /// What will not pass by itself: another status (404), a page that could not be read, a refused redirect.
    Other,
}

/// Why an endpoint is not asked now, and how long until it can be.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Skip {
    /// Backed off after failures.
    BackingOff(Duration),
    /// Half-open: another search's trial request is out.
    Trial(Duration),
    /// Its provider's next slot is further away than the search can wait.
    Paced(Duration),
}

impl Skip {
    pub fn code(self) -> &'static str {
        match self {
            Skip::BackingOff(_) | Skip::Trial(_) => "cooling_down",
            Skip::Paced(_) => "not_ready",
        }
    }

    pub fn retry_in(self) -> Duration {
        match self {
            Skip::BackingOff(d) | Skip::Trial(d) | Skip::Paced(d) => d,
        }
    }

    pub fn detail(self, provider: &str) -> String {
        match self {
            Skip::BackingOff(_) => "backing off after failing; one trial request follows".into(),
            Skip::Trial(_) => "a trial request after its back-off is out; it decides".into(),
            Skip::Paced(_) => format!("provider {provider}'s next slot is later than this search can wait"),
        }
    }
}

/// An endpoint's health: the failures in a row, the back-off they earned, the trial after it.
#[derive(Debug, Clone, Default)]
pub struct Health {
    /// Failures in a row since the last answer, and of them walls (each kind grows its own back-off).
    strikes: u32,
    walls: u32,
    /// The end of the back-off; once it passed, the next request is a trial (half-open) until one answers.
    open_until: Option<Instant>,
    /// A trial request taken at this instant and not yet answered.
    trial_since: Option<Instant>,
    /// Counts the changes of admission (a back-off set, a back-off or a run of failures cleared): what a request
    /// admitted before the last change says is stale (a burst walled at once is one wall, not three in a row; an
    /// older request's answer does not clear a newer wall).
    epoch: u64,
}

impl Health {
    /// When the endpoint can be asked, from `now` on: now when healthy or a trial is due, the end of its back-off, or
    /// `Err` while a trial is taken (perhaps for a slot still to come) and not answered: what it says decides.
    pub fn ready_at(&self, now: Instant, s: &Settings) -> Result<Instant, Skip> {
        if let Some(ends) = self.trial_since.map(|since| since + s.trial_max).filter(|ends| now < *ends) {
            return Err(Skip::Trial(ends - now));
        }
        Ok(self.open_until.filter(|u| *u > now).unwrap_or(now))
    }

    /// Admits a request at `at` (the endpoint's `ready_at`, or later): whether it is the trial that decides a
    /// half-open endpoint (the others then wait for it), and the epoch to report its outcome with.
    pub fn admit(&mut self, at: Instant, s: &Settings) -> Result<(bool, u64), Skip> {
        let ready = self.ready_at(at, s)?;
        if ready > at {
            return Err(Skip::BackingOff(ready - at));
        }
        let trial = self.open_until.is_some();
        if trial {
            self.trial_since = Some(at);
        }
        Ok((trial, self.epoch))
    }

    /// The request admitted as the trial goes now (its slot may have been later than admitted, or the fleet's).
    pub fn sending(&mut self, now: Instant) {
        if let Some(since) = &mut self.trial_since {
            *since = now;
        }
    }

    /// A trial admitted and never sent (the search ended first): another may be taken.
    pub fn release(&mut self) {
        self.trial_since = None;
    }

    /// Whether an outcome of a request admitted at `epoch` still speaks for the endpoint.
    pub fn current(&self, epoch: u64) -> bool {
        epoch == self.epoch
    }

    pub fn success(&mut self) {
        if self.strikes > 0 || self.open_until.is_some() {
            *self = Health { epoch: self.epoch.wrapping_add(1), ..Health::default() };
        }
        self.trial_since = None;
    }

    /// Backs the endpoint off for what `failure` earns after the failures before it; `jitter` in [0, 1) spreads it
    /// over 80% to 120% (so that nodes and endpoints do not come back in step); `retry_after`, the provider's own
    /// word, is kept when longer (within `backoff_max`). Returns the back-off.
    pub fn failed(
        &mut self,
        failure: Failure,
        now: Instant,
        s: &Settings,
        jitter: f64,
        retry_after: Option<Duration>,
    ) -> Duration {
        self.strikes = self.strikes.saturating_add(1);
        self.trial_since = None;
        // Growth: a wall's back-off is multiplied by WALL_GROWTH for each wall in a row before it; another failure's
        // doubles with each failure in a row that was not a wall (a first transient one earns none: it may be
        // chance). One kind's run does not lengthen the other's: a 503 and a wall by chance are not a wall that held.
        let others = self.strikes - self.walls;
        let (base, growth, times) = match failure {
            Failure::Wall => {
                self.walls = self.walls.saturating_add(1);
                (s.wall_backoff, WALL_GROWTH, self.walls - 1)
            }
            // Free only while nothing is backed off: a trial that fails so backs off again.
            Failure::Transient if others == 1 && retry_after.is_none() && self.open_until.is_none() => {
                return Duration::ZERO
            }
            Failure::Transient => (s.failure_backoff, 2, others.saturating_sub(2)),
            Failure::Other => (s.failure_backoff, 2, others - 1),
        };
        let grown = base.saturating_mul(growth.saturating_pow(times.min(20)));
        let spread = grown.mul_f64(0.8 + 0.4 * jitter.clamp(0.0, 1.0));
        let backoff = spread.max(retry_after.unwrap_or_default()).min(s.backoff_max);
        self.open_until = Some(now + backoff);
        self.epoch = self.epoch.wrapping_add(1);
        backoff
    }

    /// "closed" (admitting), "open" (backing off) or "half_open" (a trial decides) at this instant.
    pub fn state(&self, now: Instant) -> &'static str {
        match (self.open_for(now), self.open_until) {
            (Some(_), _) => "open",
            (None, None) => "closed",
            (None, Some(_)) => "half_open",
        }
    }

    pub fn open_for(&self, now: Instant) -> Option<Duration> {
        self.open_until.filter(|u| now < *u).map(|u| u - now)
    }

    /// Failures in a row since the last success.
    pub fn strikes(&self) -> u32 {
        self.strikes
    }
}

/// A provider's pace: a sustained interval between requests and a burst that may go at once.
#[derive(Debug, Clone)]
pub struct Pace {
    interval: Duration,
    burst: u32,
    /// The theoretical arrival time: with no burst left, the next request goes at it.
    tat: Option<Instant>,
    /// When the last reserved request goes (or went).
    last: Option<Instant>,
}

/// A slot reserved by `Pace::reserve`: the instant to send at, and the state to give back if it is not used.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Slot {
    pub at: Instant,
    tat: Instant,
    before: (Option<Instant>, Option<Instant>),
}

impl Pace {
    pub fn new(interval: Duration, burst: u32) -> Pace {
        Pace { interval, burst: burst.max(1), tat: None, last: None }
    }

    pub fn interval(&self) -> Duration {
        self.interval
    }

    pub fn burst(&self) -> u32 {
        self.burst
    }

    /// The earliest instant from `now` a request can go.
    pub fn slot(&self, now: Instant) -> Instant {
        let tolerance = self.interval.saturating_mul(self.burst - 1);
        match self.tat.and_then(|t| t.checked_sub(tolerance)) {
            Some(earliest) => earliest.max(now),
            None => now,
        }
    }

    /// Reserves the next slot if it comes no later than `latest`; else says how long until it comes.
    pub fn reserve(&mut self, now: Instant, latest: Instant) -> Result<Slot, Skip> {
        let at = self.slot(now);
        if at > latest {
            return Err(Skip::Paced(at - now));
        }
        let before = (self.tat, self.last);
        let tat = self.tat.map_or(at, |t| t.max(at)) + self.interval;
        self.tat = Some(tat);
        self.last = Some(self.last.map_or(at, |l| l.max(at)));
        Ok(Slot { at, tat, before })
    }

    /// Gives back a slot that will not be used, unless another was reserved after it (then it stays spent: the
    /// later one keeps its place).
    pub fn release(&mut self, slot: Slot) {
        if self.tat == Some(slot.tat) {
            (self.tat, self.last) = slot.before;
        }
    }

    /// When the last request reserved goes (or went): the provider least recently asked is asked first.
    pub fn last(&self) -> Option<Instant> {
        self.last
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const S: Settings = Settings {
        wall_backoff: Duration::from_secs(15),
        failure_backoff: Duration::from_secs(2),
        backoff_max: Duration::from_secs(200),
        trial_max: Duration::from_secs(6),
    };
    const MID: f64 = 0.5;

    fn secs(s: u64) -> Duration {
        Duration::from_secs(s)
    }

    #[test]
    fn a_wall_backs_off_then_one_trial_decides() {
        let t0 = Instant::now();
        let mut h = Health::default();
        assert_eq!(h.admit(t0, &S).map(|a| a.0), Ok(false), "healthy: not a trial");
        assert_eq!(h.failed(Failure::Wall, t0, &S, MID, None), secs(15));
        assert_eq!(h.state(t0), "open");
        assert_eq!(h.ready_at(t0 + secs(5), &S), Ok(t0 + secs(15)));
        assert_eq!(h.admit(t0 + secs(5), &S), Err(Skip::BackingOff(secs(10))));
        // The back-off is over: one trial, and others wait for what it says.
        let t1 = t0 + secs(15);
        assert_eq!(h.state(t1), "half_open");
        assert_eq!(h.admit(t1, &S).map(|a| a.0), Ok(true));
        assert_eq!(h.admit(t1 + secs(1), &S), Err(Skip::Trial(secs(5))));
        assert_eq!(h.ready_at(t1 + secs(1), &S), Err(Skip::Trial(secs(5))));
        // A trial lost (never answered) frees the endpoint after trial_max.
        assert_eq!(h.ready_at(t1 + secs(6), &S), Ok(t1 + secs(6)));
        h.success();
        assert_eq!((h.state(t1), h.strikes()), ("closed", 0));
        assert_eq!(h.admit(t1, &S).map(|a| a.0), Ok(false));
        assert_eq!(h.admit(t1, &S).map(|a| a.0), Ok(false), "closed: every search may ask");
    }

    #[test]
    fn walls_in_a_row_double_within_the_cap_and_a_success_resets() {
        let t0 = Instant::now();
        let mut h = Health::default();
        let walls: Vec<u64> = (0..4).map(|_| h.failed(Failure::Wall, t0, &S, MID, None).as_secs()).collect();
        assert_eq!(walls, [15, 30, 60, 120]);
        assert_eq!(h.failed(Failure::Wall, t0, &S, MID, None), secs(200), "capped");
        h.success();
        assert_eq!(h.failed(Failure::Wall, t0, &S, MID, None), secs(15), "a success resets the growth");
    }

    /// One failure other than a wall costs no back-off (the endpoint stays closed, asked after the healthy ones);
    /// from the second in a row they back off, doubling; a wall after them counts them too.
    #[test]
    fn other_failures_back_off_less() {
        let t0 = Instant::now();
        let mut h = Health::default();
        assert_eq!(h.failed(Failure::Transient, t0, &S, MID, None), Duration::ZERO);
        assert_eq!((h.state(t0), h.strikes()), ("closed", 1));
        assert_eq!(h.admit(t0, &S).map(|a| a.0), Ok(false), "not a trial: nothing was backed off");
        assert_eq!(h.failed(Failure::Transient, t0, &S, MID, None), secs(2));
        assert_eq!(h.failed(Failure::Transient, t0, &S, MID, None), secs(4));
        assert_eq!(h.failed(Failure::Wall, t0, &S, MID, None), secs(15), "the first wall in a row");
        assert_eq!(h.failed(Failure::Transient, t0, &S, MID, None), secs(8), "the fourth other failure in a row");
        assert_eq!(h.failed(Failure::Wall, t0, &S, MID, None), secs(30), "the second wall in a row");
        assert_eq!(h.strikes(), 6);
        // A provider's Retry-After is kept even on a first failure.
        let mut h = Health::default();
        assert_eq!(h.failed(Failure::Transient, t0, &S, MID, Some(secs(30))), secs(30));
        assert_eq!(h.state(t0), "open");
        // What will not pass by itself backs off from the first.
        let mut h = Health::default();
        assert_eq!(h.failed(Failure::Other, t0, &S, MID, None), secs(2));
        assert_eq!(h.failed(Failure::Other, t0, &S, MID, None), secs(4));
    }

    #[test]
    fn jitter_spreads_and_retry_after_is_kept_when_longer() {
        let t0 = Instant::now();
        let backoff = |jitter, retry_after| Health::default().failed(Failure::Wall, t0, &S, jitter, retry_after);
        assert_eq!(backoff(0.0, None), secs(12));
        assert_eq!(backoff(1.0, None), secs(18));
        assert_eq!(backoff(0.5, Some(secs(40))), secs(40));
        assert_eq!(backoff(0.5, Some(secs(3))), secs(15));
        assert_eq!(backoff(0.5, Some(secs(86_400))), secs(200), "within backoff_max");
    }

    /// A trial taken for a slot still to come (a search waiting for the back-off's end) holds the others off from
    /// now on, not only from its slot.
    #[test]
    fn a_trial_taken_ahead_holds_the_others_off() {
        let t0 = Instant::now();
        let mut h = Health::default();
        h.failed(Failure::Wall, t0, &S, MID, None);
        assert_eq!(h.ready_at(t0, &S), Ok(t0 + secs(15)));
        assert_eq!(h.admit(t0 + secs(15), &S).map(|a| a.0), Ok(true), "reserved for the back-off's end");
        assert_eq!(h.ready_at(t0 + secs(1), &S), Err(Skip::Trial(secs(20))));
        assert_eq!(h.admit(t0 + secs(16), &S), Err(Skip::Trial(secs(5))));
    }

    /// A burst walled at once is one wall: what requests admitted before the back-off say is stale, and an older
    /// request's answer does not clear a newer wall. A trial that fails by chance still backs off.
    #[test]
    fn outcomes_of_requests_admitted_before_a_back_off_are_stale() {
        let t0 = Instant::now();
        let mut h = Health::default();
        let (_, first) = h.admit(t0, &S).unwrap();
        let (_, second) = h.admit(t0, &S).unwrap();
        assert_eq!(first, second);
        assert!(h.current(first));
        h.failed(Failure::Wall, t0, &S, MID, None);
        assert!(!h.current(second), "the second request's wall would make it two in a row");
        let t1 = t0 + secs(15);
        let (trial, epoch) = h.admit(t1, &S).unwrap();
        assert!(trial && h.current(epoch));
        assert_eq!(h.failed(Failure::Transient, t1, &S, MID, None), secs(2), "a failed trial is not free");
        h.success();
        assert_eq!(h.state(t1), "closed");
        assert!(!h.current(epoch), "cleared: an older outcome is stale");
        let (_, healthy) = h.admit(t1, &S).unwrap();
        h.success();
        assert!(h.current(healthy), "an answer of a healthy endpoint changes nothing");
    }

    #[test]
    fn an_unused_trial_is_given_back() {
        let t0 = Instant::now();
        let mut h = Health::default();
        h.failed(Failure::Wall, t0, &S, MID, None);
        let t1 = t0 + secs(15);
        assert_eq!(h.admit(t1, &S).map(|a| a.0), Ok(true));
        h.release();
        assert_eq!(h.admit(t1, &S).map(|a| a.0), Ok(true), "another search takes the trial");
    }

    #[test]
    fn a_burst_goes_at_once_then_the_interval_holds() {
        let t0 = Instant::now();
        let far = t0 + secs(60);
        let mut p = Pace::new(secs(2), 3);
        let at: Vec<Duration> = (0..5).map(|_| p.reserve(t0, far).unwrap().at - t0).collect();
        assert_eq!(at, [secs(0), secs(0), secs(0), secs(2), secs(4)]);
        // Idle long enough, the burst is back.
        let t1 = t0 + secs(30);
        assert_eq!(p.slot(t1), t1);
        assert_eq!(p.last(), Some(t0 + secs(4)));
    }

    #[test]
    fn a_slot_too_far_is_not_reserved_and_an_unused_one_is_given_back() {
        let t0 = Instant::now();
        let mut p = Pace::new(secs(2), 1);
        let first = p.reserve(t0, t0).unwrap();
        assert_eq!(p.reserve(t0, t0 + secs(1)), Err(Skip::Paced(secs(2))));
        let second = p.reserve(t0, t0 + secs(2)).unwrap();
        assert_eq!(second.at, t0 + secs(2));
        p.release(second);
        assert_eq!(p.slot(t0), t0 + secs(2), "given back: the next slot is the released one");
        assert_eq!(p.last(), Some(t0));
        // A slot reserved after another is not given back by the earlier one's release.
        let again = p.reserve(t0, t0 + secs(2)).unwrap();
        let later = p.reserve(t0, t0 + secs(4)).unwrap();
        p.release(again);
        assert_eq!(p.slot(t0), t0 + secs(6));
        p.release(later);
        p.release(first);
        assert_eq!(p.slot(t0), t0 + secs(4), "only the last reservation goes back");
    }

    #[test]
    fn no_interval_is_always_free() {
        let t0 = Instant::now();
        let mut p = Pace::new(Duration::ZERO, 1);
        for _ in 0..10 {
            assert_eq!(p.reserve(t0, t0).map(|s| s.at), Ok(t0));
        }
        // A caller that read the clock before another took the turn: at once, and the last never goes back.
        assert_eq!(p.reserve(t0 - Duration::from_millis(1), t0).map(|s| s.at), Ok(t0));
        assert_eq!(p.last(), Some(t0));
    }
}
