//! Build steps:
//! - the text files in `DEFLATED` are stored deflated in the binary (`embedded`): the OpenAPI template, written
//!   indented for people (about 8.5 KB instead of 42 KB minified), the map page and its script, the search page's
//!   style, and the Unicode tables host names are mapped with (`idna`, about 16 KB instead of 48 KB);
//! - a static musl build compiled to abort on panic (the release targets of .cargo/config.toml) links without unwind
//!   tables: nothing unwinds, and the panic hook logs without a backtrace (ARCHITECTURE.md, Panics).

use std::io::Write;
use std::path::{Path, PathBuf};

/// The files `embedded::deflated!` includes, each written to OUT_DIR under its own path + `.deflate`.
const DEFLATED: [&str; 5] =
    ["src/openapi_template.json", "src/map/page.html", "src/map/page.js", "src/searx/page.css", "src/idna/tables.txt"];

fn main() -> Result<(), Box<dyn std::error::Error>> {
    println!("cargo:rerun-if-changed=build.rs");
    let out = PathBuf::from(std::env::var_os("OUT_DIR").ok_or("cargo sets OUT_DIR")?);
    for path in DEFLATED {
        println!("cargo:rerun-if-changed={path}");
        let deflated = deflate(&std::fs::read(path)?)?;
        let to = out.join(format!("{path}.deflate"));
        std::fs::create_dir_all(to.parent().unwrap_or(&out))?;
        std::fs::write(to, deflated)?;
    }
    discard_unwind_tables(&out)?;
    Ok(())
}

fn deflate(bytes: &[u8]) -> std::io::Result<Vec<u8>> {
    let mut encoder = flate2::write::DeflateEncoder::new(Vec::new(), flate2::Compression::best());
    encoder.write_all(bytes)?;
    encoder.finish()
}

/// For a musl target compiled with `-C panic=abort` (CARGO_CFG_PANIC follows the target's rustflags, not the
/// profile's `panic`, hence the flag in .cargo/config.toml), a linker script that drops the unwind tables: the
/// frame descriptions, their index and the landing pads' tables (about 180 KB of the aarch64 binary), and on 32-bit
/// ARM its own index and tables. Rust's std comes compiled to unwind, so without the script they stay.
fn discard_unwind_tables(out: &Path) -> std::io::Result<()> {
    let var = |name: &str| std::env::var(name).unwrap_or_default();
    // Rust's musl targets link statically (crt-static is their default, which CARGO_CFG_TARGET_FEATURE leaves out).
    if var("CARGO_CFG_TARGET_ENV") != "musl" || var("CARGO_CFG_PANIC") != "abort" {
        return Ok(());
    }
    let arm = if var("CARGO_CFG_TARGET_ARCH") == "arm" { " *(.ARM.exidx*) *(.ARM.extab*)" } else { "" };
    let script = out.join("discard-unwind-tables.ld");
    // INSERT makes the script an addition to the linker's own layout rather than the whole of it.
    let discard = format!("/DISCARD/ : {{ *(.eh_frame) *(.eh_frame_hdr) *(.gcc_except_table*){arm} }}");
    std::fs::write(&script, format!("SECTIONS {{\n  {discard}\n}}\nINSERT AFTER .text;\n"))?;
    println!("cargo:rustc-link-arg-bins=-T{}", script.display());
    Ok(())
}
