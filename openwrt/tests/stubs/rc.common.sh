#!/bin/sh
# shellcheck shell=dash source-path=SCRIPTDIR
# Stand-in for /etc/rc.common with procd, running one init script for real against a
# model of procd's state (openwrt/openwrt package/base-files/files/etc/rc.common and
# package/system/procd/files/procd.sh; procd's service/service.c and instance.c):
# * start: start_service's instances go to procd (`ubus call service set`). An
#   instance whose configuration (command line, parameters) is unchanged keeps
#   running as it is, even with a new binary under it: procd compares the
#   configuration, never the program's file (instance_config_changed). A changed one
#   is restarted, one no longer named is stopped. The service stays registered
#   without instances (disabled in UCI).
# * stop [INSTANCE]: `ubus call service delete` of the service, or of one instance;
#   either missing: "Command failed: Not found" on stderr and exit 4, as ubus says.
# * restart: stop, then start (rc.common's). running [INSTANCE]: exit 0 when it runs.
# * enable, disable: logged.
# State: $STUB_ROOT/var/run/procd-NAME, a line per running instance: its name, the
# sha256 of its program's file when it was started (what /proc/PID/exe is) and its
# configuration. The script's paths (PROG=/..., PATH_CHECK=/...) and those of the
# path-check.sh it sources (RIPE_CIDR_CONF_DIR=/...) are moved under $STUB_ROOT, the
# router's /. UCI comes from UCI_* variables (stubs.sh). Each step is
# logged to $STUB_LOG. Usage: sh rc.common.sh INITSCRIPT ACTION [INSTANCE]
set -u
here=$(cd "$(dirname "$0")" && pwd)
initscript=$1 action=$2 inst=${3:-}
IPKG_INSTROOT=${IPKG_INSTROOT:-}
name=$(basename "$initscript")
state="$STUB_ROOT/var/run/procd-$name"
mkdir -p "$STUB_ROOT/var/run"
# shellcheck source=../stubs.sh
. "$here/../stubs.sh"
log() { echo "procd: $*" >> "$STUB_LOG"; }

# The instances start_service describes, a line each: NAME CONFIGURATION.
new=
procd_open_instance() { inst_name=$1 cfg=; }
procd_set_param() { cfg="$cfg|$*"; }
procd_append_param() { cfg="$cfg $*"; }
procd_close_instance() { new="$new$inst_name $cfg
"; }
procd_add_jail() { cfg="$cfg|jail $*"; }
sed "s|^\([A-Z_]*\)=/|\1=$STUB_ROOT/|" "$initscript" > "$state.script"
# The package's path rules (path-check.sh, which the script sources) name its own
# directories too: moved the same way, in a copy the script sources instead.
lib=$(sed -n 's|^PATH_CHECK=||p' "$state.script")
if [ -n "$lib" ]; then
	sed "s|^\([A-Z_]*\)=/|\1=$STUB_ROOT/|" "$lib" > "$state.path-check.sh" || exit 1
	sed "s|^PATH_CHECK=.*|PATH_CHECK=$state.path-check.sh|" "$state.script" > "$state.script.new"
	mv "$state.script.new" "$state.script"
fi
# shellcheck source=/dev/null
. "$state.script"

not_found() {
	echo "Command failed: Not found" >&2
	exit 4
}

do_start() {
	local i c old prog sum
	new=
	start_service
	: > "$state.new"
	printf '%s' "$new" | while read -r i c; do
		old=$(grep "^$i " "$state" 2>/dev/null)
		if [ -n "$old" ] && [ "${old#* * }" = "$c" ]; then
			echo "$old" >> "$state.new"
			log "$name.$i unchanged: kept running ${old#* }"
			continue
		fi
		prog=$(echo "$c" | sed -n 's/.*|command \([^ |]*\).*/\1/p')
		sum=$(sha256sum < "$prog" | cut -d' ' -f1)
		echo "$i $sum $c" >> "$state.new"
		log "$name.$i started $sum"
	done
	mv "$state.new" "$state"
}

do_stop() {
	[ -e "$state" ] || not_found
	if [ -z "$inst" ]; then
		rm -f "$state"
		log "$name stopped"
	elif grep -q "^$inst " "$state"; then
		grep -v "^$inst " "$state" > "$state.new"
		mv "$state.new" "$state"
		log "$name.$inst stopped"
	else
		not_found
	fi
}

case "$action" in
start) do_start ;;
stop) do_stop ;;
restart)
	(do_stop)
	do_start
	;;
running) [ -e "$state" ] && grep -q "^${inst:-[^ ]*} " "$state" ;;
enable | disable) log "$name $action" ;;
*)
	echo "rc.common stub: $action not modelled" >&2
	exit 1
	;;
esac
