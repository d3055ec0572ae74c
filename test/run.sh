#!/usr/bin/env bash
# The whole test suite: type check, the API suite against the embedded mode,
# the store/bus/lease suites against real NATS, Redis and Cassandra (started
# here by scripts/services.sh), the same API suite against a real local
# cluster, the cluster tests, the Kubernetes manifest check and a bench smoke
# run. Installs run in the background from the start; the suites on servers of
# their own and the backing-service suites run side by side in lanes (each
# lane's output is printed and counted when all are done). Ends with one line "N passed, N failed, N skipped" counting test cases:
# each first-level subtest of a tap file (a file without subtests is one case,
# see test/count.mjs) and each non-tap step. Todo cases count as skipped.
set -uo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
LOG_DIR=.parley/test-logs
mkdir -p "$LOG_DIR"
passed=0
failed=0
skipped=0

[ -d node_modules ] || npm ci --no-audit --no-fund

# Check mode: every server the suites start validates every event it makes
# against its strict schema and records violations here (actors/events/check.ts).
export PARLEY_CHECK=1
export PARLEY_VIOLATIONS_FILE="$ROOT/$LOG_DIR/event-violations.jsonl"
rm -f "$PARLEY_VIOLATIONS_FILE"
# ...and every JSON reply against the API description (gateway/openapi/check.ts).
export PARLEY_RESPONSE_VIOLATIONS_FILE="$ROOT/$LOG_DIR/response-violations.jsonl"
rm -f "$PARLEY_RESPONSE_VIOLATIONS_FILE"

step() { # name, command...: one pass or fail for a non-tap step
  local name=$1; shift
  echo "=== $name"
  if "$@"; then passed=$((passed + 1)); echo "ok - $name"; else failed=$((failed + 1)); echo "not ok - $name"; fi
}

tapsuite() { # name, env assignments..., -- files...: adds the pass/fail/skip counts of the files' cases
  local name=$1; shift
  local envs=()
  while [ "$1" != "--" ]; do envs+=("$1"); shift; done
  shift
  echo "=== $name"
  local out="$LOG_DIR/$name.log"
  # Raw TAP (nested subtests indented) in the log; the per-file lines on screen.
  env "${envs[@]}" npx tap --reporter=tap --allow-incomplete-coverage --disable-coverage --timeout=240 --jobs=1 "$@" 2>&1 | tee "$out" | grep -E '^(not )?ok ' || true
  local report summary p f s t
  report=$(node test/count.mjs "$out" "$@")
  sed 's/^/# /' <<<"$report" >>"$out" # as TAP comments, so the log still parses
  sed -E "\$s/^/$name: /" <<<"$report"
  summary=$(tail -1 <<<"$report")
  read -r p f s t < <(sed -nE 's/^cases: pass ([0-9]+), fail ([0-9]+), skip ([0-9]+), todo ([0-9]+)$/\1 \2 \3 \4/p' <<<"$summary")
  if [ -z "${p:-}" ]; then failed=$((failed + 1)); echo "not ok - $name: no case counts"; return; fi
  passed=$((passed + p)); failed=$((failed + f)); skipped=$((skipped + s + t))
}

tally() { # a file of step and suite output (a background job's): adds its counts to the totals
  local line
  while IFS= read -r line; do
    if [[ $line =~ ^[a-z0-9-]+:\ cases:\ pass\ ([0-9]+),\ fail\ ([0-9]+),\ skip\ ([0-9]+),\ todo\ ([0-9]+)$ ]]; then
      passed=$((passed + BASH_REMATCH[1])); failed=$((failed + BASH_REMATCH[2])); skipped=$((skipped + BASH_REMATCH[3] + BASH_REMATCH[4]))
    elif [[ $line == "ok - "* ]]; then passed=$((passed + 1))
    elif [[ $line == "not ok - "* ]]; then failed=$((failed + 1))
    fi
  done <"$1"
}

background() { # name, function: runs the function's steps and suites in the background; `collect name` counts them
  local name=$1; shift
  "$@" >"$LOG_DIR/$name.screen" 2>&1 &
  eval "BG_${name//-/_}=$!"
}

collect() { # name...: waits for those background jobs, prints what they printed and counts it, in the order given
  local name pid
  for name in "$@"; do
    pid=BG_${name//-/_}
    wait "${!pid}"
    cat "$LOG_DIR/$name.screen"
    tally "$LOG_DIR/$name.screen"
  done
}

side_by_side() { # function...: runs each in the background (their suites one after another), then counts them all
  local f
  for f in "$@"; do background "$f" "$f"; done
  collect "$@"
}

cleanup() {
  [ -n "${CLUSTER_PID:-}" ] && kill -INT "$CLUSTER_PID" 2>/dev/null && wait "$CLUSTER_PID" 2>/dev/null
  local pids; pids=$(jobs -p); [ -n "$pids" ] && kill $pids 2>/dev/null
  bash scripts/services.sh stop all >/dev/null 2>&1 || true
}
trap cleanup EXIT

# What the suites need from outside, fetched while the type check and the first suites run: the
# backing services (installed and started: apt and Maven Central), then Chromium, Prometheus, nginx and
# HAProxy (one after another: apt takes one lock), and k6 (built with `go install`, at a low priority:
# the bench smoke needs it only at the end). Each is waited for just before a suite needs it.
# JMX on (loopback only) for nodetool: the cluster backup test snapshots and imports with it.
export PARLEY_CASSANDRA_JMX_PORT=${PARLEY_CASSANDRA_JMX_PORT:-17199}
fetch_tools() {
  step chromium bash scripts/install-chromium.sh
  touch "$LOG_DIR/.chromium-done"
  # Schema changes unflushed (scripts/services.sh): this Cassandra is the run's own and never killed (the chaos
  # test kills a private set of its own, started without this).
  step services-start env PARLEY_CASSANDRA_UNSAFE_SCHEMA=1 bash scripts/services.sh start all
  step prometheus-install bash scripts/install-prometheus.sh
  step lb-install bash scripts/install-lb.sh
}
fetch_k6() { step k6-install nice -n 15 bash scripts/install-k6.sh; }
rm -f "$LOG_DIR/.chromium-done"
background tools fetch_tools
background k6 fetch_k6

# The type check and the realm's layer check take a core for a minute: they run beside the embedded suite.
static_checks() {
  step typecheck npx tsc --noEmit -p .
  step realm-layers node --import tsx scripts/check-layers.ts
}
background checks static_checks

# The API suite: run against the embedded server and again against a real cluster. One file a line.
API_TESTS=(
  test/snapshot.test.ts
  test/register.test.ts
  test/register-gzip.test.ts
  test/history-reads.test.ts
  test/messages.test.ts
  test/fanout.test.ts
  test/events.test.ts
  test/subscriptions.test.ts
  test/users.test.ts
  test/http.test.ts
  test/zulip-js.test.ts
  test/python-client.test.ts
  test/python-scenario.test.ts
  test/zulip-terminal.test.ts
  test/bots.test.ts
  test/bot-storage.test.ts
  test/system-bots.test.ts
  test/outgoing-webhooks.test.ts
  test/scheduled_messages.test.ts
  test/rollback.test.ts
  test/features.test.ts
  test/streams.test.ts
  test/realm.test.ts
  test/channel_folders.test.ts
  test/linkifiers.test.ts
  test/playgrounds.test.ts
  test/realm_export.test.ts
  test/bot-update.test.ts
  test/jwt.test.ts
  test/invites.test.ts
  test/video_calls.test.ts
  test/people-users.test.ts
  test/people-delete.test.ts
  test/email-visibility.test.ts
  test/people-guests.test.ts
  test/people-api-keys.test.ts
  test/people-settings.test.ts
  test/people-status.test.ts
  test/people-groups.test.ts
  test/people-profile-fields.test.ts
  test/people-snapshot.test.ts
  test/people-python.test.ts
  test/message_flags.test.ts
  test/message_reads.test.ts
  test/message_edit.test.ts
  test/delete-recipients.test.ts
  test/reactions.test.ts
  test/topics.test.ts
  test/empty-topic.test.ts
  test/typing_presence.test.ts
  test/markdown.test.ts
  test/changelog.test.ts
  test/flutter.test.ts
  test/personal.test.ts
  test/uploads.test.ts
  test/tus.test.ts
  test/realm_emoji.test.ts
  test/durability.test.ts
  test/http-edge.test.ts
  test/openapi.test.ts
  test/rate_limits.test.ts
  test/caps.test.ts
  test/secrets_at_rest.test.ts
  test/metrics.test.ts
  test/organizations.test.ts
  test/account-index.test.ts
)

# The invitation test accepts an invitation in a real headless browser: Chromium is installed first.
for _ in $(seq 1 600); do [ -f "$LOG_DIR/.chromium-done" ] && break; kill -0 "$BG_tools" 2>/dev/null || break; sleep 1; done

tapsuite embedded-api PARLEY_LOG_LEVEL=warn -- "${API_TESTS[@]}"
# Suites on embedded servers of their own, side by side in lanes: most of their time is waiting (mail
# batching, schedules and days shortened to seconds, restarts), so lanes share the 2 cores well. Within a
# lane, suites and their files run one after another.
lane_mail() {
  # The account and onboarding emails of sign-up and organization creation (PARLEY_ONBOARDING_DAY_SECS
  # shortens the schedule's days: ~70 s), and new-login email rules, read from a real SMTP server.
  tapsuite signup-email PARLEY_LOG_LEVEL=warn -- test/signup-email.test.ts
  # Message retention (FL 452), run through `parley org retention . --now` on an embedded server of its own
  # (PARLEY_RETENTION_DAY_SECS makes a day 10 s).
  tapsuite retention PARLEY_LOG_LEVEL=warn -- test/retention.test.ts
  # Deleted users (FL 490), deleted through `parley users delete` on an embedded server of its own.
  tapsuite deleted-users PARLEY_LOG_LEVEL=warn -- test/deleted-users.test.ts
  # Mobile push again, each server a private cluster (2 gateways, 2 actor nodes) with the test's push service
  # in every process (PARLEY_TEST_OWN_CLUSTER, test/helpers/server.ts).
  services_up
  tapsuite push-cluster PARLEY_TEST_OWN_CLUSTER=1 PARLEY_LOG_LEVEL=warn -- test/push.test.ts
}
lane_notify() {
  # Missed-message email, read from a real SMTP server the test starts (the server under test mails it
  # through PARLEY_SMTP_URL, so it runs on an embedded server of its own).
  tapsuite notifications PARLEY_LOG_LEVEL=warn -- test/notifications.test.ts
  # The weekly digest email, run through `parley org digest . --now`, read from the same kind of SMTP server.
  tapsuite digest PARLEY_LOG_LEVEL=warn -- test/digest.test.ts
  # Missed-message email again, on a private cluster with the test's SMTP server in every process.
  ( services_up; tapsuite notifications-cluster PARLEY_TEST_OWN_CLUSTER=1 PARLEY_LOG_LEVEL=warn -- test/notifications.test.ts )
  tapsuite runtime PARLEY_LOG_LEVEL=fatal -- test/runtime.test.ts test/metrics-runtime.test.ts test/subscribers.test.ts test/alert-words.test.ts test/channel-audience.test.ts
}
lane_misc() {
  # Seeded fuzzing of every route on an embedded server of its own (it deactivates users and
  # regenerates keys, so never against the shared cluster); the seed is printed for a replay.
  tapsuite fuzz PARLEY_LOG_LEVEL=warn -- test/fuzz.test.ts
  # The organization-creation page in Chromium, on an embedded server in the test's own process (it asks the
  # directory actor for a creation link in-process, so it runs in the embedded mode only).
  tapsuite org-creation PARLEY_LOG_LEVEL=warn -- test/org-creation.test.ts
  # Mobile push, against a push notification service the test starts (the server under test reaches it
  # through PARLEY_PUSH_SERVICE_URL, so it runs on embedded servers of its own).
  tapsuite push PARLEY_LOG_LEVEL=warn -- test/push.test.ts
  # Provisioning at scale: parley users import of 5,000 users, bulk subscription of thousands (embedded).
  tapsuite provision PARLEY_LOG_LEVEL=warn -- test/provision.test.ts
  # subscriber_count kept by the realm: through changes, a restart and both loads of the realm (embedded).
  tapsuite subscriber-count PARLEY_LOG_LEVEL=warn -- test/subscriber-count.test.ts
}
# Waits until the background job has started the services, and points this lane's suites at them.
services_up() {
  for _ in $(seq 1 600); do bash scripts/services.sh status >/dev/null 2>&1 && break; kill -0 "$BG_tools" 2>/dev/null || break; sleep 2; done
  eval "$(bash scripts/services.sh env)"
  export PARLEY_NATS_URL PARLEY_REDIS_URL PARLEY_CASSANDRA_CONTACT_POINTS PARLEY_CASSANDRA_DC
}
# The store, bus, lease, limiter and file suites against real NATS, Redis and Cassandra, and backups with
# nodetool.
lane_backends() {
  services_up
  tapsuite backends PARLEY_TEST_CASSANDRA=1 PARLEY_LOG_LEVEL=warn -- test/store.test.ts test/bus.test.ts test/leases.test.ts test/limiter.test.ts test/files.test.ts
  tapsuite backup PARLEY_TEST_CASSANDRA=1 PARLEY_LOG_LEVEL=warn -- test/backup.test.ts test/export.test.ts test/backup-cli.test.ts
  tapsuite checkpoint PARLEY_LOG_LEVEL=warn -- test/checkpoint.test.ts
}
side_by_side lane_mail lane_notify lane_misc lane_backends
collect checks tools

if bash scripts/services.sh start all; then
  eval "$(bash scripts/services.sh env)"
  export PARLEY_NATS_URL PARLEY_REDIS_URL PARLEY_CASSANDRA_CONTACT_POINTS PARLEY_CASSANDRA_DC

  if [ -f scripts/cluster.ts ]; then
    echo "=== starting a local cluster (2 gateways, 2 actor nodes)"
    rm -f .parley/cluster.json
    # Mail goes to one outbox the tests can read, whichever process sends it.
    export PARLEY_OUTBOX_DIR="$ROOT/.parley/cluster-outbox"
    rm -rf "$PARLEY_OUTBOX_DIR"
    # Every file of the suite acts as the same demo users, for minutes: they get load-test rate budgets
    # (loadTestLimits); the rate-limit and queue-cap tests use users of their own with the defaults. And they
    # may create as many channels as they do together (each file of the embedded run has a server of its own).
    PARLEY_RATE_LIMIT_OVERRIDES=$(node --import tsx -e "import('./lib/demo.ts').then((m) => console.log(m.loadTestLimits().PARLEY_RATE_LIMIT_OVERRIDES))") \
    PARLEY_CHANNEL_CREATION_LIMIT=100000/600 \
    PARLEY_HEARTBEAT_SECS=2 PARLEY_CASSANDRA_KEYSPACE=parley_ci_$$ PARLEY_LOG_LEVEL=warn PARLEY_DEMO_DIR="$ROOT/.parley/cluster-demo" \
      node --import tsx scripts/cluster.ts --no-services --base-port 19991 >"$LOG_DIR/cluster-processes.log" 2>&1 &
    CLUSTER_PID=$!
    for _ in $(seq 1 120); do [ -f .parley/cluster.json ] && break; sleep 1; done
    if [ -f .parley/cluster.json ]; then
      GATEWAYS=$(node -e "const c=require('./.parley/cluster.json');console.log(c.processes.filter(p=>p.role==='gateway').map(p=>p.url).join(','))")
      METRICS=$(node -e "const c=require('./.parley/cluster.json');console.log(c.processes.filter(p=>p.role==='gateway').map(p=>p.metricsUrl).join(','))")
      NODE_METRICS=$(node -e "const c=require('./.parley/cluster.json');console.log(c.processes.filter(p=>p.role==='actors').map(p=>p.metricsUrl).join(','))")
      tapsuite cluster-api PARLEY_TEST_GATEWAYS="$GATEWAYS" PARLEY_TEST_METRICS="$METRICS" PARLEY_TEST_NODE_METRICS="$NODE_METRICS" PARLEY_TEST_DEMO_DIR="$ROOT/.parley/cluster-demo" PARLEY_LOG_LEVEL=warn -- "${API_TESTS[@]}"
      kill -INT "$CLUSTER_PID" 2>/dev/null; wait "$CLUSTER_PID" 2>/dev/null; CLUSTER_PID=
      node --import tsx scripts/drop-keyspace.ts "parley_ci_$$" || echo "# could not drop keyspace parley_ci_$$"
      unset PARLEY_OUTBOX_DIR
      # A real Prometheus (installed in the background above) scrapes a cluster in test/cluster/prometheus.test.ts.
      [ -d test/cluster ] && tapsuite cluster PARLEY_LOG_LEVEL=warn -- test/cluster/*.test.ts
    else
      failed=$((failed + 1)); echo "not ok - the cluster did not start"; tail -40 "$LOG_DIR/cluster-processes.log"
    fi
  fi
  # nginx, HAProxy and ingress-nginx's directives, from deploy/ and k8s/, in front of a cluster of their own.
  tapsuite lb PARLEY_LOG_LEVEL=warn -- test/lb/lb.test.ts
else
  failed=$((failed + 1)); echo "not ok - backing services did not start"
fi

no_violations() {
  if [ -s "$PARLEY_VIOLATIONS_FILE" ]; then head -20 "$PARLEY_VIOLATIONS_FILE"; return 1; fi
}
step "events - every event made during the suites matches its strict schema" no_violations

no_response_violations() {
  if [ -s "$PARLEY_RESPONSE_VIOLATIONS_FILE" ]; then
    echo "$(wc -l <"$PARLEY_RESPONSE_VIOLATIONS_FILE") replies break the API description (gateway/openapi/); the first:"
    head -20 "$PARLEY_RESPONSE_VIOLATIONS_FILE"
    return 1
  fi
}
step "responses - every API response made during the suites matches the OpenAPI document" no_response_violations

if [ -f scripts/k8s-validate.sh ]; then step k8s-manifests bash scripts/k8s-validate.sh; fi
# The bench smoke run proves the scripts still work (k6 scripts included: k6 was built in the background;
# the services are still up for the cluster step).
collect k6
step bench-smoke node --import tsx bench/run.ts --smoke

if [ "$failed" -gt 0 ]; then
  # Why, not only which: the failed assertions and their first diagnostic lines, for a CI log read from its end.
  echo; echo "=== failed assertions"
  node test/failures.mjs "$LOG_DIR"/*.log
fi

echo
echo "$passed passed, $failed failed, $skipped skipped"
[ "$failed" -eq 0 ]
