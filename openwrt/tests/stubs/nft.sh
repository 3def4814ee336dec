#!/bin/sh
# Stand-in for nft, keeping tables as files in $NFT_STATE (one file per table, named
# FAMILY.NAME, one set name per line), and logging each call to $STUB_LOG. Understood:
# `list tables`; `-t list sets inet` in nft's format (a `table inet NAME {` line, a
# `set NAME {` block per set, `}`); `add table F N`; `delete table F N`; `-f FILE`
# (logged; a file with `add table inet ripe_cidr` creates that table).
set -u
state=${NFT_STATE:?}
mkdir -p "$state"
echo "nft $*" >> "$STUB_LOG"
case "$*" in
"list tables")
	for t in "$state"/*; do
		[ -e "$t" ] || continue
		t=${t##*/}
		echo "table ${t%%.*} ${t#*.}"
	done
	;;
"-t list sets inet")
	for t in "$state"/inet.*; do
		[ -e "$t" ] || continue
		echo "table inet ${t#*/inet.} {"
		while read -r s; do
			printf '\tset %s {\n\t\ttype ipv4_addr\n\t}\n' "$s"
		done < "$t"
		echo "}"
	done
	;;
"add table "*)
	touch "$state/$3.$4"
	;;
"delete table "*)
	[ -e "$state/$3.$4" ] || { echo "Error: No such file or directory" >&2; exit 1; }
	rm -f "$state/$3.$4"
	;;
"-f "*)
	grep -q '^add table inet ripe_cidr' "$2" && touch "$state/inet.ripe_cidr"
	;;
*)
	echo "nft stub: not modelled: $*" >&2
	exit 1
	;;
esac
