//! The word filter of the token estimate: cl100k's tokens made of ASCII letters (alone, or after a space or one
//! ASCII punctuation mark) as a Bloom filter. `cargo bench --bench cl100k_words` checks that
//! `src/extract/cl100k_words.bloom` is what the vocabulary gives; `-- --write [log2_bits] [probes] [rank_max]`
//! writes it (the committed filter: 19 5 100256).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)]

use websearchd::extract::budget::word_probes;

fn main() {
    let write = std::env::args().any(|a| a == "--write");
    let mut args = std::env::args().skip_while(|a| a != "--write").skip(1);
    let log2_bits: u8 = args.next().map_or(19, |a| a.parse().unwrap());
    let probes: u8 = args.next().map_or(5, |a| a.parse().unwrap());
    // Only the more frequent tokens (lower ranks are earlier merges): a smaller set, fewer false positives; a word
    // left out is split into known pieces and over-counted, the safe side.
    let rank_max: u32 = args.next().map_or(100_256, |a| a.parse().unwrap());
    let bpe = tiktoken_rs::cl100k_base().unwrap();
    let mut bits = vec![0u8; (1usize << log2_bits) / 8];
    let mut words = 0;
    for rank in 0..rank_max.min(100_256) {
        let Ok(text) = bpe.decode(&[rank]) else { continue };
        // A word, a space and a word, or a punctuation mark and a word.
        let bytes = text.as_bytes();
        let (lead, word) = match bytes.first() {
            Some(&c) if c == b' ' || c.is_ascii_punctuation() => (c, &bytes[1..]),
            _ => (0, bytes),
        };
        if word.is_empty() || !word.iter().all(u8::is_ascii_alphabetic) {
            continue;
        }
        for bit in word_probes(lead, word, log2_bits, probes) {
            bits[bit / 8] |= 1 << (bit % 8);
        }
        words += 1;
    }
    let mut out = vec![log2_bits, probes];
    out.extend_from_slice(&bits);
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/src/extract/cl100k_words.bloom");
    if write {
        std::fs::write(path, &out).unwrap();
    } else if std::fs::read(path).unwrap() == out {
        println!("{path} is up to date");
    } else {
        println!("{path} differs from the vocabulary's filter: run with -- --write");
        std::process::exit(1);
    }
    let set = bits.iter().map(|b| b.count_ones() as usize).sum::<usize>();
    let fill = set as f64 / (bits.len() * 8) as f64;
    println!(
        "{words} words in {} bytes, {probes} probes: {:.1}% of bits set, false positives about {:.3}%",
        out.len(),
        fill * 100.0,
        fill.powi(i32::from(probes)) * 100.0
    );
}
