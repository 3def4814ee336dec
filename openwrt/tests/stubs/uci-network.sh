#!/bin/sh
# Stand-in for uci on one package, /etc/config/network, kept in "$UCI_STORE" as the
# lines `uci show` prints (`network.S=type`, `network.S.opt='value'`, in the order
# they were set). What it copies from the real uci (openwrt/uci cli.c): `show CONFIG`
# and `show CONFIG.SECTION` print those lines, a missing section is "Entry not found"
# (exit 1); `set CONFIG.S=TYPE` makes a named section, `set CONFIG.S.O=V` sets an
# option of an existing one (else "Invalid argument", exit 1); `delete CONFIG.S`
# takes the section with its options (exit 1 when missing); -q silences the
# messages. The real uci stages changes until `commit`, which shows them already
# too: the stub writes at once and logs `commit` to $STUB_LOG.
q=''
[ "$1" = -q ] && q=1 && shift
touch "$UCI_STORE"
fail() { [ -n "$q" ] || echo "uci: $1" >&2; exit 1; }
case "$1" in
	show)
		case "$2" in
			*.*) grep -E "^$2(=|\.)" "$UCI_STORE" || fail "Entry not found" ;;
			*) grep -E "^$2\." "$UCI_STORE"; exit 0 ;;
		esac
		;;
	set)
		key=${2%%=*} val=${2#*=}
		case "$key" in
			*.*.*)
				sec=${key%.*}
				grep -q "^$sec=" "$UCI_STORE" || fail "Invalid argument"
				grep -v "^$key=" "$UCI_STORE" > "$UCI_STORE.new"
				echo "$key='$val'" >> "$UCI_STORE.new"
				;;
			*)
				grep -v "^$key=" "$UCI_STORE" > "$UCI_STORE.new"
				echo "$key=$val" >> "$UCI_STORE.new"
				;;
		esac
		mv "$UCI_STORE.new" "$UCI_STORE"
		;;
	delete)
		grep -q "^$2=" "$UCI_STORE" || fail "Entry not found"
		grep -vE "^$2(=|\.)" "$UCI_STORE" > "$UCI_STORE.new"
		mv "$UCI_STORE.new" "$UCI_STORE"
		;;
	commit) echo "uci commit $2" >> "$STUB_LOG" ;;
	*) fail "stub: unknown command $1" ;;
esac
