#!/bin/sh
# Regenerates index.html.gz, the compressed page the API sends to browsers. Run it
# after editing index.html (a unit test fails while the .gz is stale).
# The page is sent without what only its reader needs: each line loses its
# indentation and the lines that are only a `//` comment go (1.3 KB of the router
# package; the test in src/api/routes/page.rs applies the same rule, and checks that
# the page has nothing it would change the meaning of: no multi-line strings, no
# template literals, no <pre> or <textarea>). zopfli, when installed (Debian's
# `zopfli`), compresses about 3 % smaller than `gzip -9`; either gives the same
# bytes for the same page (no name, no time).
set -eu
cd "$(dirname "$0")"
sent=$(mktemp)
trap 'rm -f "$sent"' EXIT
sed -e 's/^[[:space:]]*//' -e '/^\/\//d' index.html >"$sent"
if command -v zopfli >/dev/null 2>&1; then
  zopfli --i1000 -c "$sent" >index.html.gz
else
  gzip -9nc "$sent" >index.html.gz
fi
wc -c index.html "$sent" index.html.gz
