#!/bin/sh
# Packages a prebuilt binary (cross/build.sh) without an OpenWrt SDK:
#   openwrt/mkpkg.sh ARCH BINARY [OUTDIR]
#   openwrt/mkpkg.sh mipsel_24kc target/mipsel-unknown-linux-musl/release/ripe-cidr-collector
# ARCH is OpenWrt's package architecture (`opkg print-architecture` or
# `apk --print-arch` on the router: mipsel_24kc, mips_24kc, aarch64_cortex-a53,
# arm_cortex-a7_neon-vfpv4, x86_64, ...). Writes into OUTDIR (default dist/):
# * ripe-cidr-collector_VERSION_ARCH.ipk for opkg (OpenWrt up to 24.10): a gzipped tar
#   of debian-binary, control.tar.gz and data.tar.gz, as OpenWrt's ipkg-build makes;
# * ripe-cidr-collector-VERSION.apk for apk v3 (OpenWrt 25.x), only where an
#   apk-tools 3 `apk` is on PATH (`apk --version` says `apk-tools 3`; the OpenWrt 25
#   SDK has one in staging_dir/host/bin); otherwise it says so and builds the .ipk
#   only. With MKPKG_APK_TREE=DIR the .apk's file tree and scripts are left in DIR
#   either way (what the tests check).
# The files and scripts are what the SDK makes of the feed package
# (ripe-cidr-collector/Makefile) through OpenWrt's include/package-pack.mk: the .ipk
# and .apk control data, maintainer scripts and /lib/apk/packages files written the
# way package-pack.mk writes them.
# Install on the router: `opkg install ./FILE.ipk`, `apk add --allow-untrusted ./FILE.apk`.
set -eu
arch=${1:?usage: openwrt/mkpkg.sh ARCH BINARY [OUTDIR]}
bin=${2:?usage: openwrt/mkpkg.sh ARCH BINARY [OUTDIR]}
out=${3:-dist}
here=$(cd "$(dirname "$0")" && pwd)
files="$here/ripe-cidr-collector/files"
name=ripe-cidr-collector
mk="$here/ripe-cidr-collector/Makefile"
version=$(sed -n 's/^PKG_VERSION:=//p' "$mk")-r$(sed -n 's/^PKG_RELEASE:=//p' "$mk")
[ -f "$bin" ] || { echo "mkpkg: no binary at $bin" >&2; exit 1; }
mkdir -p "$out"
out=$(cd "$out" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# Reproducible archives: fixed times, root-owned, sorted.
: "${SOURCE_DATE_EPOCH:=$(git -C "$here" log -1 --format=%ct 2>/dev/null || echo 0)}"
tarc() { tar --sort=name --mtime="@$SOURCE_DATE_EPOCH" --owner=0 --group=0 --numeric-owner "$@"; }

# The installed tree (the Makefile's Package/ripe-cidr-collector/install).
root="$work/root"
install -D -m 0755 "$bin" "$root/usr/bin/$name"
# package-pack.mk strips every package's files ($(RSTRIP): sstrip by default) before it
# packs them; the same here, for a binary that cross/build.sh has not stripped already.
"$here/../cross/pkg-strip.sh" "$root/usr/bin/$name"
install -D -m 0755 "$files/$name.init" "$root/etc/init.d/$name"
install -D -m 0600 "$files/$name.config" "$root/etc/config/$name"
install -D -m 0600 "$files/config.json" "$root/etc/$name/config.json"
install -D -m 0755 "$files/$name.uci-defaults" "$root/etc/uci-defaults/90-$name"
install -D -m 0755 "$files/fw4-include.sh" "$root/usr/share/$name/fw4-include.sh"
install -D -m 0644 "$files/path-check.sh" "$root/usr/share/$name/path-check.sh"
install -D -m 0644 "$files/capabilities.json" "$root/usr/share/$name/capabilities.json"
install -D -m 0644 "$files/capabilities-bind.json" "$root/usr/share/$name/capabilities-bind.json"
install -D -m 0644 "$files/keep.d" "$root/lib/upgrade/keep.d/$name"
install -D -m 0755 "$files/dnsmasq-drop-in.sh" "$root/usr/share/$name/dnsmasq-drop-in.sh"
install -D -m 0644 "$files/hotplug-iface.sh" "$root/etc/hotplug.d/iface/95-$name"
conffiles="/etc/config/$name
/etc/$name/config.json"
depends="ca-bundle nftables kmod-nft-core firewall4 uclient-fetch"
userid="ripe-cidr=3691:ripe-cidr=3691"
desc="Keeps IP prefix lists of ASNs and host names up to date (RIPEstat, DNS; SQLite,
 HTTP API, nft/ipset output) for policy routing and firewalls."
url="https://github.com/ripe-cidr-collector/ripe-cidr-collector"
# The package's own pre-removal and post-install lines (the Makefile's prerm and
# postinst), without their #! line.
prerm_pkg=$(sed '/^#!/d' "$files/prerm.sh")
postinst_pkg=$(sed '/^#!/d' "$files/postinst.sh")

# .ipk: package-pack.mk's CONTROL directory. postinst and prerm call OpenWrt's
# default_postinst / default_prerm (which read /usr/lib/opkg/info/NAME.list and
# .control: Require-User, init scripts, uci-defaults); the Makefile's postinst and
# prerm become postinst-pkg and prerm-pkg, which those source.
ctl="$work/control"
mkdir -p "$ctl"
size=$(du -sk "$root" | cut -f1)
cat > "$ctl/control" <<EOF2
Package: $name
Version: $version
Depends: $(echo "$depends" | sed 's/ /, /g')
Source: feeds/rcc/$name
SourceName: $name
License: MIT
LicenseFiles: LICENSE
Section: net
Require-User: $userid
URL: $url
Architecture: $arch
Installed-Size: $((size * 1024))
Description: $desc
EOF2
printf '%s\n' "$conffiles" > "$ctl/conffiles"
cat > "$ctl/postinst" <<'SH'
#!/bin/sh
[ "${IPKG_NO_SCRIPT}" = "1" ] && exit 0
[ -s ${IPKG_INSTROOT}/lib/functions.sh ] || exit 0
. ${IPKG_INSTROOT}/lib/functions.sh
default_postinst $0 $@
SH
cat > "$ctl/prerm" <<'SH'
#!/bin/sh
[ -s ${IPKG_INSTROOT}/lib/functions.sh ] || exit 0
. ${IPKG_INSTROOT}/lib/functions.sh
default_prerm $0 $@
SH
cp "$files/prerm.sh" "$ctl/prerm-pkg"
cp "$files/postinst.sh" "$ctl/postinst-pkg"
chmod 0755 "$ctl/postinst" "$ctl/prerm" "$ctl/prerm-pkg" "$ctl/postinst-pkg"
ipk="$work/ipk"
mkdir -p "$ipk"
echo 2.0 > "$ipk/debian-binary"
(cd "$ctl" && tarc -czf "$ipk/control.tar.gz" ./control ./conffiles ./postinst ./postinst-pkg ./prerm ./prerm-pkg)
(cd "$root" && tarc -czf "$ipk/data.tar.gz" .)
ipk_file="$out/${name}_${version}_${arch}.ipk"
(cd "$ipk" && tarc -czf "$ipk_file" ./debian-binary ./data.tar.gz ./control.tar.gz)
echo "$ipk_file: $(wc -c < "$ipk_file") bytes"

# .apk (v3): package-pack.mk's CONFIG_USE_APK branch. apk runs the scripts without
# arguments, so they export `pkgname` and `root` for default_postinst/default_prerm,
# which then read /lib/apk/packages/NAME.list (the files) and NAME.rusers (the user);
# sysupgrade reads NAME.conffiles and NAME.conffiles_static (path and sha256 as
# shipped). An upgrade runs post-upgrade (post-install with PKG_UPGRADE=1): the
# service is not enabled again, and the Makefile's postinst lines, appended to both,
# restart a running daemon onto the new binary.
atree="${MKPKG_APK_TREE:-$work/apk}"
rm -rf "$atree"
mkdir -p "$atree/scripts"
cp -a "$root" "$atree/files"
meta="$atree/files/lib/apk/packages"
mkdir -p "$meta"
echo "$userid" > "$meta/$name.rusers"
(cd "$atree/files" && find . \( -type f -o -type l \) | sed 's|^\.||' | LC_ALL=C sort) > "$work/list"
mv "$work/list" "$meta/$name.list"
printf '%s\n' "$conffiles" > "$meta/$name.conffiles"
for f in $conffiles; do
	echo "$f $(sha256sum < "$atree/files$f" | cut -d' ' -f1)"
done > "$meta/$name.conffiles_static"
cat > "$atree/scripts/post-install" <<SH
#!/bin/sh
[ "\${IPKG_NO_SCRIPT}" = "1" ] && exit 0
[ -s \${IPKG_INSTROOT}/lib/functions.sh ] || exit 0
. \${IPKG_INSTROOT}/lib/functions.sh
export root="\${IPKG_INSTROOT}"
export pkgname="$name"
add_group_and_user
default_postinst
$postinst_pkg
SH
{ echo '#!/bin/sh'; echo 'export PKG_UPGRADE=1'; sed '/^#!/d' "$atree/scripts/post-install"; } \
	> "$atree/scripts/post-upgrade"
cat > "$atree/scripts/pre-deinstall" <<SH
#!/bin/sh
[ -s \${IPKG_INSTROOT}/lib/functions.sh ] || exit 0
. \${IPKG_INSTROOT}/lib/functions.sh
export root="\${IPKG_INSTROOT}"
export pkgname="$name"
default_prerm
$prerm_pkg
SH
chmod 0755 "$atree/scripts/"*
if command -v apk >/dev/null 2>&1 && apk --version 2>/dev/null | grep -q '^apk-tools 3'; then
	apk_file="$out/$name-$version.apk"
	apk mkpkg \
		--info "name:$name" --info "version:$version" --info "arch:$arch" \
		--info "license:MIT" --info "origin:$name" --info "url:$url" \
		--info "description:Keeps IP prefix lists of ASNs and host names up to date" \
		--info "depends:$depends" \
		--script "post-install:$atree/scripts/post-install" \
		--script "post-upgrade:$atree/scripts/post-upgrade" \
		--script "pre-deinstall:$atree/scripts/pre-deinstall" \
		--files "$atree/files" --output "$apk_file"
	echo "$apk_file: $(wc -c < "$apk_file") bytes"
else
	echo "no .apk: needs apk-tools 3 on PATH (\`apk --version\`: apk-tools 3.x), e.g. the" \
		"OpenWrt 25 SDK's staging_dir/host/bin/apk; found: $(apk --version 2>/dev/null || echo none)"
fi
