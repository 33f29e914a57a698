"""The dashboard through the whole app on loopback: who gets in, what the page shows for
each filter (the reports' numbers), the sign-in cookie, and every refusal."""

from __future__ import annotations

import asyncio
import re
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web
from aiohttp.test_utils import TestClient, TestServer

from bot.dashboard.filters import DEFAULT_DAYS, Filter
from bot.dashboard.freshness import Freshness
from bot.dashboard.render import age_text
from bot.dashboard.routes import add_dashboard
from bot.judge.records import Tier, Verdict, VerdictRecord
from bot.reports import sources
from bot.reports.calibration_view import with_counts
from bot.reports.kpis import calibrate
from bot.reports.thresholds import CalibrationThresholds
from bot.reports.triage import triage
from bot.storage.base import MergeOptions, MergeStatus, NewMergeEntry, Storage
from tests.dashboard.support import TOKEN, bearer, dashboard_settings, seed, serving
from tests.reports.seeded import NOW, QUICK, call, day, judgment, store_all
from tests.support.app_helpers import make_settings
from tests.support.verdict_builders import FAKE_SECRETS

ROUTES = (
    ("GET", "/dashboard"),
    ("GET", "/dashboard/sign-in"),
    ("POST", "/dashboard/sign-in"),
    ("POST", "/dashboard/sign-out"),
)
LENIENT = {
    "MIN_SAMPLE": "1",
    "MIN_DAYS": "1",
    "MIN_GO_RATE": "0",
    "MAX_GO_RATE": "1",
    "MAX_FALSE_POSITIVE_RATE": "1",
    "MAX_FALSE_NEGATIVE_RATE": "1",
    "MAX_UNDETERMINED_RATE": "1",
    "MIN_AVAILABILITY": "0.5",
    "MAX_MEDIAN_LATENCY_SECONDS": "100",
}


def rejected(number: int, at: datetime, **extra: Any) -> VerdictRecord:
    return judgment(
        "octo/docs" if extra else "octo/api",
        number,
        Verdict.REJECT,
        "NO-GO",
        [(Tier.QUICK, QUICK, Verdict.REJECT)],
        [call(Tier.QUICK, QUICK, 800, 100)],
        at,
        **extra,
    )


def queued(number: int, repository: str = "octo/docs") -> NewMergeEntry:
    return NewMergeEntry(repository=repository, base_branch="main", pull_number=number,
                         installation_id=7, judged_sha="a" * 40, method="squash",
                         options=MergeOptions())  # fmt: skip


def text_of(html: str, element_id: str) -> str:
    found = re.search(rf'id="{re.escape(element_id)}"[^>]*>([^<]*)<', html)
    assert found is not None, f"no #{element_id}"
    return found.group(1)


def kpi_row(html: str, scope: str) -> str:
    found = re.search(rf'<tr data-scope="{re.escape(scope)}">(.*?)</tr>', html)
    assert found is not None, f"no KPI row for {scope}"
    return found.group(1)


async def test_off_without_a_token_says_how_to_turn_it_on(
    tmp_path: Path, github_keypair: Any, sqlite_storage: Storage
) -> None:
    settings = make_settings(github_keypair.private_pem, tmp_path)
    async with serving(settings, sqlite_storage) as client:
        for method, path in ROUTES:
            response = await client.request(method, path, headers=bearer())
            assert response.status == 404
            assert "Set DASHBOARD_TOKEN" in await response.text()


async def test_anonymous_and_wrong_tokens_are_refused(
    tmp_path: Path, github_keypair: Any, sqlite_storage: Storage
) -> None:
    """No header, a wrong token, another scheme or a forged cookie: 401 with the sign-in
    form, and not one figure of the log."""
    await seed(sqlite_storage)
    settings = dashboard_settings(github_keypair.private_pem, tmp_path)
    async with serving(settings, sqlite_storage) as client:
        for headers in ({}, bearer("nope"), {"Authorization": f"Basic {TOKEN}"},
                        {"Cookie": "judge_dashboard=9999999999.abc.def"}):  # fmt: skip
            response = await client.get("/dashboard", headers=headers)
            assert response.status == 401
            assert response.headers["WWW-Authenticate"] == 'Bearer realm="dashboard"'
            body = await response.text()
            assert 'action="/dashboard/sign-in"' in body
            assert "octo/docs" not in body
            assert response.headers["Cache-Control"] == "no-store"


async def test_page_numbers_equal_the_reports(
    tmp_path: Path, github_keypair: Any, storage: Storage
) -> None:
    """For each filter, the page's counts, flagged items, open issues and KPIs are the
    triage and calibration reports' own, on SQLite and PostgreSQL."""
    await seed(storage)
    settings = dashboard_settings(github_keypair.private_pem, tmp_path)
    async with serving(settings, storage) as client:
        for repository, days in ((None, 14), ("octo/api", 14), ("octo/docs", 7), (None, 1)):
            facts, _ = await sources.window_facts(storage, NOW - timedelta(days=days), repository)
            report = triage(facts, now=NOW, days=days, repository=repository)
            figures = calibrate(
                facts, CalibrationThresholds(), now=NOW, days=days, repository=repository
            ).overall.figures
            query = {"days": str(days), **({"repo": repository} if repository else {})}
            response = await client.get("/dashboard", params=query, headers=bearer())
            assert response.status == 200
            html = await response.text()
            assert int(text_of(html, "judgments")) == report.judgments
            for name, count in report.decisions.items():
                assert int(text_of(html, f"count-{name}")) == count
            for label, count in report.labels.items():
                assert int(text_of(html, f"label-{label}")) == count
            assert int(text_of(html, "flagged-count")) == report.flagged_total
            assert html.count('class="flagged-item"') == len(report.flagged)
            row = kpi_row(html, "overall")
            assert f">{figures.judgments}<" in row
            for rate in (figures.go, figures.false_positives, figures.availability):
                assert f">{with_counts(rate)}<" in row
            total = sum(
                int(n) for n in re.findall(r"<td>(\d+)</td></tr>", html.split('id="per-day"')[1])
            )
            assert total == report.judgments


async def test_seeded_page_shows_links_issues_and_readiness(
    tmp_path: Path, github_keypair: Any, sqlite_storage: Storage
) -> None:
    await seed(sqlite_storage)
    settings = dashboard_settings(github_keypair.private_pem, tmp_path)
    async with serving(settings, sqlite_storage) as client:
        html = await (await client.get("/dashboard", headers=bearer())).text()
    assert text_of(html, "judgments") == "9"
    assert text_of(html, "flagged-count") == "4"
    assert '<a href="https://github.com/octo/docs/pull/7" rel="noreferrer">#7 0303030</a>' in html
    assert '<a href="https://github.com/octo/docs/issues/12" rel="noreferrer">#12</a>' in html
    assert text_of(html, "issues-count") == "1"
    row = kpi_row(html, "overall")
    assert "33.3% 1/3" in row and "20.0% 1/5" in row and "76.9% 10/13" in row
    assert ">3.5<" in row and ">45.0<" in row and ">no<" in row
    assert "Not ready for blocking mode" in html
    assert "GO rate 55.6% is outside 70.0%-90.0%" in html
    assert 'data-model="opencode/gpt-5-nano"' in html
    assert '<option value="octo/api">' in html and '<option value="14" selected>' in html
    assert "<svg" in html and '<title id="chart-title">' in html
    assert TOKEN not in html


async def test_ready_when_every_limit_is_met(
    tmp_path: Path, github_keypair: Any, sqlite_storage: Storage, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The limits are JUDGE_CALIBRATION_*, read as `judge-bot calibrate` reads them."""
    monkeypatch.setenv("JUDGE_ENV_FILE", "")
    for name, value in LENIENT.items():
        monkeypatch.setenv(f"JUDGE_CALIBRATION_{name}", value)
    await seed(sqlite_storage)
    settings = dashboard_settings(github_keypair.private_pem, tmp_path)
    async with serving(settings, sqlite_storage) as client:
        html = await (await client.get("/dashboard", headers=bearer())).text()
    assert "Ready for blocking mode" in html
    assert ">yes<" in kpi_row(html, "octo/docs")


async def test_bad_filters_get_a_clear_400(
    tmp_path: Path, github_keypair: Any, sqlite_storage: Storage
) -> None:
    settings = dashboard_settings(github_keypair.private_pem, tmp_path)
    async with serving(settings, sqlite_storage) as client:
        for query, words in (({"days": "0"}, "days must be"), ({"days": "x"}, "days must be"),
                             ({"days": "366"}, "days must be"),
                             ({"repo": "<script>"}, "repo must be OWNER/NAME"),
                             ({"tag": "x" * 101}, "tag must be"),
                             ({"tag": "a\x07b"}, "tag must be")):  # fmt: skip
            response = await client.get("/dashboard", params=query, headers=bearer())
            assert response.status == 400
            body = await response.text()
            assert words in body and "<script>" not in body


async def test_the_tag_filter_and_the_merge_queues(
    tmp_path: Path, github_keypair: Any, storage: Storage
) -> None:
    """Flagged items carry their record's tags and the filter keeps those of one tag; the
    active entries of every queue are listed head first, on SQLite and PostgreSQL."""
    await seed(storage)
    tagged = rejected(40, day(0.3), reason="a tagged rejection")
    record = tagged.model_dump(mode="json") | {"tags": ["security", "<b>"]}
    await storage.append_verdict(task_id=tagged.task_id, repository="octo/docs",
                                 head_sha=tagged.head_sha, verdict="reject",
                                 created_at=tagged.timestamp, record=record)  # fmt: skip
    for number in (5, 9):
        await storage.enqueue_merge(queued(number), actor="alice", reason="approved", now=NOW)
    await storage.enqueue_merge(queued(2, "octo/api"), actor="bob", reason="approved", now=NOW)
    await storage.leave_merge_queue("octo/api", 2, status=MergeStatus.MERGED, actor="bot",
                                    reason="merged", now=NOW)  # fmt: skip
    settings = dashboard_settings(github_keypair.private_pem, tmp_path)
    async with serving(settings, storage) as client:
        html = await (await client.get("/dashboard", headers=bearer())).text()
        assert text_of(html, "flagged-count") == "5"
        assert '<td class="flagged-tags">security, &lt;b&gt;</td>' in html
        assert '<option value="security">' in html
        assert text_of(html, "queues-count") == "1"
        entries = re.findall(r'<tr class="queue-entry">(.*?)</tr>', html)
        assert len(entries) == 2
        assert '<a href="https://github.com/octo/docs/pull/5" rel="noreferrer">#5</a>' in entries[0]
        assert ">next<" in entries[0] and ">queued<" in entries[1] and "#9" in entries[1]
        assert "approved (2026-03-01 12:00)" in entries[0]
        only = await client.get("/dashboard", params={"tag": "security"}, headers=bearer())
        filtered = await only.text()
        assert text_of(filtered, "flagged-count") == "1"
        assert text_of(filtered, "judgments") == "10"  # counts stay over every judgment
        assert "flagged items tagged security" in filtered
        assert '<option value="security" selected>' in filtered
        other = await client.get("/dashboard", params={"repo": "octo/api"}, headers=bearer())
        assert text_of(await other.text(), "queues-count") == "0"


async def test_a_new_verdict_shows_on_the_next_load(
    tmp_path: Path, github_keypair: Any, sqlite_storage: Storage
) -> None:
    """A record appended after the view was computed is counted on the next load, long
    before the view is old; the page says how current it is."""
    await seed(sqlite_storage)
    app = web.Application()
    settings = dashboard_settings(github_keypair.private_pem, tmp_path)
    limits = CalibrationThresholds(_env_file=None)
    seconds = [0.0]
    add_dashboard(
        app,
        settings,
        sqlite_storage,
        thresholds=limits,
        clock=lambda: NOW,
        freshness=Freshness(max_age_seconds=10, wait_limit_seconds=60),
        monotonic=lambda: seconds[0],
    )
    async with TestClient(TestServer(app, host="127.0.0.1")) as client:
        first = await (await client.get("/dashboard", headers=bearer())).text()
        await store_all(sqlite_storage, [rejected(4, NOW - timedelta(seconds=30))])
        seconds[0] = 4
        after = await (await client.get("/dashboard", headers=bearer())).text()
    assert text_of(first, "judgments") == "9"
    assert text_of(after, "judgments") == "10"
    assert text_of(after, "count-reject") == "2"
    assert text_of(after, "freshness").startswith(
        "Up to date with the verdict log at 2026-03-01 12:00:00 UTC:"
    )
    assert "was last read 4 seconds ago and is read again every 10 seconds" in after


async def test_judge_text_is_escaped_and_scrubbed(
    tmp_path: Path, github_keypair: Any, sqlite_storage: Storage
) -> None:
    hostile = rejected(8, day(0.2), reason="<script>alert(1)</script> " + FAKE_SECRETS["openai"])
    await store_all(sqlite_storage, [hostile])
    settings = dashboard_settings(github_keypair.private_pem, tmp_path)
    async with serving(settings, sqlite_storage) as client:
        html = await (await client.get("/dashboard", headers=bearer())).text()
    assert "<script>" not in html and "&lt;script&gt;alert(1)" in html
    assert FAKE_SECRETS["openai"] not in html


async def test_sign_in_sets_a_signed_http_only_cookie(
    tmp_path: Path, github_keypair: Any, sqlite_storage: Storage
) -> None:
    """The cookie is HttpOnly, SameSite=Strict, not the token; it opens the page until
    sign-out clears it."""
    await seed(sqlite_storage)
    settings = dashboard_settings(github_keypair.private_pem, tmp_path)
    async with serving(settings, sqlite_storage) as client:
        form = await client.get("/dashboard/sign-in")
        assert form.status == 200 and 'name="token"' in await form.text()
        signed = await client.post(
            "/dashboard/sign-in", data={"token": TOKEN}, allow_redirects=False
        )
        assert signed.status == 303 and signed.headers["Location"] == "/dashboard"
        cookie = signed.headers["Set-Cookie"]
        assert cookie.startswith("judge_dashboard=")
        assert "HttpOnly" in cookie and "SameSite=Strict" in cookie and "Path=/" in cookie
        assert "Secure" not in cookie and TOKEN not in cookie
        page = await client.get("/dashboard")
        assert page.status == 200
        html = await page.text()
        assert 'action="/dashboard/sign-out"' in html
        assert (await client.get("/dashboard/sign-in", allow_redirects=False)).status == 303
        out = await client.post("/dashboard/sign-out", allow_redirects=False)
        assert out.status == 303 and out.headers["Location"] == "/dashboard/sign-in"
        assert "judge_dashboard=" in out.headers["Set-Cookie"]
        assert (await client.get("/dashboard")).status == 401


async def test_sign_in_over_https_uses_a_secure_host_cookie(
    tmp_path: Path, github_keypair: Any, sqlite_storage: Storage
) -> None:
    settings = dashboard_settings(
        github_keypair.private_pem, tmp_path, BASE_URL="https://judge.example.org"
    )
    async with serving(settings, sqlite_storage) as client:
        signed = await client.post(
            "/dashboard/sign-in",
            data={"token": TOKEN},
            headers={"Origin": "https://judge.example.org"},
            allow_redirects=False,
        )
        assert signed.status == 303
        cookie = signed.headers["Set-Cookie"]
        assert cookie.startswith("__Host-judge_dashboard=") and "Secure" in cookie


async def test_sign_in_refusals(
    tmp_path: Path, github_keypair: Any, sqlite_storage: Storage
) -> None:
    settings = dashboard_settings(github_keypair.private_pem, tmp_path)
    async with serving(settings, sqlite_storage) as client:
        wrong = await client.post("/dashboard/sign-in", data={"token": "guess"})
        assert wrong.status == 401 and "not the dashboard token" in await wrong.text()
        assert "Set-Cookie" not in wrong.headers
        empty = await client.post("/dashboard/sign-in", data={})
        assert empty.status == 401
        foreign = await client.post(
            "/dashboard/sign-in",
            data={"token": TOKEN},
            headers={"Origin": "https://evil.example"},
            allow_redirects=False,
        )
        assert foreign.status == 403 and "Set-Cookie" not in foreign.headers
        out = await client.post("/dashboard/sign-out", headers={"Origin": "https://evil.example"})
        assert out.status == 403
        huge = await client.post("/dashboard/sign-in", data={"token": "x" * 5000})
        assert huge.status == 413
        same_site = await client.post(
            "/dashboard/sign-in",
            data={"token": TOKEN},
            headers={"Origin": str(client.make_url("")).rstrip("/")},
            allow_redirects=False,
        )
        assert same_site.status == 303


async def test_storage_failure_is_a_page_not_a_crash(
    tmp_path: Path, github_keypair: Any, sqlite_storage: Storage, caplog: pytest.LogCaptureFixture
) -> None:
    settings = dashboard_settings(github_keypair.private_pem, tmp_path)
    async with serving(settings, sqlite_storage) as client:
        await sqlite_storage.close()
        response = await client.get("/dashboard", headers=bearer())
        assert response.status == 503
        assert "could not be read" in await response.text()
    assert "dashboard" in caplog.text


async def test_page_headers_forbid_framing_and_caching(
    tmp_path: Path, github_keypair: Any, sqlite_storage: Storage
) -> None:
    settings = dashboard_settings(github_keypair.private_pem, tmp_path)
    async with serving(settings, sqlite_storage) as client:
        response = await client.get("/dashboard", headers=bearer())
        assert response.status == 200
        assert "default-src 'none'" in response.headers["Content-Security-Policy"]
        assert response.headers["X-Frame-Options"] == "DENY"
        assert response.headers["Cache-Control"] == "no-store"
        html = await response.text()
        assert "No judgments in these days" in html and "Nothing flagged" in html
        assert "http://" not in html.replace('xmlns="http://www.w3.org/2000/svg"', "")


def test_add_dashboard_reads_the_calibration_limits(
    tmp_path: Path, github_keypair: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A bad JUDGE_CALIBRATION_* value stops start-up with the setting's name."""
    from bot.settings import SettingsError
    from bot.storage.sqlite import SqliteStorage

    monkeypatch.setenv("JUDGE_ENV_FILE", "")
    monkeypatch.setenv("JUDGE_CALIBRATION_MIN_SAMPLE", "zero")
    settings = dashboard_settings(github_keypair.private_pem, tmp_path)
    with pytest.raises(SettingsError, match="JUDGE_CALIBRATION_MIN_SAMPLE"):
        add_dashboard(web.Application(), settings, SqliteStorage(str(tmp_path / "x.db")))


async def test_a_bare_app_with_the_real_clock(
    tmp_path: Path, github_keypair: Any, sqlite_storage: Storage
) -> None:
    """`add_dashboard` needs nothing of the app factory: the storage, limits and clock given."""
    app = web.Application()
    settings = dashboard_settings(github_keypair.private_pem, tmp_path)
    limits = CalibrationThresholds(_env_file=None)
    dashboard = add_dashboard(app, settings, sqlite_storage, thresholds=limits)
    assert dashboard is not None
    async with TestClient(TestServer(app, host="127.0.0.1")) as client:
        # The default view is computed at start, before anyone asks.
        while dashboard.views.peek(Filter(None, DEFAULT_DAYS)) is None:
            await asyncio.sleep(0.01)
        response = await client.get("/dashboard", params={"days": "1"}, headers=bearer())
        assert response.status == 200
        html = await response.text()
        assert "UTC), all repositories.</p>" in html
        assert "The whole window was last read just now" in text_of(html, "freshness")


@pytest.mark.parametrize(
    ("seconds", "words"),
    [(0.3, "just now"), (2, "2 seconds ago"), (119, "119 seconds ago"), (600, "10 minutes ago")],
)
def test_age_in_words(seconds: float, words: str) -> None:
    assert age_text(seconds) == words
