#!/usr/bin/env bash
# kafka-tools.sh: Apache Kafka's own command-line tools (kafka-acls, kafka-topics, the console producer and
# consumer), fetched from Maven Central: no tarball. The wrappers in scripts/kafka/bin/ (kafka-acls.sh, ...) run
# them with the same options as Kafka's bin/ scripts.
#
# Needs: bash, java 17+, and mvn for the first `fetch`.
#
# Commands
#   fetch [--kafka-version V]
#       Copy kafka-tools (scripts/kafka/tools/pom.xml, at the release of scripts/kafka/pom.xml or V) and its
#       dependencies into .kafka/tools-<V> under the repo root (KAFKA_TOOLS_DIR overrides the directory).
#       Idempotent: a stamp of both poms' sha256 and the version makes a repeat call return at once (Maven's
#       ~/.m2 caches the jars); concurrent calls are serialised with flock. Extra mvn flags: KAFKA_MVN_ARGS.
#   run [--kafka-version V] CLASS [ARG...]
#       Fetch if needed, then run the tool's main class (e.g. org.apache.kafka.tools.AclCommand) with its
#       arguments, logging WARN and above to stderr (scripts/kafka/tools-log4j2.yaml).
#   dir [--kafka-version V]
#       Print the jar directory.
#
# Env: KAFKA_VERSION (as --kafka-version), KAFKA_TOOLS_HEAP_OPTS (default -Xmx256m), KAFKA_TOOLS_JVM_OPTS.
set -euo pipefail

SCRIPT_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$SCRIPT_DIR/.." && pwd)"
POM="$SCRIPT_DIR/kafka/tools/pom.xml"
PARENT_POM="$SCRIPT_DIR/kafka/pom.xml"

die() { echo "kafka-tools.sh: $*" >&2; exit 1; }

VERSION="${KAFKA_VERSION:-$(sed -n 's:.*<kafka.version>\(.*\)</kafka.version>.*:\1:p' "$PARENT_POM" | head -n 1)}"
stamp() { echo "$(cat "$POM" "$PARENT_POM" | sha256sum | cut -d' ' -f1) $VERSION"; }
set_lib() {
  [[ "$VERSION" =~ ^4\.[0-9]+\.[0-9]+$ ]] || die "unsupported Kafka version '$VERSION' (expected a 4.x release such as 4.4.0)"
  LIB="${KAFKA_TOOLS_DIR:-$ROOT/.kafka/tools-$VERSION}"
}
ready() { [[ -f "$LIB/.fetched" && "$(cat "$LIB/.fetched")" == "$(stamp)" ]]; }
# shellcheck source=scripts/lib/mvn-fetch.sh
source "$SCRIPT_DIR/lib/mvn-fetch.sh"

cmd_fetch() {
  # shellcheck disable=SC2086  # KAFKA_MVN_ARGS is a list of flags
  mvn_fetch kafka-tools.sh "$POM" "$LIB" "$(stamp)" "kafka-tools-$VERSION.jar" "-Dkafka.version=$VERSION" ${KAFKA_MVN_ARGS:-}
}

cmd_run() {
  local class="${1:?run needs a main class, e.g. org.apache.kafka.tools.AclCommand}"
  shift
  command -v java >/dev/null 2>&1 || die "java not found on PATH (Kafka 4.x needs Java 17+)"
  ready || cmd_fetch >&2
  # shellcheck disable=SC2086  # the *_OPTS variables are lists of flags
  exec java ${KAFKA_TOOLS_HEAP_OPTS:--Xmx256m} -XX:+UseSerialGC -XX:TieredStopAtLevel=1 ${KAFKA_TOOLS_JVM_OPTS:-} \
    "-Dlog4j2.configurationFile=$SCRIPT_DIR/kafka/tools-log4j2.yaml" -Dlog4j2.shutdownHookEnabled=false \
    -cp "$LIB/*" "$class" "$@"
}

main() {
  local cmd="${1:-}"
  (($#)) && shift
  if [[ "${1:-}" == --kafka-version ]]; then VERSION="${2:?--kafka-version needs a version}"; shift 2; fi
  set_lib
  case "$cmd" in
    fetch) cmd_fetch ;;
    run) cmd_run "$@" ;;
    dir) echo "$LIB" ;;
    *) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//' >&2; exit 2 ;;
  esac
}

main "$@"
