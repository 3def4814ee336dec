#!/usr/bin/env bash
# Runs every fuzz target for SECONDS each (default 20), seeded from fuzz/seeds/TARGET;
# what libFuzzer finds goes to fuzz/corpus/TARGET (not committed) and crashes to
# fuzz/artifacts/TARGET. Prints each target's last status line (exec count).
#   fuzz/run.sh [SECONDS] [TARGET...]
# Needs a nightly toolchain and cargo-fuzz (`cargo install cargo-fuzz`).
set -euo pipefail
cd "$(dirname "$0")"
secs=${1:-20}
shift || true
targets=("$@")
if [ ${#targets[@]} -eq 0 ]; then
  mapfile -t targets < <(sed -n 's/^name = "\([a-z_0-9]*\)"$/\1/p' Cargo.toml | grep -v fuzz)
fi
cargo +nightly fuzz build -O >/dev/null
for t in "${targets[@]}"; do
  mkdir -p "corpus/$t"
  log=$(mktemp)
  if ! cargo +nightly fuzz run -O "$t" "corpus/$t" "seeds/$t" -- \
    -max_total_time="$secs" -rss_limit_mb=512 -max_len=65536 >"$log" 2>&1; then
    tail -40 "$log"
    echo "fuzz: $t FAILED (artifacts in fuzz/artifacts/$t)"
    rm -f "$log"
    exit 1
  fi
  echo "fuzz: $t: $(grep -E '^#[0-9]+' "$log" | tail -1)"
  rm -f "$log"
done
