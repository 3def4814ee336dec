#!/bin/sh
# Storage on real JFFS2 and on overlayfs whose upper layer is JFFS2 (OpenWrt's root):
# the legacy import, `run` against 3 x 10,000 prefixes, a reader while the writer
# runs, and a RAM database with its snapshot on JFFS2. Runs inside a VM under
# jffs2-run.sh (qemu, Debian's kernel, mtdram), which is not part of this repository:
#   cargo build --release --target x86_64-unknown-linux-musl
#   jffs2-run.sh target/x86_64-unknown-linux-musl/release/ripe-cidr-collector \
#       benches/jffs2_storage.sh data.json fqdn_data.json ripe.json
# with the two legacy files of tests/fixtures/legacy/ and ripe.json a RIPEstat
# announced-prefixes answer of 10,000 prefixes (benches/flash_writes.sh makes one).
now() { date +%s; }
echo "== legacy import on JFFS2"
mkdir -p /flash/d && cp /files/data.json /files/fqdn_data.json /flash/d/
$BIN --data-dir /flash/d export > /tmp/out.txt; echo "export exit $? lines $(wc -l < /tmp/out.txt)"
ls /flash/d
$BIN --data-dir /flash/d status --json
echo "== legacy import on overlayfs (upper on JFFS2)"
mkdir -p /ovl/d && cp /files/data.json /files/fqdn_data.json /ovl/d/
$BIN --data-dir /ovl/d export > /tmp/out2.txt; echo "export exit $? lines $(wc -l < /tmp/out2.txt)"
$BIN -q --data-dir /ovl/d status | grep -E "journal|stored"
echo "== run against 10,000 prefixes x 3 ASNs on JFFS2"
ip link set lo up
mkdir -p /www/data/announced-prefixes && cp /files/ripe.json /www/data/announced-prefixes/data.json
httpd -p 127.0.0.1:8000 -h /www
cat > /flash/d/config.json <<CFG
{"asns": ["64496", "64497", "64498"], "ripe": {"url": "http://127.0.0.1:8000/data/announced-prefixes/data.json", "timeout_seconds": 60}}
CFG
t0=$(now); $BIN -q --data-dir /flash/d run; echo "run 1 exit $? in $(( $(now) - t0 )) s"
$BIN -q --data-dir /flash/d status | grep -E "journal|stored"
echo "== a reader while the writer runs (run 2)"
t0=$(now)
$BIN -q --data-dir /flash/d run & w=$!
ok=0; bad=0
while kill -0 $w 2>/dev/null; do
  if $BIN -q --data-dir /flash/d export --type cidr > /tmp/r.txt 2>/tmp/r.err; then ok=$((ok+1)); n=$(wc -l < /tmp/r.txt); else bad=$((bad+1)); cat /tmp/r.err; fi
done
wait $w; echo "run 2 exit $? in $(( $(now) - t0 )) s; reader: $ok exports ok ($n lines last), $bad failed"
echo "== RAM database, snapshot on JFFS2"
mkdir -p /tmp/ram
cp /flash/d/config.json /tmp/cfg.json
mkdir -p /tmp/dd && cp /tmp/cfg.json /tmp/dd/config.json
t0=$(now); $BIN -q --data-dir /tmp/dd --db /tmp/ram/ripe.db --snapshot /flash/ripe.snapshot run; echo "run exit $? in $(( $(now) - t0 )) s"
ls -l /flash/ripe.snapshot
rm -rf /tmp/ram
$BIN -q --data-dir /tmp/dd --db /tmp/ram/ripe.db --snapshot /flash/ripe.snapshot export --type cidr | wc -l
$BIN --data-dir /tmp/dd --db /tmp/ram/ripe.db --snapshot /flash/ripe.snapshot status | grep -E "journal|stored|snapshot"
t0=$(now); $BIN -q --data-dir /tmp/dd --db /tmp/ram/ripe.db --snapshot /flash/ripe.snapshot snapshot; echo "snapshot exit $? in $(( $(now) - t0 )) s"
df -k /flash
