"""`kraft-acl bench`: reproducible benchmark suites that print JSON figures (never timed assertions in tests)."""
