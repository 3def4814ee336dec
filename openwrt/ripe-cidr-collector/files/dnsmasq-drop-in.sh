#!/bin/sh
# The dnsmasq output's command (config.json: "command":
# "/usr/share/ripe-cidr-collector/dnsmasq-drop-in.sh FILE"), run when FILE changed:
# copies FILE into the conf-dir of every dnsmasq instance and restarts dnsmasq. Where
# dnsmasq lacks what FILE needs (nftset) or `dnsmasq --test` refuses it, an old copy is
# removed instead, the reason logged, and the script fails (docs/openwrt.md, "Domain routing through dnsmasq").
# Conf-dirs: the running instances' conf-dir=, else dhcp.@dnsmasq[0].confdir, else
# /tmp/dnsmasq.d; ripe-cidr-collector.main.dnsmasq_confdir overrides them. Off-router
# tests set RIPE_CIDR_DNSMASQ, RIPE_CIDR_DNSMASQ_INIT, RIPE_CIDR_VAR_ETC, RIPE_CIDR_UID.
set -u
src=${1:?usage: dnsmasq-drop-in.sh FILE}
name=ripe-cidr-collector.conf
bin=${RIPE_CIDR_DNSMASQ:-/usr/sbin/dnsmasq}
init=${RIPE_CIDR_DNSMASQ_INIT:-/etc/init.d/dnsmasq}
etc=${RIPE_CIDR_VAR_ETC:-/var/etc}

say() {
	logger -t ripe-cidr-collector "dnsmasq: $*"
	echo "$*" >&2
}

# dnsmasq's conf-dir and its init script are root's: the daemon's own user (the
# default `option user 'ripe-cidr'`) can do neither.
if [ "${RIPE_CIDR_UID:-$(id -u)}" != 0 ]; then
	say "dnsmasq-drop-in.sh needs root: set option user 'root' in /etc/config/ripe-cidr-collector"
	exit 1
fi

confdirs() {
	dirs=$(uci -q get ripe-cidr-collector.main.dnsmasq_confdir) && { echo "$dirs"; return; }
	# conf-dir=DIR[,exclusions]: the directory alone.
	dirs=$(sed -n 's/^conf-dir=\([^,]*\).*/\1/p' "$etc"/dnsmasq.conf.* 2>/dev/null | sort -u)
	[ -n "$dirs" ] && { echo "$dirs"; return; }
	uci -q get 'dhcp.@dnsmasq[0].confdir' || echo /tmp/dnsmasq.d
}

# What the lines need, and whether this dnsmasq was built with it ("nftset" in its
# compile-time options; "no-nftset" when it was left out), for a useful message; then
# dnsmasq's own syntax check of the file decides.
need=
grep -q '^nftset=' "$src" && need=nftset
grep -q '^ipset=' "$src" && need="$need ipset"
options=" $("$bin" --version 2>/dev/null | sed -n 's/^Compile time options: //p') "
missing=
for n in $need; do
	case "$options" in
		*" $n "*) ;;
		*) missing="$missing $n" ;;
	esac
done
refused=
if [ -n "$missing" ]; then
	refused="this dnsmasq lacks${missing} support (opkg remove dnsmasq && opkg install dnsmasq-full)"
elif ! checked=$("$bin" --test --conf-file="$src" 2>&1); then
	refused="dnsmasq --test refuses $src: $(echo "$checked" | tail -n 1)"
fi

changed=
for dir in $(confdirs); do
	if [ -n "$refused" ]; then
		[ -e "$dir/$name" ] && rm -f "$dir/$name" && changed=1
	else
		mkdir -p "$dir" && cp "$src" "$dir/.$name.new" && mv "$dir/.$name.new" "$dir/$name" \
			&& changed=1
	fi
done
if [ -n "$changed" ]; then
	"$init" restart || { say "restarting dnsmasq failed"; exit 1; }
fi
if [ -n "$refused" ]; then
	say "drop-in not installed: $refused"
	exit 1
fi
exit 0
