#!/bin/sh
# shellcheck shell=dash
# shellcheck disable=SC2034,SC2317 # stubs and variables are used by the sourced include
# Runs the fw4 include (files/fw4-include.sh) off-router against stub `uci`, `nft`,
# `logger` and a stub binary, and checks what it runs: `render` over netlink when the
# service is enabled, the `nft -f` fallback when it is not or when render fails.
# Usage: openwrt/tests/fw4-include-test.sh (any POSIX sh; writes only to a temporary
# directory). Prints one line per case; exits 1 on a failure.
set -u
here=$(cd "$(dirname "$0")" && pwd)
include="$here/../ripe-cidr-collector/files/fw4-include.sh"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
failed=0

# The stub binary records its arguments and exits with $STUB_RENDER_EXIT.
cat > "$tmp/bin" <<'STUB'
#!/bin/sh
echo "bin $*" >> "$STUB_LOG"
echo "render said this"
exit "${STUB_RENDER_EXIT:-0}"
STUB
chmod +x "$tmp/bin"
echo "add table inet ripe_cidr" > "$tmp/list.nft"

# run ENABLED RENDER_EXIT: sources the include as fw4 does, with stubs.
run() {
	: > "$tmp/log"
	(
		STUB_LOG="$tmp/log"
		STUB_RENDER_EXIT=$2
		RIPE_CIDR_BIN="$tmp/bin"
		export STUB_LOG STUB_RENDER_EXIT
		enabled=$1
		uci() {
			case "$3" in
			ripe-cidr-collector.main.enabled) echo "$enabled" ;;
			ripe-cidr-collector.main.data_dir) echo /var/lib/rcc ;;
			ripe-cidr-collector.main.db) echo /tmp/rcc/ripe.db ;;
			ripe-cidr-collector.main.snapshot) echo /etc/rcc/snap.db ;;
			ripe-cidr-collector.main.nft_file) echo "$tmp/list.nft" ;;
			*) return 1 ;;
			esac
		}
		nft() { echo "nft $*" >> "$STUB_LOG"; }
		logger() { echo "logger $*" >> "$STUB_LOG"; }
		# shellcheck source=/dev/null
		. "$include"
	)
}

# check NAME PATTERN...: each pattern (grep -E) matches a line of the log; a pattern
# starting with ! must match none.
check() {
	name=$1
	shift
	ok=1
	for p in "$@"; do
		case "$p" in
		!*) grep -qE -- "${p#!}" "$tmp/log" && ok=0 ;;
		*) grep -qE -- "$p" "$tmp/log" || ok=0 ;;
		esac
	done
	if [ "$ok" = 1 ]; then
		echo "ok   $name"
	else
		echo "FAIL $name"
		sed 's/^/     /' "$tmp/log"
		failed=1
	fi
}

run 1 0
check "enabled: render over netlink, no nft -f" \
	"^bin -q --data-dir /var/lib/rcc --db /tmp/rcc/ripe.db --snapshot /etc/rcc/snap.db render$" \
	"^logger -t ripe-cidr-collector firewall include: render said this$" \
	"!^nft "
run 1 1
check "render failed: the rendered script is loaded" "^bin .* render$" "^nft -f $tmp/list.nft$"
run 0 0
check "disabled: only the rendered script" "!^bin " "^nft -f $tmp/list.nft$"

if [ "$failed" = 0 ]; then
	echo "fw4-include-test: all passed"
else
	exit 1
fi
