"""A streamed answer is told it is done with (`on_close`) however its stream ends: written whole, abandoned midway,
or never started because the client had gone (a describe's collector pause rides on it)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

from kraftacl.server.http import _close_pieces
from kraftacl.server.http_wire import StreamedResponse


async def _pieces(cleaned: list[str]) -> AsyncIterator[bytes]:
    try:
        yield b"one"
        yield b"two"
    finally:
        cleaned.append("generator")


def test_on_close_runs_for_an_answer_never_started() -> None:
    cleaned: list[str] = []
    response = StreamedResponse(200, _pieces(cleaned), on_close=lambda: cleaned.append("on_close"))
    asyncio.run(_close_pieces(response))
    assert cleaned == ["on_close"]  # the generator never ran, so its own cleanup could not have


def test_on_close_runs_after_the_generators_cleanup_when_abandoned_midway() -> None:
    cleaned: list[str] = []
    response = StreamedResponse(200, _pieces(cleaned), on_close=lambda: cleaned.append("on_close"))

    async def read_one_then_leave() -> None:
        async for _ in response.pieces:
            break
        await _close_pieces(response)

    asyncio.run(read_one_then_leave())
    assert cleaned == ["generator", "on_close"]


def test_without_on_close_closing_only_closes_the_generator() -> None:
    cleaned: list[str] = []
    response = StreamedResponse(200, _pieces(cleaned))

    async def read_all() -> None:
        assert [p async for p in response.pieces] == [b"one", b"two"]
        await _close_pieces(response)

    asyncio.run(read_all())
    assert cleaned == ["generator"]
