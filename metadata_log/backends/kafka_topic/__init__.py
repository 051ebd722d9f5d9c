"""A Kafka topic used as kraft-acl's log (`log.KafkaLog`, through confluent-kafka) and the framing of its
messages (`message`).
"""
