"""A streamed describe or image answer holds every ACL however busy the loop is: a slice used up before its
first step (the process was descheduled, another thread held the interpreter) shortens nothing."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import msgspec

from kraftacl.api.wire import DescribeOut
from kraftacl.authorizer.inputs.validate import parse_acl
from kraftacl.server.describe import STEP, _pieces
from kraftacl.server.slices import Lane

ACLS = [
    (
        f"id-{n}",
        parse_acl(
            {
                "resource_type": "TOPIC",
                "resource_name": f"t-{n}",
                "pattern_type": "LITERAL",
                "principal": "User:a",
                "host": "*",
                "operation": "READ",
                "permission_type": "ALLOW",
            }
        ),
    )
    for n in range(5 * STEP + 3)
]


def _answer(lane: Lane) -> dict[str, Any]:
    async def read() -> bytes:
        empty = msgspec.json.encode(DescribeOut([], 7))
        return b"".join([piece async for piece in _pieces(lane, iter(ACLS), empty)])

    out: dict[str, Any] = json.loads(asyncio.run(read()))
    return out


def test_every_acl_is_written_when_each_slice_is_used_up_before_it_starts() -> None:
    out = _answer(Lane(slice_s=0.0))  # every slice is due at once: one step each
    assert [a["id"] for a in out["acls"]] == [acl_id for acl_id, _ in ACLS]
    assert out["offset"] == 7


def test_every_acl_is_written_in_one_slice_when_there_is_time() -> None:
    out = _answer(Lane(slice_s=60.0))
    assert [a["id"] for a in out["acls"]] == [acl_id for acl_id, _ in ACLS]


def test_an_empty_answer_is_whole_json() -> None:
    async def read() -> bytes:
        empty = msgspec.json.encode(DescribeOut([], 3))
        return b"".join([piece async for piece in _pieces(Lane(slice_s=0.0), iter([]), empty)])

    assert json.loads(asyncio.run(read())) == {"acls": [], "offset": 3}
