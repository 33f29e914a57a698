"""Judge commands for the `judge-bot` CLI.

    judge-bot judge --task-id ID --description TEXT --acceptance TEXT
                    [--rubric content|code|completion] [--sensitive] [--json] FILES...
    judge-bot pre-push REMOTE URL          (run by git; see bot.judge.pre_push)
    judge-bot install-hook [--force]       (writes .git/hooks/pre-push)
    judge-bot verdicts export [--since ISO] [--task-id ID]

`judge` exits 0 accepted, 1 rejected, 2 human fallback (escalate or improve),
3 undetermined: also whenever nothing was judged (usage, configuration, input and
storage errors, an internal crash), so a script never reads a failure as a reject.
`judge --help` exits 0. `pre-push` exits `pre_push.BLOCK_EXIT` to block a push (the
installed hook script maps it to 1) and 0 otherwise.
Records go to DATABASE_URL (default `sqlite:///judge-bot.sqlite3` in the working
directory); the pre-push hook defaults to a database inside the git directory so the
working tree stays clean.

`register(subparsers)` adds the commands to the main parser in bot/cli.py; `main(argv)`
runs them on their own (tests, and the installed hook via `python -m bot.judge.console`).
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import sqlite3
import subprocess
import sys
from collections.abc import Sequence
from datetime import datetime
from pathlib import Path
from typing import Any, NoReturn

import httpx

from bot.judge.config import JudgeConfig, JudgeConfigError, load_config
from bot.judge.engine import JudgeEngine, JudgeRequest
from bot.judge.pre_push import (
    HOOK_MARKER,
    Git,
    GitError,
    hook_script,
    run_hook,
    skip_requested,
)
from bot.judge.records import JudgedFile, RubricName, TaskSpec, Verdict, VerdictRecord
from bot.storage import storage_from_url
from bot.storage.base import Storage

logger = logging.getLogger(__name__)

DEFAULT_DATABASE_URL = "sqlite:///judge-bot.sqlite3"
EXIT_CODES: dict[Verdict, int] = {
    Verdict.ACCEPT: 0,
    Verdict.REJECT: 1,
    Verdict.IMPROVE: 2,
    Verdict.ESCALATE: 2,
    Verdict.UNDETERMINED: 3,
}
EXIT_UNDETERMINED = 3


def _out(text: str) -> None:
    sys.stdout.write(text if text.endswith("\n") else text + "\n")
    sys.stdout.flush()


def _err(text: str) -> None:
    sys.stderr.write(text if text.endswith("\n") else text + "\n")
    sys.stderr.flush()


# -- rendering (pure) ---------------------------------------------------------------


def _fmt_score(value: float | None) -> str:
    if value is None:
        return "-"
    return f"{value:g}" if float(value).is_integer() else f"{value:.2f}"


def render_table(record: VerdictRecord) -> str:
    """A readable summary of a record: one row per round, then the decision."""
    lines = [
        f"task {record.task_id}  rubric {record.rubric.value}  prompt {record.prompt_version}",
    ]
    if record.files:
        lines.append("files: " + ", ".join(record.files))
    lines.extend(_rounds_table(record))
    if record.models_not_run:
        lines.append("model tiers were NOT run: " + (record.models_not_run_note or ""))
    lines.extend(_decision_lines(record))
    lines.extend(_finding_lines(record))
    return "\n".join(lines)


def _rounds_table(record: VerdictRecord) -> list[str]:
    rounds = record.previous_rounds
    if not rounds:
        return []
    dims: list[str] = []
    for r in rounds:
        dims.extend(d for d in r.scores if d not in dims)
    header = ["#", "tier", "model", *dims, "avg", "verdict"]
    rows = [header]
    for r in rounds:
        verdict = r.verdict.value if r.verdict is not None else f"failed: {r.error}"
        model = r.model + (f" (for {r.substituted_for})" if r.substituted_for else "")
        scores = (_fmt_score(r.scores.get(d)) for d in dims)
        rows.append(
            [str(r.round), r.judge_tier.value, model, *scores, _fmt_score(r.average), verdict]
        )
    widths = [max(len(row[i]) for row in rows) for i in range(len(header) - 1)]
    lines = []
    for row in rows:
        cells = [cell.ljust(widths[i]) for i, cell in enumerate(row[:-1])]
        lines.append("  ".join([*cells, row[-1]]))
    if not record.calls:
        lines.append("(from the verdict cache: no model was called)")
    return lines


def _decision_lines(record: VerdictRecord) -> list[str]:
    decision = f"verdict: {record.final_decision.value.upper()} ({record.go_no_go})"
    if record.consensus:
        decision += f"  consensus: {record.consensus}"
    lines = [decision]
    if record.reason:
        lines.append(f"reason: {record.reason}")
    if record.reasoning and record.previous_rounds:
        lines.append(f"reasoning: {record.reasoning}")
    if record.improvements:
        lines.append("improvements:")
        lines.extend(f"  - {item}" for item in record.improvements)
    return lines


def _finding_lines(record: VerdictRecord) -> list[str]:
    lines = []
    findings = [*record.mechanical_findings, *record.injection_findings]
    if findings:
        lines.append("findings:")
        for f in findings:
            where = f.path + (f":{f.line}" if f.line else "")
            lines.append(f"  - [{f.severity}] {f.kind} {where}: {f.message}")
    if record.authoring_families:
        lines.append("authored by families: " + ", ".join(record.authoring_families))
    if record.truncation:
        cut = ", ".join(
            f"{t.path} {t.kept_chars}/{t.original_chars} chars ({t.tier.value})"
            for t in record.truncation
        )
        lines.append("truncated: " + cut)
    return lines


def exit_code_for(record: VerdictRecord) -> int:
    return EXIT_CODES[record.final_decision]


# -- shared I/O helpers -----------------------------------------------------------------


def _database_url(args: argparse.Namespace) -> str:
    url: str = args.database_url or os.environ.get("DATABASE_URL") or DEFAULT_DATABASE_URL
    return url


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
    config: JudgeConfig, storage: Storage | None, request: JudgeRequest
) -> VerdictRecord:
    if storage is not None:
        await storage.open()
    try:
        async with httpx.AsyncClient() as client:
            engine = JudgeEngine.from_config(config, client, storage)
            return await engine.judge(request)
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


def _cmd_judge(args: argparse.Namespace) -> int:
    try:
        config = load_config()
    except JudgeConfigError as exc:
        _err(f"judge-bot: configuration error: {exc}")
        return EXIT_UNDETERMINED
    files: list[JudgedFile] = []
    for name in args.files:
        path = Path(name)
        try:
            content = path.read_text(encoding="utf-8", errors="replace")
        except OSError as exc:
            _err(f"judge-bot: cannot read {name}: {exc.strerror}")
            return EXIT_UNDETERMINED
        files.append(JudgedFile(path=path.as_posix(), content=content))
    request = JudgeRequest(
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
    )
    url = _database_url(args)
    try:
        storage = storage_from_url(url)
    except ValueError as exc:
        # the message names the problem, never the URL (it may hold a password)
        _err(f"judge-bot: storage error: {exc}; nothing was judged")
        return EXIT_UNDETERMINED
    try:
        record = asyncio.run(_with_engine(config, storage, request))
    except Exception as exc:
        # Provider problems are verdicts already; what lands here is storage or a bug.
        # File-system and SQLite messages are printed; others only by type, since a
        # driver's message can quote a DSN with its password.
        logger.debug("judge run failed", exc_info=True)
        what = type(exc).__name__
        if isinstance(exc, OSError | sqlite3.Error):
            what += f": {exc}"
        _err(f"judge-bot: the judgment failed ({what}); nothing was judged")
        return EXIT_UNDETERMINED
    if args.json:
        _out(record.to_jsonl())
    else:
        _out(render_table(record))
        _out(f"record appended to {url.split('://', 1)[0]} storage")
    return exit_code_for(record)


# -- pre-push ---------------------------------------------------------------------------


async def _pre_push(args: argparse.Namespace, config: JudgeConfig, stdin_text: str) -> int:
    git = Git(Path.cwd())
    url = args.database_url or os.environ.get("DATABASE_URL")
    if url is None:
        url = "sqlite:///" + str(await git.git_dir() / "judge-bot.sqlite3")
    storage = storage_from_url(url)
    await storage.open()
    try:
        async with httpx.AsyncClient() as client:
            engine = JudgeEngine.from_config(config, client, storage)
            if not config.llm_configured:
                _err("[judge] no LLM judge configured: mechanical checks only")
            return await run_hook(
                git=git,
                stdin_text=stdin_text,
                remote=args.remote,
                remote_url=args.url,
                mode=config.mode,
                authors=config.authors,
                patterns=config.paths,
                judge=engine.judge,
                say=_err,
            )
    finally:
        await storage.close()


def _cmd_pre_push(args: argparse.Namespace) -> int:
    if skip_requested(os.environ):
        _err("[judge] GIT_JUDGE_SKIP=1 -- bypassing judge evaluation")
        return 0
    stdin_text = sys.stdin.read()
    try:
        config = load_config()
    except JudgeConfigError as exc:
        _err(f"[judge] configuration error, not judging: {exc}")
        return 0
    try:
        return asyncio.run(_pre_push(args, config, stdin_text))
    except (GitError, OSError, ValueError) as exc:
        _err(f"[judge] skipped: {exc}")
        return 0
    except Exception:
        # The hook is a crash-proof observer (seed 000): a bug here must not block a push.
        logger.exception("judge pre-push hook failed")
        _err("[judge] internal error; push not blocked")
        return 0


# -- install-hook -------------------------------------------------------------------------


def _cmd_install_hook(args: argparse.Namespace) -> int:
    try:
        out = subprocess.run(
            ["git", "rev-parse", "--git-path", "hooks/pre-push"],
            capture_output=True,
            text=True,
            check=True,
            timeout=30,
        )
    except (OSError, subprocess.SubprocessError):
        _err("judge-bot: not inside a git repository")
        return 1
    hook = Path(out.stdout.strip())
    if not hook.is_absolute():
        hook = Path.cwd() / hook
    if hook.exists() and HOOK_MARKER not in hook.read_text(errors="replace") and not args.force:
        _err(f"judge-bot: {hook} exists and is not ours; use --force to replace it")
        return 1
    hook.parent.mkdir(parents=True, exist_ok=True)
    hook.write_text(hook_script(args.python or sys.executable), encoding="utf-8")
    hook.chmod(0o755)
    _out(f"installed {hook}")
    return 0


# -- verdicts export ------------------------------------------------------------------------


async def _export(url: str, since: datetime | None, task_id: str | None) -> list[dict[str, Any]]:
    storage = storage_from_url(url)
    await storage.open()
    try:
        stored = await storage.list_verdicts(task_id=task_id, since=since)
    finally:
        await storage.close()
    return [v.record for v in stored]


def _cmd_export(args: argparse.Namespace) -> int:
    since: datetime | None = None
    if args.since:
        try:
            since = datetime.fromisoformat(args.since)
        except ValueError:
            _err(f"judge-bot: --since {args.since!r} is not an ISO 8601 timestamp")
            return 2
        if since.tzinfo is None:
            _err("judge-bot: --since needs a timezone (e.g. 2026-02-15T00:00:00+00:00)")
            return 2
    for record in asyncio.run(_export(_database_url(args), since, args.task_id)):
        _out(VerdictRecord.model_validate(record).to_jsonl())
    return 0


# -- argparse wiring ----------------------------------------------------------------------


def register(subparsers: Any) -> None:
    """Add judge, pre-push, install-hook and verdicts to an argparse subparsers object."""
    judge = subparsers.add_parser("judge", help="judge files against a task with the LLM tiers")
    # add_parser builds every subparser with one class; only this one changes its errors.
    judge.__class__ = _JudgeArgumentParser
    judge.add_argument("--task-id", required=True)
    judge.add_argument("--description", required=True)
    judge.add_argument("--acceptance", required=True)
    judge.add_argument("--directive", action="append", help="an extra directive (repeatable)")
    judge.add_argument("--rubric", choices=[r.value for r in RubricName], default="content")
    judge.add_argument("--sensitive", action="store_true", help="always run the deep judge")
    judge.add_argument("--json", action="store_true", help="print the record as JSON")
    judge.add_argument("--no-cache", action="store_true", help="ignore the verdict cache")
    judge.add_argument("--repository")
    judge.add_argument("--head-sha")
    judge.add_argument("--scope", help="throttle scope (default: this directory)")
    judge.add_argument("--database-url", help=f"default: $DATABASE_URL or {DEFAULT_DATABASE_URL}")
    judge.add_argument("files", nargs="+", metavar="FILE")
    judge.set_defaults(handler=_cmd_judge)

    hook = subparsers.add_parser("pre-push", help="git pre-push hook (reads git's stdin)")
    hook.add_argument("remote", nargs="?")
    hook.add_argument("url", nargs="?")
    hook.add_argument(
        "--database-url", help="default: $DATABASE_URL or <git dir>/judge-bot.sqlite3"
    )
    hook.set_defaults(handler=_cmd_pre_push)

    install = subparsers.add_parser("install-hook", help="install the judge as .git/hooks/pre-push")
    install.add_argument("--force", action="store_true", help="replace a foreign pre-push hook")
    install.add_argument("--python", help="interpreter the hook runs (default: this one)")
    install.set_defaults(handler=_cmd_install_hook)

    verdicts = subparsers.add_parser("verdicts", help="read stored verdict records")
    actions = verdicts.add_subparsers(dest="verdicts_command", metavar="ACTION", required=True)
    export = actions.add_parser("export", help="print records as JSONL, oldest first")
    export.add_argument("--since", help="only records at or after this ISO 8601 time")
    export.add_argument("--task-id")
    export.add_argument("--database-url", help=f"default: $DATABASE_URL or {DEFAULT_DATABASE_URL}")
    export.set_defaults(handler=_cmd_export)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="judge-bot", description="LLM judge commands.")
    register(parser.add_subparsers(dest="command", metavar="COMMAND", required=True))
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    result: int = args.handler(args)
    return result


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
