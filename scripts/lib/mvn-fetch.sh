#!/usr/bin/env bash
# mvn-fetch.sh: sourced by the scripts that fetch jars from Maven Central (scripts/spark-jars.sh,
# scripts/kafka-tools.sh): one function that copies a fetch-only pom's runtime dependencies into a directory, once.
#
#   mvn_fetch WHO POM LIB STAMP MUST_HAVE [MVN_ARG...]
#
# WHO names the caller in its messages; STAMP is what LIB/.fetched must hold for LIB to be current (a hash of the
# pom(s), and a version); MUST_HAVE is a glob (relative to LIB) that the fetch must have brought. Idempotent: a
# current LIB returns at once; concurrent calls are serialised with flock on LIB's parent; the jars land in a
# temporary directory moved into place whole, so a reader never sees half a fetch. Exits 1 with Maven's output on
# a failure.

mvn_fetch() {
  local who="$1" pom="$2" lib="$3" stamp="$4" must_have="$5"
  shift 5
  if [[ -f "$lib/.fetched" && "$(cat "$lib/.fetched")" == "$stamp" ]]; then
    echo "$who: up to date in $lib" >&2
    return 0
  fi
  command -v mvn >/dev/null 2>&1 || { echo "$who: mvn not found on PATH (needed once to fetch $lib)" >&2; exit 1; }
  local parent tmp
  parent="$(dirname "$lib")"
  mkdir -p "$parent"
  exec 9>"$parent/.$(basename "$lib").fetch.lock"
  if command -v flock >/dev/null 2>&1 && ! flock -w 900 9; then
    echo "$who: timed out waiting for another fetch of $lib" >&2
    exit 1
  fi
  if [[ -f "$lib/.fetched" && "$(cat "$lib/.fetched")" == "$stamp" ]]; then
    exec 9>&-
    echo "$who: up to date in $lib" >&2
    return 0
  fi
  tmp="$(mktemp -d "$parent/.fetch.tmp.XXXXXX")"
  echo "$who: fetching with Maven into $lib ..." >&2
  if ! mvn -B -q -Dstyle.color=never "$@" -f "$pom" \
      dependency:copy-dependencies -DincludeScope=runtime -DoutputDirectory="$tmp" >"$tmp.log" 2>&1; then
    cat "$tmp.log" >&2
    rm -rf "$tmp" "$tmp.log"
    echo "$who: mvn dependency:copy-dependencies failed" >&2
    exit 1
  fi
  rm -f "$tmp.log"
  # shellcheck disable=SC2086  # MUST_HAVE is a glob
  if ! compgen -G "$tmp/"$must_have >/dev/null; then
    rm -rf "$tmp"
    echo "$who: the fetch brought no $must_have" >&2
    exit 1
  fi
  echo "$stamp" >"$tmp/.fetched"
  rm -rf "$lib"
  mv "$tmp" "$lib"
  exec 9>&-  # release the lock (and keep the fd out of any process started next)
  echo "$who: fetched $(find "$lib" -name '*.jar' | wc -l) jars into $lib" >&2
}
