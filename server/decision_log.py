"""The optional decision log: one JSON line per decision (who, what, result, the rule and the deciding ACL's
id), rotated by size, for audits and the Spark pipeline's usage report (`kraft-acl audit usage`).

The event loop thread encodes the lines and hands them to a writer thread (bounded: beyond
decision.log.max.pending.bytes waiting for the disk, lines are dropped and counted, so a slow disk never makes
a decision wait); the writer appends them through a RotatingFileHandler (files `<file>`, `<file>.1`, ...) in
groups of at most 64 KiB, so the file rotates at its size even within one call of 100k decisions. Callers asking
about themselves (not brokers or super users) have their own budget, decision.log.self.query.rate lines per
second; the rest of theirs are counted, not written, so they cannot push broker decisions out of the rotation.
The content -> id map is kept up to date by a loader change listener, which runs on the publishing thread and
swaps one map reference.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import deque
from collections.abc import Callable, Sequence
from itertools import islice
from logging.handlers import RotatingFileHandler

import immutables
import msgspec

from kraftacl.authorizer.decision.audit import Rule
from kraftacl.authorizer.decision.standard import Action, RequestContext
from kraftacl.authorizer.model.acls import AuthorizationResult, StandardAcl
from kraftacl.authorizer.state.gc_pause import paused_gc
from kraftacl.authorizer.state.image import AclsImage
from kraftacl.authorizer.state.loader import Update
from kraftacl.server.config import DecisionLogConfig

GROUP_BYTES = 64 * 1024  # lines written at once: the file rotates between two groups
LINE_CHARS = 1024  # a self-query's decision line takes one line of its budget per this many characters of names


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
    """One insert per Python statement (not one C call over the whole image): built on a worker thread, this
    gives the event loop the GIL back at every switch interval. The map's nodes (70k for 300k ACLs) are then
    frozen out of the collector's passes, as the loaded state is: a full pass walking them took 80-100 ms."""
    with paused_gc(freeze=True):
        building = immutables.Map[StandardAcl, str]().mutate()
        for acl_id, acl in image.acls.items():
            building[acl] = acl_id
        return building.finish()


class DecisionLog:
    """Encodes decisions as JSON lines on the caller's thread; a writer thread appends them to a size-rotated file."""

    def __init__(self, config: DecisionLogConfig, ids: AclIds) -> None:
        config.path.parent.mkdir(parents=True, exist_ok=True)
        self.handler = RotatingFileHandler(
            config.path, maxBytes=config.max_bytes, backupCount=config.backups, encoding="utf-8"
        )
        self.handler.setFormatter(logging.Formatter("%(message)s"))
        self.ids = ids
        self.group_bytes = min(GROUP_BYTES, max(config.max_bytes // 2, 1))
        self.max_pending = config.max_pending_bytes
        self.budget = SelfQueryBudget(config.self_query_rate)
        self.encoder = msgspec.json.Encoder()
        self.written = 0
        self.dropped = 0  # lines dropped because the disk fell behind
        self.skipped = 0  # self-query lines over their budget
        self._pending: deque[list[bytes]] = deque()
        self._pending_bytes = 0
        self._changed = threading.Condition()
        self._closed = False
        self._thread = threading.Thread(target=self._run, name="kraft-acl-decision-log", daemon=True)
        self._thread.start()

    def _self_lines(self, ctx: RequestContext, actions: Sequence[Action]) -> int:
        """How many of a self-query's lines its budget takes: one line of it per LINE_CHARS characters of the names a
        line writes (the caller's resource, request and listener names, up to 32,767 characters each). Counted one
        line each, lines of 98 KB were written at 76 MB a second at the default rate (a rotation every 1.3 s), so the
        backups held brokers' decisions for seconds: the self-query budget is meant to keep them in the rotation."""
        fixed = len(ctx.request) + len(ctx.listener)
        if fixed < LINE_CHARS and all(len(action.resource_name) < LINE_CHARS for action in actions):
            return self.budget.take(len(actions))  # the usual call: short names, a line each
        count = 0
        for action in actions:
            if not self.budget.take_line(1 + (len(action.resource_name) + fixed) // LINE_CHARS):
                break
            count += 1
        return count

    def write(
        self,
        ctx: RequestContext,
        actions: Sequence[Action],
        results: Sequence[AuthorizationResult],
        rules: Sequence[Rule],
        offset: int,
        trusted: bool = True,
    ) -> None:
        """One line per action of one call (a caller asking about itself: as many as its budget allows, a line
        counting as one per LINE_CHARS characters of the names it writes)."""
        count = len(actions) if trusted else self._self_lines(ctx, actions)
        self.skipped += len(actions) - count
        if not count:
            return
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
            )
            for action, result, rule in islice(zip(actions, results, rules, strict=True), count)
        ]
        size = sum(map(len, lines)) + len(lines)
        with self._changed:
            if self._pending_bytes + size > self.max_pending:
                self.dropped += len(lines)
                return
            self._pending.append(lines)
            self._pending_bytes += size
            self._changed.notify()

    def _run(self) -> None:
        """The writer thread: append waiting lines in groups (the handler rotates between two groups)."""
        while True:
            with self._changed:
                while not self._pending and not self._closed:
                    self._changed.wait()
                if not self._pending and self._closed:
                    return
                lines = self._pending.popleft()
            size = sum(map(len, lines)) + len(lines)
            try:
                self._append(lines)
            except Exception:  # a full disk must not end the writer; the lines are counted as dropped
                logging.getLogger(__name__).exception("cannot write the decision log")
                self.dropped += len(lines)
            with self._changed:
                self._pending_bytes -= size

    def _append(self, lines: list[bytes]) -> None:
        group: list[str] = []
        group_size = 0
        for line in lines:
            if group and group_size + len(line) + 1 > self.group_bytes:
                self._emit(group)
                group, group_size = [], 0
            group.append(line.decode())
            group_size += len(line) + 1
        if group:
            self._emit(group)
        self.written += len(lines)

    def _emit(self, group: list[str]) -> None:
        record = logging.LogRecord("kraft_acl.decisions", logging.INFO, "", 0, "\n".join(group), None, None)
        self.handler.emit(record)

    def flush(self, timeout: float = 10.0) -> None:
        """Wait until every line handed over so far is written (tests, shutdown)."""
        deadline = time.monotonic() + timeout
        with self._changed:
            while self._pending_bytes and time.monotonic() < deadline:
                self._changed.wait(0.01)

    def close(self) -> None:
        """Write what is waiting, then close the file."""
        with self._changed:
            self._closed = True
            self._changed.notify()
        self._thread.join(30)
        self.handler.close()


class SelfQueryBudget:
    """A token bucket: `rate` lines per second, up to one second's worth at once (0: none at all); taken from by
    the event loop and serve's rules thread alike (the audit budget), so each take holds a lock."""

    def __init__(self, rate: int) -> None:
        self.rate = rate
        self.tokens = float(rate)
        self.last = time.monotonic()
        self._lock = threading.Lock()

    def take(self, wanted: int) -> int:
        """How many of `wanted` lines may be written now."""
        with self._lock:
            now = time.monotonic()
            self.tokens = min(float(self.rate), self.tokens + (now - self.last) * self.rate)
            self.last = now
            granted = min(wanted, int(self.tokens))
            self.tokens -= granted
            return granted

    def take_line(self, cost: int) -> bool:
        """Whether one line counting as `cost` lines (at most a second's worth) may be written now; nothing is
        taken when it may not."""
        with self._lock:
            now = time.monotonic()
            self.tokens = min(float(self.rate), self.tokens + (now - self.last) * self.rate)
            self.last = now
            cost = min(cost, self.rate)
            if self.rate <= 0 or self.tokens < cost:
                return False
            self.tokens -= cost
            return True
