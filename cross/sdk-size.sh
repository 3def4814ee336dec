#!/usr/bin/env bash
# Builds the binary the way OpenWrt's SDK does (lang/rust's rust-values.mk and
# rust-package.mk), to measure what a router gets from the feed package:
# * profile `openwrt` (`CARGO_PKG_PROFILE:=openwrt`), with the environment the SDK
#   sets: CARGO_PROFILE_RELEASE_PANIC=unwind, ..._OVERFLOW_CHECKS=true, opt-level z,
#   LTO, one codegen unit (the openwrt profile overrides the first two);
# * no -Z flags and none of cross/build.sh's size flags: std is the stock one, with
#   its panic and formatting code;
# * the SQLite trimming flags passed in the environment, as the package Makefile does
#   (`cargo install` ignores .cargo/config.toml);
# * the package's features: everything but `tls` (https goes through uclient-fetch);
# * the package Makefile's `CARGO_RUSTFLAGS+=` (for every crate but std, which the SDK
#   has prebuilt: cross/sdk-rustc.sh) and `TARGET_CFLAGS+=` (for SQLite);
# * the strip package-pack.mk applies to every package ($(RSTRIP), sstrip by default:
#   cross/pkg-strip.sh). The size is of the binary as the package holds it; the one
#   cargo leaves (before that strip) is printed beside it.
# Differences that cannot be avoided here: the SDK uses its own stable rustc whose std
# is built for the target, and links musl dynamically with its GCC. MIPS has no
# prebuilt std in rustup, so std is rebuilt with nightly's -Zbuild-std (stock
# features, nothing else); other targets use rustup's prebuilt std on stable. Static
# linking through zig is kept (a dynamic musl link needs the target's libc.so).
#   cross/sdk-size.sh mipsel-unknown-linux-musl
# Needs `pip install cargo-zigbuild` (zig itself: cross/zig.sh); for MIPS also
# `rustup component add rust-src --toolchain nightly`. Prints the size and the xz
# size (what an .ipk roughly costs on flash, squashfs compresses with xz too).
set -euo pipefail
target=${1:?usage: cross/sdk-size.sh TARGET}
cd "$(dirname "$0")/.."
flags=$(sed -n 's/^LIBSQLITE3_FLAGS = "\(.*\)"$/\1/p' .cargo/config.toml)
export LIBSQLITE3_FLAGS="$flags"
export CARGO_PROFILE_RELEASE_PANIC=unwind CARGO_PROFILE_RELEASE_OVERFLOW_CHECKS=true \
  CARGO_PROFILE_RELEASE_OPT_LEVEL=z CARGO_PROFILE_RELEASE_LTO=true \
  CARGO_PROFILE_RELEASE_CODEGEN_UNITS=1 CARGO_PROFILE_RELEASE_DEBUG=false \
  CARGO_PROFILE_RELEASE_DEBUG_ASSERTIONS=false
export CARGO_TARGET_DIR=target/sdk
mk=openwrt/ripe-cidr-collector/Makefile
RCC_PKG_RUSTFLAGS=$(sed -n 's/^CARGO_RUSTFLAGS+=//p' "$mk")
TARGET_CFLAGS=$(sed -n 's/^TARGET_CFLAGS+=//p' "$mk")
export RCC_PKG_RUSTFLAGS TARGET_CFLAGS RUSTC_WRAPPER="$PWD/cross/sdk-rustc.sh"
features=(--no-default-features --features "collect api inspect")
. cross/zig.sh
rcc_zig_fresh "$CARGO_TARGET_DIR/$target"
case "$target" in
  mips*)
    rustup component add rust-src --toolchain nightly >/dev/null
    # Only to get a std for the target at all: -Zbuild-std, stock features.
    # +crt-static: zig links its own musl (link-self-contained=no), statically; the
    # SDK links musl dynamically. Both are position-independent code, unlike
    # cross/build.sh's relocation-model=static.
    RUSTFLAGS="-C link-self-contained=no -C target-feature=+crt-static" \
      cargo +nightly zigbuild --profile openwrt --target "$target" "${features[@]}" \
        -Zbuild-std=std,panic_abort
    ;;
  *) cargo zigbuild --profile openwrt --target "$target" "${features[@]}" ;;
esac
built="$CARGO_TARGET_DIR/$target/openwrt/ripe-cidr-collector"
bin="$built.pkg"
cp "$built" "$bin"
cross/pkg-strip.sh "$bin"
size=$(stat -c %s "$bin")
xzs=$(xz -9e -c "$bin" | wc -c)
budget=2621440
echo "$built: $(stat -c %s "$built") bytes as cargo leaves it"
echo "$bin: $size bytes as the package holds it, xz $xzs ($(( size * 100 / budget ))% of the 2.5 MiB SDK budget)"
