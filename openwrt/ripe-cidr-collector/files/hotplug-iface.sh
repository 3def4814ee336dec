# shellcheck shell=ash
# Sourced by hotplug-call for netifd's interface events: an interface of
# trigger_interface is up (ifup only; procd's "interface.*" trigger took ifdown too).
[ "$ACTION" = ifup ] || exit 0
for i in $(uci -q get ripe-cidr-collector.main.trigger_interface); do
	[ "$i" = "$INTERFACE" ] && exec /etc/init.d/ripe-cidr-collector collect 2>/dev/null
done
