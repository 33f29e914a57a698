"""`judge-bot action`: the gate as a GitHub Action step (bot/action; docs/action.md).

    judge-bot action                                  the run's event, judged and reported
    judge-bot action import FILE... [--database-url]  downloaded verdict records, for
                                                      `triage` and `calibrate`

`judge-bot action` reads only its environment: the runner's `GITHUB_*` variables, the
token and the `JUDGE_*` settings the action passes. No `.env` file is read, whatever
`JUDGE_ENV_FILE` says: a checked-out repository's files must not choose where the keys
are sent.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from gidgethub import GitHubException

from bot.action.environment import ActionInputError, RunEnvironment, parse_event, read_environment
from bot.action.outcome import ExitStatus, RunOutcome, exit_status_for, output_lines, step_summary
from bot.action.records_import import BadRecords, import_records, read_records
from bot.action.runner import Files, RunSettings, run_event
from bot.action.settings import ActionSettings
from bot.cli.database import DATABASE_HELP, run_on_database
from bot.cli.terminal import err, out
from bot.github.client import GitHubClientError, describe_failure
from bot.logs import LogFormat, SecretScrubber, configure_logging
from bot.settings import (
    ENV_FILE_VARIABLE,
    SettingsError,
    load_judge_section,
    load_judge_settings,
    load_settings,
)
from bot.settings.features import load_feature_settings
from bot.storage.base import Storage

log = logging.getLogger(__name__)

EPILOG = """\
exit status:
  0  the judge check passes (success, neutral, skipped), no run was needed, or
     the event was a comment
  1  the judge check fails (failure or action_required: blocking mode only)
  2  bad input: the run's environment, the event file or a JUDGE_* setting
  3  GitHub refused or failed (a token without the permission, an outage),
     or the run could not finish (its state directory, a bug)
Settings: the environment only (docs/action.md).
"""


@contextmanager
def _environment_only() -> Iterator[None]:
    """The settings loaders read no `.env` while the action loads its settings."""
    saved = os.environ.get(ENV_FILE_VARIABLE)
    os.environ[ENV_FILE_VARIABLE] = ""
    try:
        yield
    finally:
        if saved is None:
            del os.environ[ENV_FILE_VARIABLE]
        else:
            os.environ[ENV_FILE_VARIABLE] = saved


def _load(env: RunEnvironment) -> tuple[RunSettings, ActionSettings, SecretScrubber]:
    with _environment_only():
        settings = load_settings()
        judge = load_judge_settings()
        action = load_judge_section(ActionSettings)
        features = load_feature_settings()
    level = settings.log_level if os.environ.get("LOG_LEVEL") else "WARNING"
    fmt = settings.log_format if os.environ.get("LOG_FORMAT") else LogFormat.PRETTY
    secrets = [*settings.secret_values(), *judge.api_keys(), *features.secret_values(), env.token]
    scrubber = configure_logging(level, fmt, secrets)
    return RunSettings(judge, action, features, settings.write_interval), action, scrubber


def _cmd_action(args: argparse.Namespace) -> int:
    del args
    try:
        env = read_environment(os.environ)
    except ActionInputError as exc:
        err(f"judge-bot action: {exc}")
        return ExitStatus.BAD_INPUT
    if not env.handled:
        err(f"judge-bot action: nothing to do for a {env.event_name} event")
        return ExitStatus.PASSED
    try:
        settings, action, scrubber = _load(env)
        payload = parse_event(env.event_path.read_bytes(), env.event_name, env.repository)
    except SettingsError as exc:
        err(f"judge-bot action: configuration error: {exc}")
        return ExitStatus.BAD_INPUT
    except OSError as exc:
        err(f"judge-bot action: GITHUB_EVENT_PATH: cannot read it ({exc.strerror or exc})")
        return ExitStatus.BAD_INPUT
    except ActionInputError as exc:
        err(f"judge-bot action: {exc}")
        return ExitStatus.BAD_INPUT
    files = Files(action.directory(env.runner_temp))
    # One line: what follows the loop's run is done in frames of their own.
    judged = _judged(env, payload, settings, files, scrubber)
    return _finished(env, files, asyncio.run(judged))


async def _judged(
    env: RunEnvironment,
    payload: dict[str, Any],
    settings: RunSettings,
    files: Files,
    scrubber: SecretScrubber,
) -> RunOutcome | None:
    """The run's outcome, or None when it could not finish (said on stderr in one line,
    scrubbed; the traceback goes to the debug log)."""
    try:
        return await run_event(env, payload, settings, files)
    except (GitHubException, GitHubClientError) as exc:
        log.debug("GitHub failed", exc_info=True)
        err(f"judge-bot action: GitHub failed: {scrubber.scrub(describe_failure(exc))}")
    except Exception as exc:  # one line for the job's log, whatever broke
        log.debug("the run failed", exc_info=True)
        err(f"judge-bot action: the run failed: {scrubber.scrub(describe_failure(exc))}")
    return None


def _finished(env: RunEnvironment, files: Files, outcome: RunOutcome | None) -> int:
    if outcome is None:
        return ExitStatus.GITHUB_FAILED
    _report(env, outcome, files)
    return exit_status_for(env.event_name, outcome)


def _report(env: RunEnvironment, outcome: RunOutcome, files: Files) -> None:
    """The outputs and the step summary where the runner reads them, and one line."""
    if env.output_path is not None:
        with env.output_path.open("a", encoding="utf-8") as handle:
            handle.write(output_lines(outcome, files.records, files.cache))
    if env.summary_path is not None:
        with env.summary_path.open("a", encoding="utf-8") as handle:
            handle.write(step_summary(outcome, env.repository, env.event_name))
    shown = f" {outcome.check_run_url}" if outcome.check_run_url else ""
    out(f"judge: {outcome.verdict} ({outcome.conclusion}){shown}")


def _cmd_import(args: argparse.Namespace) -> int:
    try:
        records = read_records(args.files)
    except BadRecords as exc:
        err(f"judge-bot action import: {exc}; nothing was imported")
        return ExitStatus.BAD_INPUT

    async def work(storage: Storage) -> int:
        imported = await import_records(storage, records)
        out(f"imported {imported.added} records ({imported.already_there} already there)")
        return ExitStatus.PASSED

    return int(run_on_database(args, work))


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "action",
        help="the gate as a GitHub Action step (reads the workflow run's event)",
        description="Judge the workflow run's event (GITHUB_EVENT_NAME, GITHUB_EVENT_PATH) "
        "as the App does, post the `judge` check run, and write the step's outputs, "
        "summary and verdict records.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.set_defaults(handler=_cmd_action)
    commands = parser.add_subparsers(dest="action_command", metavar="SUBCOMMAND")
    importer = commands.add_parser(
        "import",
        help="add downloaded verdict records (verdicts.jsonl) to a database",
        description="Add the verdict records of downloaded action artifacts to a database, "
        "so `judge-bot triage` and `judge-bot calibrate` read them. A file with a bad line "
        "is refused whole.",
    )
    importer.add_argument(
        "files", nargs="+", type=Path, metavar="FILE", help="verdicts.jsonl files (JSONL)"
    )
    importer.add_argument("--database-url", help=DATABASE_HELP)
    importer.set_defaults(handler=_cmd_import)
