#!/usr/bin/env bash
# Headless Chromium for the browser tests, from Debian's packages (idempotent).
set -euo pipefail
if [ -x /usr/bin/chromium ]; then exit 0; fi
SUDO=; [ "$(id -u)" -eq 0 ] || SUDO=sudo
$SUDO apt-get update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq chromium >/dev/null
/usr/bin/chromium --version
