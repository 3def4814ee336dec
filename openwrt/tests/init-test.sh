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
lib="$here/../ripe-cidr-collector/files/path-check.sh"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
failed=0

# The package keeps config.json in /etc/ripe-cidr-collector and its data in
# /var/lib/ripe-cidr-collector (path-check.sh, which the script sources): point those
# at the temporary directory and allow paths under it (the only changes made to the
# files under test; a case without data_dir must not touch the host's).
sed -e "s|^RIPE_CIDR_CONF_DIR=.*|RIPE_CIDR_CONF_DIR=$tmp/etc|" \
	-e "s|^RIPE_CIDR_DATA_DIR=.*|RIPE_CIDR_DATA_DIR=$tmp/var-lib|" \
	-e "s|^RIPE_CIDR_ROOTS=\"|RIPE_CIDR_ROOTS=\"$tmp |" "$lib" > "$tmp/path-check.sh"
sed -e "s|^PATH_CHECK=.*|PATH_CHECK=$tmp/path-check.sh|" \
	-e "s|^UJAIL=.*|UJAIL=$tmp/ujail|" -e "s|^PASSWD=.*|PASSWD=$tmp/passwd|" "$init" > "$tmp/init"
# Every other absolute path the script names is only read or logged, never written.
# A user for the jail cases (one that exists here, for chown).
echo 'daemon:x:1:1:daemon:/usr/sbin:/usr/sbin/nologin' > "$tmp/passwd"
# chown as OpenWrt's busybox does it (coreutils/chown.c, built without
# CONFIG_DESKTOP): without -h it follows every symbolic link it is given or meets
# in -R's walk (chown(), not lchown(); the walk itself never descends through a
# link); with -h it changes the link itself. GNU chown -R changes links
# themselves, so without this stub a planted link would go unnoticed.
mkdir -p "$tmp/bin"
cat > "$tmp/bin/chown" <<'STUB'
#!/bin/sh
r='' h=''
while :; do
	case "$1" in
	-R) r=1 ;;
	-h) h=-h ;;
	-Rh | -hR) r=1 h=-h ;;
	*) break ;;
	esac
	shift
done
owner=$1
shift
for top in "$@"; do
	if [ -n "$r" ]; then find "$top" -depth; else printf '%s\n' "$top"; fi
done | while IFS= read -r f; do
	command -p chown $h "$owner" "$f" || echo failed
done | grep -q failed && exit 1
exit 0
STUB
chmod +x "$tmp/bin/chown"

# Runs "$@" (init script functions) in a subshell with the UCI variables that are
# set in the caller; the log is left in $tmp/log.
run() {
	: > "$tmp/log"
	(
		STUB_LOG="$tmp/log"
		IPKG_INSTROOT=${IPKG_INSTROOT:-}
		PATH="$tmp/bin:$PATH"
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
		UCI_main_snapshot UCI_main_trigger_interface UCI_main_log_level UCI_main_syslog \
		UCI_main_user UCI_main_nft_file STUB_RUNNING
	rm -f "$tmp/ujail"
	rm -rf "${tmp:?}/ripe-cidr-data" "${tmp:?}/etc" "${tmp:?}/ram" "${tmp:?}/var-lib"
	d="$tmp/ripe-cidr-data"
}
P=/usr/bin/ripe-cidr-collector

reset_uci
run start_service
absent "enabled unset: not started" '^instance'
check "enabled unset: logged" \
	"logger -t ripe-cidr-collector not started: set enabled '1' in /etc/config/ripe-cidr-collector"
# data_dir unset: the default one (here moved into $tmp) gets the files.
if [ -L "$tmp/var-lib/config.json" ]; then
	echo "ok   data_dir unset: the default data directory"
else
	echo "FAIL data_dir unset: no link in the default data directory: $(ls -l "$tmp/var-lib" 2>&1)"
	failed=1
fi

reset_uci
UCI_main_enabled=0 UCI_main_data_dir="$d"
run start_service
absent "enabled 0: not started" '^instance'
# The package's post-install (and every boot) runs `start`: the data directory and
# its link to config.json on flash exist before the first real start, so `asn add`
# edits the file the daemon will read.
if [ -L "$d/config.json" ] && [ "$(readlink "$d/config.json")" = "$tmp/etc/config.json" ]; then
	echo "ok   enabled 0: config.json already linked for the CLI"
else
	echo "FAIL enabled 0: no link: $(ls -l "$d" 2>&1)"
	failed=1
fi

# Its own user, where ujail can keep CAP_NET_ADMIN for it; root otherwise.
reset_uci
UCI_main_enabled=1 UCI_main_data_dir="$d" UCI_main_user=daemon UCI_main_listen=127.0.0.1:8080
printf '#!/bin/sh\n' > "$tmp/ujail" && chmod +x "$tmp/ujail"
run start_service
check "user with ujail: jailed, CAP_NET_ADMIN only" "jail ripe-cidr-collector" "param user daemon" \
	"param group daemon" "param capabilities /usr/share/ripe-cidr-collector/capabilities.json" \
	"param no_new_privs 1"
[ "$(stat -c %U "$d")" = daemon ] || { echo "FAIL user: $d not chowned"; failed=1; }
UCI_main_listen=0.0.0.0:80
run start_service
check "user, port 80: CAP_NET_BIND_SERVICE too" \
	"param capabilities /usr/share/ripe-cidr-collector/capabilities-bind.json"
rm -f "$tmp/ujail"
run start_service
absent "user without ujail: no jail" '^jail\|param user'
check "user without ujail: root, logged" \
	"logger -t ripe-cidr-collector running as root: user 'daemon' needs $tmp/ujail (procd-ujail) and an account"
UCI_main_user=root
run start_service
absent "user root: no jail, no message" '^jail\|running as root'

# Links planted in the data directory (by the daemon's user, or anyone who may write
# there): the service's chown as root changes the links, never their targets.
reset_uci
UCI_main_enabled=1 UCI_main_data_dir="$d" UCI_main_user=daemon
printf '#!/bin/sh\n' > "$tmp/ujail" && chmod +x "$tmp/ujail"
mkdir -p "$d"
: > "$tmp/victim-wal" && : > "$tmp/victim-walk"
ln -s "$tmp/victim-wal" "$d/ripe.db-wal"
ln -s "$tmp/victim-walk" "$d/planted"
run start_service
if [ "$(stat -c %U "$tmp/victim-wal" "$tmp/victim-walk")" = "root
root" ] && [ "$(stat -c %U "$d/ripe.db-wal")" = daemon ]; then
	echo "ok   user: links in the data directory chowned themselves, not their targets"
else
	echo "FAIL user: a link's target chowned: $(ls -l "$tmp/victim-wal" "$tmp/victim-walk" "$d")"
	failed=1
fi
rm -f "$tmp/victim-wal" "$tmp/victim-walk"
# A data directory, or an nft file, that is itself a link: refused before anything.
for bad in "data_dir:$tmp/ripe-cidr-link:target-dir" "nft_file:$tmp/link.nft:target-dir/x.nft"; do
	reset_uci
	opt=${bad%%:*} rest=${bad#*:}
	val=${rest%:*}
	mkdir -p "$tmp/target-dir"
	echo "add table inet ripe_cidr" > "$tmp/target-dir/x.nft"
	ln -s "$tmp/${rest##*:}" "$val"
	UCI_main_enabled=1 UCI_main_data_dir="$d"
	eval "UCI_main_$opt=\$val"
	run start_service
	if grep -q "^logger .* option $opt '$val' refused: a symbolic link" "$tmp/log" \
		&& ! grep -q '^instance' "$tmp/log" && [ ! -e "$tmp/target-dir/config.json" ]; then
		echo "ok   $opt a symbolic link: refused"
	else
		echo "FAIL $opt a symbolic link: $(cat "$tmp/log"; ls -l "$tmp/target-dir")"
		failed=1
	fi
	rm -rf "$val" "$tmp/target-dir"
done

reset_uci
UCI_main_enabled=1 UCI_main_data_dir="$d" UCI_main_syslog=0
run start_service
check "syslog 0: stderr" "command $P --data-dir $d --db $d/ripe.db daemon"

# The shipped defaults (ripe-cidr-collector.config), with the data directory moved.
reset_uci
UCI_main_enabled=1 UCI_main_listen=127.0.0.1:8080 UCI_main_data_dir="$d"
UCI_main_db="$d/ripe.db" UCI_main_snapshot="$tmp/etc/ripe.db.snapshot"
UCI_main_log_level=info
run start_service
check "defaults: command line" "instance collector" \
	"command $P --data-dir $d --db $d/ripe.db --snapshot $tmp/etc/ripe.db.snapshot --syslog daemon --listen 127.0.0.1:8080"
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
	"command $P --data-dir $d --db $d/ripe.db --syslog daemon"

reset_uci
UCI_main_enabled=1 UCI_main_data_dir="$d" UCI_main_db="$tmp/ram/x.db" UCI_main_listen='[::1]:9000'
mkdir -p "$d"
echo '{}' > "$d/config.json"
run start_service
check "db elsewhere, IPv6 listen" "command $P --data-dir $d --db $tmp/ram/x.db --syslog daemon --listen [::1]:9000"
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
	check "log_level ${level%%:*}" "command $P --data-dir $d --db $d/ripe.db --syslog ${level#*:} daemon"
done

reset_uci
UCI_main_enabled=1 UCI_main_data_dir="$d" UCI_main_log_level=loud
run start_service
check "log_level unknown: info, logged" "command $P --data-dir $d --db $d/ripe.db --syslog daemon" \
	"logger -t ripe-cidr-collector unknown log_level 'loud' (info, debug, warn): using info"

# No procd interface trigger: procd (service/trigger.c, trigger_match) compares an
# event with a trigger's type "interface.*.up" only up to its ".*", so netifd's
# interface.down fired it as well as interface.update: a collection at each link loss.
reset_uci
UCI_main_trigger_interface='wan wwan'
run service_triggers
check "triggers: reload" "reload_trigger ripe-cidr-collector"
absent "triggers: no interface trigger (procd matches interface.down too)" '^interface_trigger'

# The hotplug script, sourced in a subshell as hotplug-call does for netifd's iface
# events (ACTION ifup, ifdown, ifupdate, iflink; INTERFACE the UCI name), with a stub
# uci (the trigger_interface list) and the init script's collect logged.
sed "s|/etc/init.d/ripe-cidr-collector collect|echo collect >> $tmp/log|" \
	"$here/../ripe-cidr-collector/files/hotplug-iface.sh" > "$tmp/hotplug"
printf '#!/bin/sh\n[ "$*" = "-q get ripe-cidr-collector.main.trigger_interface" ] && echo wan wwan\n' \
	> "$tmp/bin/uci"
chmod +x "$tmp/bin/uci"
for event in ifup:wan:1 ifup:wwan:1 ifdown:wan: ifupdate:wan: iflink:wan: ifup:lan:; do
	: > "$tmp/log"
	# shellcheck disable=SC2016 # $0 is the sourcing shell's
	env ACTION="${event%%:*}" INTERFACE="$(echo "$event" | cut -d: -f2)" \
		PATH="$tmp/bin:/usr/sbin:/usr/bin:/sbin:/bin" sh -c '. "$0"' "$tmp/hotplug"
	want=
	case "$event" in *:1) want=collect ;; esac
	if [ "$(cat "$tmp/log")" = "$want" ]; then
		echo "ok   hotplug $event"
	else
		echo "FAIL hotplug $event: $(cat "$tmp/log")"
		failed=1
	fi
done

reset_uci
run collect
check "collect: SIGUSR1 to the instance" "signal ripe-cidr-collector collector USR1"

reset_uci
STUB_RUNNING=0
run collect 2> "$tmp/err"
absent "collect, daemon stopped: no signal" '^signal'
if grep -q "is not running" "$tmp/err"; then
	echo "ok   collect, daemon stopped: says so"
else
	echo "FAIL collect, daemon stopped: said $(cat "$tmp/err")"
	failed=1
fi

reset_uci
UCI_main_enabled=1 UCI_main_data_dir="$d"
IPKG_INSTROOT=/build/root run start_service collect
absent "IPKG_INSTROOT: nothing started or signalled" '^instance\|^signal'
[ -e "$d" ] && { echo "FAIL IPKG_INSTROOT: created $d"; failed=1; }

# Path options a UCI writer (the LuCI app's grant, not root) could turn against the
# system: refused with a logged error, nothing started, made or given away.
for bad in "data_dir:/etc:only under" "data_dir:/tmp:only under" \
	"data_dir:$tmp/x:its name must contain ripe-cidr" "db:/etc/shadow:only under" \
	"db:$tmp/passwd:must end in .db" "snapshot:/etc/passwd:only under" \
	"snapshot:$tmp/passwd.db:not a database or snapshot of ours" \
	"db:$tmp/ripe-cidr-data/../x.db:use an absolute path" "nft_file:/etc/passwd:only under" \
	"nft_file:$tmp/x.sh:must end in .nft" "data_dir:$tmp/a ripe-cidr:use an absolute path"; do
	reset_uci
	opt=${bad%%:*} rest=${bad#*:}
	val=${rest%:*} why=${rest##*:}
	UCI_main_enabled=1 UCI_main_data_dir="$d"
	eval "UCI_main_$opt=\$val"
	cp "$tmp/passwd" "$tmp/passwd.db"
	run start_service
	absent "$opt=$val: not started" '^instance'
	if grep -q "^logger -t ripe-cidr-collector -p daemon.err not started: option $opt '$val' refused: .*$why" "$tmp/log" \
		&& [ ! -e "$d" ] && [ "$(head -c 6 "$tmp/passwd.db")" = daemon ]; then
		echo "ok   $opt=$val: refused, logged, nothing made"
	else
		echo "FAIL $opt=$val: $(cat "$tmp/log"; ls -d "$d" 2>&1)"
		failed=1
	fi
done
# What the package ships and documents is accepted: its own directories, RAM, mounted
# storage, an existing snapshot and database of ours, the own-chain recipe's file.
reset_uci
mkdir -p "$d"
printf 'SQLite format 3\000rest' > "$d/ripe.db"
printf 'RIPESNAP rest' > "$tmp/ripe.snapshot"
UCI_main_enabled=1 UCI_main_data_dir="$d" UCI_main_snapshot="$tmp/ripe.snapshot"
UCI_main_nft_file="/etc/ripe-cidr-mark.nft $tmp/ripe-cidr.nft"
run start_service
check "our own files and the recipe's nft file: started" "instance collector"

[ "$failed" = 0 ] && echo "init-test: all passed"
exit "$failed"
