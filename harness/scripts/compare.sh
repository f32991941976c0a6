#!/usr/bin/env bash
# Compares hookstorm's sender with oha and wrk against one null receiver.
#
# Starts `hookstorm null-receiver` (verifies the signature, answers 204,
# stores nothing), then runs, in turn and with the same connections and
# duration: `hookstorm bench --null` (closed loop, every request freshly
# signed and recorded in the history), `oha` and `wrk` (both replay one
# pre-signed request: they cannot sign, so they measure the raw ceiling).
# Runs ROUNDS rounds (default 3), the three tools in turn in each, so that
# a slow spell of a shared machine falls on all three; prints every round,
# then the median requests/s of each tool and the median of the per-round
# ratios hookstorm/oha and hookstorm/wrk.
#
# Usage: harness/scripts/compare.sh [CONNECTIONS] [DURATION_SECONDS] [ROUNDS]
# Needs: cargo; oha (installed with `cargo install oha --locked` if
# missing); wrk (installed with apt-get if missing and allowed); jq.
set -euo pipefail

CONNECTIONS="${1:-50}"
SECONDS_RUN="${2:-10}"
ROUNDS="${3:-3}"
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

# wrk's script: the same pre-signed request as oha's.
write_wrk_script() {
  {
    echo 'wrk.method = "POST"'
    printf 'wrk.body = [==[%s]==]\n' "$BODY"
    sign | while IFS= read -r line; do
      name="${line%%: *}"; value="${line#*: }"
      printf 'wrk.headers["%s"] = [==[%s]==]\n' "$name" "$value"
    done
  } >"$WORK/post.lua"
}

median() { sort -g | awk '{ v[NR] = $1 } END { if (NR % 2) print v[(NR + 1) / 2]; else print (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }

MACHINE="$(nproc) cores · $(awk -F': ' '/model name/ {print $2; exit}' /proc/cpuinfo)"
echo "date:     $(date -u +%Y-%m-%dT%H:%MZ)"
echo "machine:  $MACHINE"
echo "setup:    null receiver (verify HMAC, 204) · $CONNECTIONS connections · ${SECONDS_RUN}s each · loopback · $ROUNDS rounds"
: >"$WORK/rounds.txt"
for round in $(seq 1 "$ROUNDS"); do
  echo "== round $round: hookstorm bench --null, oha -c $CONNECTIONS, wrk -t2 -c $CONNECTIONS (${SECONDS_RUN}s each)" >&2
  "$HOOKSTORM" bench --url "http://127.0.0.1:$PORT/webhooks/{account}" --secret-env HOOKSTORM_SECRET \
    --null --connections "$CONNECTIONS" --duration "${SECONDS_RUN}s" --warmup 0s \
    --out "$WORK/reports" --json >"$WORK/hookstorm.json"
  HS_RPS=$(jq '.achieved_rate' "$WORK/hookstorm.json")
  HS_OK=$(jq '.statuses["204"] // 0' "$WORK/hookstorm.json")
  HS_ALL=$(jq '.requests' "$WORK/hookstorm.json")

  # Signed afresh each round: the receiver's tolerance is minutes.
  OHA_HEADERS=()
  while IFS= read -r line; do OHA_HEADERS+=(-H "$line"); done < <(sign)
  oha --no-tui --output-format json -c "$CONNECTIONS" -z "${SECONDS_RUN}s" -m POST \
    "${OHA_HEADERS[@]}" -d "$BODY" "$URL" >"$WORK/oha.json"
  OHA_RPS=$(jq '.summary.requestsPerSec' "$WORK/oha.json")
  OHA_OK=$(jq '.statusCodeDistribution["204"] // 0' "$WORK/oha.json")

  write_wrk_script
  wrk -t2 -c "$CONNECTIONS" -d "${SECONDS_RUN}s" -s "$WORK/post.lua" "$URL" >"$WORK/wrk.txt"
  WRK_RPS=$(awk '/^Requests\/sec:/ {print $2}' "$WORK/wrk.txt")
  WRK_NON2XX=$(awk '/Non-2xx/ {print $NF}' "$WORK/wrk.txt")

  printf 'round %s: hookstorm %.0f req/s (%s of %s answered 204) · oha %.0f (%s answered 204) · wrk %.0f (non-2xx: %s)\n' \
    "$round" "$HS_RPS" "$HS_OK" "$HS_ALL" "$OHA_RPS" "$OHA_OK" "$WRK_RPS" "${WRK_NON2XX:-0}"
  echo "$HS_RPS $OHA_RPS $WRK_RPS" >>"$WORK/rounds.txt"
done

HS_MED=$(awk '{print $1}' "$WORK/rounds.txt" | median)
OHA_MED=$(awk '{print $2}' "$WORK/rounds.txt" | median)
WRK_MED=$(awk '{print $3}' "$WORK/rounds.txt" | median)
R_OHA=$(awk '{print $1 / $2}' "$WORK/rounds.txt" | median)
R_WRK=$(awk '{print $1 / $3}' "$WORK/rounds.txt" | median)
printf 'hookstorm  %10.0f req/s  median (signs each request, writes the history)\n' "$HS_MED"
printf 'oha        %10.0f req/s  median (one pre-signed request)\n' "$OHA_MED"
printf 'wrk        %10.0f req/s  median (one pre-signed request)\n' "$WRK_MED"
printf 'ratio hookstorm/oha %.2f · hookstorm/wrk %.2f (medians of the per-round ratios)\n' "$R_OHA" "$R_WRK"
