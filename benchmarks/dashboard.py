"""How fast `/dashboard` is served over a large verdict log on SQLite.

A temporary SQLite database is filled with N records over the last 14 days (default
100,000; the same log as benchmarks/calibrate.py), the whole app is started on loopback
with the dashboard on (the KPI gauges off, so only the dashboard computes), and the page
is fetched with the bearer token:

* start: the default view (14 days, every repository) is computed in the background as
  the app starts (the window's facts read, counted by the reports, laid out); then the
  first request, served from it;
* warm: --requests further requests of that filter, served from the computed view; the
  target is a median under 100 ms;
* one repository, cold: the first request of another filter computes its view while the
  person waits (that repository's facts only);
* after a new record: each request folds in what was appended since the view was read
  (one read of the records after the last one seen) and, when one counts, recounts the
  view's figures from the facts kept in memory: the next request after each of
  --appends new records (every repository's view, then one repository's), and how
  many the page shows.

    .venv/bin/python benchmarks/dashboard.py [--records N] [--requests R] [--appends A]
"""

from __future__ import annotations

import argparse
import asyncio
import random
import re
import statistics
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

import aiohttp
from aiohttp import web

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from calibrate import _append, fill, record  # the calibration benchmark's log

from bot.app import TIER_BOARD, create_app
from bot.dashboard.filters import DEFAULT_DAYS, Filter
from bot.dashboard.routes import DASHBOARD, PAGE, add_dashboard
from bot.settings import Settings
from bot.storage.sqlite import SqliteStorage

TARGET_MS = 100.0
TOKEN = "benchmark-dashboard-token"
HEADERS = {"Authorization": f"Bearer {TOKEN}"}
_JUDGMENTS = re.compile(r'id="judgments">(\d+)<')


async def fetch(session: aiohttp.ClientSession, url: str) -> tuple[float, int]:
    started = time.perf_counter()
    async with session.get(url, headers=HEADERS) as response:
        body = await response.text()
    elapsed = (time.perf_counter() - started) * 1000
    if response.status != 200:
        raise SystemExit(f"GET {url}: {response.status}")
    found = _JUDGMENTS.search(body)
    return elapsed, int(found.group(1)) if found else -1


async def timed_requests(session: aiohttp.ClientSession, url: str, count: int) -> list[float]:
    return [(await fetch(session, url))[0] for _ in range(count)]


def line(name: str, values: list[float]) -> str:
    ordered = sorted(values)
    p95 = ordered[max(int(len(ordered) * 0.95) - 1, 0)]
    return (
        f"  {name:<28} median {statistics.median(values):8.1f} ms   p95 {p95:8.1f} ms   "
        f"max {ordered[-1]:8.1f} ms   ({len(values)} requests)"
    )


async def serve(store: SqliteStorage, path: Path, now: datetime) -> tuple[web.AppRunner, float]:
    """The app on loopback, and how long its default view took to compute at start."""
    settings = Settings(
        _env_file=None,
        DASHBOARD_TOKEN=TOKEN,
        DATABASE_URL=f"sqlite:///{path}",
        LOG_FORMAT="pretty",
        JUDGE_KPI_REFRESH_SECONDS=0,
    )
    app = create_app(settings, storage=store, start_workers=False, clock=lambda: now)
    if not any(getattr(r, "canonical", None) == PAGE for r in app.router.resources()):
        add_dashboard(app, settings, store, tiers=app[TIER_BOARD].current, clock=lambda: now)
    runner = web.AppRunner(app, access_log=None)
    started = time.perf_counter()
    await runner.setup()
    await web.TCPSite(runner, "127.0.0.1", 0).start()
    await app[DASHBOARD].views.get(Filter(None, DEFAULT_DAYS))  # joins the start's computation
    return runner, time.perf_counter() - started


async def main(records: int, requests: int, appends: int) -> None:
    now = datetime.now(UTC)
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "judge.sqlite3"
        store = SqliteStorage(str(path))
        await store.open()
        started = time.perf_counter()
        await fill(store, records, now)
        print(f"filled {records:,} judgments in {time.perf_counter() - started:.1f} s (not timed)")
        runner, warming = await serve(store, path, now)
        port = runner.addresses[0][1]
        base = f"http://127.0.0.1:{port}{PAGE}"
        try:
            async with aiohttp.ClientSession() as session:
                await report(session, store, base, now, requests, appends, warming)
        finally:
            await runner.cleanup()


async def after_new_records(
    session: aiohttp.ClientSession,
    store: SqliteStorage,
    url: str,
    now: datetime,
    appends: int,
    first_index: int,
) -> tuple[list[float], int]:
    """The request after each new record (each of the filter's repository, `first_index`
    choosing it) and what the last one showed; stops if one was not counted at once."""
    rng = random.Random(first_index)
    times: list[float] = []
    _, shown = await fetch(session, url)
    for n in range(appends):
        fresh = record(first_index + 10 * n, rng, now).model_copy(update={"timestamp": now})
        await _append(store, fresh)
        elapsed, after = await fetch(session, url)
        if after != shown + 1:
            raise SystemExit(f"a new record was not shown at once: {shown} then {after}")
        times.append(elapsed)
        shown = after
    return times, shown


async def report(
    session: aiohttp.ClientSession,
    store: SqliteStorage,
    base: str,
    now: datetime,
    requests: int,
    appends: int,
    warming: float,
) -> None:
    everything, one_repo = f"{base}?days=14", f"{base}?days=14&repo=octo/repo-3"
    first, shown = await fetch(session, everything)
    print(f"\n/dashboard, 14 days, all repositories ({shown:,} judgments in the window)")
    print(f"  {'view computed at start in':<28} {warming * 1000:8.1f} ms (background)")
    print(f"  {'first request':<28} {first:8.1f} ms")
    warm = await timed_requests(session, everything, requests)
    print(line("warm", warm))
    cold_repo, shown_repo = await fetch(session, one_repo)
    print(f"\n/dashboard, 14 days, octo/repo-3 ({shown_repo:,} judgments)")
    print(f"  {'cold (computes the view)':<28} {cold_repo:8.1f} ms")
    print(line("warm", await timed_requests(session, one_repo, requests)))

    print("\nafter a new record (appended through storage, then one request)")
    shown_all = await after_new_records(session, store, everything, now, appends, 10**9)
    print(line("every repository", shown_all[0]) + f"   shows {shown_all[1]:,}")
    shown_one = await after_new_records(session, store, one_repo, now, appends, 10**9 + 3)
    print(line("octo/repo-3", shown_one[0]) + f"   shows {shown_one[1]:,}")
    print(line("nothing new since", await timed_requests(session, everything, requests)))
    median = statistics.median(warm)
    verdict = "meets" if median < TARGET_MS else "MISSES"
    print(f"\nwarm median {median:.1f} ms {verdict} the target of {TARGET_MS:.0f} ms")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=100_000)
    parser.add_argument("--requests", type=int, default=50)
    parser.add_argument("--appends", type=int, default=10)
    args = parser.parse_args()
    asyncio.run(main(args.records, args.requests, args.appends))
