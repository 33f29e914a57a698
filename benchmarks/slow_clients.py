"""How long slow clients keep their connections to `python -m bot serve`.

Opens `--connections` connections to a server of its own on loopback (SQLite, the fake
GitHub from tests/support as its GitHub) that each send a little every `--interval` seconds:

    headers  a request line, then one header line at a time (a slowloris)
    body     a whole request head, then one byte of the body at a time
    idle     one complete request, then nothing

and prints, every few seconds, how many the server still holds open, until it has closed
them all or `--limit` seconds have passed. The server runs with its default timeouts unless
`--keepalive`/`--body` set JUDGE_KEEPALIVE_TIMEOUT_SECONDS/JUDGE_BODY_TIMEOUT_SECONDS.

    python benchmarks/slow_clients.py [--mode headers] [--connections 300] [--interval 5]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.support.fakes.github_fixtures import new_key_pair  # noqa: E402
from tests.support.fakes.github_server import FakeGitHub  # noqa: E402
from tests.support.server_process import ServerProcess, server_env  # noqa: E402

PATH = "/api/github/webhooks"


def opening(mode: str) -> bytes:
    if mode == "headers":
        return f"POST {PATH} HTTP/1.1\r\nHost: bench\r\n".encode()
    if mode == "body":
        return (
            f"POST {PATH} HTTP/1.1\r\nHost: bench\r\nContent-Type: application/json\r\n"
            "Content-Length: 100000\r\n\r\n{"
        ).encode()
    return b"GET /healthz HTTP/1.1\r\nHost: bench\r\n\r\n"


def next_piece(mode: str, sent: int) -> bytes | None:
    if mode == "headers":
        return b"X-Slow-%d: 1\r\n" % sent
    if mode == "body":
        return b" "
    return None


async def slow_client(port: int, mode: str, interval: float, closed: Counter[str]) -> None:
    """Sends as `mode` says until the server closes the connection; notes how it ended."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write(opening(mode))
    sent = 0
    try:
        while True:
            try:
                answer = await asyncio.wait_for(reader.read(65536), interval)
            except TimeoutError:
                piece = next_piece(mode, sent)
                if piece is not None:
                    writer.write(piece)
                    sent += 1
                continue
            if not answer:
                closed["closed"] += 1
                return
            closed[answer.split(b" ", 2)[1].decode() if answer.startswith(b"HTTP/") else "?"] += 1
    except ConnectionError:
        closed["reset"] += 1
    finally:
        writer.close()


async def run(args: argparse.Namespace) -> None:
    key = new_key_pair()
    fake = FakeGitHub(app_id=12345, public_key=key.public_key)
    await fake.start()
    settings: dict[str, str] = {}
    if args.keepalive is not None:
        settings["JUDGE_KEEPALIVE_TIMEOUT_SECONDS"] = str(args.keepalive)
    if args.body is not None:
        settings["JUDGE_BODY_TIMEOUT_SECONDS"] = str(args.body)
    try:
        with tempfile.TemporaryDirectory() as workdir:
            env = server_env(fake, key.private_pem, Path(workdir) / "judge.sqlite3", **settings)
            server = ServerProcess(env, Path(workdir), "server")
            await server.start()
            try:
                await watch(server.port, args)
            finally:
                await server.stop()
    finally:
        await fake.close()


async def watch(port: int, args: argparse.Namespace) -> None:
    ended: Counter[str] = Counter()
    clients = [
        asyncio.create_task(slow_client(port, args.mode, args.interval, ended))
        for _ in range(args.connections)
    ]
    started = time.monotonic()
    print(f"{args.connections} connections, mode {args.mode}, one piece every {args.interval} s")
    while time.monotonic() - started < args.limit:
        await asyncio.sleep(min(5.0, args.interval))
        still = sum(not task.done() for task in clients)
        print(f"  {time.monotonic() - started:6.1f} s: {still} open; answers {dict(ended)}")
        if not still:
            break
    left = sum(not task.done() for task in clients)
    print(f"after {time.monotonic() - started:.1f} s: {left} still open, ended {dict(ended)}")
    for task in clients:
        task.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await asyncio.gather(*clients, return_exceptions=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--mode", choices=["headers", "body", "idle"], default="headers")
    parser.add_argument("--connections", type=int, default=300)
    parser.add_argument("--interval", type=float, default=5.0)
    parser.add_argument("--limit", type=float, default=150.0, help="seconds to watch at most")
    parser.add_argument("--keepalive", type=float, default=None)
    parser.add_argument("--body", type=float, default=None)
    asyncio.run(run(parser.parse_args()))


if __name__ == "__main__":
    main()
