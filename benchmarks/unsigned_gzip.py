"""Peak memory of `python -m bot serve` under unsigned, gzip-compressed webhook requests.

Each request carries a small gzip body (about 24 KB by default) that inflates to about
24 MiB, no signature, and arrives alongside the others. A server that inflates a body before
its signature holds holds every inflated body at once; one that refuses a compressed body
unread holds next to nothing. The server is a process of its own on loopback (SQLite,
the fake GitHub from tests/support as its GitHub); its peak resident memory is read from
/proc (VmHWM) before and after the burst, so the figure is what the operating system saw.

    python benchmarks/unsigned_gzip.py [--requests 100] [--inflated-mib 24]

Prints the bytes sent, how the server answered, and the rise in peak memory.
"""

from __future__ import annotations

import argparse
import asyncio
import gzip
import sys
import tempfile
import time
import uuid
from collections import Counter
from pathlib import Path

import aiohttp

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.support.fakes.github_fixtures import new_key_pair  # noqa: E402
from tests.support.fakes.github_server import FakeGitHub  # noqa: E402
from tests.support.server_process import ServerProcess, server_env  # noqa: E402

MIB = 1024 * 1024


def bomb(inflated_mib: int) -> bytes:
    """A JSON object of `inflated_mib` MiB, gzip-compressed at the highest level."""
    text = b'{"pad": "' + b" " * (inflated_mib * MIB - 12) + b'"}'
    return gzip.compress(text, compresslevel=9)


def peak_rss_kib(pid: int) -> tuple[int, int]:
    """(VmHWM, VmRSS) of `pid` in KiB: its peak and current resident memory."""
    values: dict[str, int] = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        name, _, rest = line.partition(":")
        if name in ("VmHWM", "VmRSS"):
            values[name] = int(rest.split()[0])
    return values["VmHWM"], values["VmRSS"]


async def burst(url: str, body: bytes, requests: int) -> Counter[str]:
    headers = {
        "Content-Type": "application/json",
        "Content-Encoding": "gzip",
        "X-GitHub-Event": "push",
        "User-Agent": "benchmark",
    }
    outcomes: Counter[str] = Counter()

    async def one(session: aiohttp.ClientSession) -> None:
        try:
            async with session.post(
                url, data=body, headers=headers | {"X-GitHub-Delivery": str(uuid.uuid4())}
            ) as response:
                await response.read()
                outcomes[str(response.status)] += 1
        except aiohttp.ClientError as exc:
            outcomes[type(exc).__name__] += 1

    connector = aiohttp.TCPConnector(limit=0, force_close=True)
    async with aiohttp.ClientSession(connector=connector) as session:
        await asyncio.gather(*(one(session) for _ in range(requests)))
    return outcomes


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--requests", type=int, default=100)
    parser.add_argument("--inflated-mib", type=int, default=24)
    args = parser.parse_args()
    body = bomb(args.inflated_mib)
    key = new_key_pair()
    fake = FakeGitHub(app_id=12345, public_key=key.public_key)
    await fake.start()
    try:
        with tempfile.TemporaryDirectory() as workdir:
            env = server_env(fake, key.private_pem, Path(workdir) / "judge.sqlite3")
            server = ServerProcess(env, Path(workdir), "server")
            await server.start()
            try:
                assert server.process is not None
                pid = server.process.pid
                peak_before, rss_before = peak_rss_kib(pid)
                started = time.monotonic()
                outcomes = await burst(
                    server.base_url + "/api/github/webhooks", body, args.requests
                )
                seconds = time.monotonic() - started
                peak_after, rss_after = peak_rss_kib(pid)
            finally:
                await server.stop()
    finally:
        await fake.close()
    sent = len(body) * args.requests
    print(
        f"{args.requests} unsigned gzip requests of {len(body) / 1024:.1f} KB "
        f"(each inflating to {args.inflated_mib} MiB), {sent / MIB:.2f} MiB sent, "
        f"answered in {seconds:.2f} s"
    )
    print("answers: " + ", ".join(f"{k} x{v}" for k, v in sorted(outcomes.items())))
    print(
        f"server peak RSS: {peak_before / 1024:.1f} MiB before, {peak_after / 1024:.1f} MiB after"
    )
    print(f"peak memory rise: {(peak_after - peak_before) / 1024:.1f} MiB")
    print(f"resident after: {rss_after / 1024:.1f} MiB (before: {rss_before / 1024:.1f} MiB)")


if __name__ == "__main__":
    asyncio.run(main())
