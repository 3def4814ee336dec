#!/bin/sh
# shellcheck shell=dash source-path=SCRIPTDIR
# shellcheck disable=SC2034 # the UCI_* variables are read by stubs.sh through eval
# Runs the procd init script off-router against stub rc.common/procd/UCI functions
# (stubs.sh) and checks the command line and the triggers each UCI setting produces.
# Usage: openwrt/tests/init-test.sh (any POSIX sh; no root, nothing outside a
# temporary directory is written). Prints one line per case; exits 1 on a failure.
set -u
here=$(cd "$(dirname "$0")" && pwd)
init="$here/../ripe-cidr-collector/files/ripe-cidr-collector.init"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
failed=0

# The script keeps config.json in /etc/ripe-cidr-collector: point that at the
# temporary directory (the only change made to the script under test).
sed "s|^CONF_DIR=.*|CONF_DIR=$tmp/etc|" "$init" > "$tmp/init"

# Runs "$@" (init script functions) in a subshell with the UCI variables that are
# set in the caller; the log is left in $tmp/log.
run() {
	: > "$tmp/log"
	(
		STUB_LOG="$tmp/log"
		IPKG_INSTROOT=${IPKG_INSTROOT:-}
		# shellcheck source=stubs.sh
		. "$here/stubs.sh"
		# shellcheck source=/dev/null
		. "$tmp/init"
		for f in "$@"; do "$f"; done
	)
}

# check NAME EXPECTED-LINE...: every expected line is in the log, in this order.
check() {
	local name="$1" line n=0
	shift
	for line in "$@"; do
		n=$((n + 1))
		if ! grep -qxF -- "$line" "$tmp/log"; then
			echo "FAIL $name: missing line $n: $line"
			echo "--- log:"
			cat "$tmp/log"
			failed=1
			return
		fi
	done
	echo "ok   $name"
}

# absent NAME PATTERN: no log line matches the (grep) pattern.
absent() {
	if grep -q -- "$2" "$tmp/log"; then
		echo "FAIL $1: unexpected $(grep -- "$2" "$tmp/log" | head -1)"
		failed=1
	else
		echo "ok   $1"
	fi
}

reset_uci() {
	unset UCI_main_enabled UCI_main_listen UCI_main_data_dir UCI_main_db \
		UCI_main_snapshot UCI_main_trigger_interface UCI_main_log_level
	rm -rf "${tmp:?}/data" "${tmp:?}/etc" "${tmp:?}/ram"
	d="$tmp/data"
}
P=/usr/bin/ripe-cidr-collector

reset_uci
run start_service
absent "enabled unset: not started" '^instance'
check "enabled unset: logged" \
	"logger -t ripe-cidr-collector not started: set enabled '1' in /etc/config/ripe-cidr-collector"

reset_uci
UCI_main_enabled=0
run start_service
absent "enabled 0: not started" '^instance'

# The shipped defaults (ripe-cidr-collector.config), with the data directory moved.
reset_uci
UCI_main_enabled=1 UCI_main_listen=127.0.0.1:8080 UCI_main_data_dir="$d"
UCI_main_db="$d/ripe.db" UCI_main_snapshot="$tmp/etc/ripe.db.snapshot"
UCI_main_log_level=info
run start_service
check "defaults: command line" "instance collector" \
	"command $P --data-dir $d --db $d/ripe.db --snapshot $tmp/etc/ripe.db.snapshot daemon --listen 127.0.0.1:8080"
check "defaults: respawn, logs, stop timeout" "param respawn 3600 5 5" \
	"param stdout 1" "param stderr 1" "param term_timeout 30"
if [ -L "$d/config.json" ] && [ "$(readlink "$d/config.json")" = "$tmp/etc/config.json" ] \
	&& [ -f "$tmp/etc/config.json" ] && [ ! -L "$d/ripe.db" ]; then
	echo "ok   defaults: config.json linked to flash, database in the data directory"
else
	echo "FAIL defaults: files: $(ls -l "$d" "$tmp/etc")"
	failed=1
fi

# An earlier version linked DATA_DIR/ripe.db to the database on flash.
reset_uci
UCI_main_enabled=1 UCI_main_data_dir="$d"
mkdir -p "$d"
ln -s /nonexistent/ripe.db "$d/ripe.db"
run start_service
if [ ! -L "$d/ripe.db" ] && [ ! -e "$d/ripe.db" ]; then
	echo "ok   old link to a flash database removed"
else
	echo "FAIL old link to a flash database: $(ls -l "$d")"
	failed=1
fi

reset_uci
UCI_main_enabled=yes UCI_main_data_dir="$d"
run start_service
check "listen empty, snapshot empty, db default" \
	"command $P --data-dir $d --db $d/ripe.db daemon"

reset_uci
UCI_main_enabled=1 UCI_main_data_dir="$d" UCI_main_db="$tmp/ram/x.db" UCI_main_listen='[::1]:9000'
mkdir -p "$d"
echo '{}' > "$d/config.json"
run start_service
check "db elsewhere, IPv6 listen" "command $P --data-dir $d --db $tmp/ram/x.db daemon --listen [::1]:9000"
if [ "$(readlink "$d/ripe.db")" = "$tmp/ram/x.db" ] && [ -d "$tmp/ram" ] \
	&& [ -f "$(echo "$d"/config.json.local-*)" ] && [ -L "$d/config.json" ]; then
	echo "ok   db elsewhere: linked from the data directory; a local config.json kept aside"
else
	echo "FAIL db elsewhere: files: $(ls -l "$d")"
	failed=1
fi

for level in debug:-v warn:-q; do
	reset_uci
	UCI_main_enabled=1 UCI_main_data_dir="$d" UCI_main_log_level=${level%%:*}
	run start_service
	check "log_level ${level%%:*}" "command $P --data-dir $d --db $d/ripe.db ${level#*:} daemon"
done

reset_uci
UCI_main_enabled=1 UCI_main_data_dir="$d" UCI_main_log_level=loud
run start_service
check "log_level unknown: info, logged" "command $P --data-dir $d --db $d/ripe.db daemon" \
	"logger -t ripe-cidr-collector unknown log_level 'loud' (info, debug, warn): using info"

reset_uci
UCI_main_trigger_interface='wan wwan'
run service_triggers
check "triggers: reload and one per interface" "reload_trigger ripe-cidr-collector" \
	"interface_trigger interface.*.up wan /etc/init.d/ripe-cidr-collector collect" \
	"interface_trigger interface.*.up wwan /etc/init.d/ripe-cidr-collector collect"

reset_uci
run service_triggers
check "no interfaces: reload trigger only" "reload_trigger ripe-cidr-collector"
absent "no interfaces: no interface trigger" '^interface_trigger'

reset_uci
run collect
check "collect: SIGUSR1 to the instance" "signal ripe-cidr-collector collector USR1"

reset_uci
UCI_main_enabled=1 UCI_main_data_dir="$d"
IPKG_INSTROOT=/build/root run start_service collect
absent "IPKG_INSTROOT: nothing started or signalled" '^instance\|^signal'
[ -e "$d" ] && { echo "FAIL IPKG_INSTROOT: created $d"; failed=1; }

[ "$failed" = 0 ] && echo "init-test: all passed"
exit "$failed"
