#!/bin/sh
# fw4 script include (firewall.ripe_cidr, added by uci-defaults), run after every
# firewall start, reload and restart while fw4 holds its lock, killed after 30 s: so
# quick, and never `fw4` or an output's command. When our table lost its sets (`fw4
# flush`), loads them again in the background: `render --load-only`, then `nft -f` of
# each UCI nft_file. Why, and what fw4 does: docs/openwrt.md, "Firewall: the sets
# survive fw4".

# Sourced by fw4's shell: names kept to a prefix of our own, unset at the end. Every
# path comes from UCI, which the LuCI app's grant may write, and is used as root here:
# each is checked by the init script's rules (path-check.sh) first.
ripe_cidr_include() {
	# RIPE_CIDR_BIN, RIPE_CIDR_LIB: another binary and path-check.sh, for the
	# package's off-router tests.
	ripe_cidr_bin=${RIPE_CIDR_BIN:-/usr/bin/ripe-cidr-collector}
	ripe_cidr_lib=${RIPE_CIDR_LIB:-/usr/share/ripe-cidr-collector/path-check.sh}
	if [ ! -r "$ripe_cidr_lib" ]; then
		logger -t ripe-cidr-collector -p daemon.err "firewall include: cannot read $ripe_cidr_lib: sets not loaded"
		return 0
	fi
	# shellcheck source=/dev/null
	. "$ripe_cidr_lib"
	ripe_cidr_dir=$(uci -q get ripe-cidr-collector.main.data_dir) || ripe_cidr_dir=$RIPE_CIDR_DATA_DIR
	ripe_cidr_db=$(uci -q get ripe-cidr-collector.main.db) || ripe_cidr_db="$ripe_cidr_dir/ripe.db"
	[ -e "$ripe_cidr_db" ] || return 0
	# `-t list sets` names the sets without their elements: a few milliseconds and KB
	# whatever their size (`list tables` and `list set` fetch every element first).
	nft -t list sets inet 2>/dev/null \
		| awk '$1 == "table" { t = ($3 == "ripe_cidr") } t && $1 == "set" { f = 1 } END { exit !f }' \
		&& return 0
	ripe_cidr_files=$(uci -q get ripe-cidr-collector.main.nft_file) || ripe_cidr_files=
	ripe_cidr_load=
	if [ "$(uci -q get ripe-cidr-collector.main.enabled)" = 1 ] && [ -x "$ripe_cidr_bin" ]; then
		ripe_cidr_load=1
	fi
	# The binary moves a database it cannot read aside (db=/etc/shadow would become
	# /etc/shadow.corrupt-TIME): no load from a path the init script would refuse.
	if [ -n "$ripe_cidr_load" ]; then
		ripe_cidr_allowed data_dir "$ripe_cidr_dir" dir && ripe_cidr_allowed db "$ripe_cidr_db" db \
			|| ripe_cidr_load=
	fi
	(
		if [ -n "$ripe_cidr_load" ]; then
			"$ripe_cidr_bin" --syslog --data-dir "$ripe_cidr_dir" --db "$ripe_cidr_db" \
				render --load-only \
				|| logger -t ripe-cidr-collector -p daemon.err "firewall include: render --load-only failed"
		fi
		for ripe_cidr_f in $ripe_cidr_files; do
			# Run as root by `nft -f`: only a file the init script allows.
			ripe_cidr_allowed nft_file "$ripe_cidr_f" nft || continue
			[ -s "$ripe_cidr_f" ] || continue
			nft -f "$ripe_cidr_f" \
				|| logger -t ripe-cidr-collector -p daemon.err "firewall include: nft -f $ripe_cidr_f failed"
		done
	) </dev/null >/dev/null 2>&1 &
}

# ripe_cidr_allowed OPTION VALUE KIND: true when VALUE passes path-check.sh's rules for
# KIND; else logs which option was refused and why, and is false.
ripe_cidr_allowed() {
	ripe_cidr_why=$(ripe_cidr_path_why "$3" "$2")
	[ -z "$ripe_cidr_why" ] && return 0
	logger -t ripe-cidr-collector -p daemon.err \
		"firewall include: option $1 '$2' refused: $ripe_cidr_why; not loaded"
	return 1
}

ripe_cidr_include
unset -f ripe_cidr_include ripe_cidr_allowed ripe_cidr_path_rule ripe_cidr_path_why ripe_cidr_owner_why
unset ripe_cidr_bin ripe_cidr_lib ripe_cidr_dir ripe_cidr_db ripe_cidr_files ripe_cidr_load \
	ripe_cidr_why RIPE_CIDR_CONF_DIR RIPE_CIDR_DATA_DIR RIPE_CIDR_ROOTS RIPE_CIDR_USER
true
