"""`judge-bot doctor`: does each configured judge answer, and how.

    judge-bot doctor [--json]

Sends every configured tier, and every alternate model, one tiny judgment through the
engine's own providers (bot/judge/doctor/probe.py) and prints, per seat: whether the
model answered a judgment (else the server's own message, scrubbed), the response format
that worked, the context size and where it was read, the latency and the tokens. The
settings are read as every command reads them (environment, then `.env`). One call per
seat, no retry, nothing stored, no throttle or budget counted.

Exit status: 0 every seat answered a judgment; 1 at least one did not (unreachable,
refused, timed out, or an answer that was not a judgment); 2 the settings are invalid or
configure no tier, so nothing was probed.
"""

from __future__ import annotations

import argparse
import asyncio
import json
from typing import Any

import httpx

from bot.cli.terminal import err, out
from bot.judge.doctor.probe import probe_settings
from bot.judge.doctor.report import DoctorReport
from bot.judge.settings import JudgeSettings
from bot.settings import SettingsError, load_judge_settings

EXIT_SETTINGS = 2
NO_TIER_ERROR = (
    "judge-bot: no judge tier is configured (set JUDGE_QUICK_MODEL, and JUDGE_LLM_BASE_URL "
    "or JUDGE_LLM_API_KEY: docs/configuration.md); nothing was probed"
)

EPILOG = """\
exit status:
  0  every configured tier and alternate answered a judgment
  1  at least one did not: unreachable, refused (the server's message is
     shown), timed out, or an answer that was not a judgment
  2  the JUDGE_* settings are invalid or configure no tier: nothing probed
Settings: JUDGE_* from the environment or .env (docs/doctor.md).
"""


async def _probe(settings: JudgeSettings) -> DoctorReport:
    async with httpx.AsyncClient() as client:
        return await probe_settings(settings, client)


def _cmd_doctor(args: argparse.Namespace) -> int:
    try:
        settings = load_judge_settings()
    except SettingsError as exc:
        err(f"judge-bot: configuration error: {exc}; nothing was probed")
        return EXIT_SETTINGS
    if not settings.llm_configured:
        err(NO_TIER_ERROR)
        return EXIT_SETTINGS
    return print_report(asyncio.run(_probe(settings)), as_json=args.json)


def print_report(report: DoctorReport, *, as_json: bool) -> int:
    """Print the report (the table, or JSON and, when a seat failed, why on stderr too);
    the exit status it calls for."""
    if as_json:
        if not report.ok:
            # Said on stderr too, so a script reading stdout as JSON still sees why.
            err(f"judge-bot: {report.summary()}")
        out(json.dumps(report.as_json(), ensure_ascii=False))
    else:
        out(report.render_text())
    return report.exit_code


def register(subparsers: Any) -> None:
    """Add `doctor` to an argparse subparsers object."""
    doctor = subparsers.add_parser(
        "doctor",
        help="call each configured judge once and say what works",
        description="Send each configured judge tier (and alternate) one tiny judgment and "
        "report whether it answered (else the server's message), the response format that "
        "worked, the context size and the latency.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    doctor.add_argument("--json", action="store_true", help="print the report as JSON")
    doctor.set_defaults(handler=_cmd_doctor)
