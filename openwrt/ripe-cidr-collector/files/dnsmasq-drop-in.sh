#!/bin/sh
# The dnsmasq output's command (config.json: "command":
# "/usr/share/ripe-cidr-collector/dnsmasq-drop-in.sh FILE"). The daemon runs it only
# when FILE changed. It copies FILE into the conf-dir of every dnsmasq instance and
# restarts dnsmasq, which reads conf-dir files only when it starts.
#
# The default `dnsmasq` package has no nftset (nor ipset) support, and a line it does
# not know stops dnsmasq from starting, and DNS and DHCP with it. Where the dnsmasq
# binary lacks what FILE's lines need, or `dnsmasq --test` refuses FILE, the drop-in
# is therefore not installed: an old copy is removed (dnsmasq restarted without it),
# the reason is logged, and the script fails, so the output's error (status.json,
# logread) says what to install. The daemon runs it again at the output's retries.
#
# The conf-dirs are those the running instances were given (conf-dir= in their
# generated /var/etc/dnsmasq.conf.*), else uci's dhcp.@dnsmasq[0].confdir, else
# /tmp/dnsmasq.d; ripe-cidr-collector.main.dnsmasq_confdir overrides them all.
# RIPE_CIDR_DNSMASQ, RIPE_CIDR_DNSMASQ_INIT and RIPE_CIDR_VAR_ETC point elsewhere
# (and RIPE_CIDR_UID the user id) for the package's off-router test.
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
