# shellcheck shell=sh
# Stand-in for OpenWrt's /lib/functions.sh as the package scripts use it: the logic
# of default_postinst, default_prerm and add_group_and_user of openwrt/openwrt
# package/base-files/files/lib/functions.sh (which file lists and control files they
# read, from `pkgname` or, without it, the script's name), with every action logged
# to $STUB_LOG instead of done. The router's / is $STUB_ROOT.
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

default_postinst() {
	stub_filelist "$@"
	if [ -e "$STUB_ROOT/usr/lib/opkg/info/${pkgname}.list" ]; then
		add_group_and_user "${pkgname}"
	fi
	for i in $(grep -s "^/etc/uci-defaults/" "$filelist"); do
		echo "uci-defaults $i" >> "$STUB_LOG"
	done
	for i in $(grep -s "^/etc/init.d/" "$filelist"); do
		[ "$PKG_UPGRADE" != "1" ] && echo "$i enable" >> "$STUB_LOG"
		echo "$i start" >> "$STUB_LOG"
	done
	return 0
}

default_prerm() {
	stub_filelist "$@"
	if [ -f "$STUB_ROOT/usr/lib/opkg/info/${pkgname}.prerm-pkg" ]; then
		echo "prerm-pkg" >> "$STUB_LOG"
	fi
	for i in $(grep -s "^/etc/init.d/" "$filelist"); do
		[ "$PKG_UPGRADE" != "1" ] && echo "$i disable" >> "$STUB_LOG"
		echo "$i stop" >> "$STUB_LOG"
	done
	return 0
}
