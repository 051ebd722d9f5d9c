"""The shell's source over a running `kraft-acl serve` (`--server URL`): the ACL image with ids from
`GET /v1/acls/image`, fetched again whenever `GET /v1/status` shows serve has applied new records, and
`history` from `POST /v1/acls/history`.

Driven by the shell's thread; while following, a `Poller` thread fetches new images and swaps in each
new View as one reference. The one HTTP client is shared by both threads under a lock.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable
from typing import TypeVar

from kraftacl.api.client import ServerClient, ServerError, ServerTarget
from kraftacl.api.wire import StatusOut
from kraftacl.authorizer.decision.config import AuthorizerConfig
from kraftacl.authorizer.history.acl_history import AclHistory
from kraftacl.authorizer.index.overlay import OverlayMap
from kraftacl.authorizer.state.image import AclsImage, Provenance
from kraftacl.shell.sources.base import AclSource, SourceError, SourceStatus, View
from kraftacl.shell.sources.poller import Poller

T = TypeVar("T")
FOLLOW_INTERVAL_S = 0.5
CURRENT_ONLY = (
    "kraft-acl serve answers with its current state only; moving in time (at) needs the log itself: open serve's "
    "metadata.log.dir with --log-dir (or its Kafka topic with --bootstrap-server)"
)


class ServerSource(AclSource):
    """The current ACLs of one serve, decided with serve's own super.users and allow.everyone.if.no.acl.found."""

    live = True

    def __init__(self, target: ServerTarget) -> None:
        self._target = target
        self._lock = threading.Lock()
        self._poller: Poller | None = None
        self._error: str | None = None
        try:
            self._client = target.connect()
        except ServerError as exc:
            raise SourceError(str(exc)) from exc
        except OSError as exc:  # an unreadable --cert, --key or --cacert
            raise SourceError(f"{target.url}: cannot set up TLS: {exc}") from exc
        try:
            self._view = self._fetch()
        except SourceError:
            self._client.close()
            raise

    def _call(self, work: Callable[[ServerClient], T]) -> T:
        """Run `work(client)` under the lock; ServerError becomes SourceError."""
        with self._lock:
            try:
                return work(self._client)
            except ServerError as exc:
                raise SourceError(str(exc)) from exc

    def _fetch(self) -> View:
        acls, image = self._call(ServerClient.acl_image)
        config = AuthorizerConfig(
            super_users=frozenset(image.super_users),
            allow_everyone_if_no_acl_found=image.allow_everyone_if_no_acl_found,
        )
        provenance = Provenance(image.offset, image.epoch, image.timestamp_ms)
        return View(AclsImage(OverlayMap(dict(acls)), provenance), config)

    def view(self) -> View:
        return self._view

    def status(self) -> SourceStatus:
        serve: StatusOut | None = None
        try:
            serve = self._call(ServerClient.status)
        except SourceError as exc:
            self._error = str(exc)
        return SourceStatus(
            f"kraft-acl serve at {self._target.url}",
            serve.high_watermark if serve is not None else None,
            serve.snapshot if serve is not None else None,
            serve is not None and serve.ready,
            self.following,
            None,
            self._error or (serve.last_error if serve is not None else None),
        )

    def poll(self) -> None:
        """Fetch the image again when serve has applied records beyond the current view."""
        try:
            applied = self._call(ServerClient.status).last_applied_offset
            if applied != self._view.provenance.last_offset:
                self._view = self._fetch()
            self._error = None
        except SourceError as exc:  # keep the last state; /provenance shows the error
            self._error = str(exc)

    @property
    def following(self) -> bool:
        return self._poller is not None

    def follow(self) -> None:
        if self._poller is None:
            self._poller = Poller(self.poll, FOLLOW_INTERVAL_S, "kraft-acl-shell-serve").start()

    def stop_following(self) -> None:
        if self._poller is not None:
            self._poller.stop()
            self._poller = None

    def seek(self, offset: int | None) -> None:
        if offset is None:
            self.poll()
            return
        raise SourceError(CURRENT_ONLY)

    def history(self, acl_ids: Iterable[str]) -> AclHistory:
        ids = list(acl_ids)
        return self._call(lambda client: client.acl_history(ids))

    def close(self) -> None:
        self.stop_following()
        self._client.close()
