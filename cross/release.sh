#!/usr/bin/env bash
# The release, from a clean checkout: the router binary for each architecture, its
# .ipk (and .apk), the LuCI app and its translations, checksums, and a signed package
# feed per architecture:
#
#   RELEASE_USIGN_KEY=release.sec RELEASE_APK_KEY=release-apk.pem \
#     cross/release.sh [--arch ARCH]... [--bin ARCH=FILE]... --out DIR
#
# ARCH is OpenWrt's package architecture; without --arch, all of mipsel_24kc,
# mips_24kc, aarch64_cortex-a53, aarch64_generic, arm_cortex-a7_neon-vfpv4,
# arm_cortex-a9_vfpv3-d16 and x86_64. Each binary is built by cross/build.sh (zig,
# nightly; the OpenWrt package's features: no `tls`), once per Rust target, unless
# --bin gives one built elsewhere (it is packaged as given, stripped as OpenWrt
# strips; the CI test passes the host build as x86_64's, since the musl targets and
# zig are not installed there).
#
# RELEASE_USIGN_KEY: the feed's usign secret key (`usign -G`, or signify-openbsd
# `-G -n`: the same ed25519 format without a passphrase); Packages is signed with
# signify-openbsd (or `signify`, or usign where installed). RELEASE_APK_KEY: the
# apk feed's EC private key in PEM (`openssl ecparam -name prime256v1 -genkey
# -noout`). Both are required; a key that is missing or unusable stops the release
# before anything is built, and a signature that does not verify with the key's own
# public half stops it too, so no feed looks signed without being so.
#
# DIR/ARCH/ holds the architecture's .ipk, the LuCI packages, Packages, Packages.gz,
# Packages.sig and SHA256SUMS (and .apk files and packages.adb signed with
# `apk mkndx --sign` where an apk-tools 3 `apk` is on PATH, as in the OpenWrt 25 SDK;
# otherwise the script says so and builds the rest). DIR/keys/ holds the public keys:
# the usign one named by its fingerprint (as /etc/opkg/keys/ wants it, and as
# usign.pub), the apk one as ripe-cidr-collector.pem. docs/openwrt.md#install.
set -euo pipefail
cd "$(dirname "$0")/.."
ALL=(mipsel_24kc mips_24kc aarch64_cortex-a53 aarch64_generic arm_cortex-a7_neon-vfpv4
	arm_cortex-a9_vfpv3-d16 x86_64)

die() { echo "release: $*" >&2; exit 1; }
usage() { die "usage: cross/release.sh [--arch ARCH]... [--bin ARCH=FILE]... --out DIR"; }

# The Rust target of an OpenWrt architecture (both ARM ones run armv7 hard-float
# code with VFPv3-D16, what armv7-unknown-linux-musleabihf targets).
rust_target() {
	case "$1" in
		mipsel_24kc) echo mipsel-unknown-linux-musl ;;
		mips_24kc) echo mips-unknown-linux-musl ;;
		aarch64_cortex-a53 | aarch64_generic) echo aarch64-unknown-linux-musl ;;
		arm_cortex-a7_neon-vfpv4 | arm_cortex-a9_vfpv3-d16) echo armv7-unknown-linux-musleabihf ;;
		x86_64) echo x86_64-unknown-linux-musl ;;
		*) die "unknown architecture \"$1\" (known: ${ALL[*]})" ;;
	esac
}

archs=()
declare -A bins=()
out=
while [ $# -gt 0 ]; do
	case "$1" in
		--arch) [ $# -ge 2 ] || usage; rust_target "$2" >/dev/null; archs+=("$2"); shift 2 ;;
		--bin)
			if [ $# -lt 2 ] || [[ "$2" != *=* ]]; then usage; fi
			rust_target "${2%%=*}" >/dev/null
			[ -f "${2#*=}" ] || die "--bin $2: no such file"
			bins[${2%%=*}]=$(cd "$(dirname "${2#*=}")" && pwd)/$(basename "${2#*=}")
			shift 2 ;;
		--out) [ $# -ge 2 ] || usage; out=$2; shift 2 ;;
		*) usage ;;
	esac
done
[ -n "$out" ] || usage
[ ${#archs[@]} -gt 0 ] || archs=("${ALL[@]}")
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
: "${SOURCE_DATE_EPOCH:=$(git log -1 --format=%ct 2>/dev/null || echo 0)}"
export SOURCE_DATE_EPOCH

# One version everywhere: Cargo.toml, the feed Makefiles, the packages.
check_versions() {
	local cargo mk
	cargo=$(sed -n 's/^version = "\(.*\)"$/\1/p' Cargo.toml | head -n 1)
	for mk in openwrt/ripe-cidr-collector/Makefile openwrt/luci-app-ripe-cidr-collector/Makefile; do
		[ "$(sed -n 's/^PKG_VERSION:=//p' "$mk")" = "$cargo" ] \
			|| die "$mk: PKG_VERSION $(sed -n 's/^PKG_VERSION:=//p' "$mk") is not Cargo.toml's $cargo"
	done
	version="$cargo-r$(sed -n 's/^PKG_RELEASE:=//p' openwrt/ripe-cidr-collector/Makefile)"
}

signify_tool() {
	local t
	for t in signify-openbsd signify usign; do
		command -v "$t" >/dev/null 2>&1 && { echo "$t"; return; }
	done
	die "no signify-openbsd, signify or usign to sign Packages (apt-get install signify-openbsd)"
}

# The usign secret key's public half and fingerprint, from its fields (usign's and
# signify's struct: "Ed", "BK", KDF rounds, salt, checksum, the 8-byte key number
# that is the fingerprint, then the 64-byte ed25519 secret key whose second half is
# the public key). Writes $work/usign.pub and sets $fingerprint.
usign_public() {
	local key=${RELEASE_USIGN_KEY:-} hex
	[ -n "$key" ] || die "RELEASE_USIGN_KEY is not set: name the feed's usign secret key (usign -G, or signify-openbsd -G -n)"
	[ -f "$key" ] || die "RELEASE_USIGN_KEY=$key: no such file"
	[ "$(sed -n 1p "$key" | cut -c1-19)" = "untrusted comment: " ] \
		|| die "RELEASE_USIGN_KEY=$key: not a usign/signify key (its first line is not \"untrusted comment: ...\")"
	hex=$(sed -n 2p "$key" | base64 -d 2>/dev/null | od -An -v -tx1 | tr -d ' \n') || true
	if [ ${#hex} != 208 ] || [ "${hex:0:8}" != 4564424b ]; then
		die "RELEASE_USIGN_KEY=$key: not an ed25519 secret key (usign -G, or signify-openbsd -G -n)"
	fi
	[ "${hex:8:8}" = 00000000 ] \
		|| die "RELEASE_USIGN_KEY=$key: protected by a passphrase, which usign cannot use; make one with signify-openbsd -G -n"
	fingerprint=${hex:64:16}
	cp "$key" "$work/usign.sec"
	chmod 0600 "$work/usign.sec"
	{
		echo "untrusted comment: public key $fingerprint"
		printf '%b' "$(echo "4564$fingerprint${hex:144:64}" | sed 's/../\\x&/g')" | base64 -w0
		echo
	} > "$work/usign.pub"
}

apk_public() {
	local key=${RELEASE_APK_KEY:-}
	[ -n "$key" ] || die "RELEASE_APK_KEY is not set: name the apk feed's EC private key in PEM (openssl ecparam -name prime256v1 -genkey -noout)"
	[ -f "$key" ] || die "RELEASE_APK_KEY=$key: no such file"
	command -v openssl >/dev/null 2>&1 || die "RELEASE_APK_KEY: needs openssl to read the key"
	openssl ec -in "$key" -pubout -out "$work/apk.pem" 2>/dev/null \
		|| die "RELEASE_APK_KEY=$key: not an EC private key in PEM"
}

has_apk3() { command -v apk >/dev/null 2>&1 && apk --version 2>/dev/null | grep -q '^apk-tools 3'; }

# The binary of each architecture: given by --bin, else cross/build.sh's, each Rust
# target built once.
build_binaries() {
	local arch target
	declare -gA built=()
	for arch in "${archs[@]}"; do
		[ -n "${bins[$arch]:-}" ] && continue
		target=$(rust_target "$arch")
		if [ -z "${built[$target]:-}" ]; then
			cross/build.sh "$target" --no-default-features --features collect,api,inspect \
				|| die "cross/build.sh $target failed"
			built[$target]=1
		fi
		bins[$arch]=$PWD/target/$target/release/ripe-cidr-collector
	done
}

# Packages: each package's control fields, with Filename, Size and SHA256sum before
# its Description, a blank line between packages (what OpenWrt's
# scripts/ipkg-make-index.sh writes); Packages.gz beside it.
write_index() {
	local dir=$1 f
	for f in "$dir"/*.ipk; do
		tar -xzOf "$f" ./control.tar.gz | tar -xzOf - ./control \
			| awk -v file="$(basename "$f")" -v size="$(wc -c < "$f")" \
				-v sum="$(sha256sum "$f" | cut -d' ' -f1)" '
				/^Description:/ && !done { print "Filename: " file; print "Size: " size; print "SHA256sum: " sum; done = 1 }
				{ print }'
		echo
	done > "$dir/Packages"
	gzip -9nc "$dir/Packages" > "$dir/Packages.gz"
}

# Packages.sig, kept only when it verifies with the key's public half.
sign_index() {
	local dir=$1 tool
	tool=$(signify_tool)
	if [ "$tool" = usign ]; then
		usign -S -m "$dir/Packages" -s "$work/usign.sec" -x "$work/Packages.sig"
	else
		"$tool" -S -s "$work/usign.sec" -m "$dir/Packages" -x "$work/Packages.sig"
	fi
	case "$tool" in
		usign) usign -V -q -m "$dir/Packages" -p "$work/usign.pub" -x "$work/Packages.sig" ;;
		*) "$tool" -V -q -p "$work/usign.pub" -m "$dir/Packages" -x "$work/Packages.sig" ;;
	esac || die "$dir/Packages.sig does not verify with RELEASE_USIGN_KEY's public key"
	mv "$work/Packages.sig" "$dir/Packages.sig"
}

# packages.adb, where apk-tools 3 can make it: signed with RELEASE_APK_KEY, checked.
apk_index() {
	local dir=$1
	mkdir -p "$work/apk-keys"
	cp "$work/apk.pem" "$work/apk-keys/ripe-cidr-collector.pem"
	(cd "$dir" && apk mkndx --keys-dir "$work/apk-keys" --sign "$RELEASE_APK_KEY" \
		--allow-untrusted --output packages.adb ./*.apk) || die "apk mkndx failed in $dir"
	apk --keys-dir "$work/apk-keys" verify "$dir/packages.adb" >/dev/null \
		|| die "$dir/packages.adb does not verify with RELEASE_APK_KEY's public key"
}

sums() {
	(cd "$1" && find . -maxdepth 1 -type f -printf '%f\n' | LC_ALL=C sort | xargs sha256sum) \
		> "$work/SHA256SUMS"
	mv "$work/SHA256SUMS" "$1/SHA256SUMS"
}

check_versions
# Everything that can refuse is checked before anything is built.
usign_public
apk_public
signify_tool >/dev/null
command -v rustc >/dev/null 2>&1 || die "rustc is needed to build cross/po2lmo.rs (the translations)"
build_binaries
mkdir -p "$out"
out=$(cd "$out" && pwd)
openwrt/mkpkg-luci.sh "$work/luci"
for arch in "${archs[@]}"; do
	dir="$out/$arch"
	rm -rf "$dir"
	openwrt/mkpkg.sh "$arch" "${bins[$arch]}" "$dir"
	cp "$work/luci/"* "$dir/"
	write_index "$dir"
	sign_index "$dir"
	if has_apk3; then
		apk_index "$dir"
	fi
	sums "$dir"
done
mkdir -p "$out/keys"
cp "$work/usign.pub" "$out/keys/$fingerprint"
cp "$work/usign.pub" "$out/keys/usign.pub"
cp "$work/apk.pem" "$out/keys/ripe-cidr-collector.pem"
if ! has_apk3; then
	echo "release: no apk feed (packages.adb, .apk files): needs apk-tools 3 on PATH (the OpenWrt 25 SDK's" \
		"staging_dir/host/bin/apk); found: $(apk --version 2>/dev/null || echo none). The opkg feeds are complete."
fi
echo "release $version: ${archs[*]} in $out; usign key $fingerprint"
