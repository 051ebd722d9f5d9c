#!/usr/bin/env bash
# kafka-console-producer.sh: Apache Kafka's own kafka-console-producer tool (org.apache.kafka.tools.ConsoleProducer), with Kafka's options; the jars come from
# Maven Central through scripts/kafka-tools.sh (fetched on first use).
exec bash "$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)/kafka-tools.sh" run org.apache.kafka.tools.ConsoleProducer "$@"
