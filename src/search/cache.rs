//! A bounded in-memory cache of search outcomes, keyed by the normalised query and `max_results`, with a TTL.
//! When full, the oldest entry goes first.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

#[derive(Debug)]
pub struct Cache<V> {
    ttl: Duration,
    entries_max: usize,
    map: Mutex<HashMap<String, (Instant, V)>>,
}

impl<V: Clone> Cache<V> {
    pub fn new(ttl: Duration, entries_max: usize) -> Cache<V> {
        Cache { ttl, entries_max, map: Mutex::new(HashMap::new()) }
    }

    fn enabled(&self) -> bool {
        self.entries_max > 0 && !self.ttl.is_zero()
    }

    /// The value and its age, if present and fresh.
    pub fn get(&self, key: &str, now: Instant) -> Option<(V, Duration)> {
        if !self.enabled() {
            return None;
        }
        let mut map = self.map.lock().unwrap_or_else(|p| p.into_inner());
        let (stored, value) = map.get(key)?;
        let age = now.saturating_duration_since(*stored);
        if age >= self.ttl {
            map.remove(key);
            return None;
        }
        Some((value.clone(), age))
    }

    pub fn put(&self, key: String, value: V, now: Instant) {
        if !self.enabled() {
            return;
        }
        let mut map = self.map.lock().unwrap_or_else(|p| p.into_inner());
        if map.len() >= self.entries_max && !map.contains_key(&key) {
            map.retain(|_, (stored, _)| now.saturating_duration_since(*stored) < self.ttl);
            if map.len() >= self.entries_max {
                if let Some(oldest) = map.iter().min_by_key(|(_, (stored, _))| *stored).map(|(k, _)| k.clone()) {
                    map.remove(&oldest);
                }
            }
        }
        map.insert(key, (now, value));
    }

    #[allow(clippy::len_without_is_empty)]
    pub fn len(&self) -> usize {
        self.map.lock().unwrap_or_else(|p| p.into_inner()).len()
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
