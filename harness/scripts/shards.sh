#!/usr/bin/env bash
# Measures the aggregate rate of 1, 2 and 4 local bench shards against one
# receiver, each count in turn, merged by `hookstorm merge`.
#
# Starts `hookstorm null-receiver` (verifies the signature, answers 204,
# stores nothing: the receiver is not what is measured), then for each
# shard count N runs N `hookstorm bench --shard I/N` processes, closed loop,
# with a common --start-at, and merges them. Prints the summed rate of each
# N from merge.json. On one machine the shards share its cores with each
# other and with the receiver, so this shows the cost of sharding on one
# box, not the gain across machines.
#
# Usage: harness/scripts/shards.sh [DURATION_SECONDS] [CONNECTIONS_PER_SHARD]
# Env:   HOOKSTORM (a built binary; default: cargo build --release),
#        SHARDS (default "1 2 4"), SHARD_THREADS (sender threads per shard, default 1).
# Needs: cargo, jq.
set -euo pipefail

SECONDS_RUN="${1:-10}"
CONNECTIONS="${2:-32}"
PORT="${SHARDS_PORT:-18089}"
ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
cd "$ROOT"
command -v jq >/dev/null 2>&1 || { echo "error: jq is needed to read the results" >&2; exit 3; }

if [ -z "${HOOKSTORM:-}" ]; then
  cargo build --release --bin hookstorm >&2
  HOOKSTORM="${CARGO_TARGET_DIR:-$ROOT/target}/release/hookstorm"
fi
WORK="$(mktemp -d)"
HOOKSTORM_SECRET="whsec_$(head -c 32 /dev/urandom | base64 | tr -d '\n')"
export HOOKSTORM_SECRET

"$HOOKSTORM" null-receiver --listen "127.0.0.1:$PORT" --secret-env HOOKSTORM_SECRET 2>"$WORK/null.log" &
NULL_PID=$!
trap 'kill "$NULL_PID" 2>/dev/null || true; rm -rf "$WORK"' EXIT
sleep 1

echo "date:     $(date -u +%Y-%m-%dT%H:%MZ)"
echo "machine:  $(nproc) cores · $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//')"
echo "setup:    null receiver (verify HMAC, 204) on the same machine · closed loop · $CONNECTIONS connections and ${SHARD_THREADS:-1} thread(s) per shard · ${SECONDS_RUN}s · loopback"
for N in ${SHARDS:-1 2 4}; do
  OUT="$WORK/n$N"
  START="+3s"
  PIDS=()
  for ((I = 0; I < N; I++)); do
    "$HOOKSTORM" -q bench --url "http://127.0.0.1:$PORT/webhooks/{account}" --secret-env HOOKSTORM_SECRET \
      --shard "$I/$N" --start-at "$START" --seed 1 --warmup 1s --duration "${SECONDS_RUN}s" \
      --connections "$CONNECTIONS" --threads "${SHARD_THREADS:-1}" --out "$OUT" --json >"$WORK/s$N-$I.json" 2>"$WORK/s$N-$I.log" &
    PIDS+=($!)
  done
  for P in "${PIDS[@]}"; do wait "$P"; done
  "$HOOKSTORM" -q merge --out "$WORK/m$N" --json "$OUT" >"$WORK/m$N.json" || true
  jq -r --arg n "$N" '"shards \($n): \(.bench.achieved_rate | floor) req/s summed · \(.bench.requests) requests · p50 \(.bench.latency.p50_ms) ms · p99 \(.bench.latency.p99_ms) ms (merged histograms)"' "$WORK/m$N.json"
done
