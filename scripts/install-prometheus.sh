#!/usr/bin/env bash
# Prometheus (Debian's package, 2.42 on Debian 12) for test/cluster/prometheus.test.ts,
# which runs its own instance on a free port (idempotent). The package's own service
# is not started: a policy-rc.d refuses it for the length of the install.
set -euo pipefail
if [ -x /usr/bin/prometheus ]; then /usr/bin/prometheus --version 2>&1 | sed -n 1p; exit 0; fi
SUDO=; [ "$(id -u)" -eq 0 ] || SUDO=sudo
POLICY=/usr/sbin/policy-rc.d
OURS=
if [ ! -e "$POLICY" ]; then
  printf '#!/bin/sh\nexit 101\n' | $SUDO tee "$POLICY" >/dev/null && $SUDO chmod +x "$POLICY" && OURS=1
  trap '[ -n "$OURS" ] && $SUDO rm -f "$POLICY"' EXIT
fi
$SUDO apt-get update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends prometheus >/dev/null
/usr/bin/prometheus --version 2>&1 | sed -n 1p
