"""Crash recovery of the real server process: killed with SIGKILL mid-delivery, restarted.

A short lease (3 s, so a heartbeat every second) keeps the test quick; the same scenario with
the default settings is measured by `benchmarks/recovery.py`. The scenario itself is in
`tests/support/server_process.py`.
"""

from __future__ import annotations

from pathlib import Path

from tests.support.fakes.github_fixtures import KeyPair
from tests.support.fakes.github_server import FakeGitHub
from tests.support.server_process import crash_and_recover

LEASE = 3.0


async def test_a_killed_servers_delivery_is_done_about_a_lease_after_the_kill(
    fake_github: FakeGitHub, github_keypair: KeyPair, tmp_path: Path
) -> None:
    """While the handler runs (here one and a half leases, blocked on GitHub) the process
    keeps the delivery: one attempt, its own lease, renewed. After SIGKILL the restarted
    process finishes it once the lease runs out: within a lease plus start-up and polling."""
    recovery = await crash_and_recover(
        fake_github,
        github_keypair.private_pem,
        tmp_path,
        hold_seconds=1.5 * LEASE,
        settings={"JUDGE_LEASE_SECONDS": str(LEASE), "JUDGE_POLL_INTERVAL": "0.2"},
    )
    print(
        f"lease {LEASE:g} s: done {recovery.seconds:.2f} s after SIGKILL "
        f"({recovery.lease_left:.2f} s of the lease were left)"
    )
    before = recovery.before_kill
    assert (before.status, before.attempts) == ("processing", 1), (
        "a handler running longer than the lease was cut off or taken over"
    )
    assert 0 < recovery.lease_left <= LEASE, "the heartbeat keeps the lease ahead"
    assert recovery.token_requests == 2, "exactly one handler run per process"
    assert (recovery.done.status, recovery.done.attempts) == ("done", 2)
    # The wait is what was left of the lease; start-up (about a second) and polling come on top.
    assert recovery.seconds >= recovery.lease_left - 0.5
    assert recovery.seconds <= LEASE + 5.0
