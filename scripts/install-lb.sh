#!/usr/bin/env bash
# The load balancers the test/lb suite runs in front of the gateways, from
# Debian's packages (idempotent): nginx-light (1.22 in Debian 12) and HAProxy
# (2.6). Only the binaries are used: the suite starts its own instances on
# free ports of 127.0.0.1 with the configurations in deploy/, so the
# packages' own services are stopped if the install started them.
set -euo pipefail
missing=()
[ -x /usr/sbin/nginx ] || missing+=(nginx-light)
[ -x /usr/sbin/haproxy ] || missing+=(haproxy)
if [ ${#missing[@]} -gt 0 ]; then
  SUDO=; [ "$(id -u)" -eq 0 ] || SUDO=sudo
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${missing[@]}" >/dev/null
  # Where the install started the packaged service (port 80 and Debian's default
  # config), stop it: nothing here uses it.
  for pkg in "${missing[@]}"; do
    service=${pkg%-light}
    if command -v service >/dev/null && service "$service" status >/dev/null 2>&1; then $SUDO service "$service" stop >/dev/null 2>&1 || true; fi
  done
fi
/usr/sbin/nginx -v
# sed, not head: haproxy can die of SIGPIPE when head exits first, and pipefail fails the step.
/usr/sbin/haproxy -v | sed -n 1p
