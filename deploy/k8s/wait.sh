#!/usr/bin/env bash
# Waits until a Job has finished, Complete or Failed, whichever comes first
# (a `kubectl wait` for `complete` alone sits out its whole timeout when the
# Job fails, and a Job with a failed index ends Failed). Exit 0 when it
# completed, 1 when it failed, 2 when neither happened within the timeout.
#
#   deploy/k8s/wait.sh hookstorm-shards [TIMEOUT]    # TIMEOUT like 1h (default)
set -uo pipefail
job="${1:?usage: wait.sh JOB [TIMEOUT]}"
timeout="${2:-1h}"
kubectl="${KUBECTL:-kubectl}"

"$kubectl" wait --for=condition=complete --timeout="$timeout" "job/$job" >/dev/null 2>&1 &
complete=$!
"$kubectl" wait --for=condition=failed --timeout="$timeout" "job/$job" >/dev/null 2>&1 &
failed=$!
trap 'kill "$complete" "$failed" 2>/dev/null' EXIT
# Whichever waiter succeeds first decides (portable: no `wait -n`).
left=2
while [ "$left" -gt 0 ]; do
  for pid in "$complete" "$failed"; do
    [ "$pid" = done ] && continue
    kill -0 "$pid" 2>/dev/null && continue
    if wait "$pid"; then
      if [ "$pid" = "$complete" ]; then echo "job/$job: complete"; exit 0; fi
      echo "job/$job: failed (the merge names the failed shards)"; exit 1
    fi
    [ "$pid" = "$complete" ] && complete=done || failed=done
    left=$((left - 1))
  done
  sleep 1
done
echo "job/$job: neither complete nor failed within $timeout" >&2
exit 2
