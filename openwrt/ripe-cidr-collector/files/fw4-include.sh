#!/bin/sh
# fw4 script include (firewall.ripe_cidr, added by uci-defaults): fw4 sources this
# after every firewall start and reload. `fw4 flush` (and `/etc/init.d/firewall stop`)
# delete every nftables table, ours too. `ripe-cidr-collector render` writes every
# configured output again from the stored data: a `"load": "nft"` output refills the
# sets over netlink (no `nft` process and its memory), a script output is rewritten
# and its command run. Without the service enabled, or where render fails, the last
# rendered scripts of the UCI list ripe-cidr-collector.main.nft_file are loaded with
# `nft -f` instead (a missing one, no render yet since boot, is skipped).

# Sourced by fw4's shell: no `local` needed, names kept to a prefix of our own.
ripe_cidr_done=
# RIPE_CIDR_BIN: another binary, for the package's off-router test.
ripe_cidr_bin=${RIPE_CIDR_BIN:-/usr/bin/ripe-cidr-collector}
if [ "$(uci -q get ripe-cidr-collector.main.enabled)" = 1 ] && [ -x "$ripe_cidr_bin" ]; then
	ripe_cidr_dir=$(uci -q get ripe-cidr-collector.main.data_dir) || ripe_cidr_dir=/var/lib/ripe-cidr-collector
	ripe_cidr_db=$(uci -q get ripe-cidr-collector.main.db) || ripe_cidr_db="$ripe_cidr_dir/ripe.db"
	ripe_cidr_snap=$(uci -q get ripe-cidr-collector.main.snapshot) || ripe_cidr_snap=
	# (Its output is captured, not piped: ash has no pipefail, and the exit code
	# decides whether the fallback below runs.)
	if ripe_cidr_out=$("$ripe_cidr_bin" -q --data-dir "$ripe_cidr_dir" \
		--db "$ripe_cidr_db" ${ripe_cidr_snap:+--snapshot "$ripe_cidr_snap"} render 2>&1); then
		ripe_cidr_done=1
	fi
	[ -n "$ripe_cidr_out" ] && logger -t ripe-cidr-collector "firewall include: $ripe_cidr_out"
fi
if [ -z "$ripe_cidr_done" ]; then
	ripe_cidr_files=$(uci -q get ripe-cidr-collector.main.nft_file) || ripe_cidr_files=/tmp/ripe-cidr.nft
	for ripe_cidr_f in $ripe_cidr_files; do
		[ -s "$ripe_cidr_f" ] || continue
		nft -f "$ripe_cidr_f" \
			|| logger -t ripe-cidr-collector "firewall include: nft -f $ripe_cidr_f failed"
	done
fi
unset ripe_cidr_done ripe_cidr_bin ripe_cidr_out ripe_cidr_dir ripe_cidr_db ripe_cidr_snap ripe_cidr_files ripe_cidr_f
true
