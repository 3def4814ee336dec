#!/bin/sh
# Regenerates index.html.gz, the compressed page the API sends to browsers. Run it
# after editing index.html (a unit test fails while the .gz is stale). -n leaves out
# the name and time, so the same page gives the same bytes.
set -eu
cd "$(dirname "$0")"
gzip -9nc index.html >index.html.gz
wc -c index.html index.html.gz
