"""A View over a snapshot's decoded columns that builds the million-entry id -> ACL map only when a command needs
every ACL: listing ids reads the id columns, reading one ACL finds its row, and only decisions, the groupings
and globs over many ids build the whole image.

Immutable in content: the image is built at most once (a cached property) from columns never mutated.
"""

from __future__ import annotations

import gc
from collections.abc import Iterable
from functools import cached_property
from itertools import chain

from kraftacl.authorizer.decision.config import AuthorizerConfig
from kraftacl.authorizer.model.acls import StandardAcl
from kraftacl.authorizer.state.image import AclsImage, Provenance, image_from_columns
from kraftacl.authorizer.state.memory import release_free_memory
from kraftacl.shell.sources.base import View
from kraftacl.snapshots.columns import AclColumns

SCANS_BEFORE_BUILDING = 8  # one row lookup scans the id columns; after this many, build the map once instead


class ColumnsView(View):
    """The state of one snapshot file, read from its columns until the whole image is needed."""

    def __init__(self, chunks: list[AclColumns], provenance: Provenance, config: AuthorizerConfig) -> None:
        self._chunks = chunks
        self._provenance = provenance
        self.config = config
        self._index = None
        self._scans = 0
        if len(set(self.ids())) != sum(chunk.rows for chunk in chunks):
            _ = self.image  # an id listed twice: building the map names the record (ImageError)

    @cached_property
    def image(self) -> AclsImage:  # View's plain property, computed here once
        gc.disable()  # a million ACL tuples: no collection passes while they are made (as AclNode.start does)
        try:
            acls = image_from_columns(self._chunks)
        finally:
            gc.enable()
        gc.freeze()
        release_free_memory()
        return AclsImage(acls, self._provenance)

    @property
    def provenance(self) -> Provenance:
        return self._provenance

    def ids(self) -> Iterable[str]:
        if "image" in self.__dict__:
            return self.image.acls
        return chain.from_iterable(chunk.ids for chunk in self._chunks)

    def acl(self, acl_id: str) -> StandardAcl | None:
        if "image" in self.__dict__ or self._scans >= SCANS_BEFORE_BUILDING:
            return self.image.acls.get(acl_id)
        self._scans += 1
        for chunk in self._chunks:
            try:
                row = chunk.ids.index(acl_id)
            except ValueError:
                continue
            one = AclColumns._make([column[row]] for column in chunk)
            return image_from_columns([one]).get(acl_id)  # the same conversion as the whole map's
        return None
