//! Time as values: a `Clock` the core asks for "now", and the calendar arithmetic that turns Unix time into the
//! text forms the service writes (RFC 3339 in answers and logs, IMF-fixdate in the HTTP `Date` header).
//!
//! Nothing else reads the wall clock: code that depends on time takes a `&dyn Clock`, so tests can fix the instant.

use std::time::{SystemTime, UNIX_EPOCH};

/// A source of wall-clock time in milliseconds since the Unix epoch.
pub trait Clock: Send + Sync {
    fn now_unix_ms(&self) -> u64;
}

/// The machine's wall clock.
#[derive(Debug, Default, Clone, Copy)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now_unix_ms(&self) -> u64 {
        // A clock before 1970 is a broken machine; 0 keeps every caller's arithmetic well defined.
        SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_millis() as u64)
    }
}

/// A clock stopped at one instant, for tests and for replaying recorded traffic.
#[derive(Debug, Clone, Copy)]
pub struct FixedClock(pub u64);

impl Clock for FixedClock {
    fn now_unix_ms(&self) -> u64 {
        self.0
    }
}

/// Milliseconds in a day (UTC has no leap seconds in Unix time): a timestamp over this is its day since 1970-01-01.
pub const DAY_MS: u64 = 86_400_000;

/// The civil date and time of a Unix timestamp, in UTC.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Civil {
    pub year: i64,
    pub month: u32,
    pub day: u32,
    pub hour: u32,
    pub minute: u32,
    pub second: u32,
    pub millisecond: u32,
    /// 0 = Monday.
    pub weekday: u32,
}

impl Civil {
    pub fn from_unix_ms(unix_ms: u64) -> Civil {
        let secs = unix_ms / 1_000;
        let days = (secs / 86_400) as i64;
        let rem = secs % 86_400;
        // Howard Hinnant's days-to-civil algorithm (proleptic Gregorian calendar).
        let z = days + 719_468;
        let era = z.div_euclid(146_097);
        let doe = z.rem_euclid(146_097);
        let yoe = (doe - doe / 1_460 + doe / 36_524 - doe / 146_096) / 365;
        let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
        let mp = (5 * doy + 2) / 153;
        let day = (doy - (153 * mp + 2) / 5 + 1) as u32;
        let month = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
        let year = yoe + era * 400 + i64::from(month <= 2);
        Civil {
            year,
            month,
            day,
            hour: (rem / 3_600) as u32,
            minute: (rem % 3_600 / 60) as u32,
            second: (rem % 60) as u32,
            millisecond: (unix_ms % 1_000) as u32,
            // 1970-01-01 was a Thursday (3 when Monday is 0).
            weekday: ((days + 3).rem_euclid(7)) as u32,
        }
    }
}

/// `2026-11-22T07:18:52Z`: RFC 3339 in UTC, to the second.
pub fn rfc3339(unix_ms: u64) -> String {
    let c = Civil::from_unix_ms(unix_ms);
    format!("{:04}-{:02}-{:02}T{:02}:{:02}:{:02}Z", c.year, c.month, c.day, c.hour, c.minute, c.second)
}

/// `2026-11-22T07:18:52.123Z`: RFC 3339 in UTC, to the millisecond (log lines).
pub fn rfc3339_ms(unix_ms: u64) -> String {
    Rfc3339Ms(unix_ms).to_string()
}

/// `rfc3339_ms` written where it is displayed (a log line), without a string of its own.
pub struct Rfc3339Ms(pub u64);

impl std::fmt::Display for Rfc3339Ms {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let c = Civil::from_unix_ms(self.0);
        write!(
            f,
            "{:04}-{:02}-{:02}T{:02}:{:02}:{:02}.{:03}Z",
            c.year, c.month, c.day, c.hour, c.minute, c.second, c.millisecond
        )
    }
}

/// Unix ms of an RFC 3339 time (`2026-11-22T07:18:52Z`, with optional fraction and a `Z` or numeric offset; a
/// time without an offset is read as UTC, as CelesTrak writes epochs). Before 1970: `None`.
pub fn parse_rfc3339_ms(s: &str) -> Option<u64> {
    let s = s.trim();
    let b = s.as_bytes();
    if b.len() < 19 || b.get(4) != Some(&b'-') || b.get(7) != Some(&b'-') || b.get(13) != Some(&b':') {
        return None;
    }
    if !matches!(b.get(10), Some(b'T' | b't' | b' ')) {
        return None;
    }
    let n = |a: usize, z: usize| -> Option<i64> {
        let t = s.get(a..z)?;
        t.bytes().all(|c| c.is_ascii_digit()).then(|| t.parse().ok()).flatten()
    };
    let (year, month, day) = (n(0, 4)?, n(5, 7)?, n(8, 10)?);
    let (hour, minute, second) = (n(11, 13)?, n(14, 16)?, n(17, 19)?);
    if !(1..=12).contains(&month) || !(1..=31).contains(&day) || hour > 23 || minute > 59 || second > 60 {
        return None;
    }
    let mut rest = s.get(19..)?;
    let mut millis = 0i64;
    if let Some(frac) = rest.strip_prefix('.') {
        let digits = frac.bytes().take_while(u8::is_ascii_digit).count();
        if digits == 0 {
            return None;
        }
        let ms_digits = frac.get(..digits.min(3))?;
        millis = ms_digits.parse::<i64>().ok()? * 10i64.pow(3 - ms_digits.len() as u32);
        rest = frac.get(digits..)?;
    }
    let offset_s = match rest {
        "" | "Z" | "z" => 0,
        o if o.len() == 6 && (o.starts_with('+') || o.starts_with('-')) && o.get(3..4) == Some(":") => {
            let sign = if o.starts_with('-') { -1 } else { 1 };
            sign * (o.get(1..3)?.parse::<i64>().ok()? * 3_600 + o.get(4..6)?.parse::<i64>().ok()? * 60)
        }
        _ => return None,
    };
    // Howard Hinnant's days-from-civil.
    let y = if month <= 2 { year - 1 } else { year };
    let era = y.div_euclid(400);
    let yoe = y.rem_euclid(400);
    let mp = (month + 9) % 12;
    let doy = (153 * mp + 2) / 5 + day - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    let days = era * 146_097 + doe - 719_468;
    let secs = days * 86_400 + hour * 3_600 + minute * 60 + second - offset_s;
    u64::try_from(secs * 1_000 + millis).ok()
}

/// `Sun, 22 Nov 2026 07:18:52 GMT`: the IMF-fixdate of RFC 9110, for the `Date` header.
pub fn http_date(unix_ms: u64) -> String {
    HttpDate(unix_ms).to_string()
}

/// `http_date` written where it is displayed (into a string kept for reuse), without a string of its own.
pub struct HttpDate(pub u64);

impl std::fmt::Display for HttpDate {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        const DAYS: [&str; 7] = ["Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun"];
        const MONTHS: [&str; 12] = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"];
        let c = Civil::from_unix_ms(self.0);
        let weekday = DAYS.get(c.weekday as usize).copied().unwrap_or("Mon");
        let month = MONTHS.get(c.month.saturating_sub(1) as usize).copied().unwrap_or("Jan");
        write!(f, "{weekday}, {:02} {month} {:04} {:02}:{:02}:{:02} GMT", c.day, c.year, c.hour, c.minute, c.second)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[track_caller]
    fn check(unix_ms: u64, rfc: &str, http: &str) {
        assert_eq!(rfc3339(unix_ms), rfc);
        assert_eq!(http_date(unix_ms), http);
    }

    #[test]
    fn known_instants() {
        check(0, "1970-01-01T00:00:00Z", "Thu, 01 Jan 1970 00:00:00 GMT");
        check(951_782_400_000, "2000-02-29T00:00:00Z", "Tue, 29 Feb 2000 00:00:00 GMT");
        check(1_795_331_932_000, "2026-11-22T07:18:52Z", "Sun, 22 Nov 2026 07:18:52 GMT");
        check(4_102_444_799_000, "2099-12-31T23:59:59Z", "Thu, 31 Dec 2099 23:59:59 GMT");
    }

    #[test]
    fn parsing() {
        for ms in [0, 951_782_400_000, 1_795_331_932_045, 4_102_444_799_000] {
            assert_eq!(parse_rfc3339_ms(&rfc3339_ms(ms)), Some(ms));
        }
        assert_eq!(parse_rfc3339_ms("2026-08-06T10:21:54.851616"), Some(1_786_011_714_851));
        assert_eq!(parse_rfc3339_ms("2026-11-22T09:18:52+02:00"), Some(1_795_331_932_000));
        for bad in [
            "",
            "2026-13-01T00:00:00Z",
            "2026-11-22",
            "2026-11-22T07:18:52X",
            "1969-12-31T23:59:59Z",
            "2026-11-22T07:18:52.",
        ] {
            assert_eq!(parse_rfc3339_ms(bad), None, "{bad}");
        }
    }

    #[test]
    fn milliseconds() {
        assert_eq!(rfc3339_ms(1_795_331_932_045), "2026-11-22T07:18:52.045Z");
    }
}
