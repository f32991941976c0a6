#!/usr/bin/env bash
# Compares hookstorm's sender with oha and wrk against one null receiver.
#
# Starts `hookstorm null-receiver` (verifies the signature, answers 204,
# stores nothing), then runs, in turn and with the same connections and
# duration: `hookstorm bench --null` (closed loop, every request freshly
# signed and recorded in the history), `oha` and `wrk` (both replay one
# pre-signed request: they cannot sign, so they measure the raw ceiling).
# Prints requests/s of each and the ratios hookstorm/oha and hookstorm/wrk.
#
# Usage: harness/scripts/compare.sh [CONNECTIONS] [DURATION_SECONDS]
# Needs: cargo; oha (installed with `cargo install oha --locked` if
# missing); wrk (installed with apt-get if missing and allowed); jq.
set -euo pipefail

CONNECTIONS="${1:-50}"
SECONDS_RUN="${2:-10}"
PORT="${COMPARE_PORT:-18088}"
ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
cd "$ROOT"

need() { command -v "$1" >/dev/null 2>&1; }
if ! need oha; then
  echo "installing oha (cargo install oha --locked; a few minutes)…" >&2
  cargo install oha --locked >&2
fi
if ! need wrk; then
  echo "installing wrk from the machine's packages…" >&2
  if [ "$(id -u)" = 0 ]; then apt-get install -y wrk >&2; else sudo apt-get install -y wrk >&2; fi
fi
need jq || { echo "error: jq is needed to read the results" >&2; exit 3; }

cargo build --release --bin hookstorm >&2
TARGET_DIR="${CARGO_TARGET_DIR:-$ROOT/target}"
case "$TARGET_DIR" in /*) ;; *) TARGET_DIR="$ROOT/$TARGET_DIR" ;; esac
HOOKSTORM="$TARGET_DIR/release/hookstorm"
WORK="$(mktemp -d)"
HOOKSTORM_SECRET="whsec_$(head -c 32 /dev/urandom | base64 | tr -d '\n')"
export HOOKSTORM_SECRET

"$HOOKSTORM" null-receiver --listen "127.0.0.1:$PORT" --secret-env HOOKSTORM_SECRET 2>"$WORK/null.log" &
NULL_PID=$!
cleanup() { kill "$NULL_PID" 2>/dev/null || true; wait "$NULL_PID" 2>/dev/null || true; rm -rf "$WORK"; }
trap cleanup EXIT
for _ in $(seq 1 50); do
  (exec 3<>"/dev/tcp/127.0.0.1/$PORT") 2>/dev/null && break
  sleep 0.1
done
URL="http://127.0.0.1:$PORT/webhooks/acct_a"

# One realistic delivery body, signed now (tolerance is minutes; a run is seconds).
BODY='{"task":{"id":"tsk_compare0000000001","idempotencyKey":"job-compare-1","status":"COMPLETED","createdAt":"2026-01-01T00:00:00Z"},"credits":3,"response":{"result":{"answer":"answer 5eed5eed"}}}'
sign() { printf '%s' "$BODY" | "$HOOKSTORM" sign --secret-env HOOKSTORM_SECRET --id whd_compare0000000001; }

echo "== hookstorm bench --null --connections $CONNECTIONS --duration ${SECONDS_RUN}s" >&2
"$HOOKSTORM" bench --url "http://127.0.0.1:$PORT/webhooks/{account}" --secret-env HOOKSTORM_SECRET \
  --null --connections "$CONNECTIONS" --duration "${SECONDS_RUN}s" --warmup 0s \
  --out "$WORK/reports" --json >"$WORK/hookstorm.json"
HS_RPS=$(jq '.achieved_rate' "$WORK/hookstorm.json")
HS_OK=$(jq '.statuses["204"] // 0' "$WORK/hookstorm.json")
HS_ALL=$(jq '.requests' "$WORK/hookstorm.json")

echo "== oha -c $CONNECTIONS -z ${SECONDS_RUN}s" >&2
OHA_HEADERS=()
while IFS= read -r line; do OHA_HEADERS+=(-H "$line"); done < <(sign)
oha --no-tui --output-format json -c "$CONNECTIONS" -z "${SECONDS_RUN}s" -m POST \
  "${OHA_HEADERS[@]}" -d "$BODY" "$URL" >"$WORK/oha.json"
OHA_RPS=$(jq '.summary.requestsPerSec' "$WORK/oha.json")
OHA_OK=$(jq '.statusCodeDistribution["204"] // 0' "$WORK/oha.json")

echo "== wrk -t2 -c $CONNECTIONS -d ${SECONDS_RUN}s" >&2
{
  echo 'wrk.method = "POST"'
  printf 'wrk.body = [==[%s]==]\n' "$BODY"
  sign | while IFS= read -r line; do
    name="${line%%: *}"; value="${line#*: }"
    printf 'wrk.headers["%s"] = [==[%s]==]\n' "$name" "$value"
  done
} >"$WORK/post.lua"
wrk -t2 -c "$CONNECTIONS" -d "${SECONDS_RUN}s" -s "$WORK/post.lua" "$URL" >"$WORK/wrk.txt"
WRK_RPS=$(awk '/^Requests\/sec:/ {print $2}' "$WORK/wrk.txt")
WRK_NON2XX=$(awk '/Non-2xx/ {print $NF}' "$WORK/wrk.txt")

MACHINE="$(nproc) cores · $(awk -F': ' '/model name/ {print $2; exit}' /proc/cpuinfo)"
echo "date:     $(date -u +%Y-%m-%dT%H:%MZ)"
echo "machine:  $MACHINE"
echo "setup:    null receiver (verify HMAC, 204) · $CONNECTIONS connections · ${SECONDS_RUN}s each · loopback"
printf 'hookstorm  %10.0f req/s  (%s of %s answered 204; signs each request, writes the history)\n' "$HS_RPS" "$HS_OK" "$HS_ALL"
printf 'oha        %10.0f req/s  (%s answered 204; one pre-signed request)\n' "$OHA_RPS" "$OHA_OK"
printf 'wrk        %10.0f req/s  (non-2xx: %s; one pre-signed request)\n' "$WRK_RPS" "${WRK_NON2XX:-0}"
awk -v h="$HS_RPS" -v o="$OHA_RPS" -v w="$WRK_RPS" \
  'BEGIN { printf "ratio hookstorm/oha %.2f · hookstorm/wrk %.2f\n", h/o, h/w }'
