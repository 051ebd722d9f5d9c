"""What the metadata shell reads (`base.AclSource`): a log directory, a snapshot file, a Kafka topic, Apache Kafka's
own metadata files or a running `kraft-acl serve`, and `open_source`, which picks one from the command's options.
"""
