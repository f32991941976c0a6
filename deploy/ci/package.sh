#!/usr/bin/env bash
# Packs a release artifact of hookstorm: the tarball the GitHub Action
# (action.yml, deploy/ci/install.sh) downloads, and its SHA-256.
#
#   deploy/ci/package.sh VERSION TARGET OUTDIR [BIN_DIR]
#   deploy/ci/package.sh v0.1.0 x86_64-unknown-linux-gnu dist target/release
#
# writes OUTDIR/hookstorm-TARGET.tar.gz (hookstorm, hookstorm-receiver when
# built, the scenarios, VERSION) and OUTDIR/hookstorm-TARGET.tar.gz.sha256.
# BIN_DIR (default target/release) holds the binaries `cargo build
# --release --bin hookstorm -p hookstorm-receiver` made.
set -euo pipefail
version="${1:?usage: package.sh VERSION TARGET OUTDIR [BIN_DIR]}"
target="${2:?usage: package.sh VERSION TARGET OUTDIR [BIN_DIR]}"
outdir="${3:?usage: package.sh VERSION TARGET OUTDIR [BIN_DIR]}"
here="$(cd "$(dirname "$0")/../.." && pwd)"
bindir="${4:-$here/target/release}"

[ -x "$bindir/hookstorm" ] || { echo "error: no $bindir/hookstorm (hint: cargo build --release --bin hookstorm)" >&2; exit 1; }
stage="$(mktemp -d)"
trap 'rm -rf "$stage"' EXIT
name="hookstorm-$target"
mkdir -p "$stage/$name/bin" "$outdir"
cp "$bindir/hookstorm" "$stage/$name/bin/"
[ -x "$bindir/hookstorm-receiver" ] && cp "$bindir/hookstorm-receiver" "$stage/$name/bin/"
# As the Dockerfile does: no symbols in what is shipped.
if command -v strip >/dev/null 2>&1; then strip "$stage/$name/bin/"*; fi
cp -R "$here/scenarios" "$stage/$name/scenarios"
printf '%s\n' "$version" > "$stage/$name/VERSION"
tar -C "$stage" -czf "$outdir/$name.tar.gz" "$name"
(cd "$outdir" && sha256sum "$name.tar.gz" > "$name.tar.gz.sha256")
echo "$outdir/$name.tar.gz"
