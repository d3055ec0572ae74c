#!/usr/bin/env bash
# Strict validation of Parley's Kubernetes manifests (k8s/).
#
#  1. Installs kustomize (pinned) into .parley/tools/bin if it is missing.
#  2. Builds the validator in k8s/validate (Go; k8s.io/api types, go.sum pinned).
#  3. Renders k8s/base and both overlays with kustomize and validates every
#     rendered document strictly: unknown/misspelled/wrongly-cased fields,
#     duplicate keys, wrong types and unknown kinds fail, as do the semantic
#     checks (selectors, references, probes, resources, pod security, Parley
#     configuration, NATS max_payload, Cassandra's commit log synced before a
#     write is acknowledged). Rendered output is kept in .parley/k8s/.
#  4. Proves the strictness on every run: k8s/validate/testdata/good-*.yaml
#     must pass, and each bad-*.yaml must fail with the message given on its
#     first line ("# expect: ...").
#
# Needs Go >= 1.26 and, on the first run only, the Go module proxy. Later runs
# work offline (tools and module cache are reused).
#
# Usage: bash scripts/k8s-validate.sh
set -euo pipefail

KUSTOMIZE_VERSION=v5.8.2

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
TOOLS_BIN="$ROOT/.parley/tools/bin"
OUT_DIR="$ROOT/.parley/k8s"
VALIDATE_DIR="$ROOT/k8s/validate"
VALIDATOR="$TOOLS_BIN/parley-k8s-validate"
KUSTOMIZE="$TOOLS_BIN/kustomize"

log() { printf '%s\n' "k8s-validate: $*"; }
die() { printf '%s\n' "k8s-validate: error: $*" >&2; exit 2; }

# --- Go -------------------------------------------------------------------
GO="$(command -v go || true)"
if [[ -z "$GO" && -x /usr/local/go/bin/go ]]; then GO=/usr/local/go/bin/go; fi
[[ -n "$GO" ]] || die "Go is required (>= 1.26); not found in PATH or /usr/local/go/bin"
go_minor="$("$GO" env GOVERSION | sed -E 's/^go1\.([0-9]+).*/\1/')"
if ! [[ "$go_minor" =~ ^[0-9]+$ ]] || (( go_minor < 26 )); then
  die "Go >= 1.26 is required (found $("$GO" env GOVERSION))"
fi

mkdir -p "$TOOLS_BIN" "$OUT_DIR"

# --- kustomize --------------------------------------------------------------
install_kustomize() {
  GOBIN="$TOOLS_BIN" GOFLAGS=-buildvcs=false "$GO" install "sigs.k8s.io/kustomize/kustomize/v5@$KUSTOMIZE_VERSION"
}
if [[ ! -x "$KUSTOMIZE" ]] || [[ "$("$KUSTOMIZE" version 2>/dev/null)" != "$KUSTOMIZE_VERSION" ]]; then
  log "installing kustomize $KUSTOMIZE_VERSION into ${TOOLS_BIN#"$ROOT"/}"
  # First from the local module cache only (works offline once the modules
  # were downloaded; they were checksum-verified then), else via the proxy.
  if ! GOPROXY="file://$("$GO" env GOMODCACHE)/cache/download" GOSUMDB=off install_kustomize 2>"$OUT_DIR/kustomize-install.log"; then
    install_kustomize || die "could not install kustomize $KUSTOMIZE_VERSION (the first run needs the Go module proxy)"
  fi
fi

# --- validator --------------------------------------------------------------
# Rebuilt every run (a no-op from the build cache when nothing changed);
# -mod=readonly: go.mod/go.sum are authoritative.
GOFLAGS=-buildvcs=false "$GO" build -C "$VALIDATE_DIR" -mod=readonly -o "$VALIDATOR" . \
  || die "could not build the validator in k8s/validate"

passed=0
failed=0
pass() { passed=$((passed + 1)); log "ok   $*"; }
fail() { failed=$((failed + 1)); log "FAIL $*" >&2; }

# --- rendered manifests -------------------------------------------------------
for target in base overlays/dev overlays/production; do
  name="${target#overlays/}"
  rendered="$OUT_DIR/$name.yaml"
  if ! "$KUSTOMIZE" build "$ROOT/k8s/$target" >"$rendered" 2>"$OUT_DIR/$name.kustomize.log"; then
    cat "$OUT_DIR/$name.kustomize.log" >&2
    fail "kustomize build k8s/$target"
    continue
  fi
  if "$VALIDATOR" -label "k8s/$target" "$rendered"; then
    pass "k8s/$target (rendered: ${rendered#"$ROOT"/})"
  else
    fail "k8s/$target (rendered: ${rendered#"$ROOT"/})"
  fi
done

# k8s/monitoring (PodMonitor, Grafana dashboard) is applied beside an overlay:
# validated together with the production render, whose pods it must select.
if "$KUSTOMIZE" build "$ROOT/k8s/monitoring" >"$OUT_DIR/monitoring.yaml" 2>"$OUT_DIR/monitoring.kustomize.log"; then
  if "$VALIDATOR" -label "k8s/monitoring + k8s/overlays/production" "$OUT_DIR/production.yaml" "$OUT_DIR/monitoring.yaml"; then
    pass "k8s/monitoring with k8s/overlays/production (rendered: ${OUT_DIR#"$ROOT"/}/monitoring.yaml)"
  else
    fail "k8s/monitoring with k8s/overlays/production"
  fi
else
  cat "$OUT_DIR/monitoring.kustomize.log" >&2
  fail "kustomize build k8s/monitoring"
fi

# --- strictness fixtures ------------------------------------------------------
shopt -s nullglob
good=("$VALIDATE_DIR"/testdata/good-*.yaml)
bad=("$VALIDATE_DIR"/testdata/bad-*.yaml)
(( ${#good[@]} > 0 && ${#bad[@]} > 0 )) || die "fixtures missing in k8s/validate/testdata"

for f in "${good[@]}"; do
  rel="${f#"$ROOT"/}"
  if out="$("$VALIDATOR" "$f" 2>&1)"; then
    pass "$rel passes"
  else
    printf '%s\n' "$out" >&2
    fail "$rel should pass"
  fi
done

for f in "${bad[@]}"; do
  rel="${f#"$ROOT"/}"
  expect="$(sed -n '1s/^# expect: //p' "$f")"
  if [[ -z "$expect" ]]; then
    fail "$rel: first line must be '# expect: <part of the error message>'"
    continue
  fi
  set +e
  out="$("$VALIDATOR" "$f" 2>&1)"
  rc=$?
  set -e
  if (( rc == 0 )); then
    fail "$rel was accepted; expected a failure containing: $expect"
  elif (( rc != 1 )); then
    printf '%s\n' "$out" >&2
    fail "$rel: validator exited $rc (expected 1)"
  elif ! grep -qF -- "$expect" <<<"$out"; then
    printf '%s\n' "$out" >&2
    fail "$rel failed, but without the expected message: $expect"
  else
    pass "$rel rejected"
  fi
done

echo "k8s-validate: $passed passed, $failed failed"
(( failed == 0 ))
