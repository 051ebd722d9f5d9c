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
pom_hash() { sha256sum "$POM" | cut -d' ' -f1; }
# shellcheck source=scripts/lib/mvn-fetch.sh
source "$SCRIPT_DIR/lib/mvn-fetch.sh"

cmd_fetch() {
  # shellcheck disable=SC2086  # SPARK_MVN_ARGS is a list of flags
  mvn_fetch spark-jars.sh "$POM" "$LIB" "$(pom_hash)" "spark-sql-kafka-0-10_2.13-*.jar" ${SPARK_MVN_ARGS:-}
}

case "${1:-}" in
  fetch) cmd_fetch ;;
  dir) echo "$LIB" ;;
  *) die "usage: spark-jars.sh fetch|dir" ;;
esac
