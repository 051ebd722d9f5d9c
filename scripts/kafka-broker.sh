#!/usr/bin/env bash
# kafka-broker.sh: a real single-node Apache Kafka 4.x KRaft broker (broker + controller in one JVM),
# started from Maven Central jars (no tarball, no Docker). Used by the kafka-marked integration tests
# (tests/kafka_broker.py) and usable by hand.
#
# Needs: bash, java 17+, python3 (free ports, cluster id), and mvn for the first `fetch`.
#
# Every command takes --kafka-version V (or KAFKA_VERSION=V): the Apache Kafka 4.x release to fetch and run.
# The default is the one place it is written: <kafka.version> in scripts/kafka/pom.xml.
#
# Commands
#   fetch [--kafka-version V | --all]
#       Download that release's broker jars (--all: every release in scripts/kafka/supported-versions.txt) (scripts/kafka/pom.xml: kafka_2.13 + log4j2) into
#       .kafka/lib-<V> under the repo root (KAFKA_LIB_DIR overrides the directory). Idempotent: a stamp
#       holding the pom's sha256 and the version makes a repeat call return at once (Maven's ~/.m2 caches
#       the jars across checkouts); concurrent calls are serialised with flock. Extra mvn flags:
#       KAFKA_MVN_ARGS (e.g. -o, or -Dmaven.repo.local=/some/m2).
#   version | libdir [--kafka-version V]
#       Print the release that would run (the default, or V), or the directory of its jars.
#   cluster-id
#       Print a new random cluster id (what `start` formats a fresh DIR with; scripts/kafka-cluster.sh shares one).
#   start [--kafka-version V] [--sasl] [--authorizer] [--port N] [--prop KEY=VALUE]... [--listener NAME:PROTOCOL]...
#         [--classpath PATH] [--node-id N --controller-port P --voters LIST --cluster-id ID] [--fresh] [DIR]
#       DIR defaults to .kafka/run/default. Runs `fetch`, then on a fresh DIR picks free loopback ports,
#       writes DIR/server.properties and formats DIR/data with a random cluster id
#       (kafka.tools.StorageTool format --standalone). On a DIR that is already formatted it restarts
#       the broker with the saved config, data and ports (the options are then ignored; --fresh wipes
#       DIR first). The JVM runs in its own process group (setsid); its pid is in DIR/broker.pid and
#       its logs are in DIR/logs (server.log, authorizer.log, kafka.out). Waits until the client port
#       accepts connections and the broker logs that it started, then prints KEY=VALUE lines, also
#       saved in DIR/broker.env:
#         BOOTSTRAP=127.0.0.1:<port>  SECURITY_PROTOCOL=PLAINTEXT|SASL_PLAINTEXT  PID=<pid>  DIR=<dir>
#       (+ SASL_MECHANISM=PLAIN with --sasl). Prints the log tail and exits 1 if it does not come up
#       within KAFKA_START_TIMEOUT seconds (default 90). If already running, just prints the lines.
#         --sasl        client listener SASL_PLAINTEXT with PLAIN users admin/admin-secret,
#                       alice/alice-secret, bob/bob-secret (+ KAFKA_SASL_USERS="name:pw name2:pw2").
#                       Inter-broker traffic uses the SASL listener as User:admin.
#         --authorizer  org.apache.kafka.metadata.authorizer.StandardAuthorizer with
#                       super.users=User:admin;User:ANONYMOUS (ANONYMOUS = the PLAINTEXT controller
#                       listener) and allow.everyone.if.no.acl.found=false. Implies --sasl.
#         --port N      client port (default: a free one); the controller port is always free-picked.
#         --prop K=V    extra server property, appended last so it overrides (repeatable; also
#                       KAFKA_EXTRA_PROPS, one K=V per line).
#         --listener NAME:PROTOCOL
#                       one more client listener on a free port (repeatable), e.g. EARLY:SASL_PLAINTEXT
#                       (a SASL one gets the same PLAIN users); its address is printed as
#                       BOOTSTRAP_<NAME>=127.0.0.1:<port>.
#         --classpath P extra classpath entries (e.g. an authorizer plugin's jar), kept in DIR for restarts.
#         --node-id N --controller-port P --voters LIST --cluster-id ID
#                       one node of a multi-node quorum (scripts/kafka-cluster.sh passes them): node.id N, its
#                       controller listener on port P, the static quorum controller.quorum.voters=LIST
#                       (1@127.0.0.1:P1,2@...), formatted with the shared cluster id ID instead of --standalone.
#       Env: KAFKA_SASL=1, KAFKA_AUTHORIZER=1, KAFKA_PORT=N (same as the flags); KAFKA_HEAP_OPTS
#       (default -Xms128m -Xmx512m); KAFKA_JIT_GC_OPTS (default -XX:+UseSerialGC
#       -XX:TieredStopAtLevel=1); KAFKA_JVM_OPTS (extra JVM flags); KAFKA_WATCH_PID=<pid>: a detached
#       watchdog stops the broker when that process dies (tests/kafka_broker.py passes the pytest pid,
#       so a killed test run leaves no orphan JVM).
#   stop [--kill] [DIR]
#       SIGTERM to the broker's process group, wait up to KAFKA_STOP_TIMEOUT seconds (default 30) for
#       a clean shutdown, then SIGKILL. --kill sends SIGKILL at once (simulates a crash). Data and
#       config stay in DIR, so `start DIR` brings the same broker back on the same port.
#   status [DIR]
#       Prints `RUNNING PID=<pid> BOOTSTRAP=...` and exits 0, or prints `STOPPED` and exits 3.
#
# Single-node settings: replication factors and min ISR of the offsets, transaction-state and
# share-coordinator topics are 1 (transactions work on one broker), 1 partition each for fast startup,
# auto.create.topics.enable=false, group.initial.rebalance.delay.ms=0, broker.session.timeout.ms=3000
# (so a restart after a crash is quick).
#
# Examples
#   bash scripts/kafka-broker.sh fetch
#   bash scripts/kafka-broker.sh start /tmp/kb        # -> BOOTSTRAP=127.0.0.1:40123
#   bash scripts/kafka-broker.sh status /tmp/kb
#   bash scripts/kafka-broker.sh stop /tmp/kb
#   KAFKA_SASL=1 bash scripts/kafka-broker.sh start --authorizer --fresh /tmp/kb-sasl
set -euo pipefail

SCRIPT_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$SCRIPT_DIR/.." && pwd)"
POM="$SCRIPT_DIR/kafka/pom.xml"
LOG4J2_CONFIG="$SCRIPT_DIR/kafka/log4j2.yaml"
VERSION=""  # set by set_version
LIB=""      # set by set_version
DEFAULT_DIR="$ROOT/.kafka/run/default"
START_TIMEOUT="${KAFKA_START_TIMEOUT:-90}"
STOP_TIMEOUT="${KAFKA_STOP_TIMEOUT:-30}"
HEAP_OPTS="${KAFKA_HEAP_OPTS:--Xms128m -Xmx512m}"
# C1-only JIT and the serial collector: the broker starts ~40% faster on a busy 2-core machine.
JIT_GC_OPTS="${KAFKA_JIT_GC_OPTS:--XX:+UseSerialGC -XX:TieredStopAtLevel=1}"

die() { echo "kafka-broker.sh: $*" >&2; exit 1; }
note() { echo "kafka-broker.sh: $*" >&2; }

pom_hash() { sha256sum "$POM" | cut -d' ' -f1; }

default_version() { sed -n 's:.*<kafka.version>\(.*\)</kafka.version>.*:\1:p' "$POM" | head -n 1; }

# VERSION: $1, else KAFKA_VERSION, else the pom's default; LIB: where that release's jars go.
set_version() {
  VERSION="${1:-${KAFKA_VERSION:-$(default_version)}}"
  [[ "$VERSION" =~ ^4\.[0-9]+\.[0-9]+$ ]] || die "unsupported Kafka version '$VERSION' (expected a 4.x release such as 4.4.0)"
  LIB="${KAFKA_LIB_DIR:-$ROOT/.kafka/lib-$VERSION}"
}

jars_ready() {
  [[ -f "$LIB/.fetched" && "$(cat "$LIB/.fetched")" == "$(pom_hash) $VERSION" ]]
}

cmd_fetch() {
  if [[ "${1:-}" == --all ]]; then
    local v
    for v in $(grep -v '^#' "$SCRIPT_DIR/kafka/supported-versions.txt"); do
      (set_version "$v" && cmd_fetch)
    done
    return 0
  fi
  if jars_ready; then
    note "Kafka $VERSION jars up to date in $LIB"
    return 0
  fi
  command -v mvn >/dev/null 2>&1 || die "mvn not found on PATH (needed once to fetch the Kafka jars)"
  local parent
  parent="$(dirname "$LIB")"
  mkdir -p "$parent"
  exec 9>"$parent/.fetch.lock"
  if command -v flock >/dev/null 2>&1; then
    flock -w 900 9 || die "timed out waiting for another fetch ($parent/.fetch.lock)"
  fi
  if jars_ready; then
    exec 9>&-
    note "Kafka $VERSION jars up to date in $LIB"
    return 0
  fi
  local tmp
  tmp="$(mktemp -d "$parent/.lib.tmp.XXXXXX")"
  note "fetching Kafka $VERSION jars with Maven into $LIB ..."
  # shellcheck disable=SC2086  # KAFKA_MVN_ARGS is a list of flags
  if ! mvn -B -q -Dstyle.color=never "-Dkafka.version=$VERSION" ${KAFKA_MVN_ARGS:-} -f "$POM" \
      dependency:copy-dependencies -DincludeScope=runtime -DoutputDirectory="$tmp" >"$tmp.log" 2>&1; then
    cat "$tmp.log" >&2
    rm -rf "$tmp" "$tmp.log"
    die "mvn dependency:copy-dependencies failed"
  fi
  rm -f "$tmp.log"
  compgen -G "$tmp/kafka_2.13-$VERSION.jar" >/dev/null || { rm -rf "$tmp"; die "no kafka_2.13-$VERSION jar was fetched"; }
  echo "$(pom_hash) $VERSION" >"$tmp/.fetched"
  rm -rf "$LIB"
  mv "$tmp" "$LIB"
  exec 9>&-  # release the lock (and keep the fd out of the broker JVM started next)
  note "fetched $(find "$LIB" -name '*.jar' | wc -l) jars of Kafka $VERSION into $LIB"
}

need_java() {
  command -v java >/dev/null 2>&1 || die "java not found on PATH (Kafka 4.x needs Java 17+)"
}

# pid of a live broker for DIR, or nothing. Checks the command line so a recycled pid is not trusted.
live_pid() {
  local dir="$1" pid
  [[ -f "$dir/broker.pid" ]] || return 0
  pid="$(cat "$dir/broker.pid")"
  [[ "$pid" =~ ^[0-9]+$ ]] || return 0
  if kill -0 "$pid" 2>/dev/null && tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null | grep -q "kafka.Kafka $dir/"; then
    echo "$pid"
  fi
}

free_port() {
  python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

random_cluster_id() {
  # Kafka Uuid.toString(): URL-safe base64 of 16 random bytes, no padding. Like Uuid.randomUuid(),
  # retry ids that start with "-" (the CLI would read them as an option).
  python3 -c '
import base64, os
while True:
    s = base64.urlsafe_b64encode(os.urandom(16)).rstrip(b"=").decode()
    if not s.startswith("-"):
        print(s)
        break
'
}

port_open() {
  (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null
}

write_config() {
  local dir="$1" port="$2" cport="$3" sasl="$4" authorizer="$5" extra="$6" more="$7" node_id="$8" voters="$9" proto
  proto=PLAINTEXT
  [[ "$sasl" == 1 ]] && proto=SASL_PLAINTEXT
  # more: "NAME:PROTOCOL:PORT ..." (--listener), added to the listeners, their addresses and protocols
  local lst="$proto://127.0.0.1:$port" map="CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT,SASL_PLAINTEXT:SASL_PLAINTEXT" l
  for l in $more; do
    IFS=: read -r lname lproto lport <<<"$l"
    lst+=",$lname://127.0.0.1:$lport"
    map+=",$lname:$lproto"
  done
  {
    echo "# written by scripts/kafka-broker.sh start"
    echo "process.roles=broker,controller"
    echo "node.id=$node_id"
    if [[ -n "$voters" ]]; then
      echo "controller.quorum.voters=$voters"
    else
      echo "controller.quorum.bootstrap.servers=127.0.0.1:$cport"
    fi
    echo "listeners=$lst,CONTROLLER://127.0.0.1:$cport"
    echo "advertised.listeners=$lst,CONTROLLER://127.0.0.1:$cport"
    echo "inter.broker.listener.name=$proto"
    echo "controller.listener.names=CONTROLLER"
    echo "listener.security.protocol.map=$map"
    echo "log.dirs=$dir/data"
    echo "num.partitions=1"
    echo "default.replication.factor=1"
    echo "min.insync.replicas=1"
    echo "auto.create.topics.enable=false"
    echo "offsets.topic.replication.factor=1"
    echo "offsets.topic.num.partitions=1"
    echo "transaction.state.log.replication.factor=1"
    echo "transaction.state.log.min.isr=1"
    echo "transaction.state.log.num.partitions=1"
    echo "share.coordinator.state.topic.replication.factor=1"
    echo "share.coordinator.state.topic.min.isr=1"
    echo "share.coordinator.state.topic.num.partitions=1"
    echo "group.initial.rebalance.delay.ms=0"
    # A restart after a crash (stop --kill) re-registers the broker only once its old session expired.
    echo "broker.session.timeout.ms=3000"
    echo "broker.heartbeat.interval.ms=500"
    echo "num.network.threads=2"
    echo "num.io.threads=4"
    echo "background.threads=4"
    echo "num.recovery.threads.per.data.dir=1"
    echo "log.cleaner.threads=1"
    echo "log.cleaner.dedupe.buffer.size=16777216"
    if [[ "$sasl" == 1 ]]; then
      local users='user_admin="admin-secret" user_alice="alice-secret" user_bob="bob-secret"' pair
      for pair in ${KAFKA_SASL_USERS:-}; do
        users+=" user_${pair%%:*}=\"${pair#*:}\""
      done
      echo "sasl.enabled.mechanisms=PLAIN"
      echo "sasl.mechanism.inter.broker.protocol=PLAIN"
      echo "listener.name.sasl_plaintext.plain.sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required username=\"admin\" password=\"admin-secret\" $users;"
    fi
    for l in $more; do
      IFS=: read -r lname lproto lport <<<"$l"
      [[ "$lproto" == SASL_PLAINTEXT ]] || continue
      [[ "$sasl" == 1 ]] || die "--listener $lname:SASL_PLAINTEXT needs --sasl"
      echo "listener.name.${lname,,}.plain.sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required $users;"
    done
    if [[ "$authorizer" == 1 ]]; then
      echo "authorizer.class.name=org.apache.kafka.metadata.authorizer.StandardAuthorizer"
      echo "super.users=User:admin;User:ANONYMOUS"
      echo "allow.everyone.if.no.acl.found=false"
    fi
    if [[ -n "$extra" ]]; then
      echo "# extra properties (--prop / KAFKA_EXTRA_PROPS)"
      printf '%s\n' "$extra"
    fi
  } >"$dir/server.properties"
  {
    echo "PORT=$port"
    echo "SECURITY_PROTOCOL=$proto"
    for l in $more; do
      IFS=: read -r lname lproto lport <<<"$l"
      echo "PORT_$lname=$lport"
    done
  } >"$dir/ports.env"
}

print_env() {
  local dir="$1" pid="$2" port proto
  port="$(sed -n 's/^PORT=//p' "$dir/ports.env")"
  proto="$(sed -n 's/^SECURITY_PROTOCOL=//p' "$dir/ports.env")"
  {
    echo "BOOTSTRAP=127.0.0.1:$port"
    echo "SECURITY_PROTOCOL=$proto"
    [[ "$proto" == SASL_PLAINTEXT ]] && echo "SASL_MECHANISM=PLAIN"
    sed -n 's/^PORT_\([A-Za-z0-9_]*\)=/BOOTSTRAP_\1=127.0.0.1:/p' "$dir/ports.env"
    echo "PID=$pid"
    echo "DIR=$dir"
    echo "KAFKA_VERSION=$(cat "$dir/kafka-version" 2>/dev/null || echo "$VERSION")"
  } | tee "$dir/broker.env"
}

# Sets JAVA_ARGS: the java command line up to (not including) the main class.
set_java_args() {
  local dir="$1" cp="$LIB/*"
  if [[ -f "$dir/classpath" ]]; then cp+=":$(cat "$dir/classpath")"; fi
  # shellcheck disable=SC2206  # HEAP_OPTS / JIT_GC_OPTS / KAFKA_JVM_OPTS are lists of flags
  JAVA_ARGS=(java $HEAP_OPTS $JIT_GC_OPTS -XX:+ExitOnOutOfMemoryError
    -Djava.awt.headless=true ${KAFKA_JVM_OPTS:-}
    "-Dlog4j2.configurationFile=$LOG4J2_CONFIG" "-Dkafka.logs.dir=$dir/logs" -cp "$cp")
}

start_watchdog() {
  local watch="$1" pid="$2"
  # Detached (own session, all fds closed) so neither pipes nor the broker's process group keep it.
  # shellcheck disable=SC2016  # the inner script expands its own positional parameters
  setsid bash -c '
    w="$1"; p="$2"; t="$3"
    while kill -0 "$w" 2>/dev/null && kill -0 "$p" 2>/dev/null; do sleep 1; done
    kill -0 "$p" 2>/dev/null || exit 0
    kill -TERM -- "-$p" 2>/dev/null || true
    for _ in $(seq "$t"); do kill -0 "$p" 2>/dev/null || exit 0; sleep 1; done
    kill -KILL -- "-$p" 2>/dev/null || true
  ' kafka-broker-watchdog "$watch" "$pid" "$STOP_TIMEOUT" </dev/null >/dev/null 2>&1 &
}

cmd_start() {
  local sasl="${KAFKA_SASL:-0}" authorizer="${KAFKA_AUTHORIZER:-0}" port="${KAFKA_PORT:-}" fresh=0
  local extra="${KAFKA_EXTRA_PROPS:-}" dir="" listeners=() classpath="" node_id=1 cport="" voters="" cluster_id=""
  while (($#)); do
    case "$1" in
      --sasl) sasl=1 ;;
      --authorizer) authorizer=1 ;;
      --fresh) fresh=1 ;;
      --port) port="${2:?--port needs a value}"; shift ;;
      --prop) extra+="${extra:+$'\n'}${2:?--prop needs KEY=VALUE}"; shift ;;
      --listener)
        [[ "${2:-}" =~ ^[A-Za-z0-9_]+:(PLAINTEXT|SASL_PLAINTEXT)$ ]] || die "--listener needs NAME:PLAINTEXT or NAME:SASL_PLAINTEXT"
        listeners+=("$2"); shift ;;
      --classpath) classpath="${2:?--classpath needs a path}"; shift ;;
      --node-id) node_id="${2:?--node-id needs a number}"; shift ;;
      --controller-port) cport="${2:?--controller-port needs a port}"; shift ;;
      --voters) voters="${2:?--voters needs ID@HOST:PORT,...}"; shift ;;
      --cluster-id) cluster_id="${2:?--cluster-id needs an id}"; shift ;;
      -*) die "unknown option for start: $1" ;;
      *) [[ -z "$dir" ]] || die "start takes one DIR"; dir="$1" ;;
    esac
    shift
  done
  [[ "$authorizer" == 1 ]] && sasl=1
  dir="${dir:-$DEFAULT_DIR}"
  mkdir -p "$dir"
  dir="$(cd "$dir" && pwd -P)"
  if [[ "$fresh" != 1 && -f "$dir/kafka-version" && -f "$dir/data/meta.properties" ]]; then
    local saved
    saved="$(cat "$dir/kafka-version")"
    if [[ -n "${KAFKA_VERSION:-}" && "$KAFKA_VERSION" != "$saved" ]]; then
      die "$dir was formatted by Kafka $saved, not $KAFKA_VERSION (start it with --fresh to wipe it)"
    fi
    set_version "$saved"
  fi

  local pid
  pid="$(live_pid "$dir")"
  if [[ -n "$pid" ]]; then
    note "broker already running in $dir"
    print_env "$dir" "$pid"
    return 0
  fi

  need_java
  cmd_fetch

  if [[ "$fresh" == 1 ]]; then
    rm -rf "${dir:?}/data" "$dir/logs" "$dir/server.properties" "$dir/ports.env" "$dir/broker.env" "$dir/broker.pid" \
      "$dir/classpath" "$dir/kafka-version"
  fi
  if [[ -n "$classpath" ]]; then echo "$classpath" >"$dir/classpath"; fi
  set_java_args "$dir"
  mkdir -p "$dir/logs"
  if [[ ! -f "$dir/data/meta.properties" || ! -f "$dir/server.properties" || ! -f "$dir/ports.env" ]]; then
    rm -rf "$dir/data"
    [[ -n "$port" ]] || port="$(free_port)"
    [[ -n "$cport" ]] || cport="$(free_port)"
    while [[ "$cport" == "$port" ]]; do cport="$(free_port)"; done
    local more="" l lport
    for l in "${listeners[@]}"; do
      lport="$(free_port)"
      while [[ "$lport" == "$port" || "$lport" == "$cport" || " $more " == *":$lport "* ]]; do lport="$(free_port)"; done
      more+="${more:+ }$l:$lport"
    done
    write_config "$dir" "$port" "$cport" "$sasl" "$authorizer" "$extra" "$more" "$node_id" "$voters"
    echo "$VERSION" >"$dir/kafka-version"
    [[ -n "$cluster_id" ]] || cluster_id="$(random_cluster_id)"
    local quorum=(--standalone)
    [[ -n "$voters" ]] && quorum=()  # a static quorum: controller.quorum.voters names every voter
    if ! "${JAVA_ARGS[@]}" kafka.tools.StorageTool format "${quorum[@]}" \
        -t "$cluster_id" -c "$dir/server.properties" >"$dir/logs/format.log" 2>&1; then
      cat "$dir/logs/format.log" >&2
      die "kafka.tools.StorageTool format failed"
    fi
  else
    note "restarting the broker formatted in $dir (saved config and data)"
  fi
  port="$(sed -n 's/^PORT=//p' "$dir/ports.env")"

  # setsid: the JVM leads its own process group, so `stop` (and the test helper) can kill the group.
  setsid "${JAVA_ARGS[@]}" kafka.Kafka "$dir/server.properties" \
    </dev/null >>"$dir/logs/kafka.out" 2>&1 &
  pid=$!
  echo "$pid" >"$dir/broker.pid"
  [[ -n "${KAFKA_WATCH_PID:-}" ]] && start_watchdog "$KAFKA_WATCH_PID" "$pid"

  local deadline=$((SECONDS + START_TIMEOUT))
  while true; do
    if ! kill -0 "$pid" 2>/dev/null; then
      tail -n 40 "$dir/logs/kafka.out" "$dir/logs/server.log" >&2 2>/dev/null || true
      rm -f "$dir/broker.pid"
      die "broker exited during startup (logs in $dir/logs)"
    fi
    if port_open "$port" && grep -qs "Kafka Server started" "$dir/logs/server.log"; then
      break
    fi
    if ((SECONDS >= deadline)); then
      tail -n 40 "$dir/logs/kafka.out" "$dir/logs/server.log" >&2 2>/dev/null || true
      kill -KILL -- "-$pid" 2>/dev/null || true
      rm -f "$dir/broker.pid"
      die "broker did not start within ${START_TIMEOUT}s (logs in $dir/logs)"
    fi
    sleep 0.2
  done
  print_env "$dir" "$pid"
}

cmd_stop() {
  local hard=0 dir=""
  while (($#)); do
    case "$1" in
      --kill) hard=1 ;;
      -*) die "unknown option for stop: $1" ;;
      *) dir="$1" ;;
    esac
    shift
  done
  dir="${dir:-$DEFAULT_DIR}"
  [[ -d "$dir" ]] || { note "no broker directory $dir"; return 0; }
  dir="$(cd "$dir" && pwd -P)"
  local pid
  pid="$(live_pid "$dir")"
  if [[ -z "$pid" ]]; then
    rm -f "$dir/broker.pid"
    note "broker in $dir is not running"
    return 0
  fi
  if [[ "$hard" == 1 ]]; then
    kill -KILL -- "-$pid" 2>/dev/null || true
  else
    kill -TERM -- "-$pid" 2>/dev/null || true
    local deadline=$((SECONDS + STOP_TIMEOUT))
    while kill -0 "$pid" 2>/dev/null && ((SECONDS < deadline)); do sleep 0.2; done
    if kill -0 "$pid" 2>/dev/null; then
      note "broker did not stop within ${STOP_TIMEOUT}s; sending SIGKILL"
      kill -KILL -- "-$pid" 2>/dev/null || true
    fi
  fi
  local _
  for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
  rm -f "$dir/broker.pid"
  note "broker in $dir stopped (pid $pid)"
}

cmd_status() {
  local dir="${1:-$DEFAULT_DIR}" pid
  if [[ -d "$dir" ]]; then
    dir="$(cd "$dir" && pwd -P)"
    pid="$(live_pid "$dir")"
    if [[ -n "$pid" ]]; then
      echo "RUNNING PID=$pid BOOTSTRAP=127.0.0.1:$(sed -n 's/^PORT=//p' "$dir/ports.env")"
      return 0
    fi
  fi
  echo "STOPPED"
  return 3
}

main() {
  local args=() version=""
  while (($#)); do
    case "$1" in
      --kafka-version) version="${2:?--kafka-version needs a version, e.g. 4.4.0}"; shift ;;
      --kafka-version=*) version="${1#*=}" ;;
      *) args+=("$1") ;;
    esac
    shift
  done
  [[ -n "$version" ]] && export KAFKA_VERSION="$version"
  set -- "${args[@]+"${args[@]}"}"
  local cmd="${1:-}"
  (($#)) && shift
  set_version
  case "$cmd" in
    fetch) cmd_fetch "$@" ;;
    version) echo "$VERSION" ;;
    libdir) echo "$LIB" ;;
    cluster-id) random_cluster_id ;;
    start) cmd_start "$@" ;;
    stop) cmd_stop "$@" ;;
    status) cmd_status "$@" ;;
    *) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//' >&2; exit 2 ;;
  esac
}

main "$@"
