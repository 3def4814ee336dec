#!/bin/sh
# An earlier version's WAL-mode database as the snapshot, restored on real JFFS2 and
# on overlayfs over JFFS2 (issue 26 item 16; a manual check). Runs inside a VM under
# jffs2-run.sh (qemu, Debian's kernel, mtdram), which is not part of this repository:
#   cargo zigbuild --release --target x86_64-unknown-linux-musl   # now, and at 31a817c
#   jffs2-run.sh NEW benches/jffs2_wal_snapshot.sh OLD ripe.json
# with OLD the binary of 31a817c named `old` (its database on tmpfs is in WAL mode;
# the package's uci-defaults made such a database the snapshot) and ripe.json a
# RIPEstat answer (benches/flash_writes.sh makes one).
OLD=/files/old
hdr() { dd if="$1" bs=1 skip=18 count=2 2>/dev/null | od -An -tu1 | tr -s ' '; }
mkdir -p /www && cp /files/ripe.json /www/data.json
httpd -p 127.0.0.1:8000 -h /www
CFG='{"asns": ["64496"], "ripe": {"url": "http://127.0.0.1:8000/data.json", "timeout_seconds": 60}}'
mkdir -p /tmp/olddb && echo "$CFG" > /tmp/olddb/config.json
$OLD -q --data-dir /tmp/olddb run; echo "old run exit $?"
echo "old database header bytes 18,19:$(hdr /tmp/olddb/ripe.db) (2 2: WAL)"
# The current binary on the data directory $d, its database in RAM.
c() { "$BIN" -q --data-dir "$d" --db "/tmp/ram-$fs/ripe.db" --snapshot "$d/ripe.snapshot" "$@"; }
beside() { find "$d" -mindepth 1 | sort | tr '\n' ' '; }
for fs in flash ovl; do
  echo "== $fs"
  d=/$fs/d; mkdir -p "$d" "/tmp/ram-$fs"; echo "$CFG" > "$d/config.json"
  cp /tmp/olddb/ripe.db "$d/ripe.snapshot"; sync; cp "$d/ripe.snapshot" "/tmp/old-$fs"
  echo "restored: export lines $(c export --type cidr | wc -l)"
  echo "beside the snapshot: $(beside)"
  cmp -s "$d/ripe.snapshot" "/tmp/old-$fs" && echo "the snapshot is unchanged"
  c run; echo "run exit $?"
  c snapshot; echo "snapshot exit $?; beside it: $(beside)"
  rm -rf "/tmp/ram-$fs"; mkdir -p "/tmp/ram-$fs"
  echo "the new snapshot restored: export lines $(c export --type cidr | wc -l)"
done
