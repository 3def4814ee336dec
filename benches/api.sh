#!/usr/bin/env bash
# HTTP API benchmark: fills a database with 100,000 values, starts `serve` (release
# build) and prints the median time of GET /addresses?format=text beside the sqlite3
# command-line tool in the same run, GET /health requests per second (wrk when
# installed), the server's memory idle, with 256 idle connections and after 8
# endless-header connections for 10 s; then the mipsel binary size (when
# cargo-zigbuild is installed: `pip install ziglang cargo-zigbuild`; several minutes).
# Prints figures; asserts nothing. The HTTP work is done by benches/api.rs.
#
#   benches/api.sh                 # mipsel size now, beside the figure before
#   BEFORE=507770c benches/api.sh  # also rebuild that revision for "before"
#   NO_CROSS=1 benches/api.sh      # skip the cross builds
#   BASELINE=31a817c NO_CROSS=1 benches/api.sh
#                                  # also build that revision's binary (release, in a
#                                  # temporary worktree) and time its GET /addresses
#                                  # beside this one's (RIPE_BASELINE_BIN=FILE: a binary
#                                  # built already)
set -euo pipefail
cd "$(dirname "$0")/.."
command -v sqlite3 >/dev/null || echo "note: sqlite3 is not installed; the baseline is skipped"
command -v wrk >/dev/null || echo "note: wrk is not installed; /health is measured with simple loops"
if [ -n "${BASELINE:-}" ] && [ -z "${RIPE_BASELINE_BIN:-}" ]; then
  base=$(mktemp -d)
  git worktree add -q --detach "$base/src" "$BASELINE"
  (cd "$base/src" && cargo build --release --bin ripe-cidr-collector)
  cp "$base/src/target/release/ripe-cidr-collector" "$base/baseline-bin"
  git worktree remove --force "$base/src"
  export RIPE_BASELINE_BIN="$base/baseline-bin"
fi
cargo bench --bench api "$@"

[ -n "${NO_CROSS:-}" ] && exit 0
if ! command -v cargo-zigbuild >/dev/null; then
  echo "mipsel size: cargo-zigbuild not installed, skipped"
  exit 0
fi
size_of() { cross/build.sh mipsel-unknown-linux-musl 2>/dev/null | tail -1; }
# tiny_http_fork 0.12.17, before the own connection layer (docs/size.md, 507770c).
before="2595924 bytes (recorded in docs/size.md for 507770c)"
if [ -n "${BEFORE:-}" ]; then
  tmp=$(mktemp -d)
  git worktree add -q --detach "$tmp" "$BEFORE"
  before=$(cd "$tmp" && CARGO_TARGET_DIR="$PWD/target" size_of)
  git worktree remove --force "$tmp"
fi
echo "mipsel before: $before"
echo "mipsel after:  $(size_of)"
