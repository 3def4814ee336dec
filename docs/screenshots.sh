#!/bin/sh
# Regenerates docs/screenshot-desktop.png and docs/screenshot-phone.png: the built-in
# web page in headless Chromium, served by the real binary after a `run` against a
# fake RIPEstat and DoH on 127.0.0.1 (tests/it/web.rs, `screenshots`).
set -eu
cd "$(dirname "$0")/.."
RCC_SCREENSHOTS="$PWD/docs" cargo test --test it -- --ignored --exact web::screenshots
ls -l docs/screenshot-desktop.png docs/screenshot-phone.png
