#!/usr/bin/env bash
# Stand-in for firewall4's /sbin/fw4, reduced to what a script include sees. Copied
# from openwrt/firewall4 (root/sbin/fw4; root/usr/share/firewall4/main.uc, function
# run_includes; ucode's system() with a timeout, lib.c uc_system):
# * `start`, `reload`, `restart`: take the lock (/var/run/fw4.lock, here $FW4_LOCK)
#   with `flock -x 1000`, load the ruleset (here: create table inet fw4), then run
#   every script include while still holding the lock, each as
#   `sh -c 'exec 1000>&-; . PATH'`. An include still running after 30 s (here
#   $FW4_INCLUDE_TIMEOUT, so that a test of the kill is quick) is killed with SIGKILL,
#   only that process (its background jobs live on, as with ucode's kill(child)), and
#   reported as "Include 'PATH' failed with exit code -9".
# * `stop`: deletes only table inet fw4; `flush`: every table (both under the lock).
# * `reload-sets`: `flock -x LOCK` before refilling fw4's sets: waits for the lock.
# Includes: $FW4_INCLUDES (paths, space-separated). The stub nft (nft.sh) keeps the
# tables. Every step is logged to $STUB_LOG. Bash, for it and for the includes:
# OpenWrt's /bin/sh is busybox ash, but dash has no file descriptor 1000, and a
# busybox here may run its own `logger` instead of the stub on PATH.
set -u
lock=${FW4_LOCK:?}
limit=${FW4_INCLUDE_TIMEOUT:-30}

log() { echo "fw4 $*" >> "$STUB_LOG"; }

run_includes() {
	for path in ${FW4_INCLUDES:-}; do
		bash -c "exec 1000>&-; . '$path'" &
		pid=$!
		ticks=0
		while kill -0 "$pid" 2>/dev/null; do
			if [ "$ticks" -ge $((limit * 10)) ]; then
				kill -9 "$pid" 2>/dev/null
				break
			fi
			sleep 0.1
			ticks=$((ticks + 1))
		done
		wait "$pid"
		rc=$?
		[ "$rc" -gt 128 ] && rc=-$((rc - 128))
		if [ "$rc" != 0 ]; then
			log "Include '$path' failed with exit code $rc"
			echo "Include '$path' failed with exit code $rc" >&2
		fi
	done
}

case "${1:-}" in
-q) shift ;;
esac
case "${1:-}" in
start | reload | restart)
	{
		flock -x 1000
		log "$1: lock taken"
		[ "$1" = restart ] && nft delete table inet fw4 2>/dev/null
		nft add table inet fw4
		run_includes
		log "$1: done"
	} 1000> "$lock"
	;;
stop)
	{
		flock -x 1000
		nft delete table inet fw4
	} 1000> "$lock"
	;;
flush)
	{
		flock -x 1000
		nft list tables | while read -r _ family table; do
			nft delete table "$family" "$table"
		done
	} 1000> "$lock"
	;;
reload-sets)
	flock -x "$lock" true
	log "reload-sets: done"
	;;
*)
	echo "fw4 stub: unknown command ${1:-}" >&2
	exit 1
	;;
esac
