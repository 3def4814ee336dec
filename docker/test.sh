#!/usr/bin/env bash
# End-to-end test of the Docker deployment (Dockerfile + compose.yaml), without
# pulling any image: a static musl binary built on the host goes into the Dockerfile's
# `runtime-prebuilt` target (FROM scratch), compose.yaml runs it with the test
# override docker/compose.test.yaml (that image, quick health checks) and the API
# published on a free port of 127.0.0.1, and a fake RIPEstat serves
# tests/fixtures/ripestat/AS62041.json on the host side of the compose network (its
# gateway address: the host's own bridge, nothing outside this machine).
#
# Checks: the legacy files put into the fresh volume are imported exactly once
# although both services start at the same moment; both services become healthy;
# what `collector` collected is served by `api`; `down` + `up` keeps the data.
#
#   docker/test.sh            (as root or a member of the docker group)
#
# BIN=path uses that static binary instead of building one. Exits 0 with a "skip:"
# line when docker, a running dockerd, compose or the musl toolchain is missing.
set -euo pipefail
cd "$(dirname "$0")/.."

skip() { echo "skip: $*"; exit 0; }
fail() { echo "FAIL: $*" >&2; exit 1; }
step() { echo "== $*"; }

command -v docker >/dev/null || skip "no docker command (install docker.io)"
docker info >/dev/null 2>&1 || skip "dockerd is not running or not reachable (start it: dockerd &)"
if docker compose version >/dev/null 2>&1; then
  compose_cmd=(docker compose)
elif command -v docker-compose >/dev/null; then
  compose_cmd=(docker-compose)
else
  skip "neither 'docker compose' nor docker-compose is installed"
fi
command -v python3 >/dev/null || skip "python3 is needed for the fake RIPEstat"
command -v curl >/dev/null || skip "curl is needed to ask the API"

target=x86_64-unknown-linux-musl
if [ -z "${BIN:-}" ]; then
  rustup target list --installed 2>/dev/null | grep -qx "$target" ||
    skip "rust target $target missing (rustup target add $target)"
  command -v musl-gcc >/dev/null || skip "musl-gcc missing (apt-get install musl-tools)"
  step "cargo build --release --target $target"
  cargo build --release --target "$target" --quiet
  BIN=target/$target/release/ripe-cidr-collector
fi
file "$BIN" 2>/dev/null | grep -q 'static' || echo "warning: $BIN may not be static"

work=$(mktemp -d)
project=rcctest$$
image=ripe-cidr-collector:test-$$
fake_pid=
compose() {
  RCC_IMAGE=$image RIPE_API_PORT=$api_port "${compose_cmd[@]}" -p "$project" \
    -f compose.yaml -f docker/compose.test.yaml "$@"
}
cleanup() {
  set +e
  if [ -n "${api_port:-}" ]; then compose down -v --remove-orphans >/dev/null 2>&1; fi
  [ -n "$fake_pid" ] && kill "$fake_pid" 2>/dev/null
  docker image rm "$image" >/dev/null 2>&1
  rm -rf "$work"
}
trap cleanup EXIT

step "docker build --target runtime-prebuilt (FROM scratch)"
ctx=$work/context
mkdir -p "$ctx/empty"
cp "$BIN" "$ctx/ripe-cidr-collector"
ca=/etc/ssl/certs/ca-certificates.crt
[ -f "$ca" ] || skip "no CA bundle at $ca to put into the image"
cp "$ca" "$ctx/ca-certificates.crt"
docker build -q --target runtime-prebuilt -t "$image" -f Dockerfile "$ctx" >/dev/null
docker image ls "$image" --format 'image {{.Repository}}:{{.Tag}}: {{.Size}}'

api_port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
step "compose up --no-start: network, volume, containers"
compose up --no-start >/dev/null 2>&1 || compose up --no-start

step "fake RIPEstat on the compose network's gateway"
gateway=$(docker network inspect -f '{{range .IPAM.Config}}{{.Gateway}}{{end}}' "${project}_default")
[ -n "$gateway" ] || fail "no gateway address for network ${project}_default"
python3 docker/fake_ripestat.py "$gateway" tests/fixtures/ripestat/AS62041.json \
  "$work/requests.log" >"$work/fake.port" &
fake_pid=$!
for _ in $(seq 50); do [ -s "$work/fake.port" ] && break; sleep 0.1; done
fake_port=$(cat "$work/fake.port")
[ -n "$fake_port" ] || fail "the fake RIPEstat did not start on $gateway"
echo "fake RIPEstat at http://$gateway:$fake_port, API at 127.0.0.1:$api_port"

step "volume with config.json and the legacy files, before the first start"
volume_dir=$(docker volume inspect -f '{{.Mountpoint}}' "${project}_data")
[ -d "$volume_dir" ] || fail "volume ${project}_data has no local mount point"
old=$work/old
mkdir "$old"
cp tests/fixtures/legacy/data.json tests/fixtures/legacy/fqdn_data.json "$old/"
# ttl_days 0: the fixtures' dates never expire, whatever today is.
cat >"$old/config.json" <<EOF
{"asns": ["62041"], "fqdns": [], "ttl_days": 0,
 "ripe": {"url": "http://$gateway:$fake_port/data/announced-prefixes/data.json"}}
EOF
# As docs/docker.md says: readable, copied into the created (not started) container.
# (They arrive owned by root; the volume directory itself is the image user's, which
# is all the import's renames and the atomic rewrites of config.json need.)
chmod 644 "$old"/*
docker cp "$old/." "$(compose ps -aq collector):/data/"

health_of() { docker inspect -f '{{.State.Health.Status}}' "$(compose ps -q "$1")"; }
wait_healthy() {
  for _ in $(seq 60); do
    if [ "$(health_of collector)" = healthy ] && [ "$(health_of api)" = healthy ]; then
      echo "collector: healthy, api: healthy"
      return 0
    fi
    sleep 1
  done
  compose logs --no-color | tail -40
  fail "not both healthy after 60 s: collector $(health_of collector), api $(health_of api)"
}
addresses() { curl -fsS "http://127.0.0.1:$api_port/addresses"; }
wait_collected() {
  for _ in $(seq 60); do
    addresses 2>/dev/null | grep -qx '91.108.56.0/22' && return 0
    sleep 1
  done
  compose logs --no-color | tail -40
  fail "the collected prefix 91.108.56.0/22 never showed up in GET /addresses"
}
imports() { compose logs --no-color 2>/dev/null | grep -c 'imported .* values from' || true; }
check_data() {
  local list
  list=$(addresses)
  for v in 91.108.56.0/22 2001:b28:f23d::/48 1.1.1.0/24 2606:4700::/32 93.184.216.34; do
    grep -qx "$v" <<<"$list" || fail "$v missing from GET /addresses"
  done
  health=$(curl -fsS "http://127.0.0.1:$api_port/health")
  # 12 collected for AS62041 (4 of them also legacy) + 3 legacy AS13335; 3 legacy FQDN.
  grep -q '"counts":{"asn":15,"fqdn":3}' <<<"$health" || fail "unexpected counts: $health"
  local migrated
  migrated=$(cd "$volume_dir" && ls)
  if [ "$(grep -c '^data\.json\.migrated-' <<<"$migrated")" != 1 ] ||
    [ "$(grep -c '^fqdn_data\.json\.migrated-' <<<"$migrated")" != 1 ] ||
    grep -qx 'data.json\|fqdn_data.json' <<<"$migrated"; then
    fail "expected exactly one *.migrated-* pair and no legacy file left: $migrated"
  fi
  echo "data: $(wc -l <<<"$list") addresses served; $health"
}

step "compose up (both services at the same moment)"
compose up -d >/dev/null 2>&1 || compose up -d
wait_healthy
wait_collected
check_data
n=$(imports)
[ "$n" = 1 ] || fail "the legacy import ran $n times (want 1)"
echo "legacy import logged once; RIPEstat asked $(wc -l <"$work/requests.log") time(s)"
find "$volume_dir" -maxdepth 1 -printf '  %u:%g %m %f\n'

step "compose down, then up: the data stays"
compose down >/dev/null 2>&1
compose up -d >/dev/null 2>&1 || compose up -d
wait_healthy
check_data
n=$(imports)
[ "$n" = 0 ] || fail "the legacy import ran again after down/up"

step "healthcheck turns unhealthy when the daemon stops"
docker stop "$(compose ps -q collector)" >/dev/null
if docker run --rm -v "${project}_data:/data" "$image" healthcheck daemon --max-age 3600; then
  fail "healthcheck daemon passed for a stopped daemon"
fi
step "profile bgp: BIRD 2 (Debian's bird2) announces the collector's includes"
# The image needs a Debian base: BIRD_BASE (default debian:bookworm-slim) present
# locally or pullable; without one this part is skipped, saying so.
bird_base=${BIRD_BASE:-debian:bookworm-slim}
bird_image=ripe-cidr-bird:test-$$
if ! docker image inspect "$bird_base" >/dev/null 2>&1 && ! docker pull -q "$bird_base" >/dev/null 2>&1; then
  echo "skip (bgp): no Debian base image $bird_base here and none can be pulled"
  echo "PASS"
  exit 0
fi
docker build -q --build-arg BASE="$bird_base" -t "$bird_image" docker/bird >/dev/null
trap 'bgp down -v --remove-orphans >/dev/null 2>&1; cleanup; docker image rm "$bird_image" >/dev/null 2>&1' EXIT
# The daemon re-reads config.json when it changes: a bird output per family.
cat >"$volume_dir/config.json.new" <<EOF
{"asns": ["62041"], "ttl_days": 0, "bgp_community": "65000:100",
 "ripe": {"url": "http://$gateway:$fake_port/data/announced-prefixes/data.json"},
 "outputs": [{"format": "bird", "family": 4, "via": "blackhole", "path": "/bgp/vpn_v4.conf"},
             {"format": "bird", "family": 6, "via": "blackhole", "path": "/bgp/vpn_v6.conf"}]}
EOF
chmod 644 "$volume_dir/config.json.new"
mv "$volume_dir/config.json.new" "$volume_dir/config.json"
bgp_port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
bgp() { RIPE_BGP_PORT=$bgp_port RCC_BIRD_IMAGE=$bird_image compose --profile bgp "$@"; }
bgp up -d >/dev/null 2>&1 || bgp up -d
routes=
for _ in $(seq 120); do
  routes=$(bgp exec -T bird birdc -s /run/bird/bird.ctl show route count 2>/dev/null |
    awk '/routes/ {print $1; exit}')
  [ "${routes:-0}" -gt 0 ] && break
  sleep 1
done
if [ "${routes:-0}" -eq 0 ]; then
  bgp logs --no-color | tail -40
  fail "BIRD has no route from /bgp"
fi
bgp exec -T bird birdc -s /run/bird/bird.ctl show route all | grep -q 'BGP.community: (65000,100)' ||
  fail "BIRD's routes do not carry the community 65000:100"
echo "bird: $routes routes from the collector's includes, community (65000,100)"
bgp down >/dev/null 2>&1
echo "PASS"
