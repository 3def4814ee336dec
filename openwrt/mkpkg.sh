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
#   apk-tools 3 `apk` with `mkpkg` is on PATH (the OpenWrt 25 SDK has one in
#   staging_dir/host/bin); otherwise it says so and builds the .ipk only.
# The files installed are the feed package's (ripe-cidr-collector/Makefile).
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

# The installed tree.
root="$work/root"
install -D -m 0755 "$bin" "$root/usr/bin/$name"
install -D -m 0755 "$files/$name.init" "$root/etc/init.d/$name"
install -D -m 0600 "$files/$name.config" "$root/etc/config/$name"
install -D -m 0600 "$files/config.json" "$root/etc/$name/config.json"
install -D -m 0755 "$files/$name.uci-defaults" "$root/etc/uci-defaults/90-$name"
install -D -m 0755 "$files/fw4-include.sh" "$root/usr/share/$name/fw4-include.sh"
install -D -m 0755 "$files/dnsmasq-drop-in.sh" "$root/usr/share/$name/dnsmasq-drop-in.sh"
conffiles="/etc/config/$name
/etc/$name/config.json"

# Maintainer scripts, doing what OpenWrt's generated ones do: postinst runs the
# uci-defaults script and enables the init script (the service itself stays off
# until `enabled '1'`); prerm stops it and, unless upgrading, drops the fw4 include.
cat > "$work/postinst" <<'SH'
#!/bin/sh
[ "${IPKG_NO_SCRIPT:-0}" = 1 ] && exit 0
[ -s "${IPKG_INSTROOT:-}/lib/functions.sh" ] || exit 0
. "${IPKG_INSTROOT:-}/lib/functions.sh"
default_postinst "$0" "$@"
SH
cat > "$work/prerm" <<'SH'
#!/bin/sh
[ -s "${IPKG_INSTROOT:-}/lib/functions.sh" ] || exit 0
. "${IPKG_INSTROOT:-}/lib/functions.sh"
[ -n "${IPKG_INSTROOT:-}" ] || [ "${PKG_UPGRADE:-0}" = 1 ] || {
	uci -q delete firewall.ripe_cidr && uci -q commit firewall
}
default_prerm "$0" "$@"
SH
chmod 0755 "$work/postinst" "$work/prerm"
size=$(du -sk "$root" | cut -f1)
desc="Keeps IP prefix lists of ASNs and host names up to date (RIPEstat, DNS; SQLite,
 HTTP API, nft/ipset output) for policy routing and firewalls."

# .ipk
ctl="$work/control"
mkdir -p "$ctl"
cat > "$ctl/control" <<EOF2
Package: $name
Version: $version
Depends: ca-bundle, nftables
Source: feeds/rcc/$name
SourceName: $name
License: MIT
LicenseFiles: LICENSE
Section: net
URL: https://github.com/ripe-cidr-collector/ripe-cidr-collector
Architecture: $arch
Installed-Size: $((size * 1024))
Description: $desc
EOF2
printf '%s\n' "$conffiles" > "$ctl/conffiles"
cp "$work/postinst" "$work/prerm" "$ctl/"
ipk="$work/ipk"
mkdir -p "$ipk"
echo 2.0 > "$ipk/debian-binary"
(cd "$ctl" && tarc -czf "$ipk/control.tar.gz" ./control ./conffiles ./postinst ./prerm)
(cd "$root" && tarc -czf "$ipk/data.tar.gz" .)
ipk_file="$out/${name}_${version}_${arch}.ipk"
(cd "$ipk" && tarc -czf "$ipk_file" ./debian-binary ./data.tar.gz ./control.tar.gz)
echo "$ipk_file: $(wc -c < "$ipk_file") bytes"

# .apk (v3)
if command -v apk >/dev/null 2>&1 && apk --version 2>/dev/null | grep -q 'apk-tools 3' \
	&& apk mkpkg --help >/dev/null 2>&1; then
	# OpenWrt 25's apk keeps the conffile list beside the package database.
	install -D -m 0644 /dev/null "$root/lib/apk/packages/$name.conffiles"
	printf '%s\n' "$conffiles" > "$root/lib/apk/packages/$name.conffiles"
	apk_file="$out/$name-$version.apk"
	apk mkpkg \
		--info "name:$name" --info "version:$version" --info "arch:$arch" \
		--info "license:MIT" --info "origin:$name" \
		--info "url:https://github.com/ripe-cidr-collector/ripe-cidr-collector" \
		--info "description:Keeps IP prefix lists of ASNs and host names up to date" \
		--info "depends:ca-bundle nftables" \
		--script "post-install:$work/postinst" --script "pre-deinstall:$work/prerm" \
		--files "$root" --output "$apk_file"
	echo "$apk_file: $(wc -c < "$apk_file") bytes"
else
	echo "no .apk: needs apk-tools 3 (\`apk mkpkg\`) on PATH, e.g. the OpenWrt 25 SDK's" \
		"staging_dir/host/bin/apk; found: $(apk --version 2>/dev/null || echo none)"
fi
