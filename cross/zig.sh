# shellcheck shell=bash
# Sourced by cross/build.sh and cross/sdk-size.sh: the zig that compiles SQLite and links
# the router binaries, pinned so that a size measured here is the size anyone measures.
#
# 0.14.1: the last zig that links ELF with LLD and ships musl's own malloc. Later
# releases link with zig's own ELF linker, which keeps the unwind tables of its C
# library (14 KB on mipsel), and replace musl's malloc and qsort with zig's: the same
# tree gave a 1,917,232-byte package binary with 0.17.1 against 1,892,452 with 0.14.1
# (docs/size.md, "Fifth session"). mallocng is also what the router's musl has.
#
# The pinned zig comes from PyPI's `ziglang` wheel into a venv under target/ on first
# use (the scripts run from the checkout's root). cargo-zigbuild (`pip install
# cargo-zigbuild`, any version) runs zig as `PYTHON -m ziglang` with the python of
# CARGO_ZIGBUILD_PYTHON_PATH, which it prefers to a `zig` on PATH: here, the venv's.
rcc_zig_version=0.14.1
rcc_zig_venv=target/zig-$rcc_zig_version
if [ "$("$rcc_zig_venv/bin/python3" -m ziglang version 2>/dev/null)" != "$rcc_zig_version" ]; then
  echo "installing zig $rcc_zig_version into $rcc_zig_venv (pip, once)" >&2
  python3 -m venv "$rcc_zig_venv"
  "$rcc_zig_venv/bin/pip" install -q "ziglang==$rcc_zig_version"
fi
CARGO_ZIGBUILD_PYTHON_PATH=$PWD/$rcc_zig_venv/bin/python3
export CARGO_ZIGBUILD_PYTHON_PATH

# Objects compiled by another zig are not rebuilt by cargo on their own (the wrapper's
# path stays the same): `rcc_zig_fresh DIR` empties DIR, a target's build directory,
# when the zig that built it was not this one.
rcc_zig_fresh() {
  if [ "$(cat "$1/.zig-version" 2>/dev/null)" != "$rcc_zig_version" ]; then
    rm -rf "$1"
    mkdir -p "$1"
    echo "$rcc_zig_version" >"$1/.zig-version"
  fi
}
