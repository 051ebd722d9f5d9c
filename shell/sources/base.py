"""What the metadata shell reads: an `AclSource` (log directory, snapshot file, Kafka topic, Apache Kafka's own
metadata files, a running `kraft-acl serve`) hands out `View`s, each one consistent state of the ACLs.

A `View` is immutable once made (its lazily built parts are computed from immutable data, so two
threads building one at once get equal results); a source is driven by the shell's one thread,
except that a following source's background tailer swaps in new views.

What a kind of source implements:
  * `view()`: the current View, made from an `AclsImage` (id -> ACL plus Provenance), the
    `AuthorizerConfig` the decisions use (super users, allow.everyone.if.no.acl.found), and
    optionally the `AclIndex` already built for that image (otherwise built on the first decision);
  * `status()`: description, high-water mark, snapshot used, ready, following, last error; `pinned`;
  * `poll()` (catch up once; a no-op for a fixed state), `follow()` / `stop_following()` (background);
  * `seek(offset)` and `history(ids)`, or raise `SourceError` saying why the source cannot;
  * `close()`.
"""

from __future__ import annotations

import abc
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from functools import cached_property

from kraftacl.authorizer.decision.config import AuthorizerConfig
from kraftacl.authorizer.decision.standard import StandardAuthorizer
from kraftacl.authorizer.history.acl_history import AclHistory
from kraftacl.authorizer.index.acl_index import AclIndex
from kraftacl.authorizer.model.acls import StandardAcl
from kraftacl.authorizer.state.acl_views import AclGroups
from kraftacl.authorizer.state.image import AclsImage, Provenance


class SourceError(Exception):
    """A source cannot do what was asked (a bad offset, an unreachable log, no history): one line, for the user."""


class OffsetError(SourceError):
    """An offset outside the log, or inside a batch."""


class View:
    """One state of the ACLs: every ACL by id, where in the log it stands, and an authorizer deciding against it."""

    def __init__(self, image: AclsImage, config: AuthorizerConfig, index: AclIndex | None = None) -> None:
        self._image = image
        self.config = config
        self._index = index

    @property
    def image(self) -> AclsImage:
        """Every ACL by id, and the provenance."""
        return self._image

    def acl(self, acl_id: str) -> StandardAcl | None:
        """The ACL with this id, or None."""
        return self.image.acls.get(acl_id)

    def ids(self) -> Iterable[str]:
        """Every id, in no particular order."""
        return self.image.acls

    @property
    def provenance(self) -> Provenance:
        """The last record this state includes."""
        return self.image.provenance

    @property
    def offset(self) -> int:
        """The state at this offset: every record below it is applied."""
        return self.image.provenance.next_offset

    @cached_property
    def authorizer(self) -> StandardAuthorizer:
        """A ready StandardAuthorizer over this state (the index is built now if the source gave none)."""
        index = self._index if self._index is not None else AclIndex.build(self.image.acls.items(), self.image.acls)
        authorizer = StandardAuthorizer(self.config)
        authorizer.publish(index)
        authorizer.complete_initial_load()
        return authorizer

    @cached_property
    def sorted_ids(self) -> list[str]:
        """Every id, sorted (listing a million ids sorts once per state)."""
        return sorted(self.ids())

    @cached_property
    def groups(self) -> AclGroups:
        """The ids by resource pattern and by principal (built on first use)."""
        return AclGroups(self.image.acls)


@dataclass(frozen=True, slots=True)
class SourceStatus:
    """Where the source stands, for `/provenance` and the prompt."""

    description: str
    high_watermark: int | None  # None: no log behind the source, or the log is unreachable now
    snapshot: str | None  # the snapshot file the current state was loaded from, if any
    ready: bool
    following: bool  # new records are applied as they arrive
    pinned: int | None  # the offset `at` (or --at-offset) fixed the state at
    error: str | None  # the last error reaching the log, while following
    notes: tuple[str, ...] = ()  # what a reader should know about the state (partial input, an open transaction)


class AclSource(abc.ABC):
    """A place the shell reads ACL states from."""

    live: bool = False  # whether new records can arrive (a log), as opposed to one fixed state (a snapshot)
    pinned: int | None = None  # the offset `seek` (or --at-offset) fixed the state at; None: the newest state

    @abc.abstractmethod
    def view(self) -> View:
        """The current state."""

    @abc.abstractmethod
    def status(self) -> SourceStatus:
        """Description, high-water mark and the rest of `/provenance`."""

    def poll(self) -> None:  # noqa: B027 - a fixed state has nothing to catch up on
        """Apply any new records now (between two commands of a script)."""

    def follow(self) -> None:  # noqa: B027
        """Apply new records in the background as they arrive (interactive mode)."""

    def stop_following(self) -> None:  # noqa: B027
        """Stop applying new records in the background."""

    @property
    def following(self) -> bool:
        """Whether new records are being applied in the background now."""
        return False

    @contextmanager
    def paused(self) -> Iterator[None]:
        """Stop following while the shell's thread reads the log itself, then follow again if it was."""
        was = self.following
        self.stop_following()
        try:
            yield
        finally:
            if was:
                self.follow()

    @abc.abstractmethod
    def seek(self, offset: int | None) -> None:
        """Move to the state at `offset` (None: back to the newest state, following again if live)."""

    @abc.abstractmethod
    def history(self, acl_ids: Iterable[str]) -> AclHistory:
        """When each of these ids was added and removed."""

    @abc.abstractmethod
    def close(self) -> None:
        """Release the log, files and threads."""
