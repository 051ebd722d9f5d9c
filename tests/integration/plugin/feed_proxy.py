"""A TCP proxy between the broker's plugin and serve that can cut the change feed alone: while `drop_feed` is set,
every connection that carries a `GET /v1/changes` request is closed (decisions on other connections pass), and
`upstream` can be pointed at another serve (to the plugin, the serve at its URL restarted on another log).

Runs its own asyncio loop on a daemon thread; `set_drop_feed` and `point_to` may be called from any thread.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading

FEED_REQUEST = b"GET /v1/changes"


class FeedProxy:
    """127.0.0.1:<port> forwarding to an upstream host:port; `url` is what the broker's kraft.acl.urls names."""

    def __init__(self, upstream: tuple[str, int]) -> None:
        self.upstream = upstream
        self.drop_feed = False
        self.port = 0
        self._loop = asyncio.new_event_loop()
        self._writers: set[asyncio.StreamWriter] = set()
        started = threading.Event()
        threading.Thread(target=self._run, args=(started,), daemon=True, name="feed-proxy").start()
        if not started.wait(10):
            raise RuntimeError("the feed proxy did not start")

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def _run(self, started: threading.Event) -> None:
        asyncio.set_event_loop(self._loop)
        server = self._loop.run_until_complete(asyncio.start_server(self._client, "127.0.0.1", 0))
        self.port = server.sockets[0].getsockname()[1]
        started.set()
        self._loop.run_forever()

    def set_drop_feed(self, drop: bool) -> None:
        """Cut (or restore) the feed; cutting also closes every open connection, the waiting poll's included."""
        self.drop_feed = drop
        if drop:
            self._loop.call_soon_threadsafe(self._close_all)

    def point_to(self, upstream: tuple[str, int]) -> None:
        """Send new connections to another serve and close the open ones."""
        self.upstream = upstream
        self._loop.call_soon_threadsafe(self._close_all)

    def _close_all(self) -> None:
        for writer in list(self._writers):
            writer.close()

    async def _client(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            up_reader, up_writer = await asyncio.open_connection(*self.upstream)
        except OSError:
            writer.close()
            return
        self._writers |= {writer, up_writer}
        try:
            await asyncio.gather(self._pump(reader, up_writer, True), self._pump(up_reader, writer, False))
        finally:
            for w in (writer, up_writer):
                self._writers.discard(w)
                w.close()

    async def _pump(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, to_serve: bool) -> None:
        with contextlib.suppress(OSError, asyncio.IncompleteReadError):
            while data := await reader.read(65536):
                if to_serve and self.drop_feed and data.startswith(FEED_REQUEST):
                    break
                writer.write(data)
                await writer.drain()
        writer.close()
