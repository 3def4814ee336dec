#!/usr/bin/env bash
# Builds the offline core (no network features) for wasm32-wasip1 and runs a few
# commands under Node's WASI. Needs: rustup target wasm32-wasip1, `pip install
# cargo-zigbuild`, node >= 20; zig is the one cross/zig.sh pins. .ci/run runs it where
# those can be had.
set -euo pipefail
cd "$(dirname "$0")/.."
. cross/zig.sh
rcc_zig_fresh target/wasm32-wasip1
cargo zigbuild --release --target wasm32-wasip1 --no-default-features
wasm=target/wasm32-wasip1/release/ripe-cidr-collector.wasm
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
cp tests/fixtures/legacy/data.json tests/fixtures/legacy/fqdn_data.json "$dir/"
run() { node --no-warnings cross/wasi-run.mjs "$wasm" "$dir" -- "$@"; }
run asn add AS62041
run fqdn add Example.com.
run status
out=$(run export --format json)
echo "$out"
case "$out" in *'"count":10'*) ;; *) echo "FAIL: expected the 10 imported values"; exit 1 ;; esac
[ -f "$(echo "$dir"/data.json.migrated-*)" ] || { echo "FAIL: legacy files not renamed"; exit 1; }
echo "wasm32-wasip1: OK ($(stat -c %s "$wasm") bytes)"
