//! Text files the binary carries deflated: `build.rs` deflates them into OUT_DIR (`deflated!` includes one) and
//! they are inflated once (at start; the IDNA tables at first use) with the flate2 the map feeds link anyway. Text
//! compresses to a quarter or a third of its size; the code to inflate it is already there.

/// The deflated bytes of the file `$path` (relative to the crate's root, as `build.rs` lists it).
macro_rules! deflated {
    ($path:literal) => {
        include_bytes!(concat!(env!("OUT_DIR"), "/", $path, ".deflate"))
    };
}
pub(crate) use deflated;

/// A bound on an inflated file (the largest, the OpenAPI template, is 35 KB), so that a broken build cannot make
/// start-up read without end.
pub const INFLATED_BYTES_MAX: u64 = 1_048_576;

/// The text of a file `deflated!` included; empty if it does not inflate to UTF-8 within `INFLATED_BYTES_MAX` (the
/// files are this crate's own, deflated at build time, and each one's unit test reads it back).
pub fn inflate(deflated: &[u8]) -> String {
    use std::io::Read;
    let mut text = String::new();
    let read = flate2::read::DeflateDecoder::new(deflated).take(INFLATED_BYTES_MAX).read_to_string(&mut text);
    if read.is_err() {
        text.clear();
    }
    text
}
