#!/usr/bin/env bash
# The API's own Python clients for the test suite, in a virtualenv under
# .parley/py (idempotent; prints the venv's python path last):
#   bash scripts/python-clients.sh            # the official `zulip` client (and zulip-send)
# Needs python3 with venv (present on these machines) and PyPI.
set -euo pipefail
cd "$(dirname "$0")/.."
VENV=.parley/py/zulip
ZULIP_VERSION=${PARLEY_ZULIP_PY_VERSION:-0.9.1}
if [ ! -x "$VENV/bin/python" ]; then
  python3 -m venv "$VENV" >&2
fi
if ! "$VENV/bin/python" -c "import zulip, sys; sys.exit(0 if zulip.__version__ == '$ZULIP_VERSION' else 1)" 2>/dev/null; then
  "$VENV/bin/pip" install --quiet --disable-pip-version-check "zulip==$ZULIP_VERSION" >&2
fi
echo "$PWD/$VENV/bin/python"
