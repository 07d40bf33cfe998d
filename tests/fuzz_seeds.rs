//! Replays the committed fuzz seeds that no other replay reads (`fuzz/seeds/notary_request/`: receipt records, a
//! chain, a journal repair marker, a notary journal as it is on disk) through the target's checks, whole and at
//! every prefix, on stable Rust.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)]

#[path = "../fuzz/checks.rs"]
mod checks;

#[test]
fn notary_request_seeds() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("fuzz/seeds/notary_request");
    let mut n = 0;
    for entry in std::fs::read_dir(&dir).unwrap() {
        let bytes = std::fs::read(entry.unwrap().path()).unwrap();
        for end in 0..=bytes.len() {
            checks::notary_request(&bytes[..end]);
        }
        n += 1;
    }
    assert!(n >= 4, "seeds in {}", dir.display());
}
