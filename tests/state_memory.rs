//! What the server keeps in memory for good does not grow with the requests it has served (issue 18: a 20-minute soak
//! climbed past its 24 MiB, 16 bytes per notary receipt ever issued among it).
//!
//! A counting allocator (this test binary's own; the product is unchanged) keeps, for the thread that marks itself,
//! the bytes allocated and not yet freed.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)]

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::sync::Arc;

use websearchd::clock::FixedClock;
use websearchd::notary::Notary;
use websearchd::sign::keys::KeyPaths;
use websearchd::sign::Keyring;

struct Counting;

thread_local! {
    /// Set on the thread that measures.
    static MEASURED: Cell<bool> = const { Cell::new(false) };
    /// Bytes that thread allocated and has not freed since it set `MEASURED`.
    static LIVE_BYTES: Cell<isize> = const { Cell::new(0) };
}

fn add(bytes: isize) {
    if MEASURED.with(Cell::get) {
        LIVE_BYTES.with(|live| live.set(live.get() + bytes));
    }
}

// SAFETY: every call is passed on to the system allocator unchanged; only a thread-local counter is added.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        add(layout.size() as isize);
        unsafe { System.alloc(layout) }
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        add(layout.size() as isize);
        unsafe { System.alloc_zeroed(layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        add(new_size as isize - layout.size() as isize);
        unsafe { System.realloc(ptr, layout, new_size) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        add(-(layout.size() as isize));
        unsafe { System.dealloc(ptr, layout) }
    }
}

#[global_allocator]
static COUNTING: Counting = Counting;

/// Bytes this thread allocated, and did not free, while `f` ran.
fn kept_by<T>(f: impl FnOnce() -> T) -> (T, isize) {
    LIVE_BYTES.with(|live| live.set(0));
    MEASURED.with(|m| m.set(true));
    let out = f();
    MEASURED.with(|m| m.set(false));
    (out, LIVE_BYTES.with(Cell::get))
}

fn temp(name: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("websearchd-state-memory-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// The notary kept a file offset for every receipt it ever issued (16 bytes each, and a doubling `Vec`): 512 more
/// receipts kept 16 KiB more. It keeps the chain's head alone now, and still finds every receipt in its journal.
#[test]
fn the_notary_keeps_no_memory_per_receipt() {
    let dir = temp("notary");
    let keys = Arc::new(Keyring::load_or_create(&KeyPaths::new(&dir, None, None)).unwrap());
    let clock = Arc::new(FixedClock(1_800_000_000_000));
    let notary = Notary::open(&dir.join("notary.journal"), keys, "https://notary.test".into(), clock).unwrap();
    let hash = |i: u64| websearchd::sign::sha256_hex(&i.to_be_bytes());
    for i in 0..16 {
        notary.notarize(&hash(i)).unwrap();
    }
    let ((), kept) = kept_by(|| {
        for i in 16..16 + 512 {
            drop(notary.notarize(&hash(i)).unwrap());
        }
    });
    assert!(kept < 1_024, "512 receipts kept {kept} bytes");
    for seq in [1, 16, 17, 300, 528] {
        let record = notary.get(seq).unwrap().unwrap();
        assert_eq!(record["receipt"]["seq"], seq);
        assert_eq!(record["receipt"]["hash"], hash(seq - 1));
    }
    assert_eq!(notary.get(529).unwrap(), None);
    assert_eq!(notary.get(0).unwrap(), None);
}
