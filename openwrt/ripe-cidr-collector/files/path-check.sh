# shellcheck shell=ash
# The rules for the path options of /etc/config/ripe-cidr-collector (data_dir, db,
# snapshot, nft_file), sourced by all that runs as root with one: the init script, the
# fw4 include and the LuCI app's rpcd plugin. Whoever may write UCI is not root, and a
# path elsewhere would let root hand over, move aside or run a system file. The LuCI
# form (settings.js, pathCheck) repeats ripe_cidr_path_rule: keep the two the same
# (tests/it/luci_settings.rs runs both on one list of paths).

RIPE_CIDR_CONF_DIR=/etc/ripe-cidr-collector
RIPE_CIDR_DATA_DIR=/var/lib/ripe-cidr-collector
# Where path options may point besides the package's own directories: RAM and
# mounted storage.
RIPE_CIDR_ROOTS="/tmp /var /mnt /overlay"
# The daemon's user, who may own what root uses.
RIPE_CIDR_USER=$(uci -q get ripe-cidr-collector.main.user 2>/dev/null) || RIPE_CIDR_USER=ripe-cidr

# ripe_cidr_path_rule KIND VALUE: prints why VALUE may not be an option of KIND (dir:
# data_dir, which becomes the daemon's user's whole, so its name must say it is ours;
# db; snapshot; nft), from its text alone; prints nothing when it may.
ripe_cidr_path_rule() {
	local kind="$1" p="$2" why='' inside='' root places=''
	case "$p" in
	*[!A-Za-z0-9._/-]* | *..* | *//* | */) why="use an absolute path of letters, digits and ._-/" ;;
	/?*) ;;
	*) why="not an absolute path" ;;
	esac
	case "$p/" in "$RIPE_CIDR_CONF_DIR"/* | "$RIPE_CIDR_DATA_DIR"/*) inside=1 ;; esac
	for root in $RIPE_CIDR_ROOTS; do
		case "$p" in "$root"/?*) inside=${inside:-root} ;; esac
		places="$places, $root"
	done
	case "$kind:$p" in nft:/etc/ripe-cidr-*.nft) inside=1 ;; esac
	case "$kind:$inside:${p##*/}" in
	*::*) why=${why:-"only under $RIPE_CIDR_CONF_DIR, $RIPE_CIDR_DATA_DIR$places"} ;;
	dir:1:* | dir:root:*ripe-cidr*) ;;
	dir:*) why=${why:-"its name must contain ripe-cidr (it is given to the daemon's user)"} ;;
	db:*.db | snapshot:*.db | snapshot:*.snapshot | nft:*.nft) ;;
	nft:*) why=${why:-"the file name must end in .nft"} ;;
	*) why=${why:-"the file name must end in .db (a snapshot: .snapshot)"} ;;
	esac
	printf '%s' "$why"
}

# ripe_cidr_path_why KIND VALUE: ripe_cidr_path_rule, then what is there. A directory
# or nft file must be one, and not a symbolic link: root would chown, fill or run its
# target. An existing database or snapshot must be one of ours (SQLite, our
# snapshot's magic, or empty: just made), whatever a link points to, since root moves
# a file that is neither aside; a dangling link is what an earlier version left in
# the data directory (the init script replaces it). Then ripe_cidr_owner_why of it
# (and of an nft file's directory). Prints nothing when VALUE may be used.
ripe_cidr_path_why() {
	local kind="$1" p="$2" why head
	why=$(ripe_cidr_path_rule "$kind" "$p")
	[ -n "$why" ] && { printf '%s' "$why"; return 0; }
	case "$kind" in
	dir | nft)
		if [ -L "$p" ]; then
			why="a symbolic link (to $(readlink "$p"))"
		elif [ "$kind" = dir ] && [ -e "$p" ] && [ ! -d "$p" ]; then
			why="not a directory"
		elif [ "$kind" = nft ] && [ -e "$p" ] && [ ! -f "$p" ]; then
			why="not a file"
		fi
		;;
	esac
	[ -n "$why" ] || [ "$kind" != nft ] || { why=$(ripe_cidr_owner_why "${p%/*}"); why=${why:+"its directory is $why"}; }
	[ -n "$why" ] || why=$(ripe_cidr_owner_why "$p")
	case "$why:$kind" in
	:db | :snapshot)
		head=$(head -c 15 "$p" 2>/dev/null)
		[ ! -e "$p" ] || { [ -f "$p" ] && { [ ! -s "$p" ] || [ "$head" = "SQLite format 3" ] \
			|| [ "${head%"${head#RIPESNAP}"}" = RIPESNAP ]; }; } \
			|| why="not a database or snapshot of ours"
		;;
	esac
	printf '%s' "$why"
}

# ripe_cidr_owner_why PATH: why PATH, if it exists, is not root's (the caller's) or
# the daemon's user's alone: another user could swap what root runs or chowns.
ripe_cidr_owner_why() {
	[ -e "$1" ] || return 0
	# shellcheck disable=SC2046 # no spaces (ripe_cidr_path_rule)
	set -- $(ls -ldL "$1")
	case "$3" in root | "$RIPE_CIDR_USER" | "$(id -un 2>/dev/null)") ;; *) printf 'owned by %s' "$3" && return ;; esac
	case "$1" in ?????w* | ????????w*) printf 'writable by others (%s)' "$1" ;; esac
}
