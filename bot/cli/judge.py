"""Judge commands for the `judge-bot` CLI.

    judge-bot judge --task-id ID --description TEXT --acceptance TEXT [options] FILE...
    judge-bot pre-push [REMOTE] [URL] [--database-url URL]   (run by git; bot.cli.pre_push)
    judge-bot install-hook [--force] [--python PATH]          (writes .git/hooks/pre-push)
    judge-bot verdicts export [--since DATE|TIME] [--task-id ID] [--database-url URL]

`judge` exits 0 accepted, 1 rejected, 2 human fallback (escalate or improve),
3 undetermined: also whenever nothing was judged (usage, configuration, input and
storage errors, an internal crash), so a script never reads a failure as a reject.
`judge --help` exits 0. `pre-push` exits `pre_push.BLOCK_EXIT` to block a push (the
installed hook script maps it to 1) and 0 otherwise.

`judge` and `pre-push` judge a change in the parts its judges read whole, every one of
which must accept (`bot.cli.judged_change`): `judge` exits by the change's verdict, and
`--json` prints one record for one part, the parts and the change's verdict for several.

Settings come from `bot.settings`' one loader (environment, then `.env`), so these
commands and `serve` agree. Records go to `--database-url`, else DATABASE_URL, else
`judge-bot.sqlite3` at the top of the git work tree (outside one: the working directory).
Git runs the hook at the top of the work tree, so `verdicts export` anywhere in the
repository reads what the hook wrote; `install-hook` keeps that file, and the `.env` that
holds the user's key, out of `git status` and commits.

A reader that stops early (`| head`) closes stdout: every command then stops quietly
(`guard_closed_stdout`) with status 141, as a process killed by SIGPIPE reports, except
`judge`, whose status stays its verdict (the record is stored either way).

`register(subparsers)` adds the commands to the main parser (`bot.cli`); `main(argv)`
runs them on their own: the installed hook runs `python -m bot.judge.console`, an alias
of this module kept where hooks already written expect it.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import sqlite3
import subprocess
import sys
from collections import Counter
from collections.abc import Sequence
from datetime import UTC, date, datetime
from pathlib import Path
from typing import Any, NoReturn
from urllib.parse import urlsplit

import httpx
from dotenv import dotenv_values

from bot.cli.database import database_failure
from bot.cli.judged_change import JudgedChange, judge_change, requests_at_once
from bot.cli.pre_push import (
    HOOK_MARKER,
    Git,
    GitError,
    hook_script,
    intended_mode,
    run_hook,
    skip_requested,
    unreadable_settings,
)
from bot.cli.terminal import drop_stdout, err, guard_closed_stdout, out
from bot.judge.engine import JudgeEngine, JudgeRequest
from bot.judge.record_table import render_table
from bot.judge.records import JudgedFile, RubricName, TaskSpec, Verdict, VerdictRecord
from bot.judge.rubrics.research_settings import ResearchRules, ResearchSettings
from bot.judge.settings import JudgeSettings
from bot.settings import (
    DATABASE_FILE,
    ENV_FILE_VARIABLE,
    SettingsError,
    load_database_url,
    load_judge_section,
    load_judge_settings,
    tracked_by_git,
    work_tree_top,
)
from bot.storage import storage_from_url
from bot.storage.base import Storage, describe_database

logger = logging.getLogger(__name__)

RECORDS_DATABASE_HELP = (
    "where records are stored (default: DATABASE_URL from the environment or .env, else "
    f"{DATABASE_FILE} at the top of this git work tree, else in this directory)"
)
EXIT_CODES: dict[Verdict, int] = {
    Verdict.ACCEPT: 0,
    Verdict.REJECT: 1,
    Verdict.IMPROVE: 2,
    Verdict.ESCALATE: 2,
    Verdict.UNDETERMINED: 3,
}
EXIT_UNDETERMINED = 3


# -- shared I/O helpers -----------------------------------------------------------------


def _database_url(args: argparse.Namespace) -> str:
    """`--database-url`, else the server's DATABASE_URL and default (module docstring);
    raises `SettingsError` for a malformed DATABASE_URL."""
    if args.database_url:
        url: str = args.database_url
        return url
    return load_database_url()


def _known_paths(cwd: Path) -> frozenset[str]:
    """Tracked files, so relative links to files not on the command line resolve."""
    try:
        out = subprocess.run(
            ["git", "ls-files"], cwd=cwd, capture_output=True, text=True, check=True, timeout=30
        )
    except (OSError, subprocess.SubprocessError):
        return frozenset()
    return frozenset(line for line in out.stdout.splitlines() if line)


async def _with_engine(
    settings: JudgeSettings, storage: Storage | None, request: JudgeRequest
) -> JudgedChange:
    if storage is not None:
        await storage.open()
    try:
        async with httpx.AsyncClient() as client:
            engine = JudgeEngine.from_settings(settings, client, storage)
            return await judge_change(
                engine,
                request,
                at_once=requests_at_once(local_only(settings)),
                say=lambda line: err(f"judge-bot: {line}"),
            )
    finally:
        if storage is not None:
            await storage.close()


# -- judge ----------------------------------------------------------------------------


class _JudgeArgumentParser(argparse.ArgumentParser):
    """`judge`'s parser: a usage error exits 3 (undetermined), not argparse's 2, and an
    unknown argument is its own error rather than the main parser's."""

    def error(self, message: str) -> NoReturn:
        self.print_usage(sys.stderr)
        self.exit(EXIT_UNDETERMINED, f"{self.prog}: error: {message}\n")

    def parse_known_args(  # type: ignore[override]
        self, args: Sequence[str] | None = None, namespace: argparse.Namespace | None = None
    ) -> tuple[argparse.Namespace, list[str]]:
        parsed, extras = super().parse_known_args(args, namespace)
        if extras:
            self.error("unrecognized arguments: " + " ".join(extras))
        return parsed, extras


def _read_files(names: Sequence[str]) -> list[JudgedFile] | None:
    files: list[JudgedFile] = []
    for name in names:
        path = Path(name)
        try:
            content = path.read_text(encoding="utf-8", errors="replace")
        except OSError as exc:
            err(f"judge-bot: cannot read {name}: {exc.strerror}")
            return None
        files.append(JudgedFile(path=path.as_posix(), content=content))
    return files


def _judge_request(
    args: argparse.Namespace, files: list[JudgedFile], research: ResearchRules
) -> JudgeRequest:
    return JudgeRequest(
        task=TaskSpec(
            task_id=args.task_id,
            description=args.description,
            acceptance=args.acceptance,
            directives=list(args.directive or []),
        ),
        files=files,
        rubric=RubricName(args.rubric),
        sensitive=args.sensitive,
        repository=args.repository,
        head_sha=args.head_sha,
        scope=args.scope or f"cli:{Path.cwd()}",
        bypass_cache=args.no_cache,
        known_paths=_known_paths(Path.cwd()),
        research=research,
    )


# "No throttle": more judgments in an hour than a machine can run.
NO_LIMIT = 1_000_000
_LOOPBACK = frozenset({"localhost", "127.0.0.1", "::1"})


def local_only(settings: JudgeSettings) -> bool:
    """Every configured tier is served on this machine (a local model server)."""
    hosts = [urlsplit(seat.base_url).hostname or "" for seat in settings.tiers().values()]
    return bool(hosts) and all(h in _LOOPBACK or h.startswith("127.") for h in hosts)


def cli_limits(settings: JudgeSettings) -> JudgeSettings:
    """The App's throttle and daily budgets protect spend on hosted models; a local trial
    against a model on this machine spends nothing, so unless the user set them they do
    not apply there."""
    if not local_only(settings):
        return settings
    unset = {"throttle_per_hour", "daily_call_budget", "daily_token_budget"}
    unset -= settings.model_fields_set
    free = {"throttle_per_hour": NO_LIMIT, "daily_call_budget": None, "daily_token_budget": None}
    return settings.model_copy(update={name: free[name] for name in unset})


def _show(change: JudgedChange, args: argparse.Namespace, url: str) -> None:
    """Print the verdict; a reader gone already changes nothing (the records are stored)."""
    several = len(change.parts) > 1
    for number, judged in enumerate(change.parts, start=1):
        record = judged.record
        if record.final_decision is Verdict.UNDETERMINED and record.reason:
            # Said on stderr too, so `--json` users see why no verdict came.
            where = f"part {number} ({judged.describe()}): " if several else ""
            err(f"judge-bot: not judged: {where}{record.reason}")
    try:
        if args.json:
            out(change.to_json())
        elif several:
            _show_parts(change, url)
        else:
            out(render_table(change.parts[0].record))
            out(f"record appended to {describe_database(url)}")
    except BrokenPipeError:
        drop_stdout()


def _show_parts(change: JudgedChange, url: str) -> None:
    total = len(change.parts)
    for number, judged in enumerate(change.parts, start=1):
        out(f"part {number} of {total}: {judged.describe()}")
        out(render_table(judged.record))
        out("")
    counts = Counter(record.final_decision.value for record in change.records)
    tally = ", ".join(f"{verdict} {n}" for verdict, n in sorted(counts.items()))
    out(
        f"verdict of the change: {change.verdict.value.upper()} ({total} parts: {tally}; "
        "every part must accept)"
    )
    out(f"{total} records appended to {describe_database(url)}")


def _cmd_judge(args: argparse.Namespace) -> int:
    try:
        settings = cli_limits(load_judge_settings())
        research = load_judge_section(ResearchSettings).rules()
        url = _database_url(args)
    except SettingsError as exc:
        err(f"judge-bot: configuration error: {exc}; nothing was judged")
        return EXIT_UNDETERMINED
    files = _read_files(args.files)
    if files is None:
        return EXIT_UNDETERMINED
    request = _judge_request(args, files, research)
    try:
        storage = storage_from_url(url)
    except ValueError as exc:
        # the message names the problem, never the URL (it may hold a password)
        err(f"judge-bot: storage error: {exc}; nothing was judged")
        return EXIT_UNDETERMINED
    try:
        change = asyncio.run(_with_engine(settings, storage, request))
    except Exception as exc:
        # Provider problems are verdicts already; what lands here is storage or a bug.
        # File-system and SQLite messages are printed; others only by type, since a
        # driver's message can quote a DSN with its password.
        logger.debug("judge run failed", exc_info=True)
        what = type(exc).__name__
        if isinstance(exc, OSError | sqlite3.Error):
            what += f": {exc}"
        err(f"judge-bot: the judgment failed ({what}); nothing was judged")
        return EXIT_UNDETERMINED
    _show(change, args, url)
    return EXIT_CODES[change.verdict]


# -- pre-push ---------------------------------------------------------------------------


async def _pre_push(
    args: argparse.Namespace, settings: JudgeSettings, url: str, stdin_text: str
) -> int:
    git = Git(Path.cwd())
    storage = storage_from_url(url)
    await storage.open()
    try:
        async with httpx.AsyncClient() as client:
            engine = JudgeEngine.from_settings(settings, client, storage)
            if not settings.llm_configured:
                err("[judge] no LLM judge configured: mechanical checks only")
            return await run_hook(
                git=git,
                stdin_text=stdin_text,
                remote=args.remote,
                remote_url=args.url,
                mode=settings.mode,
                authors=settings.authors,
                patterns=settings.paths,
                judge=lambda request: judge_change(
                    engine,
                    request,
                    at_once=requests_at_once(local_only(settings)),
                    say=lambda line: err(f"[judge] {line}"),
                ),
                say=err,
            )
    finally:
        await storage.close()


def _dotenv_values(cwd: Path) -> dict[str, str | None]:
    """What the `.env` the loader would consider holds, read even when the loader refuses
    it (only for `intended_mode`); nothing when there is no such file or it is unreadable."""
    named = os.environ.get(ENV_FILE_VARIABLE)
    path = cwd / (named if named else ".env")
    if named == "" or not path.is_file():
        return {}
    try:
        return dict(dotenv_values(path, interpolate=False))
    except (OSError, UnicodeError):
        return {}


def _settings_refused(problem: str) -> int:
    """Say why the push is not judged; block it in blocking mode (`unreadable_settings`)."""
    cwd = Path.cwd()
    mode = intended_mode(dict(os.environ), _dotenv_values(cwd))
    tracked = ENV_FILE_VARIABLE not in os.environ and tracked_by_git(cwd / ".env")
    lines, code = unreadable_settings(problem, mode, tracked)
    for line in lines:
        err(line)
    return code


def _cmd_pre_push(args: argparse.Namespace) -> int:
    if skip_requested(os.environ):
        err("[judge] GIT_JUDGE_SKIP=1 -- bypassing judge evaluation")
        return 0
    stdin_text = sys.stdin.read()
    try:
        settings = load_judge_settings()
        url = _database_url(args)
    except SettingsError as exc:
        return _settings_refused(str(exc))
    try:
        return asyncio.run(_pre_push(args, settings, url, stdin_text))
    except BrokenPipeError:
        raise  # stderr is gone: nothing more can be said (guard_closed_stdout)
    except (GitError, OSError, ValueError) as exc:
        err(f"[judge] skipped: {exc}")
        return 0
    except Exception:
        # The hook is a crash-proof observer (seed 000): a bug here must not block a push.
        logger.exception("judge pre-push hook failed")
        err("[judge] internal error; push not blocked")
        return 0


# -- install-hook -------------------------------------------------------------------------

# The default database and SQLite's companions, at the top of the work tree (where git
# runs the hook): kept out of `git status` so they are never committed by accident.
EXCLUDED_DATABASE = (f"/{DATABASE_FILE}", f"/{DATABASE_FILE}-*")
# The `.env` the hook reads (top of the work tree), where a user puts the API key: in
# the repository's own exclude file, not `.gitignore`, so installing changes no file
# that would be committed, and nobody else's clone.
EXCLUDED_SETTINGS = ("/.env",)


def _git_path(name: str) -> Path | None:
    try:
        out = subprocess.run(
            ["git", "rev-parse", "--git-path", name],
            capture_output=True,
            text=True,
            check=True,
            timeout=30,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    path = Path(out.stdout.strip())
    return path if path.is_absolute() else Path.cwd() / path


def _exclude(exclude: Path, lines: Sequence[str], heading: str) -> bool:
    """Add the `lines` it lacks to the repository's own exclude file, under `# heading`;
    True when it changed."""
    text = exclude.read_text(encoding="utf-8") if exclude.exists() else ""
    missing = [line for line in lines if line not in text.splitlines()]
    if not missing:
        return False
    exclude.parent.mkdir(parents=True, exist_ok=True)
    prefix = "" if not text or text.endswith("\n") else "\n"
    with exclude.open("a", encoding="utf-8") as out:
        out.write(prefix + f"# {heading} (judge-bot install-hook)\n")
        out.write("".join(line + "\n" for line in missing))
    return True


def _exclude_database(exclude: Path) -> bool:
    return _exclude(exclude, EXCLUDED_DATABASE, "judge-bot's records")


def _exclude_settings(exclude: Path) -> bool:
    return _exclude(exclude, EXCLUDED_SETTINGS, "judge-bot's settings and API keys")


def _warn_tracked_dotenv() -> None:
    """Excluding does not untrack: a `.env` already committed is pushed with every branch."""
    top = work_tree_top()
    if top is None or not tracked_by_git(top / ".env"):
        return
    err(
        "judge-bot: WARNING: git tracks .env, so it is committed and pushed with your API "
        "key if it holds one, and the hook will not read it; run `git rm --cached .env`, "
        "take it out of the commits not yet pushed, and rotate any key it held if it "
        "was ever pushed"
    )


def _cmd_install_hook(args: argparse.Namespace) -> int:
    hook = _git_path("hooks/pre-push")
    exclude = _git_path("info/exclude")
    if hook is None or exclude is None:
        err("judge-bot: not inside a git repository")
        return 1
    if hook.exists() and HOOK_MARKER not in hook.read_text(errors="replace") and not args.force:
        err(f"judge-bot: {hook} exists and is not ours; use --force to replace it")
        return 1
    hook.parent.mkdir(parents=True, exist_ok=True)
    hook.write_text(hook_script(args.python or sys.executable), encoding="utf-8")
    hook.chmod(0o755)
    excluded = _exclude_database(exclude)
    settings_excluded = _exclude_settings(exclude)
    _warn_tracked_dotenv()
    # Printed last: a reader gone already (| head) leaves the work done all the same.
    out(f"installed {hook}")
    if excluded:
        out(f"{DATABASE_FILE} kept out of git status ({exclude})")
    if settings_excluded:
        out(f".env kept out of git status and commits ({exclude})")
    return 0


# -- verdicts export ------------------------------------------------------------------------


async def _export(
    storage: Storage, since: datetime | None, task_id: str | None
) -> list[dict[str, Any]]:
    await storage.open()
    try:
        stored = await storage.list_verdicts(task_id=task_id, since=since)
    finally:
        await storage.close()
    return [v.record for v in stored]


def parse_since(text: str | None) -> datetime | None:
    """`--since` as an aware datetime: a plain date (`2026-02-15`) is that day's midnight
    UTC; a time needs its timezone, since guessing one would shift the window by hours.
    Raises ValueError with the line to print."""
    if not text:
        return None
    stripped = text.strip()
    if len(stripped) == 10:  # YYYY-MM-DD; fromisoformat would also take YYYYMMDD
        try:
            return datetime.combine(date.fromisoformat(stripped), datetime.min.time(), UTC)
        except ValueError:
            raise ValueError(f"--since {text!r} is not a date (YYYY-MM-DD)") from None
    try:
        since = datetime.fromisoformat(stripped)
    except ValueError:
        raise ValueError(
            f"--since {text!r} is neither a date (YYYY-MM-DD) nor an ISO 8601 time"
        ) from None
    if since.tzinfo is None:
        raise ValueError(
            "--since needs a timezone after a time (e.g. 2026-02-15T09:00:00+00:00), "
            "or a plain date (2026-02-15, midnight UTC)"
        )
    return since


def _cmd_export(args: argparse.Namespace) -> int:
    try:
        since = parse_since(args.since)
        url = _database_url(args)
        storage = storage_from_url(url)  # its errors name the problem, never the URL
    except SettingsError as exc:
        err(f"judge-bot: configuration error: {exc}")
        return 2
    except ValueError as exc:
        err(f"judge-bot: {exc}")
        return 2
    try:
        records = asyncio.run(_export(storage, since, args.task_id))
    except Exception as exc:  # one line; the traceback goes to the debug log
        logger.debug("export failed", exc_info=True)
        err(database_failure(url, exc))
        return 2
    for record in records:
        out(VerdictRecord.model_validate(record).to_jsonl())
    return 0


# -- argparse wiring ----------------------------------------------------------------------


JUDGE_EPILOG = """\
exit status:
  0  accept: the judges accepted the files
  1  reject: the judges (or a hard mechanical finding) rejected them
  2  human fallback: improve or escalate, a maintainer decides
  3  undetermined: no judge answered, or nothing was judged (usage,
     configuration, unreadable file, storage or internal error)
Closing stdout early (| head) does not change the status.
Settings: JUDGE_* from the environment or .env (docs/judging.md).
"""


def _add_judge(subparsers: Any) -> None:
    judge = subparsers.add_parser(
        "judge",
        help="judge files against a task with the LLM tiers",
        description="Judge FILEs as one change against a task; print the verdict and "
        "store its record.",
        epilog=JUDGE_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    # add_parser builds every subparser with one class; only this one changes its errors.
    judge.__class__ = _JudgeArgumentParser
    judge.add_argument(
        "--task-id", required=True, help="id of the task (e.g. issue-42), kept in the record"
    )
    judge.add_argument(
        "--description", required=True, help="what the task asked for; the judges read it"
    )
    judge.add_argument(
        "--acceptance", required=True, help="the acceptance criteria the files must meet"
    )
    judge.add_argument("--directive", action="append", help="an extra directive (repeatable)")
    judge.add_argument(
        "--rubric",
        choices=[r.value for r in RubricName],
        default="content",
        help="content (prose, the default), code, completion or research",
    )
    judge.add_argument("--sensitive", action="store_true", help="always run the deep judge")
    judge.add_argument("--json", action="store_true", help="print the record as JSON")
    judge.add_argument("--no-cache", action="store_true", help="ignore the verdict cache")
    judge.add_argument("--repository", help="repository the files belong to, kept in the record")
    judge.add_argument("--head-sha", help="commit the files were read at, kept in the record")
    judge.add_argument("--scope", help="throttle scope (default: this directory)")
    judge.add_argument("--database-url", help=RECORDS_DATABASE_HELP)
    judge.add_argument("files", nargs="+", metavar="FILE", help="files to judge, as one change")
    judge.set_defaults(handler=_cmd_judge)


def register(subparsers: Any) -> None:
    """Add judge, pre-push, install-hook and verdicts to an argparse subparsers object."""
    _add_judge(subparsers)

    hook = subparsers.add_parser("pre-push", help="git pre-push hook (reads git's stdin)")
    hook.add_argument("remote", nargs="?", help="name of the remote (git passes it)")
    hook.add_argument("url", nargs="?", help="URL of the remote (git passes it)")
    hook.add_argument("--database-url", help=RECORDS_DATABASE_HELP)
    hook.set_defaults(handler=_cmd_pre_push)

    install = subparsers.add_parser(
        "install-hook",
        help="install the judge as .git/hooks/pre-push",
        description=f"Write the pre-push hook and keep {DATABASE_FILE} (where it stores "
        "records) and .env (where your API key goes) out of git status and commits "
        "through .git/info/exclude; warns when git already tracks .env.",
    )
    install.add_argument("--force", action="store_true", help="replace a foreign pre-push hook")
    install.add_argument("--python", help="interpreter the hook runs (default: this one)")
    install.set_defaults(handler=_cmd_install_hook)

    verdicts = subparsers.add_parser("verdicts", help="read stored verdict records")
    actions = verdicts.add_subparsers(dest="verdicts_command", metavar="ACTION", required=True)
    export = actions.add_parser("export", help="print records as JSONL, oldest first")
    export.add_argument(
        "--since",
        help="only records at or after this date (YYYY-MM-DD, midnight UTC) or ISO 8601 "
        "time with a timezone",
    )
    export.add_argument("--task-id", help="only records of this task")
    export.add_argument("--database-url", help=RECORDS_DATABASE_HELP)
    export.set_defaults(handler=_cmd_export)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="judge-bot", description="LLM judge commands.")
    register(parser.add_subparsers(dest="command", metavar="COMMAND", required=True))
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    def command() -> int:
        args = build_parser().parse_args(argv)
        result: int = args.handler(args)
        return result

    return guard_closed_stdout(command)
