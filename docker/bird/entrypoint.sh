#!/bin/sh
# Starts BIRD on /etc/bird/bird.conf and runs `birdc configure` whenever an include
# in /bgp changes (checked every RCC_BIRD_POLL seconds, default 10). An include that
# does not exist yet is created empty, so that BIRD can start before the collector's
# first run; the collector itself never writes an empty include for a group with
# sources (docs/bgp.md).
set -eu
poll=${RCC_BIRD_POLL:-10}
sock=/run/bird/bird.ctl
sed -n 's/^[[:space:]]*include "\(\/bgp\/[^"]*\)".*/\1/p' /etc/bird/bird.conf \
  | while IFS= read -r f; do [ -e "$f" ] || : >"$f"; done
bird -f -c /etc/bird/bird.conf -s "$sock" &
bird_pid=$!
trap 'kill "$bird_pid"; wait "$bird_pid"; exit 0' TERM INT
sums() { cat /bgp/*.conf 2>/dev/null | cksum; }
last=$(sums)
while kill -0 "$bird_pid" 2>/dev/null; do
  sleep "$poll" &
  wait $! || true
  now=$(sums)
  if [ "$now" != "$last" ] && birdc -s "$sock" configure >/dev/null; then
    last=$now
  fi
done
wait "$bird_pid"
