"""Building serve's shared state from its configuration: the node on its log, the metrics wired to it, the
decision log, the change feed, the writer thread and the recovery of a failed write.

Called once at start-up on the main thread, after every listener's port is held; nothing is loaded yet.
"""

from __future__ import annotations

import gc
import logging
import stat
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from kraftacl.authorizer.state.loader import OnPublish, Update
from kraftacl.authorizer.state.node import AclNode
from kraftacl.metadata_log.pace import pace_thread
from kraftacl.server.config import ServeConfig
from kraftacl.server.connections import Connections
from kraftacl.server.context import ServeState
from kraftacl.server.controller_role import ControllerRole
from kraftacl.server.decision_log import AclIds, DecisionLog
from kraftacl.server.log_backend import open_backend
from kraftacl.server.metrics import ServeMetrics
from kraftacl.server.write_health import WriteRecovery
from kraftacl.snapshots.policy import SnapshotPolicy

log = logging.getLogger("kraft_acl.serve")


def warn_if_exposed(token_file: Path) -> None:
    """A token file that group or others may read gets a warning (as ssh warns about a private key)."""
    try:
        mode = token_file.stat().st_mode
    except OSError:
        return
    if mode & (stat.S_IRWXG | stat.S_IRWXO):
        log.warning(
            "auth.token.file %s is readable by group or others (mode %s): anyone who can read it can call serve "
            "as any principal in it; chmod 600 %s",
            token_file,
            oct(stat.S_IMODE(mode)),
            token_file,
        )


def build_state(config: ServeConfig, connections: Connections) -> ServeState:
    """Open the log and build the node, metrics and decision log (nothing is loaded yet)."""
    backend = open_backend(config)
    lc = config.log
    writes_snapshots = config.controller or lc.bootstrap_servers is not None
    node = AclNode(
        backend,
        snapshot_dir=lc.snapshot_dir,
        config=config.authorizer,
        policy=SnapshotPolicy(lc.snapshot_max_records, lc.snapshot_max_bytes)
        if writes_snapshots and lc.snapshot_dir
        else None,
        retain_snapshots=lc.snapshot_retain,
    )
    if lc.snapshot_dir is not None and writes_snapshots:
        lc.snapshot_dir.mkdir(parents=True, exist_ok=True)
    holder: list[ServeState] = []
    metrics = ServeMetrics(
        acl_count=lambda: float(len(node.authorizer.state()[0])),
        last_offset=lambda: float(node.authorizer.state()[1]),
        lag=lambda: _lag(holder[0]),
        ready=lambda: 1.0 if node.ready else 0.0,
        log_error=lambda: _log_error(holder[0]),
        diverged=lambda: _diverged(holder[0]),
        writable=lambda: 1.0 if holder[0].write_health.writable else 0.0,
        connections=lambda: connections,
        decision_log=lambda: holder[0].decision_log,
    )
    ids = AclIds(lambda: node.loader.image)
    node.loader.publishers += [OnPublish(ids.on_change), OnPublish(_freeze_after_bulk)]
    decision_log = None
    if config.decision_log is not None:
        ids.enable()  # maintained from the first publish on
        decision_log = DecisionLog(config.decision_log, ids)
    # the writer's bulk work (an import) rests now and then: the event loop answering decisions gets the GIL
    writer = ThreadPoolExecutor(max_workers=1, thread_name_prefix="kraft-acl-writer", initializer=pace_thread)
    state = ServeState(
        config,
        node,
        metrics,
        decision_log,
        ids,
        writer,
        ThreadPoolExecutor(max_workers=1, thread_name_prefix="kraft-acl-rules"),
        ControllerRole(config, backend, writer),
        trusted=config.trusted_principals,
    )
    reopen = getattr(backend, "reopen", None)
    if config.controller and reopen is not None:

        def attempt() -> None:
            reopen()
            node.loader.catch_up()  # the log's durable end holds what this node applied

        state.write_recovery = WriteRecovery(state.write_health, attempt, writer)
    node.loader.publishers.append(OnPublish(state.changes.on_change))
    holder.append(state)
    return state


FREEZE_AFTER = 10_000  # ACLs a publish added, above which the collector stops walking what it built


def _freeze_after_bulk(update: Update) -> None:
    """After a large publish (a rebuild, an import), move every object made so far to the collector's permanent
    generation, as the node does after its initial load: a full collection would otherwise walk the new index's
    millions of objects (100 ms and more, the event loop waiting) every time it runs."""
    if update.added is None or len(update.added) >= FREEZE_AFTER:
        gc.freeze()


def _lag(state: ServeState) -> float:
    tail = state.tailer.status() if state.tailer is not None else None
    return float("nan") if tail is None or tail.lag is None else float(tail.lag)


def _log_error(state: ServeState) -> float:
    tail = state.tailer.status() if state.tailer is not None else None
    return 1.0 if tail is not None and tail.last_error is not None and tail.diverged is None else 0.0


def _diverged(state: ServeState) -> float:
    tail = state.tailer.status() if state.tailer is not None else None
    return 1.0 if tail is not None and tail.diverged is not None else 0.0
