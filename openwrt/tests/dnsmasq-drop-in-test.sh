#!/bin/sh
# shellcheck shell=dash
# Runs the dnsmasq output's command (files/dnsmasq-drop-in.sh) off-router against a
# stub `uci`, `logger`, dnsmasq binary (its --version) and dnsmasq init script, and
# checks where the drop-in goes and when dnsmasq is restarted: copied into every
# instance's conf-dir with one restart where dnsmasq has nftset; not installed (an old
# copy removed) and a failure naming dnsmasq-full where it has not.
# Usage: openwrt/tests/dnsmasq-drop-in-test.sh (any POSIX sh; writes only to a
# temporary directory). Prints one line per case; exits 1 on a failure.
set -u
here=$(cd "$(dirname "$0")" && pwd)
script="$here/../ripe-cidr-collector/files/dnsmasq-drop-in.sh"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
failed=0
mkdir -p "$tmp/path" "$tmp/etc"

cat > "$tmp/path/uci" <<'STUB'
#!/bin/sh
case "$3" in
	ripe-cidr-collector.main.dnsmasq_confdir) [ -n "${STUB_OVERRIDE:-}" ] && echo "$STUB_OVERRIDE" ;;
	'dhcp.@dnsmasq[0].confdir') [ -n "${STUB_UCI_CONFDIR:-}" ] && echo "$STUB_UCI_CONFDIR" ;;
	*) false ;;
esac
STUB
cat > "$tmp/path/logger" <<'STUB'
#!/bin/sh
echo "logger $*" >> "$STUB_LOG"
STUB
# --version prints $STUB_OPTIONS; --test fails on a file with "bad" in it.
cat > "$tmp/dnsmasq" <<'STUB'
#!/bin/sh
if [ "$1" = --test ]; then
	if grep -q bad "${2#--conf-file=}"; then
		echo "dnsmasq: bad option at line 2 of ${2#--conf-file=}" >&2
		exit 1
	fi
	echo "dnsmasq: syntax check OK." >&2
	exit 0
fi
echo "Dnsmasq version 2.90  Copyright (c) 2000-2024 Simon Kelley"
echo "Compile time options: IPv6 GNU-getopt no-DBus UBus no-i18n no-IDN DHCP DHCPv6 no-Lua TFTP $STUB_OPTIONS auth no-cryptohash no-DNSSEC no-ID loop-detect inotify dumpfile"
STUB
cat > "$tmp/init" <<'STUB'
#!/bin/sh
echo "init $*" >> "$STUB_LOG"
STUB
chmod +x "$tmp/path/uci" "$tmp/path/logger" "$tmp/dnsmasq" "$tmp/init"

printf '# header\nnftset=/video.example/4#inet#ripe_cidr#ripe_dns_v4\n' > "$tmp/nftset.conf"
printf '# header\n' > "$tmp/empty.conf"
printf '# header\nnftset=/bad.example/4#inet#ripe_cidr#ripe_dns_v4\n' > "$tmp/bad.conf"

# run OPTIONS FILE: runs the script; its exit code lands in $rc, its log in $tmp/log.
run() {
	: > "$tmp/log"
	STUB_LOG="$tmp/log" STUB_OPTIONS="$1" PATH="$tmp/path:$PATH" RIPE_CIDR_UID="${RIPE_CIDR_UID:-0}" \
		RIPE_CIDR_DNSMASQ="$tmp/dnsmasq" RIPE_CIDR_DNSMASQ_INIT="$tmp/init" \
		RIPE_CIDR_VAR_ETC="$tmp/etc" sh "$script" "$2" 2> "$tmp/err"
	rc=$?
	cat "$tmp/err" >> "$tmp/log"
}

check() {
	if [ "$2" = 0 ]; then
		echo "ok   $1"
	else
		echo "FAIL $1"
		sed 's/^/     /' "$tmp/log"
		failed=1
	fi
}

restarts() { grep -c '^init restart$' "$tmp/log"; }

full="conntrack ipset nftset"
default="no-conntrack no-ipset no-nftset"

# Two running instances, one conf-dir with exclusions after a comma.
echo "conf-dir=$tmp/d1" > "$tmp/etc/dnsmasq.conf.cfg01411c"
echo "conf-dir=$tmp/d2,*.bak" > "$tmp/etc/dnsmasq.conf.guest"
run "$full" "$tmp/nftset.conf"
cmp -s "$tmp/nftset.conf" "$tmp/d1/ripe-cidr-collector.conf" \
	&& cmp -s "$tmp/nftset.conf" "$tmp/d2/ripe-cidr-collector.conf" \
	&& [ "$rc" = 0 ] && [ "$(restarts)" = 1 ] && [ ! -e "$tmp/d1/.ripe-cidr-collector.conf.new" ]
check "dnsmasq-full: copied into each instance's conf-dir, one restart" $?

run "$default" "$tmp/nftset.conf"
[ "$rc" = 1 ] && [ ! -e "$tmp/d1/ripe-cidr-collector.conf" ] \
	&& [ ! -e "$tmp/d2/ripe-cidr-collector.conf" ] && [ "$(restarts)" = 1 ] \
	&& grep -q 'lacks nftset support.*dnsmasq-full' "$tmp/log" && grep -q '^logger ' "$tmp/log"
check "dnsmasq without nftset: old copies removed, restarted, fails naming dnsmasq-full" $?

run "$default" "$tmp/nftset.conf"
[ "$rc" = 1 ] && [ "$(restarts)" = 0 ]
check "dnsmasq without nftset and nothing installed: no restart" $?

run "$default" "$tmp/empty.conf"
[ "$rc" = 0 ] && [ -e "$tmp/d1/ripe-cidr-collector.conf" ] && [ "$(restarts)" = 1 ]
check "no names: the file needs nothing and is installed anywhere" $?

run "$full" "$tmp/nftset.conf"
run "$full" "$tmp/bad.conf"
[ "$rc" = 1 ] && [ ! -e "$tmp/d1/ripe-cidr-collector.conf" ] && [ "$(restarts)" = 1 ] \
	&& grep -q 'dnsmasq --test refuses .*bad option at line 2' "$tmp/log"
check "a file dnsmasq --test refuses: not installed, old copy removed" $?

rm -f "$tmp/etc/"dnsmasq.conf.*
STUB_UCI_CONFDIR="$tmp/uci.d" run "$full" "$tmp/nftset.conf"
[ "$rc" = 0 ] && [ -e "$tmp/uci.d/ripe-cidr-collector.conf" ]
check "no running instance: uci's dhcp confdir" $?

STUB_OVERRIDE="$tmp/mine.d" run "$full" "$tmp/nftset.conf"
[ "$rc" = 0 ] && [ -e "$tmp/mine.d/ripe-cidr-collector.conf" ]
check "ripe-cidr-collector.main.dnsmasq_confdir wins" $?

RIPE_CIDR_UID=3691 run "$full" "$tmp/nftset.conf"
[ "$rc" = 1 ] && grep -q "needs root: set option user 'root'" "$tmp/log" && [ "$(restarts)" = 0 ]
check "not root (the daemon's own user): fails saying so" $?

if [ "$failed" = 0 ]; then
	echo "dnsmasq-drop-in-test: all passed"
fi
exit "$failed"
