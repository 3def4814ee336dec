#!/usr/bin/env bash
# Figures for docs/bgp.md: a group of N prefixes handed from a route server (BIRD 2
# fed by the `bird` output) to a peer (a second BIRD 2) over one eBGP session, in two
# network namespaces joined by a veth. Prints the routes the peer received, both
# BIRDs' memory (`birdc show memory`), and the seconds from the end of a collection
# (`run`) that adds 1 % more prefixes to the moment the peer's table holds them.
#
#   benches/bgp.sh [N]        (root; Debian's bird2; N default 30000)
#
# BIN=path uses that binary (default target/release, built when missing). Figures
# only: nothing is asserted. Everything is removed at the end (namespaces rcc_rs_$$,
# rcc_peer_$$, the work directory).
set -euo pipefail
cd "$(dirname "$0")/.."
N=${1:-30000}
BIN=${BIN:-target/release/ripe-cidr-collector}
[ -x "$BIN" ] || cargo build --release --quiet
[ "$(id -u)" = 0 ] || { echo "skip: needs root"; exit 0; }
command -v bird >/dev/null || { echo "skip: no bird (apt-get install bird2)"; exit 0; }
BIN=$(realpath "$BIN")

work=$(mktemp -d)
rs=rcc_rs_$$ peer=rcc_peer_$$
pids=()
cleanup() {
  set +e
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done
  ip netns del "$rs" 2>/dev/null
  ip netns del "$peer" 2>/dev/null
  rm -rf "$work"
}
trap cleanup EXIT
ip netns add "$rs"
ip netns add "$peer"
ip link add ra netns "$rs" type veth peer name rb netns "$peer"
ip -n "$rs" addr add 10.99.0.1/24 dev ra
ip -n "$peer" addr add 10.99.0.2/24 dev rb
for ns in "$rs" "$peer"; do ip -n "$ns" link set lo up; done
ip -n "$rs" link set ra up
ip -n "$peer" link set rb up

# N distinct /24s from 1.0.0.0 up; `more` adds 1 % after them.
answer() {
  python3 - "$1" >"$work/answer.json" <<'PY'
import json, sys
n = int(sys.argv[1])
p = [{"prefix": f"{1 + (i >> 16)}.{(i >> 8) & 255}.{i & 255}.0/24",
      "timelines": [{"starttime": "2026-11-13T08:00:00", "endtime": "2026-11-27T08:00:00"}]}
     for i in range(n)]
print(json.dumps({"messages": [], "status": "ok", "status_code": 200,
                  "data": {"prefixes": p, "resource": "62041"}}))
PY
}
answer "$N"
cat >"$work/fake.py" <<'PY'
import http.server, sys
path = sys.argv[1]
class H(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        body = open(path, "rb").read()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
    def log_message(self, *a): pass
s = http.server.ThreadingHTTPServer(("127.0.0.1", 0), H)
print(s.server_address[1], flush=True)
s.serve_forever()
PY
ip netns exec "$rs" python3 "$work/fake.py" "$work/answer.json" >"$work/port" &
pids+=($!)
for _ in $(seq 50); do [ -s "$work/port" ] && break; sleep 0.1; done
port=$(cat "$work/port")

mkdir -p "$work/data"
cat >"$work/data/config.json" <<JSON
{"ripe": {"url": "http://127.0.0.1:$port/data/announced-prefixes/data.json"},
 "groups": {"vpn": {"asns": ["62041"], "bgp_community": "65000:100"}},
 "outputs": [{"format": "bird", "group": "vpn", "family": 4, "via": "blackhole",
              "path": "$work/vpn_v4.conf", "command": "birdc -s $work/rs.ctl configure"}]}
JSON
: >"$work/vpn_v4.conf"
cat >"$work/rs.conf" <<CONF
router id 10.99.0.1;
protocol device {}
protocol static vpn_v4 {
  ipv4;
  include "$work/vpn_v4.conf";
}
protocol bgp peer1 {
  local 10.99.0.1 as 65000;
  neighbor 10.99.0.2 as 65001;
  ipv4 { import none; export where (65000,100) ~ bgp_community; export limit 200000; next hop self; };
}
CONF
cat >"$work/peer.conf" <<CONF
router id 10.99.0.2;
protocol device {}
protocol bgp route_server {
  local 10.99.0.2 as 65001;
  neighbor 10.99.0.1 as 65000;
  ipv4 { import all; export none; };
}
CONF
ip netns exec "$rs" bird -f -c "$work/rs.conf" -s "$work/rs.ctl" -P "$work/rs.pid" & pids+=($!)
ip netns exec "$peer" bird -f -c "$work/peer.conf" -s "$work/peer.ctl" -P "$work/peer.pid" & pids+=($!)
sleep 1

received() { birdc -s "$work/peer.ctl" show route count | awk '/routes/ {print $1; exit}'; }
wait_for() {
  for _ in $(seq 1200); do [ "$(received)" = "$1" ] && return 0; sleep 0.05; done
  echo "peer has $(received) routes, expected $1" >&2; return 1
}
ip netns exec "$rs" "$BIN" --data-dir "$work/data" run >/dev/null 2>&1
wait_for "$N"
echo "N=$N: the peer received $(received) routes"
echo "include: $(wc -c <"$work/vpn_v4.conf") bytes"
for side in rs peer; do
  echo "== birdc show memory ($side)"
  birdc -s "$work/$side.ctl" show memory | sed 1d
done
more=$((N / 100))
answer $((N + more))
s0=$(date +%s.%N)
ip netns exec "$rs" "$BIN" --data-dir "$work/data" run >/dev/null 2>&1
t0=$(date +%s.%N)
echo "the run (collection, include written, birdc configure) took $(echo "$t0 - $s0" | bc) s"
wait_for $((N + more))
t1=$(date +%s.%N)
echo "1 % change ($more prefixes added): in the peer's table $(echo "$t1 - $t0" | bc) s after the run ended"
