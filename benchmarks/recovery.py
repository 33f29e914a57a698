"""Crash recovery: how long a delivery waits after its server process is killed with SIGKILL.

Runs `python -m bot serve` (SQLite) against the fake GitHub from tests/support, which holds the
installation-token request back so the delivery's handler is blocked on GitHub, as a long
judgment would be. After `--hold` seconds the process is killed with SIGKILL and a new one is
started on the same database at once. Prints, per run, how much of the delivery's lease was
left at the kill and how long after the kill the delivery was done (restart included).

With the default settings (no JUDGE_* variables: a 30 s lease renewed every 10 s) the wait is
what was left of the lease, 20 to 30 s depending on when in the heartbeat cycle the kill comes,
plus start-up and at most one poll interval. Runs kill at points spread over `--spread` seconds
(default: one heartbeat interval), so they cover that cycle from worst to best.

    python benchmarks/recovery.py [--runs 3] [--hold 40] [--spread 10] [--lease SECONDS]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
from pathlib import Path

import aiohttp

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bot.github.client import GitHubApp  # noqa: E402
from tests.support.fakes.github_fixtures import new_key_pair  # noqa: E402
from tests.support.fakes.github_server import FakeGitHub  # noqa: E402
from tests.support.server_process import PAYLOAD_REPO, Recovery, crash_and_recover  # noqa: E402

APP_ID = 12345


async def one_run(hold: float, settings: dict[str, str]) -> Recovery:
    key = new_key_pair()
    pem = key.private_pem
    fake = FakeGitHub(app_id=APP_ID, public_key=key.public_key)
    fake.add_installation(1, "Codertocat")
    fake.add_repo(PAYLOAD_REPO, default_branch="master", installation_id=1)
    await fake.start()
    try:
        await warm_up(fake, pem)
        with tempfile.TemporaryDirectory() as workdir:
            return await crash_and_recover(
                fake, pem, Path(workdir), hold_seconds=hold, settings=settings, done_within=600
            )
    finally:
        await fake.close()
        if fake.errors:
            raise SystemExit("fake GitHub found problems:\n" + "\n".join(fake.errors))


async def warm_up(fake: FakeGitHub, pem: str) -> None:
    """The scenario's requests once, untimed: the fake validates every request and answer
    against GitHub's description, and compiling those schemas on first use takes seconds
    that are the fake's, not the bot's."""
    async with aiohttp.ClientSession() as session:
        github = GitHubApp(
            app_id=str(APP_ID), private_key=pem, session=session, api_url=fake.base_url
        )
        owner, name = PAYLOAD_REPO.split("/")
        query = "query($o: String!, $n: String!) { repository(owner: $o, name: $n) { name } }"
        await github.graphql(1, query, o=owner, n=name)


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=1)
    parser.add_argument(
        "--hold",
        type=float,
        default=40.0,
        help="seconds the handler runs before the kill (longer than the lease shows the "
        "heartbeat keeping it)",
    )
    parser.add_argument(
        "--spread",
        type=float,
        default=10.0,
        help="later runs hold up to this much longer, so kills fall at different points of "
        "the heartbeat cycle (default: the default heartbeat interval)",
    )
    parser.add_argument("--lease", type=float, help="JUDGE_LEASE_SECONDS (default: the server's)")
    args = parser.parse_args()
    settings = {} if args.lease is None else {"JUDGE_LEASE_SECONDS": str(args.lease)}
    lease = "the default lease" if args.lease is None else f"a {args.lease:g} s lease"
    print(f"python -m bot serve (SQLite), {lease}; handler blocked, then SIGKILL mid-delivery")
    waits: list[float] = []
    for run in range(1, args.runs + 1):
        hold = args.hold + args.spread * (run - 1) / args.runs
        recovery = await one_run(hold, settings)
        before = recovery.before_kill
        kept = before.status == "processing" and before.attempts == 1
        print(
            f"  run {run} (killed after {hold:.1f} s): "
            f"done {recovery.seconds:.1f} s after the kill "
            f"({recovery.lease_left:.1f} s of the lease left at the kill; "
            f"lease kept while running: {'yes' if kept else 'NO'}; "
            f"attempts {recovery.done.attempts})"
        )
        if not kept or recovery.done.status != "done":
            raise SystemExit(1)
        waits.append(recovery.seconds)
    print(
        f"recovery after kill -9: median {statistics.median(waits):.1f} s, "
        f"max {max(waits):.1f} s over {len(waits)} run(s)"
    )


if __name__ == "__main__":
    asyncio.run(main())
