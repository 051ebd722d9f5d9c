"""`kraft-acl`'s entry point (the console script and `python -m kraftacl`): the CLI's root app, every command
registered (`kraftacl.cli.app`).

Stateless; every invocation is its own process.
"""

from kraftacl.cli.app import main

__all__ = ["main"]
