#!/usr/bin/env bash
# kafka-cluster.sh: a real multi-node Apache Kafka 4.x KRaft cluster on loopback (default three nodes, each a
# combined broker + controller JVM, one static controller quorum), built from scripts/kafka-broker.sh nodes. Used
# by the cluster tests and `kraft-acl bench --suite cluster` (kraftacl/harness/kafka_cluster.py) and usable by hand.
#
# Needs what scripts/kafka-broker.sh needs (bash, java 17+, python3, mvn for the first fetch).
#
# Commands (every one takes --kafka-version V, as kafka-broker.sh does; the default is <kafka.version> of
# scripts/kafka/pom.xml)
#   start [--kafka-version V] [--nodes N] [--sasl] [--authorizer] [--prop KEY=VALUE]... [--node-prop I:KEY=VALUE]...
#         [--listener NAME:PROTOCOL]... [--classpath PATH] [--fresh] [DIR]
#       DIR defaults to .kafka/run/cluster. On a fresh DIR: picks 2N free loopback ports (a client and a controller
#       port per node), one cluster id, and formats DIR/node-1 .. DIR/node-N as voters of one static quorum
#       (controller.quorum.voters); then starts the N JVMs at once (each waits for the quorum) and waits until
#       every one has started. On a formatted DIR it restarts the nodes that are not running (saved config, data and
#       ports). Prints KEY=VALUE lines, also saved in DIR/cluster.env:
#         BOOTSTRAP=127.0.0.1:<p1>,127.0.0.1:<p2>,...  SECURITY_PROTOCOL=...  NODES=N  DIR=<dir>  KAFKA_VERSION=...
#         NODE_<i>_BOOTSTRAP=127.0.0.1:<pi>  NODE_<i>_PID=<pid>  NODE_<i>_DIR=<dir>/node-<i>
#         (+ BOOTSTRAP_<NAME>=... and NODE_<i>_BOOTSTRAP_<NAME>=... for each --listener)
#       Replication for a cluster of N >= 3: every internal topic (offsets, transaction state, share state) and
#       default.replication.factor are 3 with min.insync.replicas 2, so any one node may die without losing an
#       acknowledged write or blocking one. --prop applies to every node, --node-prop I:K=V to node I only (e.g. a
#       broker plugin's URL list, local serve first); both are appended last, so they override.
#       --sasl, --authorizer, --listener, --classpath: as for kafka-broker.sh start, on every node (each node picks
#       its own port for each extra listener).
#   stop [--kill] [DIR]
#       Stops every node (kafka-broker.sh stop on DIR/node-*; --kill: SIGKILL). Data and config stay.
#   status [DIR]
#       One `node-<i> RUNNING PID=... BOOTSTRAP=...` or `node-<i> STOPPED` line per node; exits 0 when all run, else 3.
#
# One node at a time: `bash scripts/kafka-broker.sh stop --kill DIR/node-2` crashes node 2 and
# `bash scripts/kafka-broker.sh start DIR/node-2` brings it back on its ports and data.
#
# Failover settings (what a SIGKILLed node costs): broker.session.timeout.ms=3000 and broker.heartbeat.interval.ms=500
# (the quorum fences a dead broker, moves its partition leaderships and shrinks its ISRs after 3 s instead of 9 s),
# replica.lag.time.max.ms=5000, and a quorum that elects a new leader within about a second of losing its leader
# (controller.quorum.fetch.timeout.ms=1000, election.timeout.ms=500, election.backoff.max.ms=500; Kafka's defaults
# 2000/1000/1000 took 5.5 s on this machine when the killed node also led the quorum).
#
# Examples
#   bash scripts/kafka-cluster.sh start /tmp/kc        # -> BOOTSTRAP=127.0.0.1:40123,127.0.0.1:40125,127.0.0.1:40127
#   bash scripts/kafka-cluster.sh status /tmp/kc
#   bash scripts/kafka-cluster.sh stop /tmp/kc
set -euo pipefail

SCRIPT_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$SCRIPT_DIR/.." && pwd)"
BROKER="$SCRIPT_DIR/kafka-broker.sh"
DEFAULT_DIR="$ROOT/.kafka/run/cluster"
VERSION_ARGS=()

die() { echo "kafka-cluster.sh: $*" >&2; exit 1; }
note() { echo "kafka-cluster.sh: $*" >&2; }

free_ports() {
  # N distinct free loopback ports (sockets held open together, so no port is handed out twice).
  python3 -c '
import socket, sys
socks = [socket.socket() for _ in range(int(sys.argv[1]))]
for s in socks:
    s.bind(("127.0.0.1", 0))
print(" ".join(str(s.getsockname()[1]) for s in socks))
' "$1"
}

node_dirs() {
  local dir="$1"
  find "$dir" -maxdepth 1 -type d -name 'node-*' | sort -t- -k2 -n
}

replication_props() {
  local nodes="$1" rf=1 isr=1
  if ((nodes >= 3)); then rf=3; isr=2; elif ((nodes == 2)); then rf=2; fi
  printf '%s\n' "default.replication.factor=$rf" "min.insync.replicas=$isr" \
    "offsets.topic.replication.factor=$rf" "transaction.state.log.replication.factor=$rf" \
    "transaction.state.log.min.isr=$isr" "share.coordinator.state.topic.replication.factor=$rf" \
    "share.coordinator.state.topic.min.isr=$isr" "replica.lag.time.max.ms=5000" \
    "controller.quorum.fetch.timeout.ms=1000" "controller.quorum.election.timeout.ms=500" \
    "controller.quorum.election.backoff.max.ms=500"
}

cmd_start() {
  local nodes=3 fresh=0 dir="" common=() node_props=() extra_props=()
  while (($#)); do
    case "$1" in
      --nodes) nodes="${2:?--nodes needs a number}"; shift ;;
      --sasl | --authorizer) common+=("$1") ;;
      --classpath) common+=(--classpath "${2:?--classpath needs a path}"); shift ;;
      --listener) common+=(--listener "${2:?--listener needs NAME:PROTOCOL}"); shift ;;
      --prop) extra_props+=("${2:?--prop needs KEY=VALUE}"); shift ;;
      --node-prop)
        [[ "${2:-}" =~ ^[0-9]+:[^=]+=.*$ ]] || die "--node-prop needs NODE:KEY=VALUE"
        node_props+=("$2"); shift ;;
      --fresh) fresh=1 ;;
      -*) die "unknown option for start: $1" ;;
      *) [[ -z "$dir" ]] || die "start takes one DIR"; dir="$1" ;;
    esac
    shift
  done
  [[ "$nodes" =~ ^[1-9]$ ]] || die "--nodes must be between 1 and 9"
  dir="${dir:-$DEFAULT_DIR}"
  if [[ "$fresh" == 1 && -d "$dir" ]]; then
    cmd_stop --kill "$dir" 2>/dev/null || true
    rm -rf "$dir"
  fi
  mkdir -p "$dir"
  dir="$(cd "$dir" && pwd -P)"
  bash "$BROKER" "${VERSION_ARGS[@]}" fetch

  local starts=() i
  if [[ -f "$dir/cluster.formatted" ]]; then
    note "restarting the cluster formatted in $dir (saved config, data and ports)"
    nodes="$(sed -n 's/^NODES=//p' "$dir/cluster.formatted")"
    for ((i = 1; i <= nodes; i++)); do starts+=("$i:"); done
  else
    local ports cluster_id voters="" p c
    read -r -a ports <<<"$(free_ports $((2 * nodes)))"
    cluster_id="$(bash "$BROKER" cluster-id)"
    for ((i = 1; i <= nodes; i++)); do
      voters+="${voters:+,}$i@127.0.0.1:${ports[$((nodes + i - 1))]}"
    done
    for ((i = 1; i <= nodes; i++)); do
      p="${ports[$((i - 1))]}" c="${ports[$((nodes + i - 1))]}"
      starts+=("$i:--node-id $i --port $p --controller-port $c --voters $voters --cluster-id $cluster_id")
    done
  fi

  local pids=() spec args props prop
  for spec in "${starts[@]}"; do
    i="${spec%%:*}"
    read -r -a args <<<"${spec#*:}"
    props="$(replication_props "$nodes")"
    for prop in "${extra_props[@]+"${extra_props[@]}"}"; do props+=$'\n'"$prop"; done
    for prop in "${node_props[@]+"${node_props[@]}"}"; do
      [[ "${prop%%:*}" == "$i" ]] && props+=$'\n'"${prop#*:}"
    done
    mkdir -p "$dir/node-$i"
    KAFKA_EXTRA_PROPS="$props" bash "$BROKER" "${VERSION_ARGS[@]}" start "${common[@]+"${common[@]}"}" \
      "${args[@]+"${args[@]}"}" "$dir/node-$i" >"$dir/node-$i.start.out" 2>"$dir/node-$i.start.err" &
    pids+=($!)
  done
  local failed=0 n=0
  for i in "${pids[@]}"; do
    n=$((n + 1))
    if ! wait "$i"; then
      cat "$dir/node-$n.start.err" >&2
      failed=1
    fi
  done
  if [[ "$failed" == 1 ]]; then
    cmd_stop --kill "$dir" || true
    die "the cluster in $dir did not start (logs in $dir/node-*/logs)"
  fi
  echo "NODES=$nodes" >"$dir/cluster.formatted"
  print_env "$dir"
}

print_env() {
  local dir="$1" node key first i
  first="$(node_dirs "$dir" | head -n 1)"
  {
    # BOOTSTRAP and BOOTSTRAP_<NAME>: every node's address on that listener, comma-separated
    for key in $(sed -n 's/^\(BOOTSTRAP[A-Za-z0-9_]*\)=.*/\1/p' "$first/broker.env"); do
      echo "$key=$(for node in $(node_dirs "$dir"); do sed -n "s/^$key=//p" "$node/broker.env"; done | paste -sd, -)"
    done
    grep -h '^SECURITY_PROTOCOL=\|^SASL_MECHANISM=\|^KAFKA_VERSION=' "$first/broker.env"
    echo "NODES=$(node_dirs "$dir" | wc -l)"
    echo "DIR=$dir"
    for node in $(node_dirs "$dir"); do
      i="${node##*/node-}"
      sed -n "s/^\(BOOTSTRAP[A-Za-z0-9_]*\)=/NODE_${i}_\1=/p; s/^PID=/NODE_${i}_PID=/p" "$node/broker.env"
      echo "NODE_${i}_DIR=$node"
    done
  } | tee "$dir/cluster.env"
}

cmd_stop() {
  local args=() dir=""
  while (($#)); do
    case "$1" in
      --kill) args+=(--kill) ;;
      -*) die "unknown option for stop: $1" ;;
      *) dir="$1" ;;
    esac
    shift
  done
  dir="${dir:-$DEFAULT_DIR}"
  [[ -d "$dir" ]] || { note "no cluster directory $dir"; return 0; }
  local node pids=()
  for node in $(node_dirs "$dir"); do
    bash "$BROKER" stop "${args[@]+"${args[@]}"}" "$node" &
    pids+=($!)
  done
  for node in "${pids[@]+"${pids[@]}"}"; do wait "$node" || true; done
}

cmd_status() {
  local dir="${1:-$DEFAULT_DIR}" node all=0
  [[ -d "$dir" ]] || { echo "STOPPED"; return 3; }
  for node in $(node_dirs "$dir"); do
    echo "${node##*/} $(bash "$BROKER" status "$node" || all=3)"
  done
  return "$all"
}

main() {
  local args=()
  while (($#)); do
    case "$1" in
      --kafka-version) VERSION_ARGS=(--kafka-version "${2:?--kafka-version needs a version, e.g. 4.4.0}"); shift ;;
      --kafka-version=*) VERSION_ARGS=(--kafka-version "${1#*=}") ;;
      *) args+=("$1") ;;
    esac
    shift
  done
  set -- "${args[@]+"${args[@]}"}"
  local cmd="${1:-}"
  (($#)) && shift
  case "$cmd" in
    start) cmd_start "$@" ;;
    stop) cmd_stop "$@" ;;
    status) cmd_status "$@" ;;
    *) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//' >&2; exit 2 ;;
  esac
}

main "$@"
