"""The ACL controller: CreateAcls / DeleteAcls with Kafka's validation, de-duplication and limits (spec §10, §11).

One controller writes at a time: calls are serialized by a lock per backend object in this process
(shared by every controller over that object, so none validates against a log another is about to
append to), and the log backend's single-writer rule (file lock, or Kafka producer fencing) covers
other backend objects and processes. Each request is caught up to the log's high-water mark before
it is validated, writes one atomic batch, and is caught up again so the caller reads its own write.
"""

from __future__ import annotations

import threading
import time
import weakref
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass, field
from typing import TypeVar

from kraftacl.authorizer.errors import ControllerError, InvalidFilterError
from kraftacl.authorizer.index.acl_index import AclIndex, members
from kraftacl.authorizer.index.steps import chunks
from kraftacl.authorizer.model.acls import (
    CLUSTER_NAME,
    AclOperation,
    AclPermissionType,
    PatternType,
    ResourceType,
    StandardAcl,
)
from kraftacl.authorizer.model.filters import AclBindingFilter
from kraftacl.authorizer.state.graveyard import bury
from kraftacl.authorizer.state.loader import MetadataLoader
from kraftacl.authorizer.state.records import record_from_acl, records_from_acls
from kraftacl.metadata_log.backend import LogBackend
from kraftacl.metadata_log.records import MetadataRecord, RemoveAccessControlEntryRecord
from kraftacl.metadata_log.uuids import new_uuid, new_uuids

MAX_RECORDS_PER_USER_OP = 10_000  # QuorumController.MAX_RECORDS_PER_USER_OP
# ACL entries one DeleteAcls may report over all its filters (an ACL counts once per filter matching it): a few KB of
# match-all filters otherwise made an answer of 96 MB (100 filters, 5,000 ACLs) and could exhaust memory
MAX_REPORTED_PER_DELETE = 5 * MAX_RECORDS_PER_USER_OP


@dataclass(frozen=True, slots=True)
class ApiError:
    """Kafka's (error code, name, message) triple; code 0 is success."""

    code: int
    name: str
    message: str | None = None

    def __str__(self) -> str:
        return self.name if self.message is None else f"{self.name}: {self.message}"


NONE = ApiError(0, "NONE")


def invalid_request(message: str) -> ApiError:
    """INVALID_REQUEST (42)."""
    return ApiError(42, "INVALID_REQUEST", message)


_TOO_MANY_REPORTED = (
    f"the filters match more than {MAX_REPORTED_PER_DELETE} ACL entries in all (an ACL counts once per filter that "
    "matches it); nothing was deleted: send fewer or narrower filters"
)
POLICY_VIOLATION_TOO_LARGE = ApiError(44, "POLICY_VIOLATION", "Unable to perform excessively large batch operation.")
UNKNOWN_SERVER_ERROR = ApiError(-1, "UNKNOWN_SERVER_ERROR")


@dataclass(frozen=True, slots=True)
class CreateResult:
    """The outcome of one binding of a CreateAcls request."""

    error: ApiError = NONE
    acl_id: str | None = None  # the new id, or None for a duplicate or a failure


@dataclass(frozen=True, slots=True)
class ImportResult:
    """The outcome of an import: what was added (one batch), already stored, or listed twice in the input."""

    added: list[tuple[str, StandardAcl]]  # (new id, ACL); a dry run: ("", ACL) for each it would add
    present: int  # already stored: skipped
    repeated: int  # a copy of an earlier entry of the same input: skipped
    base_offset: int | None = None  # where the batch landed (None: nothing to write, or a dry run)


class InvalidImportError(ControllerError):
    """An import holding ACLs that CreateAcls would refuse; nothing was written. `invalid` lists
    (position in the input, ACL, error) for every one of them."""

    def __init__(self, invalid: list[tuple[int, StandardAcl, ApiError]]) -> None:
        position, acl, error = invalid[0]
        super().__init__(
            42,
            "INVALID_REQUEST",
            f"{len(invalid)} of the ACLs to import are invalid, nothing was written; the first is entry "
            f"{position} ({acl}): {error.message}",
        )
        self.invalid = invalid


@dataclass(frozen=True, slots=True)
class DeleteResult:
    """The outcome of one filter of a DeleteAcls request: every stored ACL it matched."""

    error: ApiError = NONE
    deleted: list[tuple[str, StandardAcl]] = field(default_factory=list)


def builds_no_binding(acl: StandardAcl) -> bool:
    """True when AclApis cannot build the AclBinding: Kafka's ResourcePattern refuses resource type ANY and
    pattern type MATCH or ANY, its AccessControlEntry refuses operation ANY and permission ANY (spec §10,
    layer 2). UNKNOWN passes both constructors and is refused later, by validateNewAcl."""
    return (
        acl.resource_type == ResourceType.ANY
        or acl.pattern_type in (PatternType.MATCH, PatternType.ANY)
        or acl.operation == AclOperation.ANY
        or acl.permission_type == AclPermissionType.ANY
    )


def validate_new_acl(acl: StandardAcl, api_checks: bool) -> ApiError | None:
    """AclApis' per-binding checks (when `api_checks`), then AclControlManager.validateNewAcl, in Kafka's order."""
    if api_checks:
        if acl.resource_type == ResourceType.CLUSTER and acl.resource_name != CLUSTER_NAME:
            return invalid_request("The only valid name for the CLUSTER resource is kafka-cluster")
        if acl.resource_name == "":
            return invalid_request("Invalid empty resource name")
    if acl.resource_type in (ResourceType.UNKNOWN, ResourceType.ANY):
        return invalid_request(f"Invalid resourceType {acl.resource_type.name}")
    if acl.pattern_type not in (PatternType.LITERAL, PatternType.PREFIXED):
        return invalid_request(f"Invalid patternType {acl.pattern_type.name}")
    if acl.operation in (AclOperation.UNKNOWN, AclOperation.ANY):
        return invalid_request(f"Invalid operation {acl.operation.name}")
    if acl.permission_type not in (AclPermissionType.DENY, AclPermissionType.ALLOW):
        return invalid_request(f"Invalid permissionType {acl.permission_type.name}")
    if not acl.resource_name:
        return invalid_request("Resource name should not be empty")
    if ":" not in acl.principal:  # added to validateNewAcl after the spec was written; Kafka 4.3.1 has it
        return invalid_request(
            f"Could not parse principal from `{acl.principal}` "
            "(no colon is present separating the principal type from the principal name)"
        )
    return None


def exists(index: AclIndex, acl: StandardAcl) -> bool:
    """True when an ACL with exactly this content is stored."""
    tindex = index.types[acl.resource_type]
    if tindex is None:
        return False
    buckets = tindex.literal if acl.pattern_type == PatternType.LITERAL else tindex.prefixed
    return acl in members(buckets.get(acl.resource_name))


# Items per C-level call in a bulk import: the writer thread then gives the event loop the GIL back between two
# calls (a serving node answers decisions meanwhile), instead of holding it for one pass over 200k ACLs.
STEP = 4096
T = TypeVar("T")


_SHARDS = 64  # `_unique` files items in this many sets (a power of two)


def _unique(items: Sequence[T]) -> list[T]:
    """`list(dict.fromkeys(items))` without one container of every item: 200k items in one dict or set are resized
    in single C calls of 5-8 ms (the GIL held); filed by hash in `_SHARDS` sets, each resize is a 64th of that."""
    shards: list[set[T]] = [set() for _ in range(_SHARDS)]
    mask = _SHARDS - 1
    out: list[T] = []
    for step in chunks(items):  # a paced thread rests between two steps (`metadata_log.pace`)
        for item in step:
            shard = shards[hash(item) & mask]
            if item not in shard:
                shard.add(item)
                out.append(item)
    return out


def invalid_acls(acls: Sequence[StandardAcl]) -> list[tuple[int, StandardAcl, ApiError]]:
    """(position, ACL, error) of every ACL `validate_new_acl` refuses (with the API checks), in one pass.

    Validity depends on the four codes and, by name, on two rules (no empty name, CLUSTER only
    `kafka-cluster`): the codes are checked once per distinct combination, the names per ACL.
    """
    valid_codes: set[tuple[int, int, int, int]] = set()
    invalid = []
    for position, acl in enumerate(a for step in chunks(acls) for a in step):
        codes = (acl.resource_type, acl.pattern_type, acl.operation, acl.permission_type)
        name = acl.resource_name
        if codes in valid_codes and name and (name == CLUSTER_NAME or acl.resource_type != ResourceType.CLUSTER):
            continue
        error = validate_new_acl(acl, api_checks=True)
        if error is None:
            valid_codes.add(codes)
        else:
            invalid.append((position, acl, error))
    return invalid


_WRITE_LOCKS: weakref.WeakKeyDictionary[LogBackend, threading.Lock] = weakref.WeakKeyDictionary()
_WRITE_LOCKS_GUARD = threading.Lock()


def write_lock(backend: LogBackend) -> threading.Lock:
    """The one lock every controller writing through `backend` (this object) holds from catch-up to append."""
    with _WRITE_LOCKS_GUARD:
        return _WRITE_LOCKS.setdefault(backend, threading.Lock())


class AclController:
    """Turns CreateAcls / DeleteAcls requests into atomic record batches on the log."""

    def __init__(self, backend: LogBackend, loader: MetadataLoader, new_id: Callable[[], str]) -> None:
        self.backend = backend
        self.loader = loader
        self.new_id = new_id
        self._lock = write_lock(backend)

    def _index(self) -> AclIndex:
        """Catch up, then the index of exactly the log's committed state."""
        self.loader.catch_up()
        return self.loader.index

    def create_acls(self, acls: Sequence[StandardAcl], api_checks: bool = True) -> list[CreateResult]:
        """Results in request order; duplicates succeed without a record; all new records in one batch.

        With `api_checks` (AclApis.handleCreateAcls in front of the controller), a binding with a
        filter-only value fails the whole request: the constructor's IllegalArgumentException escapes
        the handler, so every entry is UNKNOWN_SERVER_ERROR with no message and nothing is written.
        """
        if api_checks and any(map(builds_no_binding, acls)):
            return [CreateResult(UNKNOWN_SERVER_ERROR) for _ in acls]
        with self._lock:
            index = self._index()
            results: list[CreateResult] = []
            records: list[MetadataRecord] = []
            seen: set[StandardAcl] = set()
            live = set(index.by_id)
            for acl in acls:
                error = validate_new_acl(acl, api_checks)
                if error is not None:
                    results.append(CreateResult(error))
                elif acl in seen or exists(index, acl):
                    results.append(CreateResult())
                else:
                    seen.add(acl)
                    acl_id = self.new_id()
                    while acl_id in live:
                        acl_id = self.new_id()
                    live.add(acl_id)
                    records.append(record_from_acl(acl_id, acl))
                    results.append(CreateResult(acl_id=acl_id))
            if len(records) > MAX_RECORDS_PER_USER_OP:  # checked before anything changes
                return [CreateResult(POLICY_VIOLATION_TOO_LARGE) for _ in acls]
            self._append(records)
            return results

    def import_acls(self, acls: Sequence[StandardAcl], dry_run: bool = False) -> ImportResult:
        """Every ACL not stored yet, added in ONE batch (an import is not a user request: no 10,000-record
        limit); each is validated as CreateAcls validates it (InvalidImportError lists every invalid one
        and nothing is written); stored ones and repeats are skipped and counted. Ids come in bulk."""
        invalid = invalid_acls(acls)
        if invalid:
            raise InvalidImportError(invalid)
        with self._lock:
            index = self._index()
            unique = _unique(acls)
            fresh = [acl for step in chunks(unique) for acl in step if not exists(index, acl)]
            present, repeated = len(unique) - len(fresh), len(acls) - len(unique)
            if dry_run or not fresh:
                return ImportResult([("", acl) for acl in fresh], present, repeated)
            ids = self.new_ids(len(fresh), index.by_id)
            now_ms = int(time.time() * 1000)
            records = [
                r
                for start, step in zip(range(0, len(ids), STEP), chunks(ids, STEP), strict=True)
                for r in records_from_acls(step, fresh[start : start + STEP])
            ]
            with self.loader.appending():  # the tailer does not read the import back first
                appended = self.backend.append(records, timestamp_ms=now_ms)
                bury(records)  # 200k records freed at once hold the GIL for 26 ms
                self.loader.publish_appended(appended, now_ms, ids, fresh)  # not read back and decoded again
            added = [pair for step in chunks(zip(ids, fresh, strict=True)) for pair in step]  # steps (`index.steps`)
            return ImportResult(added, present, repeated, appended.base_offset)

    def new_ids(self, count: int, live: Collection[str]) -> list[str]:
        """`count` ids unused in `live` nor among themselves (in steps, or one by one with an injected id maker)."""
        if self.new_id is new_uuid:
            ids = [i for start in range(0, count, STEP) for i in new_uuids(min(STEP, count - start))]
        else:
            ids = [self.new_id() for _ in range(count)]
        fresh = not any(any(map(live.__contains__, step)) for step in chunks(ids, STEP))
        if fresh and len(_unique(ids)) == count:  # the rule (random 122 bits); checked a step at a time
            return ids
        taken = set(live)
        for n, acl_id in enumerate(ids):
            while acl_id in taken:
                acl_id = ids[n] = self.new_id()
            taken.add(acl_id)
        return ids

    def delete_acls(self, filters: Sequence[AclBindingFilter]) -> list[DeleteResult]:
        """Each filter reports every ACL it matched; each ACL is removed once; one atomic batch."""
        with self._lock:
            index = self._index()
            results: list[DeleteResult] = []
            removing: dict[str, None] = {}
            seen: dict[AclBindingFilter, list[tuple[str, StandardAcl]]] = {}  # a filter sent twice is matched once
            reported = 0
            for acl_filter in filters:
                if acl_filter.pattern.is_unknown():
                    results.append(DeleteResult(invalid_request("Unknown patternFilter.")))
                    continue
                if acl_filter.entry.is_unknown():
                    results.append(DeleteResult(invalid_request("Unknown entryFilter.")))
                    continue
                try:
                    matched = seen.get(acl_filter)
                    if matched is None:
                        matched = [(i, a) for i, a in index.by_id.items() if acl_filter.matches_acl(a)]
                        seen[acl_filter] = matched
                except InvalidFilterError as exc:
                    results.append(DeleteResult(ApiError(-1, "UNKNOWN_SERVER_ERROR", str(exc))))
                    continue
                reported += len(matched)
                removing.update(dict.fromkeys(i for i, _ in matched))
                if len(removing) > MAX_RECORDS_PER_USER_OP:  # Kafka fails the whole request; nothing is deleted
                    return [DeleteResult(UNKNOWN_SERVER_ERROR) for _ in filters]
                if reported > MAX_REPORTED_PER_DELETE:  # ours, beyond Kafka's: nothing is deleted
                    return [DeleteResult(invalid_request(_TOO_MANY_REPORTED)) for _ in filters]
                results.append(DeleteResult(deleted=matched))
            self._append([RemoveAccessControlEntryRecord(acl_id) for acl_id in removing])
            return results

    def _append(self, records: list[MetadataRecord]) -> None:
        if records:
            self.backend.append(records)
            self.loader.catch_up()
