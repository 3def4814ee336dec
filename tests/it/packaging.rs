//! The package's binary is stripped as OpenWrt strips it (cross/pkg-strip.sh, run by
//! mkpkg.sh, cross/build.sh and cross/sdk-size.sh), and the SDK emulation gives the
//! package Makefile's rustc flags to our crates but not to the standard library
//! (cross/sdk-rustc.sh).

use std::path::Path;
use std::process::Command;

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// The names of the sections of a 64-bit little-endian ELF file that are not loaded
/// (SHF_ALLOC clear), apart from the null section and the section-name table.
fn unloaded_sections(elf: &[u8]) -> Vec<String> {
    assert_eq!(
        &elf[..6],
        b"\x7fELF\x02\x01",
        "a 64-bit little-endian ELF file"
    );
    let u16_at = |at: usize| u16::from_le_bytes([elf[at], elf[at + 1]]) as usize;
    let u32_at = |at: usize| u32::from_le_bytes(elf[at..at + 4].try_into().unwrap()) as usize;
    let u64_at = |at: usize| u64::from_le_bytes(elf[at..at + 8].try_into().unwrap()) as usize;
    let (shoff, shentsize, shnum, shstrndx) =
        (u64_at(0x28), u16_at(0x3a), u16_at(0x3c), u16_at(0x3e));
    let header = |i: usize| shoff + i * shentsize;
    let names = u64_at(header(shstrndx) + 0x18);
    (0..shnum)
        .filter(|&i| i != 0 && i != shstrndx && u64_at(header(i) + 8) & 2 == 0)
        .map(|i| {
            let start = names + u32_at(header(i));
            let len = elf[start..].iter().position(|&b| b == 0).unwrap();
            String::from_utf8_lossy(&elf[start..start + len]).into_owned()
        })
        .collect()
}

#[test]
fn mkpkg_strips_the_binary_as_package_pack_mk_does() {
    let dir = tempfile::tempdir().unwrap();
    // The test build of the binary: an ELF file with symbols and debug sections.
    let bin = dir.path().join("ripe-cidr-collector");
    std::fs::copy(env!("CARGO_BIN_EXE_ripe-cidr-collector"), &bin).unwrap();
    let before = unloaded_sections(&std::fs::read(&bin).unwrap());
    assert!(before.iter().any(|s| s == ".symtab"), "{before:?}");
    let dist = dir.path().join("dist");
    let out = Command::new("sh")
        .arg(root().join("openwrt/mkpkg.sh"))
        .args(["x86_64".as_ref(), bin.as_os_str(), dist.as_os_str()])
        .env("SOURCE_DATE_EPOCH", "0")
        .output()
        .expect("run mkpkg.sh");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "mkpkg.sh: {err}");
    if err.contains("no sstrip, llvm-strip or rust-objcopy found") {
        return crate::common::cannot_run("no strip tool (sstrip, llvm-strip, rust-objcopy)");
    }
    let ipk = dist.join(format!(
        "ripe-cidr-collector_{}-r1_x86_64.ipk",
        env!("CARGO_PKG_VERSION")
    ));
    let sh = format!(
        "tar -xzOf '{}' ./data.tar.gz | tar -xzOf - ./usr/bin/ripe-cidr-collector",
        ipk.display()
    );
    let packed = Command::new("sh").args(["-c", &sh]).output().unwrap();
    assert!(packed.status.success(), "{packed:?}");
    assert_eq!(unloaded_sections(&packed.stdout), Vec::<String>::new());
    // The input is left as it was.
    assert_eq!(unloaded_sections(&std::fs::read(&bin).unwrap()), before);
}

#[test]
fn sdk_rustc_wrapper_leaves_std_alone() {
    let dir = tempfile::tempdir().unwrap();
    let fake = dir.path().join("rustc");
    std::fs::write(&fake, "#!/bin/sh\necho \"$*\"\n").unwrap();
    let run = |source: &str| {
        let out = Command::new("sh")
            .arg(root().join("cross/sdk-rustc.sh"))
            .args([fake.to_str().unwrap(), "--crate-name", "x", source])
            .env("RCC_PKG_RUSTFLAGS", "-Cforce-unwind-tables=no -Cfoo")
            .output()
            .unwrap();
        assert!(out.status.success(), "{out:?}");
        String::from_utf8(out.stdout).unwrap()
    };
    std::fs::set_permissions(&fake, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    assert_eq!(
        run("/home/u/.cargo/registry/src/index/serde_json-1.0.0/src/lib.rs"),
        "--crate-name x /home/u/.cargo/registry/src/index/serde_json-1.0.0/src/lib.rs -Cforce-unwind-tables=no -Cfoo\n"
    );
    let std_src = "/root/.rustup/toolchains/nightly/lib/rustlib/src/rust/library/std/src/lib.rs";
    assert_eq!(run(std_src), format!("--crate-name x {std_src}\n"));
}

/// The router targets include 32-bit MIPS, which has no 64-bit atomics: a use of
/// `AtomicU64`/`AtomicI64` builds here and in CI but not for the package (CI does not
/// cross-build). This keeps them out of the sources.
#[test]
fn no_64_bit_atomics_in_the_sources() {
    fn scan(dir: &Path, found: &mut Vec<String>) {
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                scan(&path, found);
            } else if path.extension().is_some_and(|e| e == "rs") {
                let text = std::fs::read_to_string(&path).unwrap();
                for (i, line) in text.lines().enumerate() {
                    let code = line.split("//").next().unwrap_or("");
                    if code.contains("AtomicU64") || code.contains("AtomicI64") {
                        found.push(format!("{}:{}: {line}", path.display(), i + 1));
                    }
                }
            }
        }
    }
    let mut found = Vec::new();
    scan(&root().join("src"), &mut found);
    assert!(
        found.is_empty(),
        "64-bit atomics (no such thing on mipsel):\n{}",
        found.join("\n")
    );
}

/// One module-file style and one test-file style (docs/development.md, "One way to
/// write each thing"): no `mod.rs`, no `foo_tests.rs`, and no `#[path]` but the one
/// that lets `collect::fetch`'s unit tests share the black-box tests' fake upstream.
#[test]
fn one_module_file_style_in_the_sources() {
    fn scan(dir: &Path, found: &mut Vec<String>) {
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            let name = path.file_name().unwrap().to_string_lossy().into_owned();
            if path.is_dir() {
                scan(&path, found);
            } else if name == "mod.rs" || name.ends_with("_tests.rs") {
                found.push(format!("{}: a file named {name}", path.display()));
            } else if name.ends_with(".rs") {
                let text = std::fs::read_to_string(&path).unwrap();
                for (i, line) in text.lines().enumerate() {
                    let shared = line == "#[path = \"../../tests/it/upstream.rs\"]";
                    if line.trim_start().starts_with("#[path") && !shared {
                        found.push(format!("{}:{}: {line}", path.display(), i + 1));
                    }
                }
            }
        }
    }
    let mut found = Vec::new();
    scan(&root().join("src"), &mut found);
    assert!(
        found.is_empty(),
        "module files off the style:\n{}",
        found.join("\n")
    );
}
