#!/bin/sh
# Stand-in for `uci -q get CONFIG.SECTION.OPTION`: the value is the variable
# UCI_SECTION_OPTION (e.g. UCI_main_enabled), lists space-separated; unset is "not
# found" (exit 1), as with the real uci. Other uci commands are logged to $STUB_LOG.
[ "$1" = -q ] && shift
if [ "$1" = get ]; then
	key=${2#*.}
	var="UCI_$(echo "$key" | tr . _)"
	eval "val=\${$var-__unset__}"
	# shellcheck disable=SC2154 # set by the eval above
	[ "$val" = __unset__ ] && exit 1
	echo "$val"
	exit 0
fi
echo "uci $*" >> "$STUB_LOG"
