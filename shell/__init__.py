"""`kraft-acl shell`: the metadata shell (Kafka's kafka-metadata-shell commands over the ACLs, plus who-can,
authorize, history and at): the session, its commands, the tree and its paths, and the sources it reads (`sources/`).

The only package that imports prompt_toolkit; its typer command is `kraftacl.cli.shell`.
"""
