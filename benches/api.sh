#!/usr/bin/env bash
# HTTP API benchmark: fills a database with 100,000 values, starts `serve` (release
# build) and prints the median time of GET /addresses?format=text beside the sqlite3
# command-line tool in the same run, GET /health requests per second (wrk when
# installed) and the cost of 256 idle connections. Prints figures; asserts nothing.
# The work is done by benches/api.rs; this script only runs it.
#
#   benches/api.sh
set -euo pipefail
cd "$(dirname "$0")/.."
command -v sqlite3 >/dev/null || echo "note: sqlite3 is not installed; the baseline is skipped"
command -v wrk >/dev/null || echo "note: wrk is not installed; /health is measured with simple loops"
exec cargo bench --bench api "$@"
