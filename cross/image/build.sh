#!/usr/bin/env bash
# Builds the image `ripe-cross-zig` (see Dockerfile) without any registry: Debian
# bookworm by debootstrap from the Debian mirror, imported with `docker import`, zig
# and cargo-zigbuild from the PyPI wheels installed on the host
# (`pip install ziglang cargo-zigbuild`). Root; needs debootstrap.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
work=${WORK:-/tmp/ripe-cross-image}
mkdir -p "$work"
if ! docker image inspect ripe-bookworm-base >/dev/null 2>&1; then
  [ -d "$work/root/usr" ] || debootstrap --variant=minbase --include=ca-certificates,make \
    bookworm "$work/root" http://deb.debian.org/debian
  tar -C "$work/root" -c . | docker import - ripe-bookworm-base
fi
ctx=$work/context
rm -rf "$ctx" && mkdir -p "$ctx"
zigdir=$(python3 -c 'import ziglang, os; print(os.path.dirname(ziglang.__file__))')
cp -a "$zigdir" "$ctx/zig" && rm -rf "$ctx/zig/__pycache__"
cp "$(command -v cargo-zigbuild)" "$ctx/cargo-zigbuild"
cp "$here/wrap.sh" "$ctx/"
# pyenv and pip put a wrapper script first in PATH: take the ELF binary.
file -L "$ctx/cargo-zigbuild" | grep -q ELF ||
  cp "$(python3 -c 'import sysconfig; print(sysconfig.get_path("scripts"))')/cargo-zigbuild" "$ctx/"
docker build -t ripe-cross-zig -f "$here/Dockerfile" "$ctx"
