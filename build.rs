//! Build step: the text files in `DEFLATED` are stored deflated in the binary (`embedded`): the OpenAPI template,
//! written indented for people (about 5.8 KB instead of 26 KB minified), and the map page and its script. Nothing
//! else is generated.

use std::io::Write;
use std::path::PathBuf;

/// The files `embedded::deflated!` includes, each written to OUT_DIR under its own path + `.deflate`.
const DEFLATED: [&str; 3] = ["src/openapi_template.json", "src/map/page.html", "src/map/page.js"];

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
    Ok(())
}

fn deflate(bytes: &[u8]) -> std::io::Result<Vec<u8>> {
    let mut encoder = flate2::write::DeflateEncoder::new(Vec::new(), flate2::Compression::best());
    encoder.write_all(bytes)?;
    encoder.finish()
}
