"""What every serve handler reads: the node, the authorizer, the configuration, metrics, the decision log, the
change feed, the lane heavy calls take turns on, and the writer's health.

One `ServeState` per process, built before any listener opens; its fields are set once, except
`tailer` and `reader` (set when the initial load has completed) and `stopping` (the process's stop event, set at start).
"""

from __future__ import annotations

import asyncio
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

from kraftacl.authorizer.decision.standard import StandardAuthorizer
from kraftacl.authorizer.state.node import AclNode
from kraftacl.authorizer.state.tailer import Tailer
from kraftacl.server.change_feed import ChangeFeed
from kraftacl.server.config import ServeConfig
from kraftacl.server.controller_role import ControllerRole
from kraftacl.server.decision_log import AclIds, DecisionLog, SelfQueryBudget
from kraftacl.server.freeze_guard import FreezeGuard
from kraftacl.server.metrics import ServeMetrics
from kraftacl.server.reader import Reader
from kraftacl.server.slices import Lane
from kraftacl.server.write_health import WriteHealth, WriteRecovery


@dataclass
class ServeState:
    """Shared by the handlers; the authorizer is thread-safe, the rest is read on the event loop."""

    config: ServeConfig
    node: AclNode
    metrics: ServeMetrics
    decision_log: DecisionLog | None
    acl_ids: AclIds
    writer: ThreadPoolExecutor  # ACL writes (fsync, Kafka transactions) run here, one at a time
    rules: ThreadPoolExecutor  # rules of large calls (explain) are found here, one call at a time; the explain id map
    role: ControllerRole  # whether this serve writes the log now (active controller, standby, or broker role)
    tailer: Tailer | None = None
    trusted: frozenset[str] = field(default_factory=frozenset)  # broker principals and super users
    lane: Lane = field(default_factory=Lane)  # heavy calls take turns on the event loop (server.slices)
    write_health: WriteHealth = field(default_factory=WriteHealth)
    write_recovery: WriteRecovery | None = None  # reopens the embedded log after a failed write
    stopping: asyncio.Event | None = None  # set on SIGTERM/SIGINT: long polls end, the process drains
    start_error: str | None = None  # why the initial load waits (a broker-role serve's log directory is missing)
    changes: ChangeFeed = field(default_factory=ChangeFeed)  # told of every publish by the node's loader
    freeze: FreezeGuard = field(default_factory=FreezeGuard)  # no decision from a state the process slept through
    reader: Reader | None = None  # the reader process heavy reads are handed to (heavy.reads.process)
    # the audit lines of callers asking about themselves (not brokers or super users): decision.log.self.query.rate a
    # second (`server.decision_inputs.audit`); made at the first such line
    self_audit: SelfQueryBudget | None = None

    @property
    def authorizer(self) -> StandardAuthorizer:
        """The node's StandardAuthorizer."""
        return self.node.authorizer
