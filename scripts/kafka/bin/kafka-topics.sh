#!/usr/bin/env bash
# kafka-topics.sh: Apache Kafka's own kafka-topics tool (org.apache.kafka.tools.TopicCommand), with Kafka's options; the jars come from
# Maven Central through scripts/kafka-tools.sh (fetched on first use).
exec bash "$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)/kafka-tools.sh" run org.apache.kafka.tools.TopicCommand "$@"
