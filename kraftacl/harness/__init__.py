"""Drives real components for the benchmarks and the tests: a `kraft-acl serve` child process (`serve_process`), the
Kafka broker plugin jar (`plugin_jar`), and the synthetic data and memory probe both share (`acl_data`, `rss`).
"""
