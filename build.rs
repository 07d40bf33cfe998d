//! Build step: the OpenAPI template (`src/openapi_template.json`, written indented for people) is stored deflated
//! in the binary (about 5.8 KB instead of 26 KB minified); `openapi` inflates it with the flate2 the map feeds
//! already link. Nothing else is generated.

use std::io::Write;
use std::path::PathBuf;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    const TEMPLATE: &str = "src/openapi_template.json";
    println!("cargo:rerun-if-changed={TEMPLATE}");
    println!("cargo:rerun-if-changed=build.rs");
    let text = std::fs::read(TEMPLATE)?;
    let mut encoder = flate2::write::DeflateEncoder::new(Vec::new(), flate2::Compression::best());
    encoder.write_all(&text)?;
    let deflated = encoder.finish()?;
    let out = PathBuf::from(std::env::var_os("OUT_DIR").ok_or("cargo sets OUT_DIR")?);
    std::fs::write(out.join("openapi_template.json.deflate"), deflated)?;
    Ok(())
}
