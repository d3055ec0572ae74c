#!/usr/bin/env bash
# Installs k6 (the load generator the bench scripts are written for) into the
# project-local, gitignored .parley/tools/bin, building it with `go install`
# from the Go module proxy: no prebuilt binary is downloaded. Prints the path.
#
#   scripts/install-k6.sh            # install if missing, print the path
#   K6_VERSION=v0.52.0 scripts/install-k6.sh
#
# A cold build (empty module cache) takes a few minutes on 2 cores; see
# bench/RESULTS.md for the measured time. Later runs reuse the binary.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
bin="$root/.parley/tools/bin"
k6="$bin/k6"
# v1.x first; v0.52 is the fallback that is known to build with older Go.
versions=("${K6_VERSION:-v1.8.1}" v0.52.0)

if [[ -x "$k6" ]] && "$k6" version >/dev/null 2>&1; then
  echo "$k6"
  exit 0
fi

command -v go >/dev/null || { echo "install-k6: go is not installed (needs Go >= 1.23)" >&2; exit 1; }
mkdir -p "$bin"
for v in "${versions[@]}"; do
  echo "install-k6: building go.k6.io/k6@$v with $(go version | awk '{print $3}') ..." >&2
  start=$(date +%s)
  if GOBIN="$bin" CGO_ENABLED=0 go install "go.k6.io/k6@$v" >&2; then
    echo "install-k6: built $v in $(( $(date +%s) - start )) s" >&2
    echo "$k6"
    exit 0
  fi
  echo "install-k6: $v failed to build, trying the next version" >&2
done
echo "install-k6: no version built" >&2
exit 1
