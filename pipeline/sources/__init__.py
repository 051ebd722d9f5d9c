"""Where a job's log comes from and how it becomes rows inside Spark tasks: a file-log directory or a Kafka topic
(`source`, loaded by `log`), Apache Kafka's own KRaft files (`kafka_files`, `kafka_files_rows`), the record events
(`events`) and the cached `LogEvents` the jobs read.
"""
