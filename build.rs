//! Puts the built-in service catalog (`catalog/services.json`) into `OUT_DIR` without
//! the whitespace between tokens: the binary holds it, and flash is tight. Strings are
//! copied as they are; nothing is parsed, so the program's own reader still checks it
//! (`catalog::tests`).

use std::{env, fs, path::Path};

fn main() {
    let src = "catalog/services.json";
    println!("cargo:rerun-if-changed={src}");
    let text = fs::read_to_string(src).expect("catalog/services.json is readable");
    let mut out = String::with_capacity(text.len());
    let (mut in_string, mut escaped) = (false, false);
    for c in text.chars() {
        if in_string {
            out.push(c);
            match (escaped, c) {
                (true, _) => escaped = false,
                (false, '\\') => escaped = true,
                (false, '"') => in_string = false,
                _ => {}
            }
        } else if !c.is_ascii_whitespace() {
            in_string = c == '"';
            out.push(c);
        }
    }
    let dest = Path::new(&env::var("OUT_DIR").expect("cargo sets OUT_DIR")).join("services.json");
    fs::write(dest, out).expect("OUT_DIR is writable");
}
