#!/usr/bin/env bash
# Property-based conformance run: schemathesis (from PyPI, in a virtual environment)
# against a live server on loopback, every check, several fixed seeds (each seed walks
# other examples; a failure names its seed and replays). Stops everything by
# itself. One worker: hypothesis' source inspection is not thread-safe on CPython 3.11
# (a SystemError "AST constructor recursion depth mismatch" with two workers).
# Usage: .ci/schemathesis.sh [path to branch-atm binary]
set -euo pipefail
cd "$(dirname "$0")/.."
# The server gets exactly the settings written below, none of the caller's.
for name in $(compgen -e | grep -i '^BRANCH_ATM_' || true); do unset "$name"; done
binary=${1:-target/debug/branch-atm}
venv=${SCHEMATHESIS_VENV:-target/schemathesis-venv}
seeds=${SCHEMATHESIS_SEEDS:-20261121 20261122 4242}

if [ ! -x "$venv/bin/st" ]; then
  python3 -m venv "$venv"
  "$venv/bin/pip" install --quiet --disable-pip-version-check 'schemathesis>=4.32,<5'
fi
# For a bank system's key: its assertion is signed here (Ed25519).
"$venv/bin/python" -c 'import cryptography' 2>/dev/null ||
  "$venv/bin/pip" install --quiet --disable-pip-version-check 'cryptography>=42'

"$venv/bin/st" --version

work=$(mktemp -d)
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
# The store: a new SQLite file, or with SCHEMATHESIS_POSTGRES_URL (a server URL whose
# user may create databases) a new database on that server, dropped at the end.
database_url="sqlite://$work/st.db"
cleanup() { :; }
if [ -n "${SCHEMATHESIS_POSTGRES_URL:-}" ]; then
  database="branch_atm_schemathesis_$$"
  psql "$SCHEMATHESIS_POSTGRES_URL" -qc "CREATE DATABASE $database"
  database_url=$(python3 -c 'import sys, urllib.parse as u; p = u.urlsplit(sys.argv[1]); print(u.urlunsplit(p._replace(path="/" + sys.argv[2])))' \
    "$SCHEMATHESIS_POSTGRES_URL" "$database")
  cleanup() { psql "$SCHEMATHESIS_POSTGRES_URL" -qc "DROP DATABASE IF EXISTS $database WITH (FORCE)" || true; }
fi
"$binary" --database-url "$database_url" --listen "127.0.0.1:$port" --log-filter warn --shutdown-drain-ms 0 \
  --rate-limit-per-second 100000 --rate-limit-burst 100000 \
  --session-rate-limit-per-second 100000 --session-rate-limit-burst 100000 \
  --caller-rate-limit-per-second 100000 --caller-rate-limit-burst 100000 \
  --issue-rate-limit-per-second 100000 --issue-rate-limit-burst 100000 \
  --issue-client-rate-limit-per-second 100000 --issue-client-rate-limit-burst 100000 >"$work/serve.log" 2>&1 &
server=$!
trap 'kill $server 2>/dev/null || true; wait $server 2>/dev/null || true; cleanup; rm -rf "$work"' EXIT
base="http://127.0.0.1:$port"
for _ in $(seq 1 100); do curl -fs "$base/api/health/ready" >/dev/null 2>&1 && break; sleep 0.2; done

curl -fsS -D "$work/headers" -H "uuid: 3fa85f64-5717-4562-b3fc-2c963f66afa6" \
  "$base/api/v1/authorize?response_type=token&client_id=demo-mobile-app&businessCode=GCB&countryCode=MX&channelId=MOBILE" \
  >"$work/token.json"
ST_TOKEN=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["access_token"])' "$work/token.json")
ST_SID=$(grep -i '^sid:' "$work/headers" | cut -d' ' -f2 | tr -d '\r')
export ST_TOKEN ST_SID

# A bank system with scopes queue:write and atm:write, and a token of it, so the queue
# events and ATM state events operations are reached, not only refused: its key made and its assertion signed in Python.
"$venv/bin/python" - "$work" "$base" <<'PY'
import base64, json, sys, time, uuid
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat
work, base = sys.argv[1], sys.argv[2]
b64 = lambda data: base64.urlsafe_b64encode(data).rstrip(b"=").decode()
key = Ed25519PrivateKey.generate()
public = key.public_key().public_bytes(Encoding.Raw, PublicFormat.Raw)
open(f"{work}/system.jwks", "w").write(json.dumps({"keys": [{"kty": "OKP", "crv": "Ed25519", "x": b64(public)}]}))
claims = {"iss": "st-queue", "sub": "st-queue", "aud": f"{base}/api", "exp": int(time.time()) + 300, "jti": str(uuid.uuid4())}
signed = b64(json.dumps({"alg": "EdDSA"}).encode()) + "." + b64(json.dumps(claims).encode())
open(f"{work}/assertion", "w").write(signed + "." + b64(key.sign(signed.encode())))
PY
"$binary" --database-url "$database_url" systems add st-queue --jwks-file "$work/system.jwks" --scopes "queue:write atm:write" >/dev/null
ST_SYSTEM_TOKEN=$(curl -fsS "$base/api/v1/token" -d grant_type=client_credentials \
  -d client_assertion_type=urn:ietf:params:oauth:client-assertion-type:jwt-bearer \
  --data-urlencode "client_assertion=$(cat "$work/assertion")" |
  python3 -c 'import json,sys; print(json.load(sys.stdin)["access_token"])')
export ST_SYSTEM_TOKEN

for seed in $seeds; do
  echo "--- schemathesis, seed $seed"
  "$venv/bin/st" --config-file .ci/schemathesis.toml run "$base/api/openapi.json" \
    --checks all --seed "$seed" --workers 1 --no-color --generation-database none \
    --report junit --report-dir "$work/report-$seed"
done
