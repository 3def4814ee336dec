#!/bin/sh
# shellcheck shell=dash
# shellcheck disable=SC2034 # the UCI_* variables are read by the uci stub
# Runs the fw4 include (files/fw4-include.sh) the way firewall4 runs it, off-router:
# the stub fw4 (stubs/fw4.sh) holds its lock while the include runs and kills it after
# FW4_INCLUDE_TIMEOUT seconds, as fw4 does after 30; stub nft, uci and logger
# (stubs/) and a stub ripe-cidr-collector record what is run.
# Usage: openwrt/tests/fw4-include-test.sh (needs bash and flock; writes only to a
# temporary directory). Prints one line per case; exits 1 on a failure.
set -u
here=$(cd "$(dirname "$0")" && pwd)
include="$here/../ripe-cidr-collector/files/fw4-include.sh"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
failed=0

mkdir -p "$tmp/bin"
for t in fw4 nft uci logger; do ln -s "$here/stubs/$t.sh" "$tmp/bin/$t"; done
PATH="$tmp/bin:$PATH"
STUB_LOG="$tmp/log"
NFT_STATE="$tmp/nft"
FW4_LOCK="$tmp/fw4.lock"
FW4_INCLUDES="$include"
RIPE_CIDR_BIN="$tmp/ripe-cidr-collector"
# The package's path rules (path-check.sh), with paths here allowed besides /tmp,
# /var, ... (TMPDIR may be elsewhere): the only change made to the files under test.
RIPE_CIDR_LIB="$tmp/path-check.sh"
sed "s|^RIPE_CIDR_ROOTS=\"|RIPE_CIDR_ROOTS=\"$tmp |" \
	"$here/../ripe-cidr-collector/files/path-check.sh" > "$RIPE_CIDR_LIB"
export PATH STUB_LOG NFT_STATE FW4_LOCK FW4_INCLUDES RIPE_CIDR_BIN RIPE_CIDR_LIB

# The stub binary: `render --load-only` loads table inet ripe_cidr after a second (a
# large list takes a moment; the firewall start must not wait for it); a plain
# `render` also runs the outputs' command, as the real one does. Exit $STUB_RENDER_EXIT.
cat > "$RIPE_CIDR_BIN" <<'STUB'
#!/bin/sh
echo "bin $*" >> "$STUB_LOG"
sleep 1
case "$*" in
*"render --load-only") printf 'ripe_v4\nripe_v6\n' > "$NFT_STATE/inet.ripe_cidr" ;;
*render) fw4 -q reload-sets ;;
esac
echo "bin done" >> "$STUB_LOG"
exit "${STUB_RENDER_EXIT:-0}"
STUB
chmod +x "$RIPE_CIDR_BIN"
echo "add table inet ripe_cidr" > "$tmp/list.nft"

# The shipped settings, the database in place (the service ran since boot).
d="$tmp/ripe-cidr-data"
setup() {
	UCI_main_enabled=1 UCI_main_data_dir="$d" UCI_main_db="$d/ripe.db"
	UCI_main_nft_file="$tmp/list.nft"
	export UCI_main_enabled UCI_main_data_dir UCI_main_db UCI_main_nft_file
	mkdir -p "$d"
	: > "$d/ripe.db"
	rm -rf "$NFT_STATE"
	mkdir -p "$NFT_STATE"
	STUB_RENDER_EXIT=0
	export STUB_RENDER_EXIT
}

# fw4 ARGS, then waits (at most 20 s) for the include's background job, and anything
# it started, to end: they inherit fd 8, whose open file holds a shared flock, so an
# exclusive flock of the same file is granted only once the last of them has exited
# (a fixed sleep for the job's last `nft -f` failed under load).
fw4_then_wait() {
	: > "$STUB_LOG"
	exec 8> "$tmp/busy"
	flock -s 8
	fw4 "$@" 2> "$tmp/fw4.err"
	exec 8>&-
	flock -w 20 "$tmp/busy" true \
		|| echo "fw4_then_wait: the include's background job still runs after 20 s"
}

# check NAME PATTERN...: each pattern (grep -E) matches a line of the log; a pattern
# starting with ! must match none.
check() {
	name=$1
	shift
	ok=1
	for p in "$@"; do
		case "$p" in
		!*) grep -qE -- "${p#!}" "$STUB_LOG" && ok=0 ;;
		*) grep -qE -- "$p" "$STUB_LOG" || ok=0 ;;
		esac
	done
	if [ "$ok" = 1 ]; then
		echo "ok   $name"
	else
		echo "FAIL $name"
		sed 's/^/     /' "$STUB_LOG"
		failed=1
	fi
}

# before NAME A B: the first line matching A comes before the first matching B.
before() {
	a=$(grep -nE -- "$2" "$STUB_LOG" | head -1 | cut -d: -f1)
	b=$(grep -nE -- "$3" "$STUB_LOG" | head -1 | cut -d: -f1)
	if [ -n "$a" ] && [ -n "$b" ] && [ "$a" -lt "$b" ]; then
		echo "ok   $1"
	else
		echo "FAIL $1: '$2' (line ${a:-none}) not before '$3' (line ${b:-none})"
		sed 's/^/     /' "$STUB_LOG"
		failed=1
	fi
}

# Boot: the firewall (START=19) starts before our service has made the database.
setup
rm -f "$d/ripe.db"
fw4_then_wait start
check "boot, no database yet: nothing run, nothing logged" \
	"^fw4 start: done$" "!^bin " "!^logger " "!^nft -f" "!failed"

# fw4 flush deleted our table: loaded again in the background, netlink loads only.
setup
fw4_then_wait start
check "table missing: render --load-only, then the nft files" \
	"^bin --syslog --data-dir $d --db $d/ripe.db render --load-only$" \
	"^nft -f $tmp/list.nft$" "!reload-sets" "!failed" "!^logger "
before "table missing: the firewall start does not wait for the load" \
	"^fw4 start: done$" "^bin done$"
[ -e "$NFT_STATE/inet.ripe_cidr" ] || { echo "FAIL table missing: not loaded"; failed=1; }

# fw4 reload/restart: our table is still there with its sets: nothing to do.
fw4_then_wait reload
check "reload, table loaded: nothing run" "^nft -t list sets inet$" "!^bin " "!^nft -f" \
	"^fw4 reload: done$"
fw4_then_wait restart
check "restart, table loaded: nothing run" "!^bin " "!^nft -f" "^fw4 restart: done$"

# A table without sets (made by someone else, or half-deleted) counts as missing.
setup
touch "$NFT_STATE/inet.ripe_cidr"
fw4_then_wait start
check "table without sets: loaded again" "^bin .*render --load-only$"

# Not enabled: the nft files only.
setup
UCI_main_enabled=0
fw4_then_wait start
check "disabled: only the nft files" "!^bin " "^nft -f $tmp/list.nft$"

# An nft_file the init script would refuse (UCI written by a non-root LuCI user) is
# never run by root's `nft -f`.
setup
cp /etc/passwd "$tmp/passwd"
UCI_main_nft_file="/etc/passwd $tmp/passwd $tmp/../x.nft $tmp/list.nft"
fw4_then_wait start
check "nft_file outside the allowed places: refused, logged" "!^nft -f /etc/passwd" \
	"!^nft -f $tmp/passwd" "!^nft -f $tmp/\.\./x.nft" "^nft -f $tmp/list.nft$" \
	"^logger -t ripe-cidr-collector -p daemon.err firewall include: option nft_file '/etc/passwd' refused: only under "

# A data directory or database the init script would refuse: the real binary, run
# here as root, moves a file that is no database aside (db=/etc/shadow would become
# /etc/shadow.corrupt-TIME), so it is not run; the nft files still are, and the
# include ends well, as fw4 needs (a failure is logged as "Include ... failed").
for bad in "db:/etc/passwd:only under" "db:$d/passwd.db:not a database or snapshot of ours" \
	"data_dir:/etc:only under"; do
	setup
	opt=${bad%%:*} rest=${bad#*:}
	val=${rest%:*} why=${rest##*:}
	cp /etc/passwd "$d/passwd.db"
	eval "UCI_main_$opt=\$val"
	fw4_then_wait start
	check "$opt=$val: the binary not run, logged, the nft files loaded" "!^bin " "!failed with exit code" \
		"^logger -t ripe-cidr-collector -p daemon.err firewall include: option $opt '$val' refused: $why" \
		"^nft -f $tmp/list.nft$"
done

# A failing load is logged as an error.
setup
STUB_RENDER_EXIT=1
fw4_then_wait start
check "render failed: logged" "^logger -t ripe-cidr-collector -p daemon.err firewall include: render --load-only failed$"

# The lock, as fw4 holds it: an include that waited for it (`fw4 reload-sets`, which an
# output's command may run; what the include did before through `render`) hangs until
# fw4 kills it. Here after 2 s instead of 30.
setup
printf '#!/bin/sh\nfw4 -q reload-sets\n' > "$tmp/deadlock.sh"
FW4_INCLUDES="$tmp/deadlock.sh" FW4_INCLUDE_TIMEOUT=2 fw4_then_wait start
check "the stub fw4 holds its lock during includes and kills them" \
	"^fw4 Include '$tmp/deadlock.sh' failed with exit code -9$"
before "  ...the reload-sets ran only after the start" "^fw4 start: done$" "^fw4 reload-sets: done$"

if [ "$failed" = 0 ]; then
	echo "fw4-include-test: all passed"
else
	exit 1
fi
