# shellcheck shell=sh
# Stand-in for OpenWrt's /lib/functions.sh as the package scripts use it: the logic
# of default_postinst, default_prerm and add_group_and_user of openwrt/openwrt
# package/base-files/files/lib/functions.sh (which file lists and control files they
# read, from `pkgname` or, without it, the script's name), with every action logged
# to $STUB_LOG; with $STUB_RC_COMMON (stubs/rc.common.sh) the init scripts' actions are
# also run against its procd model. The router's / is $STUB_ROOT.
# shellcheck disable=SC2154,SC2013 # pkgname comes from the scripts; loops as the original

stub_filelist() {
	[ -z "$pkgname" ] && pkgname="$(basename "${1%.*}")"
	filelist="$STUB_ROOT/usr/lib/opkg/info/${pkgname}.list"
	[ -f "$STUB_ROOT/lib/apk/packages/${pkgname}.list" ] \
		&& filelist="$STUB_ROOT/lib/apk/packages/${pkgname}.list"
	echo "filelist ${filelist#"$STUB_ROOT"}" >> "$STUB_LOG"
}

add_group_and_user() {
	[ -z "$pkgname" ] && pkgname="$(basename "${1%.*}")"
	rusers="$(sed -ne 's/^Require-User: *//p' "$STUB_ROOT/usr/lib/opkg/info/${pkgname}.control" 2>/dev/null)"
	if [ -f "$STUB_ROOT/lib/apk/packages/${pkgname}.rusers" ]; then
		rusers="$(cat "$STUB_ROOT/lib/apk/packages/${pkgname}.rusers")"
	fi
	[ -n "$rusers" ] && echo "user_add $rusers" >> "$STUB_LOG"
	return 0
}

# INITSCRIPT ACTION [INSTANCE]: an init script's action, as default_postinst and
# default_prerm (and the package's scripts, rewritten by the test) run it.
stub_init() {
	echo "$*" >> "$STUB_LOG"
	[ -z "${STUB_RC_COMMON:-}" ] || sh "$STUB_RC_COMMON" "$STUB_ROOT$1" "$2" ${3:+"$3"}
}

# The .ipk's postinst-pkg / prerm-pkg ($1), sourced in a subshell as the real
# functions do, with its init script calls going to stub_init.
stub_pkg_script() {
	echo "${1##*.}" >> "$STUB_LOG"
	sed 's|/etc/init.d/|stub_init /etc/init.d/|g' "$1" > "$1.stub"
	# shellcheck source=/dev/null
	(. "$1.stub")
}

default_postinst() {
	stub_filelist "$@"
	if [ -e "$STUB_ROOT/usr/lib/opkg/info/${pkgname}.list" ]; then
		add_group_and_user "${pkgname}"
	fi
	# The uci-defaults scripts first (run and removed), then postinst-pkg.
	for i in $(grep -s "^/etc/uci-defaults/" "$filelist"); do
		echo "uci-defaults $i" >> "$STUB_LOG"
	done
	if [ -f "$STUB_ROOT/usr/lib/opkg/info/${pkgname}.postinst-pkg" ]; then
		stub_pkg_script "$STUB_ROOT/usr/lib/opkg/info/${pkgname}.postinst-pkg"
	fi
	for i in $(grep -s "^/etc/init.d/" "$filelist"); do
		[ "$PKG_UPGRADE" != "1" ] && stub_init "$i" enable
		stub_init "$i" start
	done
	return 0
}

default_prerm() {
	stub_filelist "$@"
	if [ -f "$STUB_ROOT/usr/lib/opkg/info/${pkgname}.prerm-pkg" ]; then
		stub_pkg_script "$STUB_ROOT/usr/lib/opkg/info/${pkgname}.prerm-pkg"
	fi
	for i in $(grep -s "^/etc/init.d/" "$filelist"); do
		[ "$PKG_UPGRADE" != "1" ] && stub_init "$i" disable
		stub_init "$i" stop
	done
	return 0
}
