"""`judge-bot triage` and `judge-bot calibrate`: the verdict log, read for people.

    judge-bot triage    [--days 7]  [--repo OWNER/NAME] [--tag TAG] [--json] [--width N]
                        [--database-url URL]
    judge-bot calibrate [--days 14] [--repo OWNER/NAME] [--json] [--width N] [--database-url URL]

Both read the database the server writes (`--database-url`, else DATABASE_URL, else the
default file, as every command finds it). A table fits the terminal (`--width`, else the
terminal's width; piped output is not cut); `--json` is for scripts. Exit status 0 with
a report (ready or not: `calibrate --json` says so in `ready`), 2 with one line on
stderr for a bad setting or a database that cannot be read.
"""

from __future__ import annotations

import argparse
import logging
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any, TypeVar

from bot.cli.arguments import owner_name, whole_number
from bot.cli.database import DATABASE_HELP, run_on_database
from bot.cli.terminal import err, out, table_width
from bot.reports import sources
from bot.reports.calibration_view import calibration_json, render_calibration
from bot.reports.facts import RecordFact
from bot.reports.kpis import calibrate
from bot.reports.sources import collector_paused
from bot.reports.thresholds import CalibrationThresholds
from bot.reports.triage import (
    MAX_TAG_CHARS,
    OpenIssue,
    Subject,
    SubjectKey,
    flagged_facts,
    subject_keys,
    triage,
)
from bot.reports.triage_view import render_triage, triage_json
from bot.settings import SettingsError, load_judge_section
from bot.storage.base import Storage, StoredVerdict

logger = logging.getLogger(__name__)

# The longest window `triage` and `calibrate` read (ten years; the dashboard's is shorter).
MAX_REPORT_DAYS = 3650

T = TypeVar("T")


@dataclass(frozen=True)
class TriageInput:
    facts: list[RecordFact]
    unreadable: int
    details: dict[int, StoredVerdict]
    subjects: dict[SubjectKey, Subject]
    open_issues: list[OpenIssue]


async def _gather_triage(
    storage: Storage, since: datetime, repo: str | None, tag: str | None
) -> TriageInput:
    facts, unreadable = await sources.window_facts(storage, since, repo)
    flagged = flagged_facts(facts, tag)
    return TriageInput(
        facts=facts,
        unreadable=unreadable,
        details=await sources.details(storage, flagged),
        subjects=await sources.subjects(storage, subject_keys(flagged)),
        open_issues=await sources.open_issues(storage, repo),
    )


def _cmd_triage(args: argparse.Namespace) -> int:
    with collector_paused():
        return _triage(args)


def _triage(args: argparse.Namespace) -> int:
    now = datetime.now(UTC)
    since = now - timedelta(days=args.days)
    gathered = run_on_database(
        args, lambda storage: _gather_triage(storage, since, args.repo, args.tag)
    )
    if isinstance(gathered, int):
        return gathered
    report = triage(
        gathered.facts,
        now=now,
        days=args.days,
        repository=args.repo,
        details=gathered.details,
        subjects=gathered.subjects,
        open_issues=gathered.open_issues,
        tag=args.tag,
        unreadable=gathered.unreadable,
    )
    out(triage_json(report) if args.json else render_triage(report, table_width(args.width)))
    return 0


def _cmd_calibrate(args: argparse.Namespace) -> int:
    with collector_paused():
        return _calibrate(args)


def _calibrate(args: argparse.Namespace) -> int:
    try:
        thresholds = load_judge_section(CalibrationThresholds)
    except SettingsError as exc:
        err(f"judge-bot: configuration error: {exc}")
        return 2
    now = datetime.now(UTC)
    since = now - timedelta(days=args.days)
    read = run_on_database(args, lambda storage: sources.window_facts(storage, since, args.repo))
    if isinstance(read, int):
        return read
    facts, unreadable = read
    report = calibrate(
        facts, thresholds, now=now, days=args.days, repository=args.repo, unreadable=unreadable
    )
    out(
        calibration_json(report, thresholds)
        if args.json
        else render_calibration(report, table_width(args.width))
    )
    return 0


def _tag(text: str) -> str:
    if not text.strip() or len(text) > MAX_TAG_CHARS:
        raise argparse.ArgumentTypeError(f"must be 1 to {MAX_TAG_CHARS} characters")
    return text


def _add_common(parser: argparse.ArgumentParser, days: int) -> None:
    parser.add_argument(
        "--days",
        type=whole_number(1, MAX_REPORT_DAYS),
        default=days,
        help=f"how many days back to read (default {days})",
    )
    parser.add_argument("--repo", type=owner_name, metavar="OWNER/NAME", help="one repository")
    parser.add_argument("--json", action="store_true", help="print JSON for scripts")
    parser.add_argument(
        "--width",
        type=whole_number(40),
        help="table width (default: the terminal's; piped: no limit)",
    )
    parser.add_argument("--database-url", help=DATABASE_HELP)


def register(subparsers: Any) -> None:
    """Add `triage` and `calibrate` to an argparse subparsers object."""
    triage_parser = subparsers.add_parser(
        "triage",
        help="the morning look at the verdict log: what the judges flagged",
        description="Verdict distribution, flagged items (every non-accept) and open "
        "disagreement issues of the last days.",
    )
    _add_common(triage_parser, 7)
    triage_parser.add_argument(
        "--tag", type=_tag, help="list only the flagged items whose record carries this tag"
    )
    triage_parser.set_defaults(handler=_cmd_triage)
    calibrate_parser = subparsers.add_parser(
        "calibrate",
        help="KPIs against the blocking-mode thresholds: ready or not, and why",
        description="Seed 000's calibration KPIs per repository, overall, per model and "
        "per family, and whether blocking mode may be switched on (JUDGE_CALIBRATION_* "
        "settings, docs/operations.md).",
    )
    _add_common(calibrate_parser, 14)
    calibrate_parser.set_defaults(handler=_cmd_calibrate)
