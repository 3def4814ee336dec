#!/bin/sh
# fw4 script include (firewall.ripe_cidr, added by uci-defaults): fw4 sources this
# after every firewall start and reload. `fw4 flush` (and `/etc/init.d/firewall stop`)
# delete every nftables table, ours too; loading the last rendered scripts again
# brings table inet ripe_cidr back at the next start without waiting for the daemon.
# The files are the UCI list ripe-cidr-collector.main.nft_file; a missing one (no
# render yet since boot) is skipped: the daemon renders its outputs when it starts.

# Sourced by fw4's shell: no `local` needed, names kept to a prefix of our own.
ripe_cidr_files=$(uci -q get ripe-cidr-collector.main.nft_file) || ripe_cidr_files=/tmp/ripe-cidr.nft
for ripe_cidr_f in $ripe_cidr_files; do
	[ -s "$ripe_cidr_f" ] || continue
	nft -f "$ripe_cidr_f" \
		|| logger -t ripe-cidr-collector "firewall include: nft -f $ripe_cidr_f failed"
done
unset ripe_cidr_files ripe_cidr_f
true
