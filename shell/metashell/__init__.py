"""`kraft-acl shell`: the metadata shell (Kafka's kafka-metadata-shell commands over the ACLs, plus who-can,
authorize, history and at)."""
