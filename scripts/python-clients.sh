#!/usr/bin/env bash
# The API's own Python clients for the test suite, in virtualenvs under
# .parley/py (idempotent; prints the path asked for last):
#   bash scripts/python-clients.sh            # the official `zulip` client (and zulip-send): its python
#   bash scripts/python-clients.sh bots       # the same venv with zulip_bots: the path of zulip-run-bot
#   bash scripts/python-clients.sh term       # zulip-terminal on Python 3.10: the path of zulip-term
# Needs python3 with venv (present on these machines) and PyPI; zulip-term
# installs only on Python <= 3.10, taken from pyenv (or python3.10 on PATH).
set -euo pipefail
cd "$(dirname "$0")/.."
what=${1:-client}
pip_install() { # venv, requirement...
  local venv=$1; shift
  "$venv/bin/pip" install --quiet --disable-pip-version-check "$@" >&2
}

case $what in
  client | bots)
    VENV=.parley/py/zulip
    ZULIP_VERSION=${PARLEY_ZULIP_PY_VERSION:-0.9.1}
    [ -x "$VENV/bin/python" ] || python3 -m venv "$VENV" >&2
    if ! "$VENV/bin/python" -c "import zulip, sys; sys.exit(0 if zulip.__version__ == '$ZULIP_VERSION' else 1)" 2>/dev/null; then
      pip_install "$VENV" "zulip==$ZULIP_VERSION"
    fi
    if [ "$what" = bots ]; then
      [ -x "$VENV/bin/zulip-run-bot" ] || pip_install "$VENV" "zulip_bots==${PARLEY_ZULIP_BOTS_VERSION:-0.9.1}"
      echo "$PWD/$VENV/bin/zulip-run-bot"
    else
      echo "$PWD/$VENV/bin/python"
    fi
    ;;
  term)
    VENV=.parley/py/term
    if [ ! -x "$VENV/bin/python" ]; then
      py=$(ls -d "$HOME"/.pyenv/versions/3.10*/bin/python 2>/dev/null | sort -V | tail -1 || true)
      [ -n "$py" ] || py=$(command -v python3.10 || true)
      [ -n "$py" ] || { echo "python-clients: zulip-term needs Python 3.10 (pyenv or python3.10 on PATH)" >&2; exit 1; }
      "$py" -m venv "$VENV" >&2
    fi
    [ -x "$VENV/bin/zulip-term" ] || pip_install "$VENV" "zulip-term==${PARLEY_ZULIP_TERM_VERSION:-0.7.0}"
    echo "$PWD/$VENV/bin/zulip-term"
    ;;
  *)
    echo "usage: python-clients.sh [client|bots|term]" >&2
    exit 2
    ;;
esac
