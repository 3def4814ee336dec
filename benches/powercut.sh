#!/usr/bin/env bash
# Power cuts on real flash: pulls the power at random moments while the collector
# writes to JFFS2 (and to overlayfs whose upper layer is JFFS2, OpenWrt's root), then
# boots again and checks what survived. Not part of `cargo test`: a VM per boot.
#
# Each round is two boots of a VM (jffs2-run.sh: Debian's kernel under qemu, the flash
# a file kept across boots through block2mtd):
#   1. the workload, cut after a random number of seconds: `run` in a loop, each run
#      collecting 3 ASNs x 10,000 prefixes (10 of them new in every run) from a busybox
#      httpd inside the VM, beside a `snapshot` loop and an `fqdn add`/`remove` loop;
#   2. the check: `PRAGMA integrity_check` of the database is "ok"; every value of the
#      last run that reported its commit before the cut is exported; `config.json`
#      parses (`asn list` shows the 3 ASNs); the snapshot, if any, restores (the
#      program restores a copy into an empty database and exports it); nothing was
#      moved aside as corrupt; the next `run` succeeds and its values are exported.
# Rounds continue on the same flash image, one image per filesystem.
#
#   JFFS2_RUN=/path/to/jffs2-run.sh benches/powercut.sh [ROUNDS]   (default 20)
#
# Env: BIN (a static x86_64 binary; default: built with cargo zigbuild for
# x86_64-unknown-linux-musl), FILESYSTEMS (default "flash ovl"), SEED (for the cut
# times), CUT_MAX (latest cut, seconds after the workload starts; default 25),
# OUT (the table, default target/powercut/table.md). Needs qemu-system-x86,
# busybox-static, cpio (jffs2-run.sh), python3 -m ziglang (for the SQL helper).
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${1:-20}
run_vm=${JFFS2_RUN:?set JFFS2_RUN to the path of jffs2-run.sh}
filesystems=${FILESYSTEMS:-flash ovl}
cut_max=${CUT_MAX:-25}
RANDOM=${SEED:-$$}
work=target/powercut; mkdir -p "$work"
out=${OUT:-$work/table.md}

if [ -z "${BIN:-}" ]; then
  cargo zigbuild --release --quiet --target x86_64-unknown-linux-musl
  BIN=target/x86_64-unknown-linux-musl/release/ripe-cidr-collector
fi
# The VM has no sqlite3: a static helper from the amalgamation the project bundles.
sql=$work/powercut-sql
if [ ! -x "$sql" ] || [ benches/powercut/sql.c -nt "$sql" ]; then
  src=$(cargo metadata --format-version 1 | python3 -c 'import json,sys
print([p["manifest_path"] for p in json.load(sys.stdin)["packages"] if p["name"] == "libsqlite3-sys"][0])')
  src=$(dirname "$src")/sqlite3
  python3 -m ziglang cc -target x86_64-linux-musl -static -O1 -DSQLITE_THREADSAFE=0 \
    -DSQLITE_OMIT_LOAD_EXTENSION -I"$src" -o "$sql" benches/powercut/sql.c "$src/sqlite3.c"
fi

# Shell functions both boots use (busybox sh inside the VM).
common() {
  cat <<'EOF'
D=$FS/d; SNAP=$FS/snap/ripe.snapshot; SQL=/files/powercut-sql
PC() { echo "PC $*"; }
cli() { $BIN -q --data-dir "$D" --snapshot "$SNAP" "$@"; }
# The RIPEstat answer of generation $1: 9,990 fixed prefixes and 10 of its own.
answer() {
  awk -v g="$1" 'BEGIN {
    printf "{\"status\":\"ok\",\"status_code\":200,\"messages\":[],\"data\":{\"resource\":\"AS64496\",\"prefixes\":["
    for (i = 0; i < 9990; i++) printf "%s{\"prefix\":\"10.%d.%d.0/24\",\"timelines\":[]}", (i ? "," : ""), int(i / 256), i % 256
    for (j = 0; j < 10; j++) printf ",{\"prefix\":\"172.%d.%d.%d/28\",\"timelines\":[]}", 16 + g % 16, int(g / 16) % 256, j * 16
    print "]}}" }' > /www/a.tmp && mv /www/a.tmp /www/data/announced-prefixes/data.json
}
# The values generation $1 stores.
expected() {
  awk -v g="$1" 'BEGIN {
    for (i = 0; i < 9990; i++) printf "10.%d.%d.0/24\n", int(i / 256), i % 256
    for (j = 0; j < 10; j++) printf "172.%d.%d.%d/28\n", 16 + g % 16, int(g / 16) % 256, j * 16 }'
}
# How many values of generation $1 the database does not export.
missing() {
  expected "$1" > /tmp/exp
  cli export --type cidr 2>/tmp/export.err > /tmp/have
  awk 'NR == FNR { have[$0] = 1; next } !($0 in have)' /tmp/have /tmp/exp | wc -l
}
mkdir -p /www/data/announced-prefixes "$D" "$FS/snap"
echo '{"Status":0,"Answer":[{"name":"h.example.org.","type":1,"TTL":60,"data":"192.0.2.1"}]}' > /www/dns-query
httpd -p 127.0.0.1:8000 -h /www
EOF
}

# The workload, from generation $GEN on, until the power goes.
workload() {
  cat <<'EOF'
if [ ! -f "$D/config.json" ]; then
  cat > "$D/config.json" <<CFG
{"asns": ["64496", "64497", "64498"],
 "ripe": {"url": "http://127.0.0.1:8000/data/announced-prefixes/data.json", "timeout_seconds": 60},
 "dns": {"resolver": "doh", "doh_url": "http://127.0.0.1:8000/dns-query", "timeout_seconds": 5},
 "storage": {"snapshot_interval_hours": 0}}
CFG
  sync
fi
PC workload-start
( while :; do cli snapshot 2>/tmp/snap.err && PC snapshot-done || PC snapshot-failed "$(tail -1 /tmp/snap.err)"; sleep 1; done ) &
( i=0; while :; do
    cli fqdn add "h$ROUND-$i.example.org" 2>>/tmp/fqdn.err || PC fqdn-add-failed
    [ $i -gt 0 ] && { cli fqdn remove "h$ROUND-$((i - 1)).example.org" 2>>/tmp/fqdn.err || PC fqdn-remove-failed; }
    i=$((i + 1)); done ) &
g=$GEN
while [ $g -lt $((GEN + 100)) ]; do
  answer $g
  PC run-begin $g
  cli run 2>/tmp/run.err; rc=$?
  if [ $rc = 0 ]; then PC committed $g; else PC run-failed $g exit $rc "$(tail -1 /tmp/run.err)"; fi
  g=$((g + 1))
done
EOF
}

# After the cut: what survived, and whether the next run works (generation $NEXT).
check() {
  cat <<'EOF'
ls -la "$D" "$FS/snap" | sed 's/^/PC ls /'
if [ -f "$D/ripe.db" ]; then
  PC integrity "$($SQL "$D/ripe.db" 'PRAGMA integrity_check' 2>&1 | head -3 | tr '\n' ' ')"
  PC rows "$($SQL "$D/ripe.db" 'SELECT count(*) FROM addresses' 2>&1)"
else
  PC integrity no-database
fi
if [ "$LAST" -gt 0 ]; then PC missing-last "$(missing "$LAST")"; else PC missing-last none-committed; fi
n=$(cli asn list 2>/tmp/cfg.err | wc -l)
PC config "asns=$n $(tail -1 /tmp/cfg.err)"
# The snapshot as a reboot with the database in RAM would use it: a copy (a bad one is
# moved aside, not the original) restored by the program into an empty database.
if [ -f "$SNAP" ]; then
  mkdir -p /tmp/restore && cp "$SNAP" /tmp/restore/snap
  n=$($BIN -q --data-dir /tmp/restore --db /tmp/restore/r.db --snapshot /tmp/restore/snap \
    export --type cidr 2>/tmp/restore.err | wc -l)
  moved=$(ls /tmp/restore | grep -c corrupt)
  PC snapshot "restored=$n moved-aside=$moved $(tail -1 /tmp/restore.err)"
else
  PC snapshot none
fi
PC corrupt "$(ls "$D" "$FS/snap" | grep -c corrupt)"
answer "$NEXT"
t0=$(date +%s)
cli run 2>/tmp/run.err; rc=$?
PC next-run "exit=$rc in $(( $(date +%s) - t0 )) s $(tail -1 /tmp/run.err)"
PC missing-next "$(missing "$NEXT")"
EOF
}

field() { sed -n "s/^PC $1 //p" "$2" | tail -1; }

# Boots the VM: boot LOG SCRIPT [CUT]. Under software emulation on a loaded machine
# the guest kernel sometimes panics before its script starts ("IO-APIC + timer
# doesn't work"); the flash is untouched then, so the boot is tried again.
boot() {
  local log=$1 script=$2 cut=${3:-} try
  for try in 1 2 3 4 5; do
    if [ -n "$cut" ]; then
      JFFS2_IMAGE=$img JFFS2_CUT_AFTER=$cut "$run_vm" "$BIN" "$script" "$sql" > "$log" 2>&1 || true
    else
      JFFS2_IMAGE=$img "$run_vm" "$BIN" "$script" "$sql" > "$log" 2>&1 || true
    fi
    grep -q '^PC ' "$log" && return 0
    echo "boot $try of $script did not reach its script; again" >&2
  done
}

{
  echo "| fs | round | cut after | runs committed before the cut | in flight at the cut | integrity | values of the last committed run missing | config | snapshot | moved aside | next run | its values missing |"
  echo "|---|---|---|---|---|---|---|---|---|---|---|---|"
} > "$out"
for fs in $filesystems; do
  img=$work/$fs.img; rm -f "$img"
  gen=1; last=0
  for round in $(seq "$rounds"); do
    cut=$((2 + RANDOM % (cut_max - 1)))
    w=$work/$fs-$round-work.sh; c=$work/$fs-$round-check.sh
    { echo "FS=/$fs ROUND=$round GEN=$gen"; common; workload; } > "$w"
    boot "$w.log" "$w" "$cut"
    committed=$(sed -n 's/^PC committed //p' "$w.log" | tr '\n' ' ')
    c_last=$(sed -n 's/^PC committed //p' "$w.log" | tail -1)
    [ -z "$c_last" ] || last=$c_last
    begun=$(sed -n 's/^PC run-begin //p' "$w.log" | tail -1)
    flight="run ${begun:-none}"
    [ -z "$begun" ] || [ "$begun" != "$c_last" ] || flight="between runs"
    next=$(( ${begun:-$gen} + 1 ))
    { echo "FS=/$fs ROUND=$round LAST=$last NEXT=$next"; common; check; } > "$c"
    boot "$c.log" "$c"
    run=$(field next-run "$c.log")
    case $run in "exit=0 "*) last=$next ;; esac
    gen=$((next + 1))
    row="| $fs | $round | $cut s | ${committed:-none} | $flight | $(field integrity "$c.log") | $(field missing-last "$c.log") | $(field config "$c.log") | $(field snapshot "$c.log") | $(field corrupt "$c.log") | $run | $(field missing-next "$c.log") |"
    echo "$row" >> "$out"
    echo "$row"
  done
done
echo "table: $out"
