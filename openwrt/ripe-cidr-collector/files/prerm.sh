#!/bin/sh
# The package's own part of the pre-removal script (the Makefile's prerm, which
# OpenWrt's default_prerm runs before stopping and disabling the service). Removing
# the package, not upgrading it: stop the daemon, remove the firewall include (it
# would point at a missing file) and our nftables table (the sets stay loaded else).
[ -n "${IPKG_INSTROOT}" ] || [ "${PKG_UPGRADE}" = 1 ] || {
	/etc/init.d/ripe-cidr-collector stop
	uci -q delete firewall.ripe_cidr && uci -q commit firewall
	nft delete table inet ripe_cidr 2>/dev/null
}
exit 0
