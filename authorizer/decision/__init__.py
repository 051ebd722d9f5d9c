"""The decision core: `StandardAuthorizer` (KIP-801), its walk order, authorizeByResourceType, who-can, the audit
line and the authorizer's configuration.

Fed from outside: it imports nothing of the log, snapshots or state (import-linter contract).
"""
