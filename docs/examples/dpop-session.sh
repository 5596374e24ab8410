#!/usr/bin/env bash
# A DPoP session (RFC 9449) with curl and OpenSSL 3: a key pair made here, a token bound
# to it, then the wait times of branch 00001 and the first ATM page, each call with a
# fresh proof made by that key. A phone or a page does the same with its platform's
# keystore or WebCrypto.
#
#   docs/examples/dpop-session.sh [BASE_URL]     (default http://127.0.0.1:8080)
#
# BASE_URL must be the service's public base URL (`--public-base-url`, by default
# http://<listen>): a proof names the URL it is for (`htu`).
set -euo pipefail
base=${1:-http://127.0.0.1:8080}
client=${CLIENT:-demo-mobile-app}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

b64url() { openssl base64 -A | tr '+/' '-_' | tr -d '='; }
uuid() { cat /proc/sys/kernel/random/uuid 2>/dev/null || uuidgen; }

# The app's key: Ed25519, its public half as a JWK.
openssl genpkey -algorithm ed25519 -out "$work/key.pem"
x=$(openssl pkey -in "$work/key.pem" -pubout -outform DER | tail -c 32 | b64url)
header=$(printf '{"typ":"dpop+jwt","alg":"EdDSA","jwk":{"kty":"OKP","crv":"Ed25519","x":"%s"}}' "$x" | b64url)

# proof METHOD URL [TOKEN]: a fresh proof for one request (`ath` when sent with a token).
proof() {
  local ath=""
  if [ -n "${3:-}" ]; then
    ath=$(printf ',"ath":"%s"' "$(printf %s "$3" | openssl dgst -sha256 -binary | b64url)")
  fi
  local claims
  claims=$(printf '{"jti":"%s","htm":"%s","htu":"%s","iat":%s%s}' \
    "$(uuid)" "$1" "$2" "$(date +%s)" "$ath" | b64url)
  printf %s "$header.$claims" >"$work/signed"
  printf '%s.%s' "$header.$claims" \
    "$(openssl pkeyutl -sign -rawin -inkey "$work/key.pem" -in "$work/signed" | b64url)"
}

answer=$(curl -sS -D "$work/headers" -H "uuid: $(uuid)" -H "DPoP: $(proof GET "$base/api/v1/authorize")" \
  "$base/api/v1/authorize?response_type=token&client_id=$client&businessCode=GCB&countryCode=MX&channelId=MOBILE")
echo "authorize: $answer"
token=$(printf %s "$answer" | sed -n 's/.*"access_token":"\([^"]*\)".*/\1/p')
sid=$(sed -n 's/^sid: *\([^[:space:]]*\).*/\1/Ip' "$work/headers")
[ -n "$token" ] || { echo "no token was issued" >&2; exit 1; }

wait_url="$base/api/v1/open-banking/channels/branch/waittime/retrieve"
echo "wait times: $(curl -sS -X POST "$wait_url" \
  -H "Authorization: DPoP $token" -H "DPoP: $(proof POST "$wait_url" "$token")" \
  -H "client_id: $client" -H "sid: $sid" -H "uuid: $(uuid)" -H "Accept: application/json" \
  -H "Content-Type: application/json" -H "countryCode: MX" -H "businessCode: GCB" -H "ChannelId: MOBILE" \
  -d '{"branches":[{"branchId":"00001"}]}')"

echo "ATM page 1: $(curl -sS -o /dev/null -w '%{http_code}, %{size_download} bytes' "$base/api/v1/atms" \
  -H "Authorization: DPoP $token" -H "DPoP: $(proof GET "$base/api/v1/atms" "$token")" -H "client_id: $client")"

echo "the same token as Bearer: $(curl -sS -o /dev/null -w '%{http_code}' "$base/api/v1/atms" \
  -H "Authorization: Bearer $token" -H "client_id: $client")"
