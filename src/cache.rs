//! A bounded in-memory cache with a TTL: search outcomes (keyed by the normalised query and `max_results`) and page
//! extractions (keyed by URL). Bounded by entries and, when given a weigher, by bytes; when full, expired entries go
//! first, then the oldest.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

#[derive(Debug)]
pub struct Cache<V> {
    ttl: Duration,
    entries_max: usize,
    bytes_max: usize,
    /// The memory an entry's value holds (its key is counted too).
    weigh: fn(&V) -> usize,
    inner: Mutex<Inner<V>>,
}

#[derive(Debug)]
struct Inner<V> {
    map: HashMap<String, (Instant, V)>,
    bytes: usize,
}

impl<V: Clone> Cache<V> {
    /// Bounded by entries alone.
    pub fn new(ttl: Duration, entries_max: usize) -> Cache<V> {
        Cache::weighed(ttl, entries_max, usize::MAX, |_| 0)
    }

    /// Bounded by entries and by the bytes `weigh` says the values and keys hold; a value larger than `bytes_max`
    /// is not kept.
    pub fn weighed(ttl: Duration, entries_max: usize, bytes_max: usize, weigh: fn(&V) -> usize) -> Cache<V> {
        Cache { ttl, entries_max, bytes_max, weigh, inner: Mutex::new(Inner { map: HashMap::new(), bytes: 0 }) }
    }

    fn enabled(&self) -> bool {
        self.entries_max > 0 && !self.ttl.is_zero()
    }

    fn cost(&self, key: &str, value: &V) -> usize {
        key.len().saturating_add((self.weigh)(value))
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Inner<V>> {
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The value and its age, if present and fresh.
    pub fn get(&self, key: &str, now: Instant) -> Option<(V, Duration)> {
        if !self.enabled() {
            return None;
        }
        let mut inner = self.lock();
        let (stored, value) = inner.map.get(key)?;
        let age = now.saturating_duration_since(*stored);
        if age < self.ttl {
            return Some((value.clone(), age));
        }
        if let Some((_, old)) = inner.map.remove(key) {
            inner.bytes -= self.cost(key, &old);
        }
        None
    }

    pub fn put(&self, key: String, value: V, now: Instant) {
        let cost = self.cost(&key, &value);
        if !self.enabled() || cost > self.bytes_max {
            return;
        }
        let mut inner = self.lock();
        if let Some((_, old)) = inner.map.remove(&key) {
            inner.bytes -= self.cost(&key, &old);
        }
        let over = |i: &Inner<V>| i.map.len() >= self.entries_max || i.bytes.saturating_add(cost) > self.bytes_max;
        if over(&inner) {
            let mut freed = 0;
            inner.map.retain(|k, (stored, v)| {
                let fresh = now.saturating_duration_since(*stored) < self.ttl;
                if !fresh {
                    freed += self.cost(k, v);
                }
                fresh
            });
            inner.bytes -= freed;
        }
        // Oldest first; each step scans at most `entries_max` entries.
        while over(&inner) {
            let Some(oldest) = inner.map.iter().min_by_key(|(_, (stored, _))| *stored).map(|(k, _)| k.clone()) else {
                break;
            };
            if let Some((_, old)) = inner.map.remove(&oldest) {
                inner.bytes -= self.cost(&oldest, &old);
            }
        }
        inner.bytes += cost;
        inner.map.insert(key, (now, value));
    }

    #[allow(clippy::len_without_is_empty)]
    pub fn len(&self) -> usize {
        self.lock().map.len()
    }

    /// Bytes the entries hold, as weighed.
    pub fn bytes(&self) -> usize {
        self.lock().bytes
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ttl_and_bound() {
        let t0 = Instant::now();
        let cache = Cache::new(Duration::from_secs(10), 2);
        cache.put("a".into(), 1, t0);
        cache.put("b".into(), 2, t0 + Duration::from_secs(1));
        assert_eq!(cache.get("a", t0 + Duration::from_secs(3)), Some((1, Duration::from_secs(3))));
        cache.put("c".into(), 3, t0 + Duration::from_secs(2));
        assert_eq!(cache.len(), 2);
        assert_eq!(cache.get("a", t0 + Duration::from_secs(3)), None, "the oldest went first");
        assert_eq!(cache.get("b", t0 + Duration::from_secs(11)), None, "expired");
        assert_eq!(cache.get("c", t0 + Duration::from_secs(11)).map(|(v, _)| v), Some(3));
    }

    #[test]
    fn disabled() {
        let cache = Cache::new(Duration::ZERO, 10);
        cache.put("a".into(), 1, Instant::now());
        assert_eq!(cache.get("a", Instant::now()), None);
    }
}
