#!/bin/sh
# shellcheck disable=SC2016 # the maintainer scripts' ${IPKG_INSTROOT}, $0 and $@ expand on the router
# Packages the LuCI app and its translations without an OpenWrt SDK:
#   openwrt/mkpkg-luci.sh [OUTDIR]
# Writes into OUTDIR (default dist/), for the architecture `all`:
# * luci-app-ripe-cidr-collector_VERSION_all.ipk: the views, the Status -> Overview
#   include, the menu, the ACL and the ucode rpcd plugin, laid out as luci.mk installs
#   them (htdocs/ under /www, root/ under /);
# * luci-i18n-ripe-cidr-collector-LANG_VERSION_all.ipk for each po/LANG: the catalog
#   as /usr/lib/lua/luci/i18n/ripe-cidr-collector.LANG.lmo (cross/po2lmo.rs, built
#   with rustc unless PO2LMO names a po2lmo) and the uci-defaults line that adds the
#   language to LuCI's list, as luci.mk's LuciTranslation does;
# * the same as .apk (NAME-VERSION.apk) where an apk-tools 3 `apk` is on PATH, as
#   mkpkg.sh makes the main package's; otherwise it says so.
# The maintainer scripts are luci.mk's: after an install or upgrade the app drops
# LuCI's menu index and module caches and sends rpcd a HUP, so that the new menu,
# ACL and plugin are used at once; the translation has none (default_postinst
# runs its uci-defaults script).
# VERSION is the feed Makefile's PKG_VERSION-rPKG_RELEASE, as for the main package.
set -eu
out=${1:-dist}
here=$(cd "$(dirname "$0")" && pwd)
app="$here/luci-app-ripe-cidr-collector"
name=luci-app-ripe-cidr-collector
base=ripe-cidr-collector
mk="$app/Makefile"
version=$(sed -n 's/^PKG_VERSION:=//p' "$mk")-r$(sed -n 's/^PKG_RELEASE:=//p' "$mk")
url="https://github.com/ripe-cidr-collector/ripe-cidr-collector"
mkdir -p "$out"
out=$(cd "$out" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
: "${SOURCE_DATE_EPOCH:=$(git -C "$here" log -1 --format=%ct 2>/dev/null || echo 0)}"
tarc() { tar --sort=name --mtime="@$SOURCE_DATE_EPOCH" --owner=0 --group=0 --numeric-owner "$@"; }
has_apk3() { command -v apk >/dev/null 2>&1 && apk --version 2>/dev/null | grep -q '^apk-tools 3'; }

# package-pack.mk's scripts around a package's own postinst lines ($2): the .ipk's
# postinst and prerm call default_postinst/default_prerm, which source postinst-pkg;
# the .apk's export pkgname and root for them (see mkpkg.sh).
ipk() { # NAME ROOT POSTINST-LINES DEPENDS DESCRIPTION
	pkg=$1
	ctl="$work/$pkg.control"
	mkdir -p "$ctl"
	size=$(du -sk "$2" | cut -f1)
	cat > "$ctl/control" <<EOF
Package: $pkg
Version: $version
Depends: $4
Source: feeds/rcc/$name
SourceName: $pkg
License: MIT
Section: luci
URL: $url
Architecture: all
Installed-Size: $((size * 1024))
Description: $5
EOF
	printf '#!/bin/sh\n[ "${IPKG_NO_SCRIPT}" = "1" ] && exit 0\n[ -s ${IPKG_INSTROOT}/lib/functions.sh ] || exit 0\n. ${IPKG_INSTROOT}/lib/functions.sh\ndefault_postinst $0 $@\n' > "$ctl/postinst"
	printf '#!/bin/sh\n[ -s ${IPKG_INSTROOT}/lib/functions.sh ] || exit 0\n. ${IPKG_INSTROOT}/lib/functions.sh\ndefault_prerm $0 $@\n' > "$ctl/prerm"
	# package-pack.mk writes postinst-pkg only for a package with postinst lines.
	[ -z "$3" ] || printf '#!/bin/sh\n%s\n' "$3" > "$ctl/postinst-pkg"
	chmod 0755 "$ctl"/p*
	ipkd="$work/$pkg.ipk.d"
	mkdir -p "$ipkd"
	echo 2.0 > "$ipkd/debian-binary"
	(cd "$ctl" && tarc -czf "$ipkd/control.tar.gz" ./*)
	(cd "$2" && tarc -czf "$ipkd/data.tar.gz" .)
	file="$out/${pkg}_${version}_all.ipk"
	(cd "$ipkd" && tarc -czf "$file" ./debian-binary ./data.tar.gz ./control.tar.gz)
	echo "$file: $(wc -c < "$file") bytes"
	if has_apk3; then
		apkpkg "$@"
	fi
}

apkpkg() { # NAME ROOT POSTINST-LINES DEPENDS DESCRIPTION
	scripts="$work/$1.scripts"
	mkdir -p "$scripts" "$2/lib/apk/packages"
	(cd "$2" && find . \( -type f -o -type l \) | sed 's|^\.||' | LC_ALL=C sort) > "$work/list"
	mv "$work/list" "$2/lib/apk/packages/$1.list"
	printf '#!/bin/sh\n[ "${IPKG_NO_SCRIPT}" = "1" ] && exit 0\n[ -s ${IPKG_INSTROOT}/lib/functions.sh ] || exit 0\n. ${IPKG_INSTROOT}/lib/functions.sh\nexport root="${IPKG_INSTROOT}"\nexport pkgname="%s"\nadd_group_and_user\ndefault_postinst\n%s\n' "$1" "$3" > "$scripts/post-install"
	{ echo '#!/bin/sh'; echo 'export PKG_UPGRADE=1'; sed '/^#!/d' "$scripts/post-install"; } > "$scripts/post-upgrade"
	printf '#!/bin/sh\n[ -s ${IPKG_INSTROOT}/lib/functions.sh ] || exit 0\n. ${IPKG_INSTROOT}/lib/functions.sh\nexport root="${IPKG_INSTROOT}"\nexport pkgname="%s"\ndefault_prerm\n' "$1" > "$scripts/pre-deinstall"
	chmod 0755 "$scripts/"*
	file="$out/$1-$version.apk"
	apk mkpkg \
		--info "name:$1" --info "version:$version" --info "arch:noarch" \
		--info "license:MIT" --info "origin:$name" --info "url:$url" \
		--info "description:$5" --info "depends:$(echo "$4" | sed 's/, / /g')" \
		--script "post-install:$scripts/post-install" \
		--script "post-upgrade:$scripts/post-upgrade" \
		--script "pre-deinstall:$scripts/pre-deinstall" \
		--files "$2" --output "$file"
	echo "$file: $(wc -c < "$file") bytes"
}

# luci.mk's postinst: the menu index and module caches dropped, rpcd reloaded (it
# reads the ACL and plugins at start and on HUP).
app_postinst='[ -n "${IPKG_INSTROOT}" ] || {
	rm -f /tmp/luci-indexcache /tmp/luci-indexcache.*
	rm -rf /tmp/luci-modulecache/
	killall -HUP rpcd 2>/dev/null
	exit 0
}'

root="$work/app"
mkdir -p "$root/www"
cp -pR "$app/htdocs/." "$root/www/"
cp -pR "$app/root/." "$root/"
find "$root" -type d -exec chmod 0755 {} + && find "$root" -type f -exec chmod 0644 {} +
ipk "$name" "$root" "$app_postinst" "libc, luci-base, rpcd-mod-ucode, $base" \
	"Status, sources and service settings of ripe-cidr-collector under Services -> IP prefix lists, and its box on Status -> Overview."

po2lmo=${PO2LMO:-}
if [ -z "$po2lmo" ]; then
	po2lmo="$work/po2lmo"
	rustc --edition 2021 -O -o "$po2lmo" "$here/../cross/po2lmo.rs" \
		|| { echo "mkpkg-luci: cannot build cross/po2lmo.rs (rustc); set PO2LMO to a po2lmo" >&2; exit 1; }
fi
for dir in "$app"/po/*/; do
	lang=$(basename "$dir")
	[ "$lang" = templates ] && continue
	# luci.mk's LUCI_LANG titles, for the languages this app has.
	case "$lang" in
		ru) title='Русский (Russian)' ;;
		*) echo "mkpkg-luci: no language title for po/$lang (add it from luci.mk's LUCI_LANG)" >&2; exit 1 ;;
	esac
	pkg="luci-i18n-$base-$lang"
	root="$work/$pkg.root"
	mkdir -p "$root/usr/lib/lua/luci/i18n" "$root/etc/uci-defaults"
	"$po2lmo" "$dir/$base.po" "$root/usr/lib/lua/luci/i18n/$base.$lang.lmo"
	echo "uci set luci.languages.$lang='$title'; uci commit luci" > "$root/etc/uci-defaults/$pkg"
	chmod 0644 "$root/usr/lib/lua/luci/i18n/$base.$lang.lmo" "$root/etc/uci-defaults/$pkg"
	# No postinst lines: default_postinst runs (and removes) every /etc/uci-defaults/
	# file of the package's list, and (base-files' functions.sh today) before it
	# sources postinst-pkg: luci.mk's `(. /etc/uci-defaults/NAME)` then says "can't open".
	ipk "$pkg" "$root" "" "libc, $name" "Translation for $name - $title"
done
has_apk3 || echo "no .apk: needs apk-tools 3 on PATH (\`apk --version\`: apk-tools 3.x), e.g. the" \
	"OpenWrt 25 SDK's staging_dir/host/bin/apk; found: $(apk --version 2>/dev/null || echo none)"
