#!/usr/bin/env bash
# Cross-builds the router binary without Docker, through zig as the C compiler and
# linker (`pip install cargo-zigbuild`; zig 0.14.1 is installed by cross/zig.sh).
#
# Every target is built with a recent nightly toolchain and rust-src (std is rebuilt
# for size; MIPS is tier 3 and has no prebuilt std anyway):
#   cross/build.sh aarch64-unknown-linux-musl
#   cross/build.sh mipsel-unknown-linux-musl
#   cross/build.sh mips-unknown-linux-musl
#   cross/build.sh armv7-unknown-linux-musleabihf
#
# Extra cargo arguments follow the target (e.g. --no-default-features). The binary
# lands in target/<target>/release/ripe-cidr-collector; its size is printed.
#
# Size settings beyond the release profile, for every target:
# * std is rebuilt (-Zbuild-std) with `optimize_for_size` and the panic strategy
#   `immediate-abort`: no panic messages or backtrace code (≈ 450 KiB less on MIPS).
#   A panic still aborts the process, as with panic = "abort"; the code avoids them.
# * no unwind tables (`-C force-unwind-tables=no`, and `-fno-asynchronous-unwind-tables`
#   for the C code, SQLite): with `immediate-abort` nothing unwinds or prints a
#   backtrace, so `.eh_frame` is dead weight (about 135 KB on mipsel).
# * the result is stripped as OpenWrt packages strip it (cross/pkg-strip.sh: sstrip or
#   `llvm-strip --strip-all`), which also drops sections the linker keeps but nothing
#   loads, such as MIPS's `.pdr` (about 170 KB on mipsel).
# MIPS also gets `+crt-static` and `relocation-model=static`: static-PIE MIPS binaries
# crash on thread spawn. And no abicalls (`+noabicalls`, `-fno-pic -mno-abicalls` for
# SQLite): a static executable needs no position-independent calling sequence, and
# without it each call and global access is shorter (about 79 KB less on mipsel, 44 KB
# of the .ipk). The C library that zig links is still abicalls code; lld says so
# ("linking non-abicalls code with abicalls code") and puts an LA25 stub, which sets
# $t9 as that code expects, before each of its functions that our code calls.
# SQLite is compiled with LLVM's inliner threshold below 0 (`-mllvm
# -inline-threshold=-20`): a function is inlined only where that saves code. clang's
# -Oz still inlines SQLite's many small static helpers into their callers, over and
# over; with 0 the mipsel package binary is 54,848 bytes smaller, with -20 another
# 4,304 (docs/size.md, "Fifth session" and "Sixth session").
# What it costs in speed is not yet measured on a router (more calls, same work).
# `-C link-arg=-Os` reaches `zig cc` at the link, where zig builds the C library it
# links (musl, compiler-rt) in its size mode instead of its speed mode, as OpenWrt
# builds its musl (-Os): -976 bytes of the package binary, -1,560 of the .ipk.
set -euo pipefail
target=${1:?usage: cross/build.sh TARGET [cargo args...]}
shift
cd "$(dirname "$0")/.."
flags="-C link-arg=-Os -C link-self-contained=no -Zunstable-options -Cpanic=immediate-abort -Zlocation-detail=none -Zfmt-debug=shallow -C force-unwind-tables=no"
# cc-rs reads CFLAGS_<target with underscores> for the C it compiles (SQLite).
cflags="-fno-asynchronous-unwind-tables -fno-unwind-tables -mllvm -inline-threshold=-20"
case "$target" in
  mips*)
    flags="$flags -C target-feature=+crt-static,+noabicalls -C relocation-model=static"
    cflags="$cflags -fno-pic -mno-abicalls"
    ;;
esac
export "CFLAGS_${target//-/_}=$cflags"
rustup component add rust-src --toolchain nightly >/dev/null
. cross/zig.sh
rcc_zig_fresh "target/$target"
RUSTFLAGS="$flags" cargo +nightly zigbuild --release --target "$target" \
  -Zbuild-std=std,panic_abort -Zbuild-std-features=optimize_for_size "$@"
bin="target/$target/release/ripe-cidr-collector"
cross/pkg-strip.sh "$bin"
size=$(stat -c %s "$bin")
budget=$((2816 * 1024))
echo "$bin: $size bytes ($(( size * 100 / budget ))% of the 2.75 MiB budget of the build with tls)"
