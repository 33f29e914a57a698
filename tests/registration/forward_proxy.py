"""A real HTTP forward proxy on loopback, as `HTTP_PROXY` / `HTTPS_PROXY` name one.

Requests in absolute form (`POST http://github.test:1234/path HTTP/1.1`, how a client
speaks to a proxy about an http URL) are relayed to one upstream server on loopback, whatever
host they name: a test gives its client a name that resolves nowhere (`.test` is reserved),
so an answer proves the request went through the proxy. `CONNECT` (an https URL) is answered
with `connect_status` and not tunnelled: enough to see which proxy an https request chose.
Each request's method, target and `Proxy-Authorization` are kept in `seen`.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
from dataclasses import dataclass, field
from urllib.parse import urlsplit

HEAD_LIMIT = 64 * 1024


@dataclass(frozen=True)
class Seen:
    method: str
    target: str
    authorization: str | None


@dataclass
class ForwardProxy:
    upstream_port: int
    # "user:password" a client must send, or None for a proxy open to all.
    credentials: str | None = None
    connect_status: int = 502
    seen: list[Seen] = field(default_factory=list)
    _server: asyncio.Server | None = None

    async def start(self) -> None:
        self._server = await asyncio.start_server(self._serve, "127.0.0.1", 0)

    async def close(self) -> None:
        if self._server is not None:
            self._server.close()
            await self._server.wait_closed()

    @property
    def port(self) -> int:
        assert self._server is not None
        return int(self._server.sockets[0].getsockname()[1])

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def url_with(self, credentials: str) -> str:
        return f"http://{credentials}@127.0.0.1:{self.port}"

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            head = await reader.readuntil(b"\r\n\r\n")
        except (asyncio.IncompleteReadError, asyncio.LimitOverrunError):
            writer.close()
            return
        request_line, *header_lines = head.decode("latin-1").split("\r\n")[:-2]
        method, target, version = request_line.split(" ")
        headers = [line.partition(":") for line in header_lines]
        given = next((v.strip() for k, _, v in headers if k.lower() == "proxy-authorization"), None)
        self.seen.append(Seen(method, target, given))
        if self.credentials is not None and given != _basic(self.credentials):
            await _answer(writer, "407 Proxy Authentication Required", 'Basic realm="test"')
        elif method == "CONNECT":
            await _answer(writer, f"{self.connect_status} Refused by the test proxy", None)
        else:
            await self._relay(reader, writer, method, target, version, header_lines)

    async def _relay(
        self,
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
        method: str,
        target: str,
        version: str,
        header_lines: list[str],
    ) -> None:
        parts = urlsplit(target)
        path = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
        kept = [
            line
            for line in header_lines
            if line.partition(":")[0].strip().lower()
            not in ("proxy-authorization", "proxy-connection", "connection")
        ]
        # One request per connection: the upstream closes after answering, so does the client.
        head = "\r\n".join([f"{method} {path} {version}", *kept, "Connection: close", "", ""])
        up_reader, up_writer = await asyncio.open_connection("127.0.0.1", self.upstream_port)
        up_writer.write(head.encode("latin-1"))
        await asyncio.gather(_pump(reader, up_writer), _pump(up_reader, writer))


def _basic(credentials: str) -> str:
    return "Basic " + base64.b64encode(credentials.encode()).decode()


async def _answer(writer: asyncio.StreamWriter, status: str, challenge: str | None) -> None:
    extra = f"Proxy-Authenticate: {challenge}\r\n" if challenge else ""
    writer.write(
        f"HTTP/1.1 {status}\r\n{extra}Content-Length: 0\r\nConnection: close\r\n\r\n".encode()
    )
    with contextlib.suppress(ConnectionError):
        await writer.drain()
    writer.close()


async def _pump(source: asyncio.StreamReader, sink: asyncio.StreamWriter) -> None:
    """Bytes from `source` to `sink` until either side ends; then `sink` is closed."""
    try:
        while chunk := await source.read(65536):
            sink.write(chunk)
            await sink.drain()
    except ConnectionError:
        pass
    finally:
        sink.close()
