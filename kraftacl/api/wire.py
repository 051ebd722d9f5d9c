"""The JSON shapes of serve's HTTP API (v1) as msgspec Structs: decoded and validated in one C pass, and the
source of the OpenAPI document (`kraftacl/api/openapi.py`), so the code and the document cannot disagree.

All Structs are immutable values. Enum-valued fields travel as Kafka's enum names (`TOPIC`, `READ`,
`LITERAL`, `ALLOW`); their parsing, with Kafka's case rules, is `server.api`'s.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

import msgspec

# Kafka's protocol strings are at most 32,767 UTF-8 bytes (spec §2); at most 4 bytes per character.
# The character limit here is the cheap first check; `api` checks the byte length of long strings.
MAX_STRING_BYTES = 32_767
Text = Annotated[str, msgspec.Meta(max_length=MAX_STRING_BYTES)]
OptText = Annotated[str, msgspec.Meta(max_length=MAX_STRING_BYTES)] | None
Int32 = Annotated[int, msgspec.Meta(ge=-(2**31), le=2**31 - 1)]
# Read-your-writes: the `offset` an ACL write answered; the decision waits (bounded by serve's
# min.offset.wait.max.ms) until this serve has applied it, else 503 OFFSET_NOT_REACHED.
MinOffset = Annotated[int, msgspec.Meta(ge=0, le=2**63 - 1)] | None


class _In(msgspec.Struct, forbid_unknown_fields=True, frozen=True, gc=False):
    """Request bodies: unknown fields are refused with their name. Decoded from JSON, they cannot form reference
    cycles, so the garbage collector does not track them (a 500-action request allocates 500 of them)."""


class _Out(msgspec.Struct, frozen=True, omit_defaults=True):
    """Response bodies: fields left at their default are not sent."""


class ActionIn(_In, frozen=True):
    """One operation on one LITERAL resource (Kafka's Action)."""

    operation: Text
    resource_type: Text
    resource_name: Text
    pattern_type: Text = "LITERAL"
    ref_count: Int32 = 1
    log_if_allowed: bool = True
    log_if_denied: bool = True


class ContextIn(_In, frozen=True):
    """Who asks, from where (Kafka's AuthorizableRequestContext)."""

    principal: Text
    client_address: Text
    listener: Text = ""
    request: Text = ""


class AuthorizeIn(_In, frozen=True):
    """POST /v1/authorize: every action of one request context; results in the same order."""

    principal: Text
    client_address: Text
    actions: list[ActionIn]
    listener: Text = ""
    request: Text = ""
    explain: bool = False
    # The audit rules a caller needs with the results (the broker plugin's audit log): "denied" gives the rule text
    # of each DENIED action, "all" of every action, in `rule_texts` (null where not asked). Since API 1.2.0.
    rules: Literal["denied", "all"] | None = None
    min_offset: MinOffset = None  # since 1.2.0


class RuleOut(_Out, frozen=True):
    """Why an action was decided: SuperUser, MatchingAcl, DefaultAllow or DefaultDeny (`text`: Kafka's words)."""

    kind: str
    text: str
    acl_id: str | None = None


class AuthorizeOut(_Out, frozen=True):
    """The results, in request order, and the log offset of the state that decided them."""

    results: list[str]
    offset: int
    rules: list[RuleOut] | None = None
    rule_texts: list[str | None] | None = None  # with `rules` asked: Kafka's audit-log rule per action, or null


class ChangesQuery(msgspec.Struct, frozen=True):
    """GET /v1/changes' query parameters (a long poll; since API 1.2.0)."""

    after: Annotated[
        int, msgspec.Meta(ge=-1, le=2**63 - 1, description="the acl_offset the caller knows (default -1: none)")
    ] = -1
    wait_ms: Annotated[
        int,
        msgspec.Meta(
            ge=0, le=60_000, description="how long to wait for a newer acl_offset before answering (default 0: at once)"
        ),
    ] = 0
    instance: Annotated[
        str,
        msgspec.Meta(
            max_length=64,
            description="the serve instance the caller knows (since 1.5.0): another instance answers at once, so a "
            "caller whose URL now reaches another serve learns it without waiting for a heartbeat",
        ),
    ] = ""


class ChangesOut(msgspec.Struct, frozen=True):
    """GET /v1/changes (the change feed brokers' plugins follow; since API 1.2.0): this serve process's identity, the
    offset of the newest state it published that changed ACLs (a snapshot load counts; -1 before any) and when (its
    wall clock, microseconds since the epoch; 0 before any), the last offset it applied, and how long it held the
    poll. Every field always present."""

    instance: str
    acl_offset: int
    acl_applied_us: int
    applied_offset: int
    held_us: int = 0  # since 1.5.0: how long serve held this poll before answering (the caller bounds staleness by it)


class ByResourceTypeIn(_In, frozen=True):
    """POST /v1/authorize-by-resource-type (KIP-679's authorizeByResourceType)."""

    principal: Text
    client_address: Text
    operation: Text
    resource_type: Text
    listener: Text = ""
    request: Text = ""
    min_offset: MinOffset = None  # since 1.2.0


class ResultOut(_Out, frozen=True):
    """One result and the offset of the state that decided it."""

    result: str
    offset: int


class AuthorizedOperationsIn(_In, frozen=True):
    """POST /v1/authorized-operations (KIP-430) for one resource."""

    principal: Text
    client_address: Text
    resource_type: Text
    resource_name: Text
    listener: Text = ""
    min_offset: MinOffset = None  # since 1.2.0


class AuthorizedOperationsOut(_Out, frozen=True):
    """KIP-430's INT32 bit field and the operation names it holds."""

    authorized_operations: int
    operations: list[str]
    offset: int


class AclIn(_In, frozen=True):
    """One ACL (the acls.json form)."""

    resource_type: Text
    resource_name: Text
    pattern_type: Text
    principal: Text
    host: Text
    operation: Text
    permission_type: Text


class AclOut(_Out, frozen=True):
    """One stored ACL and its id (Kafka's base64 Uuid text)."""

    id: str
    resource_type: str
    resource_name: str
    pattern_type: str
    principal: str
    host: str
    operation: str
    permission_type: str


class FilterIn(_In, frozen=True):
    """An AclBindingFilter; a missing field matches anything (ANY, or null for the strings)."""

    resource_type: Text = "ANY"
    resource_name: OptText = None
    pattern_type: Text = "ANY"
    principal: OptText = None
    host: OptText = None
    operation: Text = "ANY"
    permission_type: Text = "ANY"


# fields at their default are not sent: a serve before 1.6.0 refuses `consistent` even when false
class DescribeIn(_In, frozen=True, omit_defaults=True):
    """POST /v1/acls/describe."""

    filter: FilterIn = msgspec.field(default_factory=FilterIn)
    min_offset: MinOffset = None  # since 1.2.0
    consistent: Annotated[
        bool,
        msgspec.Meta(
            description="answer from a state holding every record the log had committed when the call arrived "
            "(since 1.6.0): every ACL write acknowledged before it, by any serve, is seen"
        ),
    ] = False


class DescribeOut(_Out, frozen=True):
    """The matching ACLs (Kafka's index order) and the offset of the state they come from."""

    acls: list[AclOut]
    offset: int


class CreateIn(_In, frozen=True):
    """POST /v1/acls/create (CreateAcls, KIP-140): one atomic batch."""

    acls: list[AclIn]


class CreateResultOut(_Out, frozen=True):
    """Per-entry result: error_code 0 and the new id (null for a duplicate), or Kafka's error."""

    error_code: int
    error: str
    message: str | None = None
    id: str | None = None


class CreateOut(_Out, frozen=True):
    """Results in request order, and the offset of a state holding every ACL the request stored (its batch, or
    the state it was checked against when every entry was already stored): a decision's `min_offset`."""

    results: list[CreateResultOut]
    offset: int


class DeleteIn(_In, frozen=True):
    """POST /v1/acls/delete (DeleteAcls, KIP-140): one atomic batch."""

    filters: list[FilterIn]


class DeleteResultOut(_Out, frozen=True):
    """Per-filter result: every ACL the filter matched (each removed once), or Kafka's error."""

    error_code: int
    error: str
    acls: list[AclOut]
    message: str | None = None


class DeleteOut(_Out, frozen=True):
    """Results in request order, and the offset of a state without any ACL the request removed: a decision's
    `min_offset`."""

    results: list[DeleteResultOut]
    offset: int


class CountOut(_Out, frozen=True):
    """KIP-801's AclCount."""

    count: int
    offset: int


class SnapshotOut(msgspec.Struct, frozen=True):
    """POST /v1/snapshots: the snapshot serve just wrote of its current state, as `kraft-acl snapshot create`
    reports one (every field always present)."""

    path: str  # where serve wrote it (as serve names its snapshot directory)
    end_offset: int  # it holds every ACL below this offset
    epoch: int
    acls: int
    deleted: list[str]  # snapshot files retention (metadata.log.snapshot.retain) removed after writing it


class ControllerOut(msgspec.Struct, frozen=True):
    """Whether this controller-role serve writes the log now (the active controller) or is a standby."""

    active: bool
    epoch: int | None  # the writer epoch of its batches while active
    election_group: str | None  # the Kafka consumer group that elects the active controller (null: embedded log)
    since: float  # epoch seconds of the last change
    elections: int  # how often this serve was elected


class StatusOut(msgspec.Struct, frozen=True):
    """GET /v1/status: readiness and replay progress (every field always present; null when unknown)."""

    ready: bool
    node_id: int
    roles: list[str]
    listener: str
    last_applied_offset: int
    acl_count: int
    high_watermark: int | None = None
    lag: int | None = None
    last_error: str | None = None
    snapshot: str | None = None
    following: bool = False  # the tailer's last poll succeeded and the log never diverged
    diverged: str | None = None  # why the node stopped following for good (the log lost or changed what it applied)
    failing_since: float | None = None  # epoch seconds the current run of failed polls began
    failures: int = 0  # failed polls in that run
    writable: bool | None = None  # a controller: false after a failed write until the log takes writes again
    write_error: str | None = None  # why the last write failed (ENOSPC, EIO, ...)
    write_failing_since: float | None = None  # epoch seconds the writer has failed since
    controller: ControllerOut | None = None  # the controller role (null: process.roles=broker); since 1.2.0


class ImageOut(msgspec.Struct, frozen=True):
    """GET /v1/acls/image: every ACL with its id at one offset, and the settings decisions on them use (the
    metadata shell's `--server` source). Every field always present."""

    acls: list[AclOut]
    offset: int  # the last log offset applied (-1: none)
    epoch: int  # the epoch of that offset's batch (-1: none)
    timestamp_ms: int  # that batch's append time (-1: none)
    super_users: list[str]
    allow_everyone_if_no_acl_found: bool


class HistoryIn(_In, frozen=True):
    """POST /v1/acls/history: the ACL ids to trace (Kafka's base64 form)."""

    ids: Annotated[list[Text], msgspec.Meta(max_length=10_000)]


class AclEventOut(_Out, frozen=True):
    """One record about an id: `acl` is the ACL an AccessControlEntryRecord added; absent for a removal."""

    id: str
    offset: int
    epoch: int
    timestamp_ms: int
    acl: AclOut | None = None


class HistoryOut(msgspec.Struct, frozen=True):
    """Every record naming the asked ids between `log_start` (older ones survive only in snapshots) and `end`
    (exclusive), per id in offset order, ids in the order asked."""

    log_start: int
    end: int
    events: list[AclEventOut]


class ErrorBody(_Out, frozen=True):
    """What went wrong: a code (Kafka's error name where one exists), the field at fault, a message."""

    code: str
    message: str
    field: str | None = None


class ErrorOut(_Out, frozen=True):
    """Every 4xx/5xx body."""

    error: ErrorBody


class OpaOut(_Out, frozen=True):
    """The OPA decision API's answer."""

    result: bool


# The OPA Kafka authorizer plugin's input (org.openpolicyagent.kafka:opa-authorizer 1.5.x and its README).
class OpaPrincipal(msgspec.Struct, frozen=True):
    """KafkaPrincipal as the plugin serializes it."""

    principalType: str
    name: str


class OpaRequestContext(msgspec.Struct, frozen=True):
    """The plugin's requestContext; unknown fields are ignored (the plugin sends more than is needed)."""

    principal: OpaPrincipal
    clientAddress: str
    listenerName: str = ""
    header: dict[str, Any] | None = None


class OpaResourcePattern(msgspec.Struct, frozen=True):
    """The plugin's resourcePattern."""

    resourceType: str
    name: str
    patternType: str = "LITERAL"


class OpaAction(msgspec.Struct, frozen=True):
    """The plugin's action."""

    operation: str
    resourcePattern: OpaResourcePattern
    resourceReferenceCount: int = 1
    logIfAllowed: bool = True
    logIfDenied: bool = True


class OpaInput(msgspec.Struct, frozen=True):
    """`input` of the plugin's POST."""

    requestContext: OpaRequestContext
    action: OpaAction


class OpaIn(msgspec.Struct, frozen=True):
    """The plugin's whole POST body."""

    input: OpaInput
