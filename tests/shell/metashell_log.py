"""The fixed log the metadata-shell tests read: fixed ids, fixed batch times, every kind of name the tree escapes.

Batches (offset: record):
    [0, 1] T0        A  TOPIC orders LITERAL   User:alice   *         READ  ALLOW
                     B  TOPIC ord    PREFIXED  User:*       *         DESCRIBE ALLOW
    [2]    T0+1000   C  TOPIC *      LITERAL   User:mallory *         ALL   DENY
    [3, 4] T0+2000   D  GROUP ""     LITERAL   User:bob     10.0.0.1  READ  ALLOW   (the empty name: `%`)
                     E  TRANSACTIONAL_ID tx/1 LITERAL User:svc  *     WRITE ALLOW   (a slash: `tx%2F1`)
    [5]    T0+3000   remove A
    [6]    T0+4000   F  TOPIC orders LITERAL   User:alice   *         READ  ALLOW   (A's content again, new id)
High-water mark 7; state boundaries 0, 2, 3, 5, 6, 7.
"""

from __future__ import annotations

from pathlib import Path

from kraftacl.authorizer.model.acls import AclOperation, AclPermissionType, PatternType, ResourceType, StandardAcl
from kraftacl.authorizer.state.records import record_from_acl
from kraftacl.metadata_log.backends.file.log import FileLog
from kraftacl.metadata_log.codec.avro import uuid_to_text
from kraftacl.metadata_log.records import RemoveAccessControlEntryRecord

T0 = 1_700_000_000_000
# The ids as the shell lists them, and the ACLs as Kafka's StandardAcl text, written out for exact comparisons.
A = "EREREREREREREREREREREQ"  # removed at offset 5
B = "IiIiIiIiIiIiIiIiIiIiIg"
C = "MzMzMzMzMzMzMzMzMzMzMw"
D = "RERERERERERERERERERERA"
E = "VVVVVVVVVVVVVVVVVVVVVQ"
F = "ZmZmZmZmZmZmZmZmZmZmZg"
ACL_B = (
    "StandardAcl(resourceType=TOPIC, resourceName=ord, patternType=PREFIXED, principal=User:*, host=*, "
    "operation=DESCRIBE, permissionType=ALLOW)"
)
ACL_C = (
    "StandardAcl(resourceType=TOPIC, resourceName=*, patternType=LITERAL, principal=User:mallory, host=*, "
    "operation=ALL, permissionType=DENY)"
)
ACL_D = (
    "StandardAcl(resourceType=GROUP, resourceName=, patternType=LITERAL, principal=User:bob, host=10.0.0.1, "
    "operation=READ, permissionType=ALLOW)"
)
ACL_E = (
    "StandardAcl(resourceType=TRANSACTIONAL_ID, resourceName=tx/1, patternType=LITERAL, principal=User:svc, host=*, "
    "operation=WRITE, permissionType=ALLOW)"
)
ACL_F = (
    "StandardAcl(resourceType=TOPIC, resourceName=orders, patternType=LITERAL, principal=User:alice, host=*, "
    "operation=READ, permissionType=ALLOW)"
)
IDS = {
    name: uuid_to_text(bytes([byte] * 16))
    for name, byte in zip("ABCDEF", (0x11, 0x22, 0x33, 0x44, 0x55, 0x66), strict=True)
}
T, G, X = ResourceType.TOPIC, ResourceType.GROUP, ResourceType.TRANSACTIONAL_ID
L, P = PatternType.LITERAL, PatternType.PREFIXED
Op, Perm = AclOperation, AclPermissionType
ACLS = {
    "A": StandardAcl(T, "orders", L, "User:alice", "*", Op.READ, Perm.ALLOW),
    "B": StandardAcl(T, "ord", P, "User:*", "*", Op.DESCRIBE, Perm.ALLOW),
    "C": StandardAcl(T, "*", L, "User:mallory", "*", Op.ALL, Perm.DENY),
    "D": StandardAcl(G, "", L, "User:bob", "10.0.0.1", Op.READ, Perm.ALLOW),
    "E": StandardAcl(X, "tx/1", L, "User:svc", "*", Op.WRITE, Perm.ALLOW),
    "F": StandardAcl(T, "orders", L, "User:alice", "*", Op.READ, Perm.ALLOW),
}


def build_log(directory: Path) -> None:
    """Write the log above (straight to the file log: Kafka's CreateAcls would refuse the empty GROUP name)."""
    batches = [["A", "B"], ["C"], ["D", "E"], ["-A"], ["F"]]
    with FileLog(directory) as log:
        for number, batch in enumerate(batches):
            records = [
                RemoveAccessControlEntryRecord(IDS[name[1:]])
                if name.startswith("-")
                else record_from_acl(IDS[name], ACLS[name])
                for name in batch
            ]
            log.append(records, timestamp_ms=T0 + 1000 * number)
