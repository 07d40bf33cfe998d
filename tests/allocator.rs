//! The allocator's bounds (`http::sys::tune_allocator`), in a test process of their own: glibc's counters are the
//! whole process's, and no other test allocates beside this one here.

use websearchd::http::sys;

/// Bytes of heap glibc has mapped on their own (`mallinfo().hblkhd`; None under another C library). `mallinfo`, not
/// `mallinfo2`: the older call is in every glibc (`mallinfo2` needs 2.33, newer than Debian bullseye's), and its
/// `int` counters hold the few MiB measured here.
fn heap_mapped_bytes() -> Option<usize> {
    #[cfg(target_env = "gnu")]
    #[allow(deprecated)]
    // SAFETY: mallinfo takes nothing and returns a plain struct of counters.
    return usize::try_from(unsafe { libc::mallinfo() }.hblkhd).ok();
    #[cfg(not(target_env = "gnu"))]
    None
}

/// glibc left to itself raises its threshold for mapping a block on its own to the size of the largest mapped block
/// freed (and its trim threshold to twice that): after an 8 MiB body, a 1 MiB buffer would come from the arena and
/// its memory stay there when freed. With `MMAP_THRESHOLD_BYTES` set, it is mapped, and unmapped when freed.
#[test]
fn a_large_block_freed_does_not_raise_the_mapping_threshold() {
    let Some(mapped) = heap_mapped_bytes() else {
        println!("notice: not glibc: its allocator settings are not tested here");
        return;
    };
    assert!(
        !std::env::var("GLIBC_TUNABLES").is_ok_and(|t| t.contains("glibc.malloc.")),
        "run without GLIBC_TUNABLES' malloc settings: they stand instead of ours"
    );
    sys::tune_allocator();
    drop(std::hint::black_box(vec![1u8; 8 << 20]));
    assert!(heap_mapped_bytes() <= Some(mapped), "the 8 MiB block was unmapped when freed");
    let block = std::hint::black_box(vec![1u8; 1 << 20]);
    let with_block = heap_mapped_bytes().unwrap_or(0);
    drop(block);
    assert!(with_block >= mapped + (1 << 20), "a 1 MiB block after an 8 MiB one is mapped on its own");
    assert!(heap_mapped_bytes() <= Some(mapped), "and unmapped when freed");
    // The bound itself: a block just under it comes from an arena.
    let small = std::hint::black_box(vec![1u8; sys::MMAP_THRESHOLD_BYTES / 2]);
    assert!(heap_mapped_bytes() <= Some(mapped));
    drop(small);
}
