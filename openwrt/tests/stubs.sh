# shellcheck shell=dash
# Off-router stand-ins for what /etc/rc.common and /lib/functions.sh give an init
# script: UCI reads come from shell variables UCI_<section>_<option> set by the test
# (lists space-separated, as config_get returns them), and every procd call is written
# as one line to "$STUB_LOG" for the test to compare.

config_load() { echo "config_load $1" >> "$STUB_LOG"; }

# Like the real one: an unset or empty option gives the default.
config_get() {
	eval "$1=\${UCI_$2_$3:-\$4}"
}

config_get_bool() {
	local v
	eval "v=\${UCI_$2_$3:-\$4}"
	case "$v" in
		1 | on | true | yes | enabled) v=1 ;;
		0 | off | false | no | disabled) v=0 ;;
		*) v="$4" ;;
	esac
	eval "$1=\$v"
}

logger() { echo "logger $*" >> "$STUB_LOG"; }

# The instance's command line, printed whole when the instance is closed.
procd_open_instance() { STUB_CMD=; echo "instance $1" >> "$STUB_LOG"; }
procd_set_param() {
	local k="$1"
	shift
	if [ "$k" = command ]; then STUB_CMD="$*"; else echo "param $k $*" >> "$STUB_LOG"; fi
}
procd_append_param() {
	shift
	STUB_CMD="$STUB_CMD $*"
}
procd_close_instance() { echo "command $STUB_CMD" >> "$STUB_LOG"; }
procd_add_reload_trigger() { echo "reload_trigger $*" >> "$STUB_LOG"; }
procd_add_interface_trigger() { echo "interface_trigger $*" >> "$STUB_LOG"; }
procd_send_signal() { echo "signal $*" >> "$STUB_LOG"; }
# rc.common's, since OpenWrt 21.02.
extra_command() { echo "extra_command $*" >> "$STUB_LOG"; }
# procd.sh's asks ubus whether the instance runs; here STUB_RUNNING says.
procd_running() { [ "${STUB_RUNNING:-1}" = 1 ]; }
procd_add_jail() { echo "jail $*" >> "$STUB_LOG"; }
