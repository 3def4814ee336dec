#!/bin/sh
# The package's own part of the pre-removal script (the Makefile's prerm: opkg's
# default_prerm sources it as prerm-pkg before it stops and disables the service; the
# .apk's pre-deinstall runs it after). Removing the package, not upgrading it: stop
# the daemon's instance (default_prerm's stop of the service would otherwise find
# none and say "Command failed: Not found"; with none, ubus says it here: hidden),
# remove the firewall include (it would point at a missing file) and our nftables
# table (the sets stay loaded else).
[ -n "${IPKG_INSTROOT}" ] || [ "${PKG_UPGRADE}" = 1 ] || {
	/etc/init.d/ripe-cidr-collector stop collector 2>/dev/null
	uci -q delete firewall.ripe_cidr && uci -q commit firewall
	nft delete table inet ripe_cidr 2>/dev/null
}
exit 0
