"""The single-process answers the pipeline is compared with: a read-only node replayed to an offset."""

from __future__ import annotations

from pathlib import Path

from kraftacl.authorizer.decision.config import AuthorizerConfig
from kraftacl.authorizer.state.node import AclNode
from kraftacl.metadata_log.backends.file.log import FileLog


def replayed_node(directory: Path, offset: int, config: AuthorizerConfig | None = None) -> AclNode:
    """A started node holding the state at `offset` (the caller closes it)."""
    node = AclNode(FileLog(directory, read_only=True), config=config)
    try:
        node.start(to_offset=offset)
    except BaseException:
        node.close()
        raise
    return node
