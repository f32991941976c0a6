#!/usr/bin/env bash
# Puts hookstorm on the job's PATH for the GitHub Action (action.yml), in
# seconds when it can: a hookstorm already on PATH is used as it is; else
# the one in HOOKSTORM_DIR (restored there by actions/cache, keyed by
# version and runner); else the release tarball for this runner is
# downloaded (deploy/ci/package.sh makes it) and its SHA-256 checked; else, when
# that fails and cargo is there, `cargo install` from the action's source
# into HOOKSTORM_DIR (minutes, once: the cache keeps the result).
#
# Inputs (environment):
#   HOOKSTORM_DIR      where the binary goes (bin/) and the cache keeps it
#   INPUT_INSTALL      auto (default), release, cargo, or none
#   INPUT_VERSION      release tag (default: the action's own ref, else latest)
#   INPUT_BINARY_URL   the tarball's URL instead of the release's (file:// works)
#   ACTION_PATH        the action's checkout (for cargo install and scenarios)
#   GITHUB_PATH, GITHUB_ENV, GITHUB_OUTPUT   set by Actions
# Outputs: source=path|cache|release|cargo, version.
set -euo pipefail

mode="${INPUT_INSTALL:-auto}"
case "$mode" in true) mode=auto ;; false) mode=none ;; esac
dir="${HOOKSTORM_DIR:?HOOKSTORM_DIR is not set}"
action="${ACTION_PATH:-$(cd "$(dirname "$0")/../.." && pwd)}"
out() { [ -n "${GITHUB_OUTPUT:-}" ] && echo "$1" >> "$GITHUB_OUTPUT"; return 0; }
publish() {
  # $1 how it was found. The job's later steps see bin/ on PATH and the
  # scenarios that came with the binary.
  if [ "$1" != path ]; then
    [ -n "${GITHUB_PATH:-}" ] && echo "$dir/bin" >> "$GITHUB_PATH"
    if [ -d "$dir/scenarios" ] && [ -z "${HOOKSTORM_SCENARIO_DIR:-}" ] && [ -n "${GITHUB_ENV:-}" ]; then
      echo "HOOKSTORM_SCENARIO_DIR=$dir/scenarios" >> "$GITHUB_ENV"
    fi
  fi
  out "source=$1"
  echo "hookstorm from $1: $("${2}" --version 2>/dev/null || echo "$2")"
}

if [ "$mode" = none ] || command -v hookstorm >/dev/null 2>&1; then
  publish path "$(command -v hookstorm || echo hookstorm)"
  exit 0
fi
if [ -x "$dir/bin/hookstorm" ]; then
  publish cache "$dir/bin/hookstorm"
  exit 0
fi

case "${RUNNER_OS:-$(uname -s)}-${RUNNER_ARCH:-$(uname -m)}" in
  Linux-X64 | Linux-x86_64) triple=x86_64-unknown-linux-gnu ;;
  Linux-ARM64 | Linux-aarch64) triple=aarch64-unknown-linux-gnu ;;
  macOS-X64 | Darwin-x86_64) triple=x86_64-apple-darwin ;;
  macOS-ARM64 | Darwin-arm64) triple=aarch64-apple-darwin ;;
  *) triple="" ;;
esac
version="${INPUT_VERSION:-${GITHUB_ACTION_REF:-latest}}"
repo="${GITHUB_ACTION_REPOSITORY:-}"
url="${INPUT_BINARY_URL:-}"
if [ -z "$url" ] && [ -n "$triple" ] && [ -n "$repo" ]; then
  if [ "$version" = latest ]; then
    url="https://github.com/$repo/releases/latest/download/hookstorm-$triple.tar.gz"
  else
    url="https://github.com/$repo/releases/download/$version/hookstorm-$triple.tar.gz"
  fi
fi
out "version=$version"

download() {
  local tmp
  tmp="$(mktemp -d)"
  echo "downloading $url" >&2
  curl -fsSL --retry 3 -o "$tmp/h.tar.gz" "$url" || { rm -rf "$tmp"; return 1; }
  if curl -fsSL -o "$tmp/h.sha256" "$url.sha256" 2>/dev/null; then
    local want got
    want="$(cut -d' ' -f1 < "$tmp/h.sha256")"
    got="$(sha256sum "$tmp/h.tar.gz" 2>/dev/null | cut -d' ' -f1 || shasum -a 256 "$tmp/h.tar.gz" | cut -d' ' -f1)"
    if [ "$want" != "$got" ]; then
      echo "error: $url: SHA-256 $got, expected $want" >&2
      rm -rf "$tmp"
      return 1
    fi
  fi
  mkdir -p "$dir"
  tar -xzf "$tmp/h.tar.gz" -C "$dir" --strip-components=1
  rm -rf "$tmp"
  [ -x "$dir/bin/hookstorm" ]
}

if [ "$mode" != cargo ] && [ -n "$url" ] && download; then
  publish release "$dir/bin/hookstorm"
  exit 0
fi
if [ "$mode" = release ]; then
  echo "error: no hookstorm release for ${triple:-this runner} at ${url:-(no URL)} (hint: set binary-url, or install: auto to build it)" >&2
  exit 254
fi
if ! command -v cargo >/dev/null 2>&1; then
  echo "error: no release download and no cargo to build hookstorm (hint: add dtolnay/rust-toolchain before this step, or set binary-url)" >&2
  exit 254
fi
echo "building hookstorm from $action (once: the cache keeps it)" >&2
cargo install --locked --root "$dir" --path "$action"
rm -rf "$dir/scenarios"
cp -R "$action/scenarios" "$dir/scenarios"
publish cargo "$dir/bin/hookstorm"
