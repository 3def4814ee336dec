#!/bin/sh
# zig cc for one target: wrap.sh ZIG_TARGET ARGS...
t=$1; shift
exec /usr/local/bin/cargo-zigbuild zig cc -- -g -fno-sanitize=all -target "$t" "$@"
