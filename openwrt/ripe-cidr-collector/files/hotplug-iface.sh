# shellcheck shell=ash
# /etc/hotplug.d/iface/95-ripe-cidr-collector, sourced by hotplug-call for netifd's
# interface events: when one of trigger_interface comes up (ACTION ifup, never
# ifdown or ifupdate), the daemon collects now. Not a procd interface trigger: procd
# matches "interface.*.up" by its prefix, so interface.down fired it too.
[ "$ACTION" = ifup ] || exit 0
for i in $(uci -q get ripe-cidr-collector.main.trigger_interface); do
	[ "$i" = "$INTERFACE" ] && exec /etc/init.d/ripe-cidr-collector collect 2>/dev/null
done
