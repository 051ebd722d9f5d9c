"""Drives real components for benchmarks, tests and `make broker`: a `kraft-acl serve` child process, the Kafka
broker plugin jar, and Kafka brokers with the plugin loaded.
"""
