#!/usr/bin/env bash
# spark-jars.sh: the Spark Kafka connector jars the pipeline jobs pass as spark.jars, from Maven Central.
#
# Needs: bash and mvn (only for the first fetch).
#
# Commands
#   fetch   Copy spark-sql-kafka-0-10_2.13 (at the pinned pyspark's version, scripts/spark/pom.xml) and
#           the dependencies pyspark does not ship into .spark/jars under the repo root. Idempotent: a
#           stamp holding the pom's sha256 makes a repeat call return at once; concurrent calls are
#           serialised with flock. Extra mvn flags: SPARK_MVN_ARGS (e.g. -o). Dir: SPARK_JARS_DIR.
#   dir     Print the jar directory (what `kraft-acl audit` reads, unless KRAFT_ACL_SPARK_JARS is set).
set -euo pipefail

SCRIPT_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$SCRIPT_DIR/.." && pwd)"
POM="$SCRIPT_DIR/spark/pom.xml"
LIB="${SPARK_JARS_DIR:-$ROOT/.spark/jars}"

die() { echo "spark-jars.sh: $*" >&2; exit 1; }
note() { echo "spark-jars.sh: $*" >&2; }
pom_hash() { sha256sum "$POM" | cut -d' ' -f1; }
ready() { [[ -f "$LIB/.fetched" && "$(cat "$LIB/.fetched")" == "$(pom_hash)" ]]; }

cmd_fetch() {
  if ready; then note "spark jars up to date in $LIB"; return 0; fi
  command -v mvn >/dev/null 2>&1 || die "mvn not found on PATH (needed once to fetch the Spark Kafka connector)"
  local parent tmp
  parent="$(dirname "$LIB")"
  mkdir -p "$parent"
  exec 9>"$parent/.fetch.lock"
  command -v flock >/dev/null 2>&1 && { flock -w 900 9 || die "timed out waiting for another fetch"; }
  if ready; then exec 9>&-; note "spark jars up to date in $LIB"; return 0; fi
  tmp="$(mktemp -d "$parent/.jars.tmp.XXXXXX")"
  note "fetching the Spark Kafka connector with Maven into $LIB ..."
  # shellcheck disable=SC2086  # SPARK_MVN_ARGS is a list of flags
  if ! mvn -B -q -Dstyle.color=never ${SPARK_MVN_ARGS:-} -f "$POM" \
      dependency:copy-dependencies -DincludeScope=runtime -DoutputDirectory="$tmp" >"$tmp.log" 2>&1; then
    cat "$tmp.log" >&2
    rm -rf "$tmp" "$tmp.log"
    die "mvn dependency:copy-dependencies failed"
  fi
  rm -f "$tmp.log"
  compgen -G "$tmp/spark-sql-kafka-0-10_2.13-*.jar" >/dev/null || { rm -rf "$tmp"; die "no connector jar was fetched"; }
  pom_hash >"$tmp/.fetched"
  rm -rf "$LIB"
  mv "$tmp" "$LIB"
  exec 9>&-
  note "fetched $(find "$LIB" -name '*.jar' | wc -l) jars into $LIB"
}

case "${1:-}" in
  fetch) cmd_fetch ;;
  dir) echo "$LIB" ;;
  *) die "usage: spark-jars.sh fetch|dir" ;;
esac
