#!/usr/bin/env bash
# kafka-acls.sh: Apache Kafka's own kafka-acls tool (org.apache.kafka.tools.AclCommand), with Kafka's options; the jars come from
# Maven Central through scripts/kafka-tools.sh (fetched on first use).
exec bash "$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)/kafka-tools.sh" run org.apache.kafka.tools.AclCommand "$@"
