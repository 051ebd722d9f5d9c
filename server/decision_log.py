"""The optional decision log: one JSON line per decision (who, what, result, the rule and the deciding ACL's
id), rotated by size, for audits and the Spark pipeline's usage report (`kraft-acl audit usage`).

Written from the event loop thread through a RotatingFileHandler (files `<file>`, `<file>.1`, ...);
one call's decisions are written together. The content -> id map it needs is kept up to date by a
loader change listener, which runs on the publishing thread and swaps one map reference.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Sequence
from logging.handlers import RotatingFileHandler
from pathlib import Path

import immutables
import msgspec

from kraftacl.authorizer.decision.audit import Rule
from kraftacl.authorizer.decision.standard import Action, RequestContext
from kraftacl.authorizer.model.acls import AuthorizationResult, StandardAcl
from kraftacl.authorizer.state.image import AclsImage
from kraftacl.authorizer.state.loader import Update


class DecisionLine(msgspec.Struct, frozen=True):
    """One decision, as the pipeline's usage job reads it."""

    time: str
    ts_ms: int
    principal: str
    host: str
    listener: str
    request: str
    operation: str
    resource_type: str
    resource_name: str
    result: str
    rule: str
    acl_id: str | None
    offset: int


class AclIds:
    """The id of each stored ACL by its content (ACL content is unique in a state), for explanations and the
    decision log. Built from the image on first use (serve's memory does not pay for it until someone asks),
    then kept up to date by the loader's change listener in a persistent map, so that one batch costs
    O(changes x log n) and a reader always sees one whole map."""

    def __init__(self, image: Callable[[], AclsImage]) -> None:
        self.image = image
        self.by_content: immutables.Map[StandardAcl, str] | None = None
        self._lock = threading.Lock()

    def on_change(self, update: Update) -> None:
        """Loader publisher: a full rebuild for a replaced state, else the net changes."""
        with self._lock:
            if self.by_content is None:
                return
            removed, added = update.removed, update.added
            if removed is None or added is None:
                self.by_content = _by_content(update.image)
                return
            with self.by_content.mutate() as fresh:
                for acl_id in removed:
                    acl = update.before.acls.get(acl_id)
                    if acl is not None:
                        fresh.pop(acl, None)
                for acl_id, acl in added:
                    fresh[acl] = acl_id
                self.by_content = fresh.finish()

    def enable(self) -> immutables.Map[StandardAcl, str]:
        """Build the map now (start-up with a decision log, or the first explanation)."""
        with self._lock:
            if self.by_content is None:
                self.by_content = _by_content(self.image())
            return self.by_content

    def id_of(self, rule: Rule) -> str | None:
        """The deciding ACL's id, when the rule names one."""
        if rule.acl is None:
            return None
        ids = self.by_content if self.by_content is not None else self.enable()
        return ids.get(rule.acl)


def _by_content(image: AclsImage) -> immutables.Map[StandardAcl, str]:
    return immutables.Map((acl, acl_id) for acl_id, acl in image.acls.items())


class DecisionLog:
    """Appends decisions to a size-rotated JSON-lines file."""

    def __init__(self, path: Path, max_bytes: int, backups: int, ids: AclIds) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self.handler = RotatingFileHandler(path, maxBytes=max_bytes, backupCount=backups, encoding="utf-8")
        self.handler.setFormatter(logging.Formatter("%(message)s"))
        self.ids = ids
        self.encoder = msgspec.json.Encoder()

    def write(
        self,
        ctx: RequestContext,
        actions: Sequence[Action],
        results: Sequence[AuthorizationResult],
        rules: Sequence[Rule],
        offset: int,
    ) -> None:
        """One line per action of one call."""
        now = time.time()
        stamp = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(now)) + f".{int(now * 1000) % 1000:03d}Z"
        ms = int(now * 1000)
        lines = [
            self.encoder.encode(
                DecisionLine(
                    stamp,
                    ms,
                    ctx.principal,
                    ctx.host,
                    ctx.listener,
                    ctx.request,
                    action.operation.name,
                    action.resource_type.name,
                    action.resource_name,
                    result.name,
                    rule.kind,
                    self.ids.id_of(rule),
                    offset,
                )
            ).decode()
            for action, result, rule in zip(actions, results, rules, strict=True)
        ]
        record = logging.LogRecord("kraft_acl.decisions", logging.INFO, "", 0, "\n".join(lines), None, None)
        self.handler.emit(record)

    def close(self) -> None:
        """Flush and close the file."""
        self.handler.close()
