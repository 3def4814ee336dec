#!/bin/sh
# shellcheck shell=dash
# shellcheck disable=SC2015,SC2016 # ok and fail always succeed; ${IPKG_INSTROOT} is searched for as text
# Checks the .apk that openwrt/mkpkg.sh lays out (its file tree and scripts, kept by
# MKPKG_APK_TREE) against what OpenWrt's include/package-pack.mk makes for apk-tools
# 3, and runs its scripts against a stub /lib/functions.sh (stubs/functions.sh, the
# logic of default_postinst/default_prerm): apk runs them without arguments, so only
# the exported `pkgname` finds /lib/apk/packages/NAME.list, and with it the uci-defaults
# script, the user and the init script. The .ipk's postinst, run the way opkg runs it
# (as /usr/lib/opkg/info/NAME.postinst), is checked the same way.
# Usage: openwrt/tests/apk-test.sh (sh, tar, gzip, sha256sum; a temporary directory).
set -u
here=$(cd "$(dirname "$0")" && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
failed=0
name=ripe-cidr-collector
STUB_LOG="$tmp/log"
STUB_ROOT="$tmp/router"
export STUB_LOG STUB_ROOT

fail() { echo "FAIL $*"; failed=1; }
ok() { echo "ok   $*"; }

printf '#!/bin/sh\n' > "$tmp/bin"
MKPKG_APK_TREE="$tmp/apk" SOURCE_DATE_EPOCH=0 sh "$here/../mkpkg.sh" mipsel_24kc "$tmp/bin" "$tmp/dist" \
	> "$tmp/mkpkg.out" 2>&1 || { cat "$tmp/mkpkg.out"; exit 1; }
files="$tmp/apk/files"
meta="$files/lib/apk/packages"

# The file list: every file and link of the package, /-rooted, sorted, without the
# list itself and the conffiles lists (package-pack.mk writes it before moving those
# in).
(cd "$files" && find . \( -type f -o -type l \) | sed 's|^\.||' | LC_ALL=C sort) \
	| grep -v "^/lib/apk/packages/$name\.\(list\|conffiles\|conffiles_static\)$" > "$tmp/expected"
if cmp -s "$tmp/expected" "$meta/$name.list"; then ok ".list: every file"; else
	fail ".list: $(diff "$tmp/expected" "$meta/$name.list")"; fi
grep -qx "/usr/bin/$name" "$meta/$name.list" && grep -qx "/etc/init.d/$name" "$meta/$name.list" \
	&& grep -qx "/etc/uci-defaults/90-$name" "$meta/$name.list" && ok ".list: binary, init, uci-defaults" \
	|| fail ".list: entries missing"
# conffiles and conffiles_static: `path sha256` of each conffile as shipped.
printf '/etc/config/%s\n/etc/%s/config.json\n' "$name" "$name" > "$tmp/conf"
cmp -s "$tmp/conf" "$meta/$name.conffiles" && ok ".conffiles" || fail ".conffiles"
while read -r f sum; do
	[ "$(sha256sum < "$files$f" | cut -d' ' -f1)" = "$sum" ] || fail ".conffiles_static: $f"
done < "$meta/$name.conffiles_static"
[ "$(wc -l < "$meta/$name.conffiles_static")" = 2 ] && ok ".conffiles_static: path and sha256" \
	|| fail ".conffiles_static: $(cat "$meta/$name.conffiles_static")"
grep -qx "ripe-cidr=3691:ripe-cidr=3691" "$meta/$name.rusers" && ok ".rusers" || fail ".rusers"
grep -qx "/etc/$name/ripe.db.snapshot" "$files/lib/upgrade/keep.d/$name" \
	&& grep -qx "/etc/$name/config.json" "$files/lib/upgrade/keep.d/$name" \
	&& grep -qx "/etc/ripe-cidr-mark.nft" "$files/lib/upgrade/keep.d/$name" \
	&& ok "keep.d: snapshot, config.json and the own-chain recipe's file survive sysupgrade" \
	|| fail "keep.d"

# The router: the package installed, the stub functions.sh instead of OpenWrt's, and
# the init script run for real against the procd model of stubs/rc.common.sh (which
# keeps an unchanged instance running on `start`, as procd does), the service enabled.
mkdir -p "$STUB_ROOT"
cp -a "$files/." "$STUB_ROOT/"
STUB_RC_COMMON="$here/stubs/rc.common.sh"
UCI_main_enabled=1
export STUB_RC_COMMON UCI_main_enabled
procd="$STUB_ROOT/var/run/procd-$name"
# run SCRIPT [ARGS]: as apk (or opkg) runs it on the router (IPKG_INSTROOT empty),
# reading the stub functions.sh instead of /lib/functions.sh, its own init script
# calls going to the procd model.
run() {
	: > "$STUB_LOG"
	sed -e "s|\${IPKG_INSTROOT}/lib/functions.sh|$here/stubs/functions.sh|g" \
		-e "s|/etc/init.d/$name |stub_init /etc/init.d/$name |g" "$1" > "$tmp/script"
	shift
	(cd "$tmp" && IPKG_INSTROOT='' sh ./script "$@") >> "$STUB_LOG" 2>&1
}
expect() {
	what=$1
	shift
	for line in "$@"; do
		grep -qxF -- "$line" "$STUB_LOG" || { fail "$what: no '$line' in: $(cat "$STUB_LOG")"; return; }
	done
	ok "$what"
}
# runs SUM WHAT: the daemon runs the binary whose sha256 is SUM.
runs() {
	if [ "$(cut -d' ' -f2 "$procd" 2>/dev/null)" = "$1" ]; then ok "$2"; else
		fail "$2: procd runs $(cat "$procd" 2>/dev/null) in: $(cat "$STUB_LOG")"; fi
}
no_error() {
	if grep -q "Command failed" "$STUB_LOG"; then fail "$1: $(cat "$STUB_LOG")"; else ok "$1"; fi
}
sum() { sha256sum < "$STUB_ROOT/usr/bin/$name" | cut -d' ' -f1; }
s="$tmp/apk/scripts"
for x in post-install post-upgrade pre-deinstall; do
	grep -qx 'export pkgname="ripe-cidr-collector"' "$s/$x" && grep -qx 'export root="${IPKG_INSTROOT}"' "$s/$x" \
		|| fail "$x: does not export pkgname and root"
done
run "$s/post-install"
expect "apk post-install: user, uci-defaults, enable, start" \
	"filelist /lib/apk/packages/$name.list" "user_add ripe-cidr=3691:ripe-cidr=3691" \
	"uci-defaults /etc/uci-defaults/90-$name" "/etc/init.d/$name enable" "/etc/init.d/$name start"
runs "$(sum)" "apk post-install: the daemon runs"
# apk replaces the files, then runs post-upgrade: the daemon must run the new binary
# (/proc/PID/exe not "(deleted)").
printf '#!/bin/sh\n# version 2\n' > "$STUB_ROOT/usr/bin/$name"
run "$s/post-upgrade"
expect "apk post-upgrade: start" "/etc/init.d/$name start"
runs "$(sum)" "apk post-upgrade: the daemon runs the new binary"
grep -q " enable" "$STUB_LOG" && fail "post-upgrade: enabled again"
# The model: a plain start leaves an unchanged instance on its old binary.
old=$(cut -d' ' -f2 "$procd")
printf '#!/bin/sh\n# version 3\n' > "$STUB_ROOT/usr/bin/$name"
: > "$STUB_LOG"
sh "$STUB_RC_COMMON" "$STUB_ROOT/etc/init.d/$name" start
runs "$old" "stub procd: start keeps an unchanged instance on its old binary (the bug it models)"
# Without the exports (what mkpkg.sh wrote before): default_postinst, with no $1,
# finds no file list, and nothing happens.
grep -v '^export pkgname' "$s/post-install" > "$tmp/old-post-install"
run "$tmp/old-post-install"
grep -q "uci-defaults\| enable" "$STUB_LOG" && fail "stub: runs without pkgname" \
	|| ok "stub: without pkgname nothing is enabled (the bug it models)"
# pre-deinstall: default_prerm, then the package's own lines (uci, nft on PATH); the
# service is stopped once (a second stop says "Command failed: Not found").
mkdir -p "$tmp/path"
printf '#!/bin/sh\necho "uci $*"\n' > "$tmp/path/uci"
printf '#!/bin/sh\necho "nft $*"\n' > "$tmp/path/nft"
chmod +x "$tmp/path/uci" "$tmp/path/nft"
PATH="$tmp/path:$PATH" run "$s/pre-deinstall"
expect "apk pre-deinstall: disabled, stopped, include and table removed" \
	"/etc/init.d/$name disable" "/etc/init.d/$name stop" "uci -q delete firewall.ripe_cidr" \
	"nft delete table inet ripe_cidr"
no_error "apk pre-deinstall: stopped once"
[ -e "$procd" ] && fail "apk pre-deinstall: still running: $(cat "$procd")"

# The .ipk's postinst as opkg runs it: $0 names the package.
mkdir -p "$tmp/ipk" "$STUB_ROOT/usr/lib/opkg/info"
tar -xzf "$tmp/dist/${name}"_*_mipsel_24kc.ipk -C "$tmp/ipk"
tar -xzf "$tmp/ipk/control.tar.gz" -C "$tmp/ipk"
rm -f "$STUB_ROOT/lib/apk/packages/$name.list" "$STUB_ROOT/lib/apk/packages/$name.rusers"
info="$STUB_ROOT/usr/lib/opkg/info"
cp "$meta/$name.list" "$info/$name.list"
cp "$tmp/ipk/control" "$info/$name.control"
cp "$tmp/ipk/postinst-pkg" "$info/$name.postinst-pkg"
cp "$tmp/ipk/prerm-pkg" "$info/$name.prerm-pkg"
for x in postinst prerm; do
	sed "s|\${IPKG_INSTROOT}/lib/functions.sh|$here/stubs/functions.sh|g" "$tmp/ipk/$x" \
		> "$tmp/$name.$x"
done
: > "$STUB_LOG"
(cd "$tmp" && IPKG_INSTROOT='' sh "./$name.postinst" configure) >> "$STUB_LOG" 2>&1
expect "ipk postinst: user from Require-User, uci-defaults, enable" \
	"filelist /usr/lib/opkg/info/$name.list" "user_add ripe-cidr=3691:ripe-cidr=3691" \
	"uci-defaults /etc/uci-defaults/90-$name" "/etc/init.d/$name enable"
runs "$(sum)" "ipk postinst: the daemon runs"
# opkg upgrades without running the old package's prerm: postinst with PKG_UPGRADE=1.
printf '#!/bin/sh\n# version 4\n' > "$STUB_ROOT/usr/bin/$name"
: > "$STUB_LOG"
(cd "$tmp" && IPKG_INSTROOT='' PKG_UPGRADE=1 sh "./$name.postinst" configure) >> "$STUB_LOG" 2>&1
runs "$(sum)" "ipk upgrade: the daemon runs the new binary"
: > "$STUB_LOG"
(cd "$tmp" && IPKG_INSTROOT='' PATH="$tmp/path:$PATH" sh "./$name.prerm" remove) >> "$STUB_LOG" 2>&1
expect "ipk prerm: prerm-pkg, instance stopped, disabled, stopped" "prerm-pkg" \
	"/etc/init.d/$name stop collector" "procd: $name.collector stopped" "/etc/init.d/$name disable" \
	"/etc/init.d/$name stop" "nft delete table inet ripe_cidr"
# rc.common's `running` answers for the service the script is (its argument is an
# instance), but the stop that follows needs no question: none is asked.
grep -q "^/etc/init.d/$name running" "$STUB_LOG" && fail "ipk prerm: asks \`running\`: $(cat "$STUB_LOG")" \
	|| ok "ipk prerm: stops the instance without asking \`running\`"
no_error "ipk prerm: stopped once"
[ -e "$procd" ] && fail "ipk prerm: still running: $(cat "$procd")"
cmp -s "$tmp/ipk/prerm-pkg" "$here/../$name/files/prerm.sh" && ok "ipk prerm-pkg: the package's prerm" \
	|| fail "ipk prerm-pkg"

if [ "$failed" = 0 ]; then echo "apk-test: all passed"; else exit 1; fi
