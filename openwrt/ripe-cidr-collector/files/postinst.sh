#!/bin/sh
# The package's own part of the post-install script (the Makefile's postinst: opkg's
# default_postinst sources it as postinst-pkg before starting the service;
# package-pack.mk appends it to the .apk's post-install and post-upgrade). An upgrade
# (opkg and apk run no old script that stops the daemon): default_postinst's `start`
# leaves a running daemon on the old binary, as procd keeps an instance whose command
# line is unchanged; restart it onto the new one.
[ -n "${IPKG_INSTROOT}" ] || [ "${PKG_UPGRADE}" != 1 ] || {
	/etc/init.d/ripe-cidr-collector running && /etc/init.d/ripe-cidr-collector restart
}
exit 0
