"""A GitHub that can be cut off: a loopback TCP relay in front of the fake GitHub.

While `down`, nothing listens on the relay's port (every connection is refused, as when
GitHub's address does not answer) and the connections it relayed are closed; `up` listens on
the same port again. The App is pointed at `url`; the fake behind it is untouched."""

from __future__ import annotations

import asyncio
import contextlib


class GitHubSwitch:
    def __init__(self, target_port: int) -> None:
        self.target_port = target_port
        self.port = 0
        self._server: asyncio.Server | None = None
        self._open: set[asyncio.StreamWriter] = set()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def is_up(self) -> bool:
        return self._server is not None

    async def up(self) -> None:
        if self._server is None:
            self._server = await asyncio.start_server(
                self._relay, "127.0.0.1", self.port, reuse_address=True
            )
            self.port = int(self._server.sockets[0].getsockname()[1])

    async def down(self) -> None:
        server, self._server = self._server, None
        if server is not None:
            server.close()
            await server.wait_closed()
        for writer in list(self._open):
            writer.close()
        self._open.clear()

    async def _relay(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            up_reader, up_writer = await asyncio.open_connection("127.0.0.1", self.target_port)
        except OSError:
            writer.close()
            return
        self._open |= {writer, up_writer}
        try:
            await asyncio.gather(_pipe(reader, up_writer), _pipe(up_reader, writer))
        finally:
            for end in (writer, up_writer):
                self._open.discard(end)
                end.close()


async def _pipe(source: asyncio.StreamReader, sink: asyncio.StreamWriter) -> None:
    with contextlib.suppress(ConnectionError, OSError):
        while data := await source.read(65536):
            sink.write(data)
            await sink.drain()
    with contextlib.suppress(ConnectionError, OSError, RuntimeError):
        sink.write_eof()
