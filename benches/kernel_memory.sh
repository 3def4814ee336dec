#!/bin/sh
# Kernel memory per nftables set element (docs/performance.md, "Kernel memory of the
# sets"): SUnreclaim of /proc/meminfo before loading a set of N entries with nft -f,
# after, and after deleting it, in a fresh network namespace. 3 rounds per kind.
# Run as root: sh benches/kernel_memory.sh [N]   (default 200000)
set -eu
n=${1:-200000}
if [ "${IN_NETNS:-}" != 1 ]; then
	exec env IN_NETNS=1 unshare -n sh "$0" "$n"
fi
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
gen() { # kind: interval, timeout or hash
	awk -v n="$n" -v kind="$1" 'BEGIN {
		print "add table inet m"
		if (kind == "hash") print "add set inet m s { type ipv4_addr; flags timeout; timeout 1d; }"
		else if (kind == "timeout") print "add set inet m s { type ipv4_addr; flags interval, timeout; }"
		else print "add set inet m s { type ipv4_addr; flags interval; }"
		printf "add element inet m s { "
		for (i = 0; i < n; i++) {
			if (kind == "hash") {
				a = i + 16777216
				e = sprintf("%d.%d.%d.1", int(a / 65536) % 256 + 1, int(a / 256) % 256, a % 256)
			} else {
				a = 16777216 + i * 512
				e = sprintf("%d.%d.%d.0/24", int(a / 16777216), int(a / 65536) % 256, int(a / 256) % 256)
				if (kind == "timeout") e = e " timeout 7d"
			}
			printf "%s%s", (i ? ", " : ""), e
		}
		print " }"
	}' >"$dir/$1.nft"
}
slab() { awk '/^SUnreclaim:/ { print $2 }' /proc/meminfo; }
for kind in interval timeout hash; do
	gen "$kind"
	for round in 1 2 3; do
		nft delete table inet m 2>/dev/null || true
		sleep 1
		a=$(slab)
		nft -f "$dir/$kind.nft"
		sleep 2
		b=$(slab)
		nft delete table inet m
		sleep 2
		c=$(slab)
		echo "$kind round $round: +$((b - a)) KiB loaded, -$((b - c)) KiB after delete"
	done
done
