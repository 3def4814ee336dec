#!/bin/sh
# Bytes written to storage per day for 10,000 prefixes collected every 6 hours (4 runs
# of `run`), in three storage modes:
#   flash-wal     the database on disk ("flash") in WAL mode
#   flash-delete  the database on disk in rollback-journal mode (what JFFS2 gets; made
#                 here by the LD_PRELOAD shim of the tests, needs `cc`)
#   ram+snapshot  the database in tmpfs (/dev/shm), the snapshot on disk, daily
# Figures come from /proc/self/io of the measuring process, which includes the
# counters of its reaped children: `write_bytes` (what reached the block layer, i.e.
# flash; tmpfs writes are not counted) and `wchar` (all bytes passed to write(2)).
# Every run changes 10 of the 10,000 prefixes, so every run is a change; one warm-up
# run (the first fill) is not counted; runs are a second apart, so every run rewrites
# `last_seen` of every row, as runs 6 hours apart do. In ram+snapshot mode the snapshot is made due
# once (its time set back a day), as it would be once a day.
#
#   benches/flash_writes.sh            builds target/release/ripe-cidr-collector
#   BIN=path/to/binary benches/flash_writes.sh
set -eu
cd "$(dirname "$0")/.."
if [ -z "${BIN:-}" ]; then
    cargo build --release --quiet
    BIN=target/release/ripe-cidr-collector
fi
command -v python3 >/dev/null || { echo "flash_writes: needs python3" >&2; exit 2; }
work=$(mktemp -d /var/tmp/flash-writes.XXXXXX)
ram=$(mktemp -d /dev/shm/flash-writes.XXXXXX)
srv=""
cleanup() { [ -n "$srv" ] && kill "$srv" 2>/dev/null; rm -rf "$work" "$ram"; }
trap cleanup EXIT INT TERM
shim=""
if cc -shared -fPIC -o "$work/noshm.so" tests/fixtures/noshm.c -ldl 2>/dev/null; then
    shim="$work/noshm.so"
else
    echo "flash_writes: no cc, flash-delete mode skipped" >&2
fi
mkdir -p "$work/www/data/announced-prefixes"
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
python3 -m http.server "$port" --bind 127.0.0.1 --directory "$work/www" >/dev/null 2>&1 &
srv=$!
BIN="$BIN" WORK="$work" RAM="$ram" SHIM="$shim" PORT="$port" python3 - <<'EOF'
import json, os, subprocess, time, urllib.request

work, ram, shim, port = os.environ["WORK"], os.environ["RAM"], os.environ["SHIM"], os.environ["PORT"]
binary = os.path.abspath(os.environ["BIN"])
answer = os.path.join(work, "www/data/announced-prefixes/data.json")

def serve(generation):
    """The RIPEstat answer: 10,000 prefixes, 10 of them different per generation."""
    prefixes = [f"10.{i >> 8}.{i & 255}.0/24" for i in range(10_000 - 10)]
    prefixes += [f"172.{16 + generation % 16}.{generation // 16 % 256}.{j * 16}/28" for j in range(10)]
    items = [{"prefix": p, "timelines": [{"starttime": "2026-11-13T08:00:00",
                                           "endtime": "2026-11-27T08:00:00"}]} for p in prefixes]
    body = {"messages": [], "status": "ok", "status_code": 200,
            "data": {"prefixes": items, "resource": "AS64496"}}
    tmp = answer + ".tmp"
    with open(tmp, "w") as f:
        json.dump(body, f)
    os.rename(tmp, answer)

def io():
    with open("/proc/self/io") as f:
        return {k: int(v) for k, v in (line.split(": ") for line in f)}

def run(args, env):
    before = io()
    r = subprocess.run([binary, "-q"] + args, env=env, stdout=subprocess.DEVNULL,
                       stderr=subprocess.PIPE)
    after = io()
    if r.returncode != 0:
        raise SystemExit(f"{args}: exit {r.returncode}: {r.stderr.decode()}")
    return {k: after[k] - before[k] for k in ("write_bytes", "wchar", "cancelled_write_bytes")}

serve(0)
for _ in range(100):
    try:
        urllib.request.urlopen(f"http://127.0.0.1:{port}/data/announced-prefixes/data.json").read()
        break
    except OSError:
        time.sleep(0.05)

modes = [("flash-wal", None, False)]
if shim:
    modes.append(("flash-delete", shim, False))
modes.append(("ram+snapshot", None, True))
print(f"10,000 prefixes, 4 runs (one day at interval_minutes=360), binary {binary}")
print(f"{'mode':14} {'write_bytes/day':>16} {'wchar/day':>12}  per run (write_bytes)")
generation = 0
for name, preload, snapshot in modes:
    d = os.path.join(work, name)
    os.makedirs(d)
    with open(os.path.join(d, "config.json"), "w") as f:
        json.dump({"asns": ["64496"], "ripe": {"url": f"http://127.0.0.1:{port}/data/announced-prefixes/data.json"}}, f)
    env = {k: v for k, v in os.environ.items() if not k.startswith("RIPE_")}
    env["RIPE_DATA_DIR"] = d
    if preload:
        env["LD_PRELOAD"] = preload
    snap = os.path.join(d, "ripe.snapshot")
    if snapshot:
        env["RIPE_DB"] = os.path.join(ram, "ripe.db")
        env["RIPE_SNAPSHOT"] = snap
    generation += 1
    serve(generation)
    run(["run"], env)  # warm-up: the first fill
    if snapshot:
        old = time.time() - 25 * 3600
        os.utime(snap, (old, old))  # a day has passed since the last snapshot
    per_run, total_w, total_c = [], 0, 0
    for _ in range(4):
        # Stored times have second precision, and SQLite skips rewriting a row that
        # did not change: runs in one second would hide the last_seen updates.
        time.sleep(1.1)
        generation += 1
        serve(generation)
        m = run(["run"], env)
        per_run.append(m["write_bytes"])
        total_w += m["write_bytes"]
        total_c += m["wchar"]
    runs = " ".join(f"{w:,}" for w in per_run)
    print(f"{name:14} {total_w:>16,} {total_c:>12,}  {runs}")
    if snapshot:
        print(f"{'':14} snapshot file {os.path.getsize(snap):,} bytes")
    else:
        print(f"{'':14} database file {os.path.getsize(os.path.join(d, 'ripe.db')):,} bytes")
EOF
