#!/bin/sh
# shellcheck shell=dash
# Runs the other script tests (init-test.sh, fw4-include-test.sh, apk-test.sh,
# dnsmasq-drop-in-test.sh) with the host's /etc, /var, /run, /tmp, /usr, /lib, /root,
# /opt and /srv behind overlays in a private mount namespace (a write lands in a tmpfs,
# never on the host) and a running product's files in place (config.json and ripe.db
# in /var/lib/ripe-cidr-collector, /etc/ripe-cidr-collector, /etc/config): afterwards
# those directories must be byte-identical. No test writes outside its own temporary
# directory (an init-test case once moved the host's config.json aside).
# Usage: unshare -m --propagation private sh openwrt/tests/host-test.sh SCRATCH
# (root; SCRATCH an empty directory outside the directories above, e.g. in target/).
set -u
here=$(cd "$(dirname "$0")" && pwd)
s=${1:?usage: unshare -m --propagation private sh host-test.sh SCRATCH}
mount -t tmpfs rcc-host-test "$s" || { echo "host-test: cannot mount a tmpfs on $s"; exit 2; }
watched=
for d in /etc /var /run /tmp /usr /lib /root /opt /srv; do
	# A link (/lib -> usr/lib) is covered by its target; a directory that holds the
	# scratch one would hide the overlays' upper directories.
	{ [ -d "$d" ] && [ ! -L "$d" ]; } || continue
	case "$s/" in "$d"/*)
		echo "note: $d holds $s: not watched"
		continue
		;;
	esac
	n=$(echo "$d" | tr / _)
	mkdir -p "$s/u$n" "$s/w$n"
	mount -t overlay rcc-host-test -o "lowerdir=$d,upperdir=$s/u$n,workdir=$s/w$n" "$d" \
		|| { echo "host-test: cannot put an overlay on $d"; exit 2; }
	watched="$watched $n"
done
mkdir -p "$s/tmpdir"
TMPDIR="$s/tmpdir"
export TMPDIR

# A product running on this host: its data directory (with a config.json a CLI wrote
# before the service's link existed), its flash files and UCI settings.
mkdir -p /var/lib/ripe-cidr-collector /etc/ripe-cidr-collector /etc/config
echo '{"asns": ["64496"]}' > /var/lib/ripe-cidr-collector/config.json
echo 'not a database' > /var/lib/ripe-cidr-collector/ripe.db
echo '{"asns": ["64497"]}' > /etc/ripe-cidr-collector/config.json
echo "config collector 'main'" > /etc/config/ripe-cidr-collector

# What every overlay holds: names, types, modes, link targets and contents.
state() {
	for n in $watched; do
		(cd "$s/u$n" && find . -printf "$n/%P %y %m %l\n" | LC_ALL=C sort \
			&& find . -type f -exec sha256sum {} + | sed "s|  \./|  $n/|" | LC_ALL=C sort -k 2)
	done
}
state > "$s/before"
failed=0
for t in init-test fw4-include-test apk-test dnsmasq-drop-in-test; do
	if sh "$here/$t.sh" > "$s/out" 2>&1 && grep -q "^$t: all passed" "$s/out"; then
		echo "ok   $t ran"
	else
		echo "FAIL $t did not pass here:"
		cat "$s/out"
		failed=1
	fi
done
state > "$s/after"
if cmp -s "$s/before" "$s/after"; then
	echo "ok   the host's files are byte-identical"
else
	echo "FAIL the script tests changed the host's files (- before, + after):"
	diff "$s/before" "$s/after"
	failed=1
fi
[ "$failed" = 0 ] && echo "host-test: all passed"
exit "$failed"
