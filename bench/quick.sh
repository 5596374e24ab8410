#!/usr/bin/env bash
# Quick throughput figures for docs/benchmarks.md (the full suite is a later issue).
# Builds the release binary, starts it on loopback with the demo data in a temporary
# folder, drives it with wrk (installed from Debian's packages if missing), stops it.
# Also imports a 100,000-ATM file (timed) for the ATM scenarios.
# Usage: bench/quick.sh [seconds per scenario, default 10]
set -euo pipefail
cd "$(dirname "$0")/.."
duration=${1:-10}
command -v wrk >/dev/null || { apt-get update -qq && apt-get install -y -qq wrk; }
cargo build --release --locked --bin branch-atm >/dev/null
work=$(mktemp -d)
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
python3 bench/make_atms.py 100000 >"$work/atms.json"
start=$(date +%s%N)
./target/release/branch-atm --database-url "sqlite://$work/atms.db" atms import "$work/atms.json" >/dev/null
echo "import of 100,000 ATMs ($(du -h "$work/atms.json" | cut -f1)) into a new store: $(( ($(date +%s%N) - start) / 1000000 )) ms"
rm -f "$work"/atms.db*
./target/release/branch-atm --database-url "sqlite://$work/bench.db" --listen "127.0.0.1:$port" \
  --log-filter warn --rate-limit-per-second 1000000000 --rate-limit-burst 1000000000 >"$work/serve.log" 2>&1 &
server=$!
trap 'kill $server 2>/dev/null || true; rm -rf "$work"' EXIT
base="http://127.0.0.1:$port"
for _ in $(seq 1 100); do curl -fs "$base/api/health/ready" >/dev/null 2>&1 && break; sleep 0.1; done

uuid=3fa85f64-5717-4562-b3fc-2c963f66afa6
authorize="$base/api/v1/authorize?response_type=token&client_id=demo-mobile-app&businessCode=GCB&countryCode=MX&channelId=MOBILE"
curl -fsS -D "$work/h" -H "uuid: $uuid" "$authorize" >"$work/t.json"
token=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["access_token"])' "$work/t.json")
sid=$(grep -i '^sid:' "$work/h" | cut -d' ' -f2 | tr -d '\r')

wait_script() { # $1 = number of branches
  python3 - "$1" "$token" "$sid" "$uuid" >"$work/wait$1.lua" <<'PY'
import json, sys
n, token, sid, uuid = int(sys.argv[1]), sys.argv[2], sys.argv[3], sys.argv[4]
body = json.dumps({"branches": [{"branchId": f"{i:05d}"} for i in range(1, n + 1)]})
print('wrk.method = "POST"')
print(f"wrk.body = {json.dumps(body)}")
for k, v in {"Authorization": f"Bearer {token}", "sid": sid, "client_id": "demo-mobile-app", "uuid": uuid,
             "Accept": "application/json", "Content-Type": "application/json", "countryCode": "MX",
             "businessCode": "GCB", "ChannelId": "MOBILE"}.items():
    print(f'wrk.headers["{k}"] = "{v}"')
PY
}
wait_script 1; wait_script 100
printf 'wrk.headers["uuid"] = "%s"\n' "$uuid" >"$work/auth.lua"
printf 'wrk.headers["Authorization"] = "Bearer %s"\nwrk.headers["client_id"] = "demo-mobile-app"\n' "$token" >"$work/atm.lua"
curl -fsS -D "$work/atm_headers" -o /dev/null -H "Authorization: Bearer $token" -H "client_id: demo-mobile-app" "$base/api/v1/atms"
etag=$(grep -i '^etag:' "$work/atm_headers" | cut -d' ' -f2 | tr -d '\r')
{ cat "$work/atm.lua"; printf 'wrk.headers["If-None-Match"] = %s\n' "'$etag'"; } >"$work/atm304.lua"

run() { # name, wrk args...
  local name=$1; shift
  local out rps p50 p99
  out=$(wrk -t2 -c64 -d"${duration}s" --latency "$@")
  rps=$(awk '/Requests\/sec/ {print $2}' <<<"$out")
  p50=$(awk '$1=="50%" {print $2}' <<<"$out")
  p99=$(awk '$1=="99%" {print $2}' <<<"$out")
  printf '%-28s %12s %10s %10s\n' "$name" "$rps" "$p50" "$p99"
}
printf '%-28s %12s %10s %10s\n' scenario req/s p50 p99
run "health/live (baseline)" "$base/api/health/live"
run "wait times, 1 branch" -s "$work/wait1.lua" "$base/api/v1/open-banking/channels/branch/waittime/retrieve"
run "wait times, 100 branches" -s "$work/wait100.lua" "$base/api/v1/open-banking/channels/branch/waittime/retrieve"
run "authorize (durable token)" -s "$work/auth.lua" "$authorize"
run "ATM page 1 (200, demo set)" -s "$work/atm.lua" "$base/api/v1/atms"
run "ATM page 1 (304, demo set)" -s "$work/atm304.lua" "$base/api/v1/atms"
# The 100,000-ATM set replaces the demo ATMs while the service runs.
./target/release/branch-atm --database-url "sqlite://$work/bench.db" atms import "$work/atms.json" >/dev/null
sleep 3
run "ATM page 1 (200, 100k set)" -s "$work/atm.lua" "$base/api/v1/atms"
run "ATM near-me, 100k set" -s "$work/atm.lua" "$base/api/v1/atms?latitude=19.4326&longitude=-99.1332&radiusKm=25"
run "health/live (baseline)" "$base/api/health/live"

# One connection, one request at a time: p50 latency is mostly server time, and the
# difference to the baseline is what the scenario itself costs.
single() { # name, wrk args...
  local name=$1; shift
  printf '%-28s p50 %s\n' "$name" "$(wrk -t1 -c1 -d3s --latency "$@" | awk '$1=="50%" {print $2}')"
}
echo "one connection:"
single "health/live" "$base/api/health/live"
single "ATM page 1, 100k set" -s "$work/atm.lua" "$base/api/v1/atms"
single "ATM near-me, 100k set" -s "$work/atm.lua" "$base/api/v1/atms?latitude=19.4326&longitude=-99.1332&radiusKm=25"
single "ATM near-me, no radius" -s "$work/atm.lua" "$base/api/v1/atms?latitude=19.4326&longitude=-99.1332"
rss=$(awk '/VmHWM/ {print $2, $3}' /proc/$server/status)
echo "peak RSS: $rss"
