"""The log backends behind `LogBackend`: `memory` (the reference), `file` (an embedded log directory) and
`kafka_topic` (a Kafka topic used as kraft-acl's log).
"""
