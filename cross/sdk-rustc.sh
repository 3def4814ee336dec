#!/bin/sh
# RUSTC_WRAPPER for cross/sdk-size.sh: adds the package Makefile's CARGO_RUSTFLAGS
# (passed in RCC_PKG_RUSTFLAGS) to every crate cargo compiles except the standard
# library's. In the SDK those flags reach our crate and its dependencies through
# RUSTFLAGS, while std comes prebuilt with the toolchain; here std is rebuilt with
# -Zbuild-std (MIPS has no prebuilt one in rustup), so RUSTFLAGS would reach it too.
rustc=$1
shift
case " $* " in
  *"/lib/rustlib/src/rust/"*) exec "$rustc" "$@" ;;
esac
# shellcheck disable=SC2086 # a list of flags, split as make splits them
exec "$rustc" "$@" ${RCC_PKG_RUSTFLAGS:-}
