#!/bin/sh
# Strips an ELF binary in place the way OpenWrt packages it: include/package-pack.mk
# runs $(RSTRIP) over every package's files, which with the default build settings
# (config/Config-build.in: USE_SSTRIP unless the toolchain is external or glibc) is
# `sstrip`, and otherwise `strip --strip-all`. Both leave only what is loaded; sstrip
# also drops the non-loaded sections that rustc's `-C strip` and lld keep, such as
# MIPS's `.pdr` (procedure descriptors for debuggers: about 170-200 KB on mipsel).
#   cross/pkg-strip.sh FILE
# Uses the first of: $STRIP (a command line, as OpenWrt's STRIP), sstrip,
# llvm-strip --strip-all, the toolchain's rust-objcopy --strip-all. `llvm-strip
# --strip-all` removes every non-allocated section, as sstrip does, but keeps the
# section header table (a few hundred bytes more than sstrip). A file that is not ELF
# (a test's stand-in binary) is left alone, as rstrip.sh does.
set -eu
f=${1:?usage: cross/pkg-strip.sh FILE}
[ "$(head -c 4 "$f" | od -An -c | tr -d ' ')" = '177ELF' ] || exit 0
if [ -n "${STRIP:-}" ]; then
  # shellcheck disable=SC2086 # a command line, split as make splits $(STRIP)
  exec $STRIP "$f"
elif command -v sstrip >/dev/null 2>&1; then
  exec sstrip "$f"
elif command -v llvm-strip >/dev/null 2>&1; then
  exec llvm-strip --strip-all "$f"
fi
for sysroot in "$(rustc +nightly --print sysroot 2>/dev/null)" "$(rustc --print sysroot 2>/dev/null)"; do
  for tool in "$sysroot"/lib/rustlib/*/bin/rust-objcopy; do
    [ -x "$tool" ] && LD_LIBRARY_PATH="$sysroot/lib" exec "$tool" --strip-all "$f"
  done
done
echo "pkg-strip: no sstrip, llvm-strip or rust-objcopy found; $f left as it is" >&2
