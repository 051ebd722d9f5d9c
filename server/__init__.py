"""`kraft-acl serve`: listeners, the HTTP API, authentication, limits, metrics and the decision log.

The only package that imports the HTTP stack (httptools, uvloop) and prometheus-client (docs/ARCHITECTURE.md).
"""
