#!/usr/bin/env bash
# Parley's backing services on 127.0.0.1: NATS, Redis and a single-node
# Cassandra 5.0 run from the Maven Central jars (no tarball, no Docker).
#
#   bash scripts/services.sh install              # apt/maven fetch, idempotent
#   bash scripts/services.sh start  [nats|redis|cassandra|all]   (default all)
#   bash scripts/services.sh stop   [nats|redis|cassandra|all]
#   bash scripts/services.sh restart [...]
#   bash scripts/services.sh status
#   bash scripts/services.sh env                  # export lines for the app
#   bash scripts/services.sh logs   <service>     # tail of the service's log
#   bash scripts/services.sh wipe   [...]         # delete data (services stopped)
#
# `start` installs what is missing, waits until each service really answers
# (NATS: INFO banner; Redis: PING -> PONG; Cassandra: a real CQL query), and
# does nothing for a service that already runs and answers.
#
# Environment (all optional):
#   PARLEY_SERVICES_HOME   download cache        (default ~/.cache/parley-services)
#   PARLEY_SERVICES_DIR    data, logs, pid files (default <repo>/.parley/services)
#   PARLEY_NATS_PORT       4222
#   PARLEY_REDIS_PORT      6379
#   PARLEY_CASSANDRA_PORT  9042   (CQL native transport)
#   PARLEY_CASSANDRA_STORAGE_PORT  17000  (internode; nothing connects to it)
#   PARLEY_CASSANDRA_JMX_PORT      unset = JMX off; set = local-only JMX there
#   PARLEY_CASSANDRA_VERSION       5.0.8
#   PARLEY_CASSANDRA_HEAP_MIN / PARLEY_CASSANDRA_HEAP_MAX   512m / 1g
#   PARLEY_CASSANDRA_JVM_OPTS      extra JVM options (word-split)
#   PARLEY_CASSANDRA_UNSAFE_SCHEMA=1  DDL ~5x faster (no flush of schema
#                                  tables); a kill -9 may then lose recent DDL
#   PARLEY_SERVICES_TIMEOUT        seconds to wait for readiness (default 180)
#   JAVA_HOME                      JDK/JRE 17 to run Cassandra with
set -euo pipefail

SCRIPT_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO_ROOT=$(cd "$SCRIPT_DIR/.." && pwd)
CASS_CONF_SRC="$SCRIPT_DIR/cassandra"

PARLEY_SERVICES_HOME=${PARLEY_SERVICES_HOME:-${HOME:-/root}/.cache/parley-services}
PARLEY_SERVICES_DIR=${PARLEY_SERVICES_DIR:-$REPO_ROOT/.parley/services}
NATS_PORT=${PARLEY_NATS_PORT:-4222}
REDIS_PORT=${PARLEY_REDIS_PORT:-6379}
CASS_PORT=${PARLEY_CASSANDRA_PORT:-9042}
CASS_STORAGE_PORT=${PARLEY_CASSANDRA_STORAGE_PORT:-17000}
CASS_JMX_PORT=${PARLEY_CASSANDRA_JMX_PORT:-}
CASS_VERSION=${PARLEY_CASSANDRA_VERSION:-5.0.8}
CASS_HEAP_MIN=${PARLEY_CASSANDRA_HEAP_MIN:-512m}
CASS_HEAP_MAX=${PARLEY_CASSANDRA_HEAP_MAX:-1g}
READY_TIMEOUT=${PARLEY_SERVICES_TIMEOUT:-180}
HOST=127.0.0.1

CASS_HOME="$PARLEY_SERVICES_HOME/cassandra-$CASS_VERSION"
CASS_LIB="$CASS_HOME/lib"
ALL_SERVICES=(nats redis cassandra)

for p in NATS_PORT REDIS_PORT CASS_PORT CASS_STORAGE_PORT READY_TIMEOUT; do
  [[ ${!p} =~ ^[0-9]+$ ]] || { echo "services: $p must be a number, got '${!p}'" >&2; exit 2; }
done
[[ -z $CASS_JMX_PORT || $CASS_JMX_PORT =~ ^[0-9]+$ ]] || { echo "services: PARLEY_CASSANDRA_JMX_PORT must be a number" >&2; exit 2; }

log() { printf '[services] %s\n' "$*" >&2; }
die() { printf '[services] ERROR: %s\n' "$*" >&2; exit 1; }
now() { date +%s.%N; }
elapsed() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.1f", b - a }'; }

as_root() {
  if [[ $(id -u) -eq 0 ]]; then "$@"; else sudo "$@"; fi
}

apt_install() {
  log "apt-get install -y $*"
  if ! as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "$@" >/dev/null; then
    log "install failed; running apt-get update and retrying"
    as_root env DEBIAN_FRONTEND=noninteractive apt-get update -q >/dev/null
    as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "$@" >/dev/null
  fi
}

# ---------------------------------------------------------------------------
# install
# ---------------------------------------------------------------------------

find_java() {
  local c
  for c in ${JAVA_HOME:+"$JAVA_HOME/bin/java"} /usr/lib/jvm/java-17-openjdk-*/bin/java "$(command -v java 2>/dev/null || true)"; do
    [[ -n $c && -x $c ]] || continue
    if "$c" -version 2>&1 | sed -n 1p | grep -Eq '"17[."]'; then echo "$c"; return 0; fi
  done
  return 1
}

install_nats() {
  command -v nats-server >/dev/null 2>&1 && return 0
  apt_install nats-server
}

install_redis() {
  command -v redis-server >/dev/null 2>&1 && command -v redis-cli >/dev/null 2>&1 && return 0
  apt_install redis-server
}

install_cassandra() {
  if [[ -f $CASS_HOME/.complete ]] && find_java >/dev/null; then return 0; fi
  find_java >/dev/null || apt_install openjdk-17-jre-headless
  find_java >/dev/null || die "no Java 17 found even after installing openjdk-17-jre-headless; set JAVA_HOME"
  [[ -f $CASS_HOME/.complete ]] && return 0
  command -v mvn >/dev/null 2>&1 || apt_install maven
  local t0 tmp
  t0=$(now)
  log "fetching cassandra-all $CASS_VERSION and its dependencies from Maven Central into $CASS_LIB"
  mkdir -p "$CASS_HOME"
  tmp=$(mktemp -d "$CASS_HOME/lib.tmp.XXXXXX")
  if ! JAVA_HOME=${JAVA_HOME:-$(dirname "$(dirname "$(readlink -f "$(find_java)")")")} \
       mvn -q -B -Dstyle.color=never -f "$CASS_CONF_SRC/pom.xml" dependency:copy-dependencies \
         -Dcassandra.version="$CASS_VERSION" -DoutputDirectory="$tmp" >"$CASS_HOME/maven.log" 2>&1; then
    tail -n 40 "$CASS_HOME/maven.log" >&2
    rm -rf "$tmp"
    die "maven could not fetch cassandra-all $CASS_VERSION (log: $CASS_HOME/maven.log)"
  fi
  ls "$tmp"/cassandra-all-*.jar >/dev/null 2>&1 || { rm -rf "$tmp"; die "cassandra-all jar missing after maven run"; }
  ls "$tmp"/jamm-*.jar >/dev/null 2>&1 || { rm -rf "$tmp"; die "jamm jar missing after maven run"; }
  rm -rf "$CASS_LIB"
  mv "$tmp" "$CASS_LIB"
  touch "$CASS_HOME/.complete"
  log "cassandra $CASS_VERSION: $(ls "$CASS_LIB" | wc -l) jars in $(elapsed "$t0") s"
}

cmd_install() {
  local t0; t0=$(now)
  install_nats
  install_redis
  install_cassandra
  log "installed: $(nats-server --version 2>&1 | sed -n 1p); $(redis-server --version | awk '{print $1, $2, $3}'); cassandra $CASS_VERSION; java $("$(find_java)" -version 2>&1 | sed -n 1p | awk -F'"' '{print $2}') ($(elapsed "$t0") s)"
}

# ---------------------------------------------------------------------------
# process helpers
# ---------------------------------------------------------------------------

svc_dir() { echo "$PARLEY_SERVICES_DIR/$1"; }
pid_file() { echo "$PARLEY_SERVICES_DIR/$1.pid"; }
log_file() {
  case $1 in
    cassandra) echo "$PARLEY_SERVICES_DIR/cassandra/logs/system.log" ;;
    *) echo "$PARLEY_SERVICES_DIR/$1/$1.log" ;;
  esac
}
svc_port() {
  case $1 in nats) echo "$NATS_PORT" ;; redis) echo "$REDIS_PORT" ;; cassandra) echo "$CASS_PORT" ;; esac
}

read_pid() {
  local f; f=$(pid_file "$1")
  [[ -f $f ]] || return 1
  local pid; pid=$(tr -dc '0-9' <"$f")
  [[ -n $pid ]] || return 1
  echo "$pid"
}

pid_alive() {
  local pid=$1 state
  kill -0 "$pid" 2>/dev/null || return 1
  state=$(awk '{print $3}' "/proc/$pid/stat" 2>/dev/null || echo Z)
  [[ $state != Z ]]
}

# Is this pid really our service (guards against a recycled pid)?
pid_is_svc() {
  local svc=$1 pid=$2 cmd
  cmd=$(tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null) || return 1
  case $svc in
    nats) [[ $cmd == *nats-server* ]] ;;
    redis) [[ $cmd == *redis-server* ]] ;;
    cassandra) [[ $cmd == *org.apache.cassandra.service.CassandraDaemon* ]] ;;
  esac
}

# The pid from the pid file, if that process is alive and is the service.
running_pid() {
  local pid
  pid=$(read_pid "$1") || return 1
  pid_alive "$pid" || return 1
  pid_is_svc "$1" "$pid" || return 1
  echo "$pid"
}

port_open() {
  (exec 3<>"/dev/tcp/$HOST/$1") 2>/dev/null
}

nats_ready() {
  local banner
  banner=$(timeout 3 bash -c "exec 3<>/dev/tcp/$HOST/$NATS_PORT && head -c 4 <&3" 2>/dev/null || true)
  [[ $banner == INFO ]]
}

redis_ready() {
  [[ $(timeout 3 redis-cli -h "$HOST" -p "$REDIS_PORT" ping 2>/dev/null || true) == PONG ]]
}

cassandra_ready() {
  port_open "$CASS_PORT" || return 1
  if command -v node >/dev/null 2>&1; then
    node "$CASS_CONF_SRC/cqlping.mjs" "$HOST" "$CASS_PORT" 5000 >/dev/null 2>&1
  else
    grep -q 'Starting listening for CQL clients' "$(log_file cassandra)" 2>/dev/null
  fi
}

svc_ready() { "${1}_ready"; }

show_log_tail() {
  local svc=$1 f
  for f in "$(log_file "$svc")" "$PARLEY_SERVICES_DIR/cassandra/logs/stdout.log"; do
    [[ $svc != cassandra && $f == *stdout.log ]] && continue
    [[ -s $f ]] || continue
    printf '[services] ---- last lines of %s ----\n' "$f" >&2
    tail -n 40 "$f" >&2
  done
}

# Start a command detached (own session, no stdin, output to a log file) and
# record its pid. Closes the lock fd so the daemon does not hold it.
launch() {
  local svc=$1 logf=$2; shift 2
  setsid "$@" </dev/null >>"$logf" 2>&1 9>&- &
  local pid=$!
  echo "$pid" >"$(pid_file "$svc")"
  echo "$pid"
}

wait_ready() {
  local svc=$1 pid=$2 t0=$3 deadline
  deadline=$(( $(date +%s) + READY_TIMEOUT ))
  while :; do
    if svc_ready "$svc"; then
      log "$svc ready on $HOST:$(svc_port "$svc") (pid $pid, $(elapsed "$t0") s)"
      return 0
    fi
    if ! pid_alive "$pid"; then
      show_log_tail "$svc"
      rm -f "$(pid_file "$svc")"
      die "$svc (pid $pid) exited during start-up; see the log above"
    fi
    if (( $(date +%s) >= deadline )); then
      show_log_tail "$svc"
      log "$svc not ready after ${READY_TIMEOUT} s; stopping it"
      stop_one "$svc" >/dev/null 2>&1 || true
      die "$svc did not become ready within ${READY_TIMEOUT} s (PARLEY_SERVICES_TIMEOUT)"
    fi
    sleep 0.5
  done
}

# Checks before launching: returns 0 = must launch, 1 = already running and
# ready (nothing to do), 2 = our process is alive but still starting (just wait).
prepare_start() {
  local svc=$1 pid port
  if pid=$(running_pid "$svc"); then
    if svc_ready "$svc"; then
      log "$svc already running (pid $pid) on $HOST:$(svc_port "$svc")"
      return 1
    fi
    return 2
  fi
  rm -f "$(pid_file "$svc")"
  for port in $(svc_port "$svc") $([[ $svc == cassandra ]] && echo "$CASS_STORAGE_PORT $CASS_JMX_PORT"); do
    if port_open "$port"; then
      die "$svc: port $HOST:$port is already in use by another process (not started by this script). Stop it or choose another port (PARLEY_*_PORT)."
    fi
  done
  return 0
}

# ---------------------------------------------------------------------------
# per-service launchers (print the pid)
# ---------------------------------------------------------------------------

launch_nats() {
  local d; d=$(svc_dir nats)
  mkdir -p "$d"
  # A GET /messages reply of 5000 messages can pass NATS's 1 MB default payload.
  # A client that does not answer two pings 2 s apart (a paused or hung process)
  # is dropped, so its queue-group subscriptions stop taking requests that only
  # a live shard owner can answer (docs/architecture.md, "Failures seen by clients").
  printf 'max_payload: 8MB\nping_interval: "2s"\nping_max: 2\n' >"$d/nats.conf"
  launch nats "$(log_file nats)" nats-server -c "$d/nats.conf" -a "$HOST" -p "$NATS_PORT" -n parley-local
}

launch_redis() {
  local d; d=$(svc_dir redis)
  mkdir -p "$d"
  launch redis "$(log_file redis)" redis-server --bind "$HOST" --port "$REDIS_PORT" \
    --save '' --appendonly no --daemonize no --protected-mode yes --dir "$d"
}

launch_cassandra() {
  local d java jamm line
  d=$(svc_dir cassandra)
  java=$(find_java) || die "no Java 17 found; run: bash scripts/services.sh install"
  mkdir -p "$d"/{data,commitlog,saved_caches,hints,cdc_raw,logs,triggers}
  jamm=$(ls "$CASS_LIB"/jamm-*.jar | head -1)
  sed -e "s#@@DATA_DIR@@#$d#g" \
      -e "s#@@NATIVE_PORT@@#$CASS_PORT#g" \
      -e "s#@@STORAGE_PORT@@#$CASS_STORAGE_PORT#g" \
      "$CASS_CONF_SRC/cassandra.yaml" >"$d/cassandra.yaml"

  local -a opts=() words=()
  while IFS= read -r line || [[ -n $line ]]; do
    line=${line%%#*}
    [[ $line =~ [^[:space:]] ]] || continue
    read -r -a words <<<"$line"
    opts+=("${words[@]}")
  done <"$CASS_CONF_SRC/jvm.options"
  opts+=(
    "-Xms$CASS_HEAP_MIN" "-Xmx$CASS_HEAP_MAX"
    "-javaagent:$jamm"
    "-XX:ErrorFile=$d/logs/hs_err_%p.log"
    "-Dcassandra.config=file://$d/cassandra.yaml"
    "-Dcassandra.storagedir=$d"
    "-Dcassandra.logdir=$d/logs"
    "-Dlogback.configurationFile=file://$CASS_CONF_SRC/logback.xml"
    "-Dcassandra.triggers_dir=$d/triggers"
    "-Dcassandra-foreground=yes"
  )
  if [[ ${PARLEY_CASSANDRA_UNSAFE_SCHEMA:-0} == 1 ]]; then
    opts+=("-Dcassandra.unsafesystem=true" "-Dcassandra.test.flush_local_schema_changes=false")
  fi
  if [[ -n $CASS_JMX_PORT ]]; then
    opts+=("-Dcassandra.jmx.local.port=$CASS_JMX_PORT" "-Djava.rmi.server.hostname=$HOST")
  fi
  if [[ -n ${PARLEY_CASSANDRA_JVM_OPTS:-} ]]; then
    read -r -a words <<<"$PARLEY_CASSANDRA_JVM_OPTS"
    opts+=("${words[@]}")
  fi
  : >"$d/logs/stdout.log"
  launch cassandra "$d/logs/stdout.log" "$java" "${opts[@]}" \
    -cp "$CASS_LIB/*" org.apache.cassandra.service.CassandraDaemon
}

ensure_installed() {
  case $1 in
    nats) install_nats ;;
    redis) install_redis ;;
    cassandra) install_cassandra ;;
  esac
}

# ---------------------------------------------------------------------------
# commands
# ---------------------------------------------------------------------------

# Sets SVCS to the services named in "$@" (default: all), in a fixed order.
parse_services() {
  local s want=" "
  [[ $# -eq 0 ]] && set -- all
  for s in "$@"; do
    case $s in
      all) want+="${ALL_SERVICES[*]} " ;;
      nats|redis|cassandra) want+="$s " ;;
      *) die "unknown service '$s' (nats, redis, cassandra, all)" ;;
    esac
  done
  SVCS=()
  for s in "${ALL_SERVICES[@]}"; do
    [[ $want == *" $s "* ]] && SVCS+=("$s")
  done
  return 0
}

take_lock() {
  mkdir -p "$PARLEY_SERVICES_DIR"
  exec 9>"$PARLEY_SERVICES_DIR/.lock"
  if command -v flock >/dev/null 2>&1; then
    flock -w 600 9 || die "could not lock $PARLEY_SERVICES_DIR/.lock"
  fi
}

cmd_start() {
  parse_services "$@"; local -a svcs=("${SVCS[@]}")
  local svc rc pid
  take_lock
  for svc in "${svcs[@]}"; do ensure_installed "$svc"; done
  local -A pids=() t0s=()
  # Launch Cassandra first: it is the slow one, the others start meanwhile.
  for svc in cassandra nats redis; do
    [[ " ${svcs[*]} " == *" $svc "* ]] || continue
    rc=0; prepare_start "$svc" || rc=$?
    case $rc in
      1) continue ;;
      2) pids[$svc]=$(running_pid "$svc"); t0s[$svc]=$(now); log "$svc (pid ${pids[$svc]}) is starting; waiting" ;;
      0)
        t0s[$svc]=$(now)
        pids[$svc]=$("launch_$svc") || true
        [[ -n ${pids[$svc]} ]] || die "could not launch $svc"
        log "starting $svc (pid ${pids[$svc]}), logs in $(log_file "$svc")"
        ;;
    esac
  done
  for svc in nats redis cassandra; do
    [[ -n ${pids[$svc]:-} ]] || continue
    wait_ready "$svc" "${pids[$svc]}" "${t0s[$svc]}"
  done
}

stop_one() {
  local svc=$1 pid grace i
  if ! pid=$(running_pid "$svc"); then
    rm -f "$(pid_file "$svc")"
    log "$svc not running"
    return 0
  fi
  case $svc in cassandra) grace=60 ;; *) grace=15 ;; esac
  log "stopping $svc (pid $pid)"
  kill -TERM "$pid" 2>/dev/null || true
  for (( i = 0; i < grace * 5; i++ )); do
    pid_alive "$pid" || break
    sleep 0.2
  done
  if pid_alive "$pid"; then
    log "$svc (pid $pid) still alive after ${grace} s; sending KILL"
    kill -KILL "$pid" 2>/dev/null || true
    for (( i = 0; i < 50; i++ )); do pid_alive "$pid" || break; sleep 0.1; done
  fi
  pid_alive "$pid" && die "could not stop $svc (pid $pid)"
  rm -f "$(pid_file "$svc")"
  log "$svc stopped"
}

cmd_stop() {
  parse_services "$@"; local -a svcs=("${SVCS[@]}")
  local svc
  take_lock
  # Stop in parallel: Cassandra's drain is the long part.
  local -a jobs=()
  for svc in "${svcs[@]}"; do
    stop_one "$svc" &
    jobs+=($!)
  done
  local rc=0 j
  for j in "${jobs[@]}"; do wait "$j" || rc=1; done
  return $rc
}

cmd_status() {
  local svc pid rc=0
  for svc in "${ALL_SERVICES[@]}"; do
    if pid=$(running_pid "$svc"); then
      if svc_ready "$svc"; then
        printf '%-10s running  pid %-7s %s:%s\n' "$svc" "$pid" "$HOST" "$(svc_port "$svc")"
      else
        printf '%-10s starting pid %-7s %s:%s (not answering yet)\n' "$svc" "$pid" "$HOST" "$(svc_port "$svc")"
        rc=1
      fi
    else
      printf '%-10s stopped\n' "$svc"
      rc=1
    fi
  done
  printf 'services dir: %s\n' "$PARLEY_SERVICES_DIR"
  return $rc
}

cmd_env() {
  cat <<EOF
export PARLEY_NATS_URL=nats://$HOST:$NATS_PORT
export PARLEY_REDIS_URL=redis://$HOST:$REDIS_PORT
export PARLEY_CASSANDRA_CONTACT_POINTS=$HOST:$CASS_PORT
export PARLEY_CASSANDRA_DC=datacenter1
EOF
}

cmd_logs() {
  [[ $# -eq 1 ]] || die "usage: services.sh logs <nats|redis|cassandra>"
  parse_services "$1"
  tail -n "${LINES_TO_SHOW:-60}" "$(log_file "$1")"
}

cmd_wipe() {
  parse_services "$@"; local -a svcs=("${SVCS[@]}")
  local svc
  take_lock
  for svc in "${svcs[@]}"; do
    running_pid "$svc" >/dev/null && die "$svc is running; stop it first"
    rm -rf "$(svc_dir "$svc")"
    log "wiped $(svc_dir "$svc")"
  done
}

usage() {
  sed -n '2,30p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'
}

main() {
  local cmd=${1:-help}
  [[ $# -gt 0 ]] && shift
  case $cmd in
    install) cmd_install ;;
    start) cmd_start "$@" ;;
    stop) cmd_stop "$@" ;;
    restart) cmd_stop "$@"; cmd_start "$@" ;;
    status) cmd_status ;;
    env) cmd_env ;;
    logs) cmd_logs "$@" ;;
    wipe) cmd_wipe "$@" ;;
    help|-h|--help) usage ;;
    *) usage >&2; exit 2 ;;
  esac
}

main "$@"
