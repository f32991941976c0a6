#!/usr/bin/env bash
# The logic of the hookstorm GitHub Action (action.yml), as a script that
# runs the same anywhere: runs `hookstorm run`, appends the run's
# summary.md to the job summary, publishes the outcome as step outputs,
# and exits with hookstorm's exit code (0 pass, 1 fail, 2 unknown,
# 3 target unusable, 130 interrupted, 254 usage), so the job fails when
# the gate does.
#
# Inputs (environment):
#   HOOKSTORM_BIN        the hookstorm binary (default: hookstorm on PATH)
#   INPUT_ARGS           arguments after `hookstorm run`, quoted as in a shell
#                        ("--target hookstorm.toml --state-command 'python3 dump.py'");
#                        quotes group words, nothing is expanded or run
#   INPUT_OUT            reports folder (default: reports)
#   GITHUB_STEP_SUMMARY  file the summary is appended to (set by Actions)
#   GITHUB_OUTPUT        file the outputs are appended to (set by Actions):
#                        exit-code, report-dir, verdict
set -uo pipefail

bin="${HOOKSTORM_BIN:-hookstorm}"
out="${INPUT_OUT:-reports}"

# Publishes the outcome (code, report folder, verdict, summary file) as
# the step's outputs and job summary.
publish() {
  local code="$1" dir="$2" verdict="$3" summary="$4"
  if [ -n "${GITHUB_STEP_SUMMARY:-}" ]; then
    if [ -f "$summary" ]; then
      {
        cat "$summary"
        printf '\n_Full report: `%s/report.html` in the run'"'"'s artifact (exit code %s)._\n' "$dir" "$code"
      } >> "$GITHUB_STEP_SUMMARY"
    else
      printf '## hookstorm\n\nNo report was written (exit code %s): see the step log.\n' "$code" >> "$GITHUB_STEP_SUMMARY"
    fi
  fi
  if [ -n "${GITHUB_OUTPUT:-}" ]; then
    {
      echo "exit-code=$code"
      echo "report-dir=$dir"
      echo "verdict=${verdict:-none}"
    } >> "$GITHUB_OUTPUT"
  fi
}

# Words as a shell quotes them ('…', "…", \x), without expansion: xargs
# splits that way and only prints.
args=()
if [ -n "${INPUT_ARGS:-}" ]; then
  if ! words=$(printf '%s' "$INPUT_ARGS" | xargs printf '%s\0' 2>&1 >/dev/null); then
    echo "error: args: $words (hint: close every quote)" >&2
    publish 254 "" none /nonexistent
    exit 254
  fi
  while IFS= read -r -d '' w; do args+=("$w"); done < <(printf '%s' "$INPUT_ARGS" | xargs printf '%s\0')
fi

if ! command -v "$bin" >/dev/null 2>&1; then
  echo "error: hookstorm binary not found: $bin (hint: cargo install --path . from the hookstorm checkout, or set HOOKSTORM_BIN)" >&2
  publish 254 "" none /nonexistent
  exit 254
fi

# `latest` from an earlier run is not this run's report: only a new
# target of the link is.
before=$(readlink "$out/latest" 2>/dev/null || true)
{ printf '+'; printf ' %q' "$bin" run --out "$out" "${args[@]}"; echo; } >&2
"$bin" run --out "$out" "${args[@]}"
code=$?
after=$(readlink "$out/latest" 2>/dev/null || true)

dir="$out/latest"
summary="$dir/summary.md"
if [ -z "$after" ] || [ "$after" = "$before" ]; then
  summary=/nonexistent
  dir=""
fi
verdict="none"
if [ -n "$dir" ] && [ -f "$dir/report.json" ]; then
  verdict=$(sed -n 's/^  "verdict": "\([a-z-]*\)",*$/\1/p' "$dir/report.json" | head -n 1)
fi

publish "$code" "$dir" "$verdict" "$summary"

exit "$code"
